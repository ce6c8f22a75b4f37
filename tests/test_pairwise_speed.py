"""The specialised paths of the pairwise Gibbs sampler and of the PCD step: the kernels
compiled for a fixed number of states, the weights of such models, the vectorised packing
and the counting by blocks of factors, each against the general path it stands in for."""

import math

import numba
import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import FactorGraph, learning
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import _pairwise_kernels as _k
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import _layout, stochastic_learning
from mrflib.learning import _stochastic_learning_kernels as _sk
from mrflib.learning._parameters import parameter_map
from mrflib.models import lattices


def _uniform_graph(seed, n, q, p_edge, zeros):
    """A random graph's pairwise model, every variable with ``q`` states, fields, zero
    weights (a planted state keeps the support non-empty)."""
    rng = np.random.default_rng(seed)
    planted = rng.integers(q, size=n)
    scopes, tables = [(i,) for i in range(n)], [rng.normal(size=q) for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p_edge:
                t = rng.normal(size=(q, q))
                t[rng.random(t.shape) < zeros] = -np.inf
                t[planted[i], planted[j]] = 0.0
                scopes.append((i, j))
                tables.append(t)
    return FactorGraph(np.full(n, q), scopes, tables), planted


MODELS = {f"lattice q={q}": (lattices.potts_lattice(3, 4, q, couplings="mixed", rng=q), None)
          for q in (2, 3, 5)}
MODELS["random graph q=3, zeros"] = _uniform_graph(3, 7, 3, 0.5, 0.2)


def _setup(model):
    pw = _pairwise.structure(*factor_gibbs.pack(model)[4:], model.cardinalities)
    w, logs = _pairwise.weights(pw, factor_gibbs.flat_tables(model))
    return pw, w, logs, _pairwise.sweep_order(pw, np.arange(model.n))


@pytest.mark.parametrize("name", list(MODELS))
def test_fixed_state_kernels_give_the_general_kernels_bits(name):
    model, planted = MODELS[name]
    pw, w, logs, order = _setup(model)
    q = _pairwise.fixed_states(pw)
    assert q == model.cardinalities[0] and not logs
    M = 2 * _k.FIXED_BLOCK + 5  # a partial block too
    x0 = np.random.default_rng(0).integers(0, q, (M, model.n))
    if planted is not None:
        x0[:] = planted
    keys = np.random.default_rng(1).integers(0, 2**64, M, dtype=np.uint64)
    record = np.array([-1, 0, -1, 1])
    runs = []
    threads = numba.get_num_threads()
    try:
        for kernel, t, block in (("general", 1, 0), ("serial", 1, _k.FIXED_BLOCK),
                                 ("serial", 1, 7), ("parallel", 1, _k.FIXED_BLOCK),
                                 ("parallel", max(2, threads), 13)):
            numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
            x = x0.copy()
            out = np.empty((2, M, model.n), dtype=np.int64)
            if kernel == "general":
                _k.sweeps_serial(x, w, order, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card,
                                 logs, keys, record, out)
            else:
                fn = _k.fixed_serial if kernel == "serial" else _k.fixed_parallel
                xt = _pairwise.site_major(x)
                fold = np.empty((-(-M // block), q**3))  # a scratch table per block
                fn((0.0,) * q, xt, xt.reshape(-1), w, order, pw.nptr, pw.nbr, pw.noff,
                   pw.uoff, keys, record, out, block, 0, M,
                   fold[0] if kernel == "serial" else fold)
                x = _pairwise.chain_major(xt)
            runs.append((x, out))
    finally:
        numba.set_num_threads(threads)
    for x, out in runs[1:]:
        assert np.array_equal(x, runs[0][0]) and np.array_equal(out, runs[0][1])
    if planted is not None:  # never a state of zero weight
        with np.errstate(invalid="ignore"):
            assert np.all(model.log_weight(runs[0][0]) > -np.inf)


def test_fixed_states_only_for_one_small_number_of_states():
    mixed = FactorGraph([2, 3], [(0, 1)], [np.zeros((2, 3))])
    wide = lattices.potts_lattice(2, 2, _k.MAX_FIXED_STATES + 1, rng=0)
    for model in (mixed, wide):
        assert _pairwise.fixed_states(_setup(model)[0]) == 0
    assert _pairwise.fixed_states(_setup(MODELS["lattice q=5"][0])[0]) == 5


@pytest.mark.parametrize("name", list(MODELS) + ["duplicate scopes"])
def test_weights_of_a_fixed_number_of_states_equal_the_general_ones(name, monkeypatch):
    if name == "duplicate scopes":  # a coupling split over two factors: summed
        model = lattices.potts_lattice(2, 3, 3, rng=0)
        extra = [(s[1], s[0]) for s in model.scopes if len(s) == 2]
        model = FactorGraph(model.cardinalities, list(model.scopes) + extra,
                            list(model.log_tables) + [np.full((3, 3), 0.25)] * len(extra))
    else:
        model = MODELS[name][0]
    pw = _pairwise.structure(*factor_gibbs.pack(model)[4:], model.cardinalities)
    assert pw.single == (name != "duplicate scopes")
    tables = factor_gibbs.flat_tables(model)
    fast, fast_logs = _pairwise.weights(pw, tables)
    monkeypatch.setattr(_pairwise, "fixed_states", lambda pw: 0)
    slow, slow_logs = _pairwise.weights(pw._replace(single=False), tables)
    assert fast_logs == slow_logs and np.array_equal(fast, slow)


def _pack_reference(model):
    """The packing factor by factor (the layout :func:`factor_gibbs.pack` documents)."""
    strides = [[math.prod(t.shape[a + 1:]) for a in range(t.ndim)] for t in model.log_tables]
    sizes = [t.size for t in model.log_tables]
    offsets = np.cumsum([0] + sizes)[:-1].astype(np.int64)
    fptr = np.cumsum([0] + [len(s) for s in model.scopes]).astype(np.int64)
    fvars = np.array([v for s in model.scopes for v in s], dtype=np.int64)
    fstride = np.array([d for st in strides for d in st], dtype=np.int64)
    vf = model.variable_factors()
    vptr = np.cumsum([0] + [len(f) for f in vf]).astype(np.int64)
    vfac = np.array([k for f in vf for k in f], dtype=np.int64)
    vstride = np.array([strides[k][model.scopes[k].index(i)] for i, f in enumerate(vf)
                        for k in f], dtype=np.int64)
    tables = np.concatenate([np.zeros(0)] + [np.ravel(t) for t in model.log_tables])
    return tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets


@pytest.mark.parametrize("seed", range(6))
def test_pack_equals_the_factor_by_factor_packing(seed):
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, max_scope=1 + seed % 4, evidence=0)
    for got, want in zip(factor_gibbs.pack(model), _pack_reference(model)):
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(3))
def test_counts_by_blocks_of_factors_equal_the_row_by_row_counts(seed):
    rng = np.random.default_rng(seed)
    if seed == 0:  # more factors than one block holds
        model = lattices.potts_lattice(12, 12, 3, rng=0)
    else:
        model = random_factor_graph(rng, max_scope=3, evidence=0)
    _, _, _, _, fptr, fvars, fstride, offsets = factor_gibbs.pack(model)
    total = int(sum(t.size for t in model.log_tables))
    x = rng.integers(0, model.cardinalities, (37, model.n))
    want = _sk.factor_counts(x, fptr, fvars, fstride, offsets, total)
    threads = numba.get_num_threads()
    try:
        for t in (1, max(2, threads)):
            numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
            got = _sk.factor_counts_blocked(x, fptr, fvars, fstride, offsets, total)
            assert np.array_equal(got, want)
    finally:
        numba.set_num_threads(threads)


@pytest.mark.parametrize("seed", range(3))
def test_site_major_counts_equal_the_numpy_counts(seed):
    rng = np.random.default_rng(seed)
    if seed == 0:  # more factors than one block holds
        model = lattices.potts_lattice(12, 12, 3, rng=0)
    else:  # scopes of one to four variables
        model = random_factor_graph(rng, max_scope=4, evidence=0)
    lay = parameter_map(model, None)
    _, _, _, _, fptr, fvars, fstride, offsets = factor_gibbs.pack(model)
    total = int(lay.offsets[-1])
    x = rng.integers(0, model.cardinalities, (37, model.n))
    want = _layout.data_marginals_numpy(lay, x) * len(x)
    xt = _pairwise.site_major(x)
    threads = numba.get_num_threads()
    try:
        for t in (1, max(2, threads)):
            numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
            for kernel in (_sk.site_major_counts, _sk.site_major_counts_serial):
                got = kernel(xt, fptr, fvars, fstride, offsets, total)
                assert got.dtype == np.int64 and np.array_equal(got, want)
    finally:
        numba.set_num_threads(threads)


def test_site_major_layout_round_trips():
    x = np.random.default_rng(0).integers(0, 8, (5, 11))
    xt = _pairwise.site_major(x)
    assert xt.dtype == np.uint8 and xt.shape == (11, 5) and xt.flags.c_contiguous
    assert np.array_equal(xt, x.T)
    back = _pairwise.chain_major(xt)
    assert back.dtype == np.int64 and back.flags.c_contiguous and np.array_equal(back, x)
    big = np.random.default_rng(1).integers(0, 4, (_k.TILE + 3, 2 * _k.TILE + 1))
    assert np.array_equal(_pairwise.chain_major(_pairwise.site_major(big)), big)
    rows = np.array([4, 0, 0, 2])
    taken = _pairwise.take_chains(xt, rows)
    assert taken.flags.c_contiguous and np.array_equal(taken, xt[:, rows])


SITE_MODELS = dict(MODELS)
SITE_MODELS["log-weights"] = (FactorGraph([3, 3], [(0, 1)], [np.array(
    [[0.0, -700.0, 0.0], [0.0, 0.0, 0.0], [-700.0, 0.0, 0.0]])]), None)
SITE_MODELS["mixed states"] = (FactorGraph([2, 3, 2], [(0,), (0, 1), (1, 2)], [
    np.array([0.3, -0.2]), np.arange(6.0).reshape(2, 3) / 5, np.ones((3, 2))]), None)


@pytest.mark.parametrize("name", list(SITE_MODELS))
def test_site_major_sweeps_give_the_row_kernels_bits(name):
    """The persistent site-major chains against the same chains in rows: the fixed-state
    kernel in place, and on the other models the conversion to the general kernel."""
    model, planted = SITE_MODELS[name]
    plan = factor_gibbs.pack(model)
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    pw = _pairwise.structure(*plan[4:], card)
    M = 2 * _k.FIXED_BLOCK + 3
    x = (np.tile(planted, (M, 1)) if planted is not None
         else np.random.default_rng(0).integers(0, card, (M, model.n)))
    xt = _pairwise.site_major(x)
    factor_gibbs.advance_packed(x, 3, np.random.default_rng(5), plan, card, pw)
    got = factor_gibbs.advance_site_major(xt, 3, np.random.default_rng(5), plan, card, pw)
    assert got is xt and np.array_equal(_pairwise.chain_major(xt), x)


@pytest.mark.parametrize(("method", "options"), [
    ("pcd", {}), ("pcd", {"n_chains": 70}), ("pcd", {"extension_rate": 2, "k": 2}), ("cd", {}),
    ("cd", {"n_chains": 50})])
def test_site_major_learners_give_the_row_chains_bits(method, options, monkeypatch):
    """CD and PCD on site-major chains fit what the chains in rows fit, bit for bit (the
    rows forced by declaring no fixed number of states to the learner)."""
    truth = lattices.potts_lattice(3, 4, 3, coupling=0.4, rng=0)
    data = np.random.default_rng(1).integers(0, 3, (60, truth.n))
    fits = []
    for forced in (False, True):
        if forced:
            monkeypatch.setattr(stochastic_learning._pairwise, "fixed_states", lambda pw: 0)
        fits.append(learning.fit(data, truth, method, max_steps=6, rng=2, **options))
    monkeypatch.undo()
    site, rows = fits
    for a, b in zip(site.model.log_tables, rows.model.log_tables):
        assert np.array_equal(a, b)
    if method == "pcd":
        assert site.chains.dtype == np.int64 and np.array_equal(site.chains, rows.chains)


@pytest.mark.parametrize(("options", "patterns"), [
    ({}, True), ({}, False), ({"estimator": "mci"}, True),
    ({"extension_rate": 2, "kappa": 2}, True), ({"extension_rate": 2, "kappa": 2}, False),
    ({"samples": True}, True)])
def test_site_major_smci_pcd_gives_the_row_chains_bits(options, patterns, monkeypatch):
    """SMCI-PCD on site-major chains (swept in place, 1-SMCI reading them unpadded or
    padded, the data's counts read from them before the first sweep) fits what the
    chains in rows fit, bit for bit, by the tables over the neighbours' configurations
    and by the row-by-row kernel (60 and 120 chains: not a multiple of the kernel's row
    block), from the data or from samples of their own."""
    truth = lattices.potts_lattice(3, 4, 3, coupling=0.4, rng=0)
    data = np.random.default_rng(1).integers(0, 3, (60, truth.n))
    if "samples" in options:
        options = {"samples": np.random.default_rng(4).integers(0, 3, (60, truth.n))}
    fits = []
    for forced in (False, True):
        if not patterns:
            monkeypatch.setattr(stochastic_learning._scope_patterns, "applies",
                                lambda pw, n: False)
        if forced:
            monkeypatch.setattr(stochastic_learning._pairwise, "fixed_states", lambda pw: 0)
        fits.append(learning.fit(data, truth, "smci-pcd", max_steps=5, rng=2, **options))
    monkeypatch.undo()
    site, rows = fits
    for a, b in zip(site.model.log_tables, rows.model.log_tables):
        assert np.array_equal(a, b)
    assert site.chains.dtype == np.int64 and np.array_equal(site.chains, rows.chains)
