"""The kernels of a learner's step on pairwise models: the data's factor marginals by
blocks of factors against one bincount per factor, the rows transposed and padded for
the 1-SMCI kernel, and 1-SMCI of the scopes over row counts that fill no whole block of
rows, against the numpy reference and enumeration (q = 2, 3, 5; lattices and random
graphs; fields and zero weights)."""

import numpy as np
import pytest

from mrflib import FactorGraph
from mrflib.inference import exact
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import _pairwise_scopes as ps
from mrflib.inference.smci import _pairwise_scopes_kernels as psk
from mrflib.learning import _stochastic_learning_kernels as sk
from mrflib.learning._layout import Layout, data_marginals, data_marginals_numpy
from mrflib.models import lattices
from mrflib.models.factor_graph import all_states


def _mixed(seed, card, zeros=0.0):
    """A random graph's pairwise model of mixed cardinalities with fields, zero weights
    where asked (a planted state keeps positive weight), an empty scope and a pair
    carried by two factors."""
    rng = np.random.default_rng(seed)
    n = len(card)
    planted = [int(rng.integers(c)) for c in card]
    scopes, tables = [(i,) for i in range(n)], [rng.normal(size=c) for c in card]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < 0.6:
                t = rng.normal(scale=0.8, size=(card[i], card[j]))
                t[rng.random(t.shape) < zeros] = -np.inf
                t[planted[i], planted[j]] = 0.0
                scopes.append((i, j) if rng.random() < 0.5 else (j, i))
                tables.append(t if scopes[-1][0] == i else t.T)
    scopes += [scopes[-1][::-1], ()]
    tables += [rng.normal(size=tables[-1].shape[::-1]), np.array(0.3)]
    return FactorGraph(card, scopes, tables)


MODELS = {
    "lattice q=2": lattices.potts_lattice(3, 4, 2, coupling=0.6, rng=2),
    "lattice q=3": lattices.potts_lattice(3, 3, 3, coupling=0.6, couplings="mixed", rng=3),
    "lattice q=5": lattices.potts_lattice(2, 3, 5, coupling=0.6, rng=5),
    "random graph q=2..5": _mixed(1, [5, 2, 3, 5, 2, 4, 3]),
    "random graph, zeros": _mixed(2, [3, 5, 2, 4, 3], zeros=0.3),
}


def _structure(model):
    packed = factor_gibbs.pack(model)
    card = np.asarray(model.cardinalities, dtype=np.int64)
    pw = _pairwise.structure(*packed[4:], card)
    return ps.plan(pw, *packed[4:]), factor_gibbs.flat_tables(model)


@pytest.mark.parametrize("name", list(MODELS))
def test_data_marginals_by_blocks_equal_one_bincount_per_factor(name):
    model = MODELS[name]
    lay = Layout(model)
    x = np.ascontiguousarray(exact.sample(model, 53, rng=1))
    assert np.array_equal(data_marginals(lay, x), data_marginals_numpy(lay, x))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_data_marginals_of_any_integer_type_and_order(dtype):
    model = MODELS["lattice q=3"]
    lay = Layout(model)
    x = np.ascontiguousarray(exact.sample(model, 41, rng=2))
    want = data_marginals_numpy(lay, x)
    assert np.array_equal(data_marginals(lay, x.astype(dtype)), want)
    assert np.array_equal(data_marginals(lay, np.asfortranarray(x.astype(dtype))), want)


def test_serial_counts_equal_the_parallel_counts():
    model = lattices.potts_lattice(20, 30, 3, rng=0)  # more factors than one block holds
    _, _, _, _, fptr, fvars, fstride, offsets = factor_gibbs.pack(model)
    total = int(sum(t.size for t in model.log_tables))
    x = np.random.default_rng(0).integers(0, 3, (29, model.n))
    assert total > sk.FACTOR_BLOCK
    serial = np.zeros(total, dtype=np.int64)
    sk.count_factors(x, fptr, fvars, fstride, offsets, serial, 0, len(offsets))
    assert np.array_equal(serial, sk.factor_counts_blocked(x, fptr, fvars, fstride, offsets,
                                                           total))


@pytest.mark.parametrize("N", [1, psk.ROW_BLOCK, psk.ROW_BLOCK + 1, 3 * psk.TILE + 5])
def test_rows_transposed_and_padded(N):
    model = MODELS["random graph q=2..5"]
    sp, _ = _structure(model)
    x = np.random.default_rng(N).integers(0, model.cardinalities, (N, model.n))
    xt = ps.transposed(sp, x)
    assert xt.dtype == np.uint8 and xt.shape[1] % psk.ROW_BLOCK == 0
    assert xt.shape[1] - N < psk.ROW_BLOCK
    assert np.array_equal(xt[:, :N], x.T) and not xt[:, N:].any()


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("N", [1, 7, psk.ROW_BLOCK, 2 * psk.ROW_BLOCK + 3])
def test_scope_marginals_over_partial_blocks_match_the_numpy_reference(name, N):
    """Row counts below, at and past a block of rows: the padding weighs nothing."""
    model = MODELS[name]
    sp, flat = _structure(model)
    x = np.ascontiguousarray(exact.sample(model, N, rng=N), dtype=np.int64)
    got = ps.flat_marginals(sp, flat, x)
    np.testing.assert_allclose(got, ps._scope_sums_numpy(sp, flat, x), rtol=0, atol=1e-13)
    assert np.array_equal(got, ps.flat_marginals(sp, flat, x, ps.transposed(sp, x)))


@pytest.mark.parametrize("name", ["random graph q=2..5", "random graph, zeros"])
def test_scope_marginals_of_one_row_are_the_enumerated_conditionals(name):
    """Mixed cardinalities (pairs of different sizes at one variable): each factor's
    value is ``P(x_S | x_rest)``, by enumerating the states that agree off ``S``."""
    model = MODELS[name]
    sp, flat = _structure(model)
    x = np.ascontiguousarray(exact.sample(model, 1, rng=4), dtype=np.int64)
    got = ps.flat_marginals(sp, flat, x)
    states = all_states(model.cardinalities)
    with np.errstate(invalid="ignore"):
        lw = model.log_weight(states)
    at = 0
    for scope, table in zip(model.scopes, model.log_tables):
        keep = np.all(states[:, [v for v in range(model.n) if v not in scope]]
                      == x[0, [v for v in range(model.n) if v not in scope]], axis=1)
        p = np.exp(lw[keep] - lw[keep].max())
        want = np.zeros(table.shape)
        if scope:
            np.add.at(want, tuple(states[keep][:, list(scope)].T), p / p.sum())
        else:  # the empty scope's one entry: a marginal of 1
            want[()] = 1.0
        np.testing.assert_allclose(got[at:at + table.size], want.ravel(), atol=1e-12)
        at += table.size


def test_scope_marginals_refuse_the_first_row_of_zero_weight_past_a_block():
    """The first row of zero weight, found in a later block of rows."""
    model = MODELS["random graph, zeros"]
    sp, flat = _structure(model)
    rng = np.random.default_rng(3)
    x = np.ascontiguousarray(exact.sample(model, 3 * psk.ROW_BLOCK, rng=5), dtype=np.int64)
    while True:
        row = rng.integers(0, model.cardinalities)
        with np.errstate(invalid="ignore"):
            if model.log_weight(row[None])[0] == -np.inf:
                break
    x[2 * psk.ROW_BLOCK + 3] = row
    x[2 * psk.ROW_BLOCK + 9] = row
    with pytest.raises(ValueError, match=rf"samples\[{2 * psk.ROW_BLOCK + 3}\] has zero"):
        ps.flat_marginals(sp, flat, x)
