"""Normalized potentials computed for groups of factors at once equal, bit for bit, the
factor-by-factor definition (Definition 5 of Mizrahi et al.) written plainly here."""

from itertools import combinations

import numpy as np
import pytest

from mrflib import BoltzmannMachine, FactorGraph, graphs
from mrflib.learning import potentials
from mrflib.learning._clique_groups import row_ids
from mrflib.models import lattices


# ------------------------------------------------------------------ plain reference
def _term(table, mask):
    out = np.asarray(table, dtype=np.float64)
    for ax, inside in enumerate(mask):
        ref = out[(slice(None),) * ax + (slice(0, 1),)]
        out = out - ref if inside else ref
    return out.reshape([c for c, inside in zip(out.shape, mask) if inside])


def _subsets(scope):
    for r in range(1, len(scope) + 1):
        for pos in combinations(range(len(scope)), r):
            order = sorted(pos, key=lambda a: scope[a])
            yield (tuple(scope[a] for a in order), [a in pos for a in range(len(scope))],
                   [pos.index(a) for a in order])


def _potentials(model):
    out = {}
    for s, t in zip(model.scopes, model.log_tables):
        for B, mask, perm in _subsets(s):
            V = np.transpose(_term(t, mask), perm)
            out[B] = out[B] + V if B in out else V
    return out


def _owners(scopes):
    owners = {}
    for k in sorted(range(len(scopes)), key=lambda k: (len(scopes[k]), k)):
        for r in range(1, len(scopes[k]) + 1):
            for B in combinations(sorted(scopes[k]), r):
                owners.setdefault(B, k)
    return owners


def _normalize(model):
    card, scopes = model.cardinalities, model.scopes
    owners = _owners(scopes)
    tables = [np.zeros(tuple(int(card[v]) for v in s)) for s in scopes]
    for B, V in _potentials(model).items():
        k = owners[B]
        axes = [scopes[k].index(v) for v in B]
        shape = [1] * len(scopes[k])
        for a in axes:
            shape[a] = int(card[scopes[k][a]])
        tables[k] += np.transpose(V, np.argsort(axes)).reshape(shape)
    return tables


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _check(model):
    got = potentials.normalize(model)
    want = _normalize(model)
    assert got.scopes == model.scopes
    assert np.array_equal(got.cardinalities, model.cardinalities)
    assert len(got.log_tables) == len(want)
    for a, b in zip(got.log_tables, want):
        assert np.array_equal(a, b) and _same_bits(a, b)
        assert not a.flags.writeable
    V, W = potentials.factor_graph_potentials(model), _potentials(model)
    assert list(V) == list(W)
    assert all(_same_bits(V[B], W[B]) for B in W)
    owners = potentials.clique_owners(model.scopes)
    assert list(owners.items()) == list(_owners(model.scopes).items())
    return got


# ------------------------------------------------------------------ models
def _random_model(seed, n=7, n_factors=14, max_arity=3, card=(2, 3, 4), unary=True,
                  scale=1.0):
    """Random scopes in random variable order (with repeats), mixed cardinalities and
    tables mixing magnitudes, so that the order of every float addition shows."""
    rng = np.random.default_rng(seed)
    cards = rng.choice(card, n)
    scopes = [(int(v),) for v in rng.permutation(n)] if unary else []
    for _ in range(n_factors):
        r = int(rng.integers(2, max_arity + 1))
        scopes.append(tuple(int(v) for v in rng.choice(n, r, replace=False)))
    scopes += [scopes[int(i)] for i in rng.integers(0, len(scopes), 3)]
    scopes = [scopes[i] for i in rng.permutation(len(scopes))]
    tables = [scale * rng.normal(size=tuple(int(cards[v]) for v in s))
              * 10.0 ** rng.integers(-8, 9, size=tuple(int(cards[v]) for v in s))
              for s in scopes]
    return FactorGraph(cards, scopes, tables)


@pytest.mark.parametrize("seed", range(8))
def test_random_mixed_models_bit_identical(seed):
    _check(_random_model(seed))


@pytest.mark.parametrize("seed", range(4))
def test_pairwise_without_unary_factors_bit_identical(seed):
    model = _random_model(100 + seed, max_arity=2, unary=False, n_factors=12)
    got = _check(model)
    # the variables' potentials sit in pairwise factors: those tables hold several cliques
    assert any(len(B) == 1 and len(model.scopes[k]) == 2
               for B, k in potentials.clique_owners(model.scopes).items())
    _check(got)  # normalizing again: owners holding several cliques, now in the gauge


def test_unsorted_and_repeated_scopes_bit_identical():
    rng = np.random.default_rng(3)
    scopes = [(3, 1), (1, 3), (3, 1), (2, 0, 1), (0, 2, 1), (1,), (0, 3), (3, 0), (2,)]
    card = np.array([2, 3, 4, 3])
    tables = [rng.normal(size=tuple(int(card[v]) for v in s)) * 1e6 ** rng.normal()
              for s in scopes]
    _check(FactorGraph(card, scopes, tables))


def test_higher_arity_and_empty_scope_bit_identical():
    rng = np.random.default_rng(4)
    card = np.array([2, 3, 2, 2, 3, 1])
    scopes = [(), (4, 0, 2, 1), (1, 2), (5, 3), (0, 4, 2, 1), (3,), (2, 4, 1, 0, 3)]
    tables = [rng.normal(size=tuple(int(card[v]) for v in s)) for s in scopes]
    got = _check(FactorGraph(card, scopes, tables))
    assert got.log_tables[0].shape == () and got.log_tables[0] == 0.0


def test_boltzmann_and_lattice_models_bit_identical():
    _check(FactorGraph.from_boltzmann(BoltzmannMachine.random(graphs.square_grid(3, 3), 9, rng=5)))
    _check(lattices.potts_lattice(5, 6, q=3, rng=1))


def test_normalize_is_a_fixed_point_and_refuses_zero_weights():
    got = potentials.normalize(lattices.potts_lattice(4, 4, q=3, rng=2))
    assert got == potentials.normalize(got)
    bad = FactorGraph([2, 2], [(0,), (1, 0)], [[0.0, 1.0], [[0.0, -np.inf], [1.0, 2.0]]])
    with pytest.raises(ValueError, match="zero weights"):
        potentials.normalize(bad)
    with pytest.raises(ValueError, match="zero weights"):
        potentials.factor_graph_potentials(bad)


def test_no_factors():
    model = FactorGraph([2, 3], [], [])
    assert potentials.normalize(model) == model
    assert potentials.factor_graph_potentials(model) == {}
    assert potentials.clique_owners([]) == {}


def test_row_ids_number_distinct_rows_lexicographically():
    rows = np.array([[2, 1], [0, 5], [2, 1], [0, 3], [1, 0]])
    ids, m = row_ids(rows)
    assert m == 4 and ids.tolist() == [3, 1, 3, 0, 2]
