"""Exact marginals by counting (:mod:`mrflib.repro.counting`) against enumeration.

Small models of the ``relational_4`` shape (two groups of hubs, one leaf per pair, one shared
table) with random tables, zeros and evidence on hubs: the counting marginals equal the
exact engine's enumeration; the leaf bounds hold every leaf's marginal; anything else is
refused by name.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mrflib import FactorGraph, exact
from mrflib.repro import counting


def bipartite(n_a: int, n_b: int, rng: np.random.Generator, leaf_pos: int = 1,
              zeros: bool = False) -> FactorGraph:
    """Hubs ``0..n_a-1`` and ``n_a..n_a+n_b-1``, then one leaf per pair; the shared table
    holds the leaf at ``leaf_pos``, hub ``a`` before hub ``b``."""
    table = rng.normal(size=(2, 2, 2))
    if zeros:
        table[1, 1, 0] = -np.inf
    ua, ub, uc = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    scopes, tables = [], []
    leaf = n_a + n_b
    for a, b in itertools.product(range(n_a), range(n_a, n_a + n_b)):
        hubs = [a, b]
        hubs.insert(leaf_pos, leaf)
        scopes.append(tuple(hubs))
        tables.append(np.moveaxis(table, 1, leaf_pos))
        leaf += 1
    for v in range(leaf):
        scopes.append((v,))
        tables.append(ua if v < n_a else ub if v < n_a + n_b else uc)
    return FactorGraph([2] * leaf, scopes, tables)


@pytest.mark.parametrize("seed", range(6))
def test_counting_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    n_a, n_b = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    model = bipartite(n_a, n_b, rng, leaf_pos=seed % 3, zeros=seed % 2 == 1)
    evidence = {v: int(rng.integers(2)) for v in range(n_a + n_b) if rng.random() < 0.3}
    got = counting.marginals(model, evidence)
    want = exact.marginals(model.condition(evidence), method="enumerate")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-12)
    low, high = counting.leaf_bounds(model)
    for v in range(n_a + n_b, model.n):
        assert low - 1e-12 <= got[v][1] <= high + 1e-12


def test_a_model_of_another_shape_is_refused():
    rng = np.random.default_rng(0)
    model = bipartite(2, 2, rng)
    tables = list(model.log_tables)
    tables[0] = tables[0] + 0.1
    with pytest.raises(ValueError, match="share one table"):
        counting.marginals(FactorGraph(model.cardinalities, model.scopes, tables))
    full = bipartite(3, 3, rng)   # its last factor holds the last leaf: drop both
    with pytest.raises(ValueError, match="every pair"):
        counting.marginals(FactorGraph(full.cardinalities[:-1], list(full.scopes[:8]) + [
            (v,) for v in range(full.n - 1)], list(full.log_tables[:8]) + [np.zeros(2)] * (
                full.n - 1)))
    with pytest.raises(ValueError, match="2 states"):
        counting.structure(FactorGraph([3], [(0,)], [np.zeros(3)]))
    with pytest.raises(ValueError, match="evidence must observe hub variables"):
        counting.marginals(model, {model.n - 1: 1})
    with pytest.raises(TypeError, match="model must be a FactorGraph"):
        counting.marginals("relational_4")


def test_the_relational_model_is_the_file_and_counts_like_enumeration():
    """``relational_model`` builds relational_4's layout and weights: its weights are the
    file's (to their 12 digits); at 3 + 2 hubs counting equals enumeration, with one hub
    observed as relational_4's evidence does."""
    small = counting.relational_model(3, 2)
    got = counting.marginals(small, {1: 1})
    want = exact.marginals(small.condition({1: 1}), method="enumerate")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-12)
    published = {"a": 1.01005016708, "c": 1.05127109638, "b": 1.02020134003,
                 "rule": 1.07788415088}
    weights = np.exp([small.log_tables[k].max() for k in (6, 9, 15, 0)])
    np.testing.assert_allclose(weights, list(published.values()), rtol=1e-11)
    assert small.scopes[0] == (0, 3, 9) and small.n == 11
    with pytest.raises(ValueError, match="n_a must be an integer of at least 2"):
        counting.relational_model(1, 4)


@pytest.mark.parametrize("seed", range(4))
def test_bipartite_log_partition_is_exact(seed):
    """A complete bipartite pairwise model of a shared table (relational_1's shape, 3 + 4
    objects, a zero weight, evidence): counting gives the log Z of enumeration."""
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(2, 2))
    table[1, 0] = -np.inf if seed % 2 else table[1, 0]
    a, b = [0, 1, 2], [3, 4, 5, 6]
    ua, ub = rng.normal(size=2), rng.normal(size=2)
    scopes = [(i, j) for i in a for j in b] + [(v,) for v in a + b]
    tables = [table] * 12 + [ua] * 3 + [ub] * 4
    model = FactorGraph(np.full(7, 2), scopes, tables)
    evidence = {1: 1, 4: 0}
    want = exact.log_partition(model.condition(evidence))
    assert counting.bipartite_log_partition(model, evidence) == pytest.approx(want, rel=1e-12)
