"""Exact log Z by conditioning (:mod:`mrflib.inference.exact.conditioning`) against
enumeration: random models with zeros, CNF formulas counted by brute force, disconnected
models, Z = 0, evidence, and the deadline."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _random_factor_graphs import zeroed_model

from mrflib import FactorGraph
from mrflib.inference.exact import enumeration
from mrflib.inference.exact.conditioning import conditioned_log_partition
from mrflib.models.factor_graph import with_evidence


def _same(got: float, want: float) -> bool:
    return (got == want == -math.inf) or math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)


def _cnf(n: int, clauses: list[tuple[int, ...]], rng=None) -> FactorGraph:
    """Each clause a factor (literal ``+v+1`` true, ``-(v+1)`` false) whose one falsifying
    row is zero; with ``rng``, soft unary weights too."""
    scopes, tables = [], []
    for c in clauses:
        scope = tuple(abs(lit) - 1 for lit in c)
        t = np.zeros((2,) * len(c))
        t[tuple(0 if lit > 0 else 1 for lit in c)] = -np.inf
        scopes.append(scope)
        tables.append(t)
    if rng is not None:
        scopes += [(v,) for v in range(n)]
        tables += [rng.normal(size=2) for _ in range(n)]
    return FactorGraph(np.full(n, 2), scopes, tables)


def _random_3sat(seed: int, n: int = 12, ratio: float = 3.0) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    clauses = []
    for _ in range(int(ratio * n)):
        vs = rng.choice(n, size=3, replace=False) + 1
        clauses.append(tuple(int(v) if rng.random() < 0.5 else -int(v) for v in vs))
    return clauses


def _models_count(n: int, clauses: list[tuple[int, ...]]) -> int:
    x = np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)
    ok = np.ones(len(x), dtype=bool)
    for c in clauses:
        ok &= np.any([x[:, abs(lit) - 1] if lit > 0 else ~x[:, abs(lit) - 1] for lit in c],
                     axis=0)
    return int(ok.sum())


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("budget", [1, 2**16])
def test_zeroed_models_match_enumeration(seed, budget):
    """Branching everywhere (``budget`` 1) or eliminating at once, ``log Z`` is the
    enumerated one, ``-inf`` included."""
    model = zeroed_model(seed, most_evidence=2)
    got = conditioned_log_partition(model, max_table_entries=budget)
    assert _same(got.log_partition, enumeration.log_partition(model))


@pytest.mark.parametrize("seed", range(12))
def test_random_3sat_counts_models(seed):
    """A random 3-SAT formula near the threshold: ``Z`` is its number of models."""
    clauses = _random_3sat(seed)
    count = _models_count(12, clauses)
    got = conditioned_log_partition(_cnf(12, clauses), max_table_entries=1)
    assert _same(got.log_partition, math.log(count) if count else -math.inf)


def test_weighted_cnf_uses_cache_and_elimination():
    """Soft weights on a formula: the same ``log Z`` branching down to single variables
    (the cache answering components met again) as with elimination of narrow ones."""
    rng = np.random.default_rng(5)
    clauses = [(1, 2), (-2, 3), (3, 4), (-4, 5), (5, 6), (-6, 7), (7, 8), (1, -8),
               (2, 9, -10), (10, 11), (-11, 12), (12, 13), (4, 13, -9)]
    model = _cnf(13, clauses, rng)
    want = enumeration.log_partition(model)
    branched = conditioned_log_partition(model, max_table_entries=1)
    eliminated = conditioned_log_partition(model, max_table_entries=4)
    assert _same(branched.log_partition, want) and _same(eliminated.log_partition, want)
    assert branched.eliminations == 0 and branched.branches > 0
    assert eliminated.eliminations > 0


@pytest.mark.parametrize("seed", range(3))
def test_cache_answers_repeated_components(seed):
    """A sparse formula splits into components that recur on other branches: the cache
    answers them, and the count is still the brute-force one."""
    clauses = _random_3sat(seed, n=16, ratio=1.5)
    got = conditioned_log_partition(_cnf(16, clauses), max_table_entries=1)
    assert got.cache_hits > 0
    assert _same(got.log_partition, math.log(_models_count(16, clauses)))


def test_disconnected_and_free_variables():
    """Components multiply: two copies of a model side by side give twice its ``log Z``;
    a variable in no factor adds ``log |X_v|``."""
    model = zeroed_model(3)
    while enumeration.log_partition(model) == -math.inf:
        model = zeroed_model(5)
    n = model.n
    scopes = list(model.scopes) + [tuple(v + n for v in s) for s in model.scopes]
    tables = list(model.log_tables) * 2
    card = np.concatenate([model.cardinalities, model.cardinalities, [4]])
    double = FactorGraph(card, scopes, tables)
    got = conditioned_log_partition(double, max_table_entries=1)
    assert _same(got.log_partition, 2 * enumeration.log_partition(model) + math.log(4))


def test_zero_partition():
    """An unsatisfiable formula, and a constant zero factor: ``-inf``."""
    unsat = _cnf(3, [(1, 2), (1, -2), (-1, 3), (-1, -3)])
    assert conditioned_log_partition(unsat, max_table_entries=1).log_partition == -math.inf
    zero = FactorGraph([2, 2], [(), (0, 1)], [np.array(-np.inf), np.zeros((2, 2))])
    assert conditioned_log_partition(zero).log_partition == -math.inf


@pytest.mark.parametrize("seed", range(6))
def test_evidence(seed):
    """``evidence`` conditions the model first, as :func:`with_evidence` does."""
    clauses = _random_3sat(seed, n=10, ratio=2.0)
    model = _cnf(10, clauses, np.random.default_rng(seed))
    evidence = {0: 1, 3: 0}
    want = enumeration.log_partition(with_evidence(model, evidence))
    got = conditioned_log_partition(model, evidence=evidence, max_table_entries=1)
    assert _same(got.log_partition, want)


def test_deadline_gives_up():
    """A search that cannot finish within its limit gives up with a ``TimeoutError``."""
    clauses = _random_3sat(0, n=14, ratio=2.0)
    with pytest.raises(TimeoutError, match="did not finish in time"):
        conditioned_log_partition(_cnf(14, clauses), time_limit=1e-9, max_table_entries=1)
