"""FactorGraph's checks by groups of factors against the factor-by-factor checks: the same
stored scopes and tables for every accepted input form, the same message naming the same
first factor for every refused one."""

import numpy as np
import pytest

from mrflib import FactorGraph
from mrflib.models import _factor_bulk as factor_bulk
from mrflib.models.factor_graph import MAX_LOG_WEIGHT, MAX_TABLE_ENTRIES, _check_factors


def _reference(card, scopes, tables):
    """The factor-by-factor checks (the constructor's path for a refused factor)."""
    fg = FactorGraph.__new__(FactorGraph)
    card = np.asarray(card, dtype=np.int64)
    fg._set(card, *_check_factors(card, scopes, tables))
    return fg


def _assert_same(fg, ref, tables):
    assert fg.scopes == ref.scopes and type(fg.scopes) is tuple
    for s in fg.scopes:
        assert type(s) is tuple and all(type(v) is int for v in s)
    assert len(fg.log_tables) == len(ref.log_tables) and type(fg.log_tables) is tuple
    for a, b, given in zip(fg.log_tables, ref.log_tables, tables):
        assert type(a) is np.ndarray and a.dtype == np.float64 == b.dtype
        assert a.shape == b.shape and a.tobytes() == b.tobytes()
        assert not a.flags.writeable and a.flags.c_contiguous
        if isinstance(given, np.ndarray):
            assert not np.shares_memory(a, given)


def _random_factors(rng, n, F):
    """Mixed cardinalities, scopes of 0-3 variables (repeated, unsorted), -inf entries."""
    card = rng.integers(1, 4, n)
    scopes, tables = [], []
    for _ in range(F):
        r = int(rng.choice([0, 1, 1, 2, 2, 2, 3]))
        s = tuple(int(v) for v in rng.choice(n, r, replace=False))
        t = rng.normal(size=tuple(card[list(s)]))
        if rng.random() < 0.2:
            t[(0,) * r] = -np.inf
        scopes.append(s)
        tables.append(t)
    scopes += scopes[:3]  # repeated scopes
    tables += [t * 2 for t in tables[:3]]
    return card, scopes, tables


def _forms(rng, scopes, tables):
    """The same factors in other accepted forms, one per factor at random."""
    s_forms = [lambda s: s, list, lambda s: tuple(np.int32(v) for v in s),
               lambda s: np.array(s, dtype=np.int64), lambda s: tuple(np.uint16(v) for v in s)]
    t_forms = [lambda t: t, lambda t: t.tolist(), lambda t: t.astype(np.float32),
               lambda t: np.round(np.where(np.isfinite(t), t, -9) * 3).astype(np.int16),
               lambda t: t.astype(">f8"), lambda t: np.asfortranarray(t) if t.ndim else t,
               lambda t: t > 0, lambda t: np.repeat(t, 2, axis=-1)[..., ::2] if t.ndim else t]
    S = [s_forms[rng.integers(len(s_forms))](s) for s in scopes]
    T = [t_forms[rng.integers(len(t_forms))](t) for t in tables]
    return S, T


@pytest.mark.parametrize("seed", range(6))
def test_random_models_are_stored_as_factor_by_factor(seed):
    rng = np.random.default_rng(seed)
    card, scopes, tables = _random_factors(rng, 7, 40)
    for S, T in [(scopes, tables), (tuple(scopes), tuple(tables)), _forms(rng, scopes, tables)]:
        _assert_same(FactorGraph(card, S, T), _reference(card, S, T), T)


def test_array_scopes_scalar_tables_and_no_factors():
    card = [2, 3, 2]
    S = np.array([[0, 1], [2, 1], [1, 0]], dtype=np.uint8)
    T = [np.ones((2, 3)), np.zeros((2, 3)), np.arange(6.0).reshape(3, 2)]
    _assert_same(FactorGraph(card, S, T), _reference(card, S, T), T)
    S2, T2 = [(), (1,), ()], [2.5, [0.0, 1.0, -np.inf], np.array(-1.0, dtype=np.float32)]
    _assert_same(FactorGraph(card, S2, T2), _reference(card, S2, T2), T2)
    assert FactorGraph(card, [], []).scopes == ()
    assert FactorGraph(card, S2, T2).log_tables[0].shape == ()
    assert FactorGraph(card, [range(2)], [np.ones((2, 3))]).scopes == ((0, 1),)


def test_a_model_equal_to_the_reference_pickles_and_conditions():
    rng = np.random.default_rng(9)
    card, scopes, tables = _random_factors(rng, 6, 25)
    fg = FactorGraph(card, scopes, tables)
    assert fg == _reference(card, scopes, tables)
    c = fg.condition({0: 0})
    assert c.n == fg.n


def _bad_cases():
    """(name, scopes, tables) over cardinalities [2, 3, 2, 2]: each refused input class."""
    good_s, good_t = [(0, 1), (2,), (1, 2, 3)], [np.zeros((2, 3)), np.zeros(2),
                                                 np.zeros((3, 2, 2))]

    def at(k, scope=None, table=None, s=good_s, t=good_t):
        s, t = list(s), list(t)
        if scope is not None:
            s[k] = scope
        if table is not None:
            t[k] = table
        return s, t

    huge = np.broadcast_to(np.zeros(()), (2**21, 2**21))
    yield "not a sequence", *at(1, scope=3)
    yield "a string", *at(1, scope="ab")
    yield "a set", *at(1, scope={2})
    yield "a bool", *at(0, scope=(True, 1))
    yield "a numpy bool", *at(0, scope=(np.bool_(0), 1))
    yield "a float", *at(0, scope=(0.0, 1))
    yield "negative", *at(2, scope=(1, -1, 3))
    yield "too large", *at(2, scope=(1, 4, 3))
    yield "beyond int64", *at(1, scope=(2**70,))
    yield "uint64", *at(1, scope=(np.uint64(2**64 - 1),))
    yield "repeated", *at(2, scope=(1, 3, 1))
    yield "0-d array", *at(1, scope=np.array(2))
    yield "2-d array", *at(1, scope=np.array([[2]]))
    yield "wrong shape", *at(2, table=np.zeros((3, 2)))
    yield "transposed", *at(0, table=np.zeros((3, 2)))
    yield "wrong shape, huge", *at(0, table=huge)
    yield "reshaped", *at(2, table=np.zeros((2, 6)))
    yield "ragged", *at(0, table=[[0.0, 1.0, 2.0], [1.0]])
    yield "complex", *at(1, table=np.zeros(2, dtype=complex))
    yield "text", *at(1, table=["a", "b"])
    yield "object", *at(1, table=np.array([None, 1.0], dtype=object))
    yield "nan", *at(2, table=np.full((3, 2, 2), np.nan))
    yield "+inf", *at(1, table=np.array([0.0, np.inf]))
    yield "+inf as float32", *at(1, table=np.array([0.0, np.inf], dtype=np.float32))
    yield "magnitudes", *at(1, table=np.array([1e300, 0.0]), t=at(0, table=np.full((2, 3),
                                                                                    1e300))[1])
    yield "magnitudes inf", *at(1, table=np.array([1e308, 0.0]),
                                t=at(0, table=np.full((2, 3), -1e308))[1])
    yield "too many entries", [(0, 1)], [huge]
    # the first refused factor is named; scopes are all checked before any table
    yield "two bad tables", *at(2, table=np.zeros(3), t=at(0, table=np.zeros(3))[1])
    yield "bad table, later bad scope", *at(2, scope=(0, 0), t=at(0, table=np.zeros(2))[1])


@pytest.mark.parametrize("case", list(_bad_cases()), ids=lambda c: c[0])
def test_refused_factors_give_the_factor_by_factor_message(case):
    _, scopes, tables = case
    card = [2, 3, 2, 2] if case[0] != "too many entries" else [2**21, 2**21]
    with pytest.raises(Exception) as got:
        FactorGraph(card, scopes, tables)
    if case[0] == "0-d array":  # numpy's TypeError before; now named like any bad scope
        assert type(got.value) is ValueError
        assert str(got.value) == "scopes[1] must be a tuple of variable indices, got array(2)"
    else:
        with pytest.raises(Exception) as ref:
            _reference(card, scopes, tables)
        assert type(got.value) is type(ref.value) and str(got.value) == str(ref.value)
    assert factor_bulk.check_factors(np.asarray(card), scopes, tables, MAX_TABLE_ENTRIES,
                                     MAX_LOG_WEIGHT) is None


@pytest.mark.parametrize("parts", [
    [MAX_LOG_WEIGHT / 3] * 3,
    [np.nextafter(MAX_LOG_WEIGHT / 3, np.inf)] * 3,
    [MAX_LOG_WEIGHT / 2, MAX_LOG_WEIGHT / 2],
    [MAX_LOG_WEIGHT * 0.7, MAX_LOG_WEIGHT * 0.1, MAX_LOG_WEIGHT * 0.2],
    [MAX_LOG_WEIGHT, np.nextafter(0, 1) * 1e10],
])
def test_magnitudes_near_the_limit_decide_as_factor_by_factor(parts):
    scopes, tables = [(0,)] * len(parts), [np.array([m, -np.inf]) for m in parts]
    try:
        ref = _reference([2], scopes, tables)
    except ValueError as err:
        with pytest.raises(ValueError) as got:
            FactorGraph([2], scopes, tables)
        assert str(got.value) == str(err)
    else:
        _assert_same(FactorGraph([2], scopes, tables), ref, tables)


def test_long_scopes_of_mixed_cardinalities_are_grouped_by_shape():
    # 24 variables with up to 7 states: shapes too wide for one int64 number each
    card = [1] * 23 + [7, 2]
    scopes = [tuple(range(24)), tuple(range(1, 25)), tuple(range(23, -1, -1)), (24, 23)]
    tables = [np.arange(7.0).reshape((1,) * 23 + (7,)), np.ones((1,) * 22 + (7, 2)),
              np.zeros((7,) + (1,) * 23), np.ones((2, 7))]
    _assert_same(FactorGraph(card, scopes, tables), _reference(card, scopes, tables), tables)


def _reference_triangles(rows, cols):
    out = []
    for r in range(rows - 1):
        for c in range(cols - 1):
            a, b = r * cols + c, r * cols + c + 1
            e, d = a + cols, b + cols
            out += [(a, b, d), (a, d, e)]
    return out


@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 4), (4, 1), (2, 2), (3, 5), (6, 4)])
def test_lattices_draw_the_factor_by_factor_tables(rows, cols):
    from mrflib.models import graphs, lattices

    assert lattices.triangle_cliques(rows, cols) == _reference_triangles(rows, cols)
    for couplings in lattices.COUPLINGS:
        rng = np.random.default_rng(rows * cols)
        n, q, edges = rows * cols, 3, graphs.square_grid(rows, cols)
        fields = rng.uniform(-0.2, 0.2, (n, q))
        low = 0.0 if couplings == "ferromagnetic" else -0.5
        J = rng.uniform(low, low + 1.0, len(edges))
        scopes = [(i,) for i in range(n)] + [(int(i), int(j)) for i, j in edges]
        tables = list(fields) + [Jk * np.eye(q) for Jk in J]
        got = lattices.potts_lattice(rows, cols, q, rng=rows * cols, couplings=couplings)
        _assert_same(got, _reference(np.full(n, q), scopes, tables), tables)


@pytest.mark.parametrize("couplings", ["ferromagnetic", "mixed"])
def test_potts_lattice_names_a_negative_coupling(couplings):
    """A negative coupling (the mean or the half-width of the couplings' range) raised
    numpy's 'high - low < 0', naming no argument."""
    from mrflib.models import lattices

    with pytest.raises(ValueError, match="coupling must be non-negative, got -0.7"):
        lattices.potts_lattice(3, 3, 2, coupling=-0.7, couplings=couplings, rng=0)
