"""The pairwise Gibbs backend: its distribution against enumeration and the general kernel,
its numpy reference, its seeded bits and their independence of the threads."""

import numba
import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import FactorGraph
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import _pairwise_kernels as _k
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.models import lattices
from mrflib.models.factor_graph import all_states


def _exact(model):
    """Every state and its probability, by enumeration."""
    x = all_states(model.cardinalities)
    with np.errstate(invalid="ignore"):
        lw = model.log_weight(x)
    p = np.exp(lw - lw.max())
    return x, p / p.sum()


def _within(model, samples, chains, pairs):
    """Largest |estimate - exact| / standard error over the marginals and the pair
    marginals ``pairs`` (each pair's joint state as one variable)."""
    x, p = _exact(model)
    card = model.cardinalities
    cols, cards, truth = [], [], []
    for i in range(model.n):
        cols.append(samples[:, i])
        cards.append(card[i])
        truth.append(np.bincount(x[:, i], weights=p, minlength=card[i]))
    for i, j in pairs:
        cols.append(samples[:, i] * card[j] + samples[:, j])
        cards.append(card[i] * card[j])
        truth.append(np.bincount(x[:, i] * card[j] + x[:, j], weights=p,
                                 minlength=card[i] * card[j]))
    means, ses = factor_gibbs.estimate_marginals(np.stack(cols, axis=1), cards,
                                                 n_chains=chains)
    worst = 0.0
    for t, m, s in zip(truth, means, ses):
        exact_zero = t == 0
        assert np.all(m[exact_zero] == 0)  # never a state of zero probability
        worst = max(worst, float(np.max(np.abs(m - t)[~exact_zero]
                                        / np.maximum(s[~exact_zero], 1e-3))))
    return worst


def _pairwise_graph(rng, n, card, p_edge, scale, zeros):
    """A random graph's pairwise model with fields, zero weights and a planted state."""
    planted = np.array([rng.integers(c) for c in card])
    scopes = [(i,) for i in range(n)]
    tables = [rng.normal(scale=scale, size=c) for c in card]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p_edge:
                s = (i, j) if rng.random() < 0.5 else (j, i)
                t = rng.normal(scale=scale, size=(card[s[0]], card[s[1]]))
                t[rng.random(t.shape) < zeros] = -np.inf
                t[planted[s[0]], planted[s[1]]] = 0.0
                scopes.append(s)
                tables.append(t)
    return FactorGraph(card, scopes, tables), planted


def _models():
    rng = np.random.default_rng(7)
    out = {}
    for q in (2, 3, 5):
        out[f"lattice q={q}"] = (lattices.potts_lattice(2, 3, q, coupling=0.6,
                                                        couplings="mixed", rng=q), None)
    card = np.array([2, 3, 5, 3, 2, 4])
    model, planted = _pairwise_graph(rng, 6, card, 0.6, 0.8, 0.2)
    out["random graph, zeros"] = (model, None)
    out["random graph, zeros, evidence"] = (model, {2: int(planted[2])})
    return out


MODELS = _models()


def _pairs(model):
    return sorted({tuple(sorted(s)) for s in model.scopes if len(s) == 2})


@pytest.mark.parametrize("name", list(MODELS))
def test_pairwise_kernel_matches_enumeration(name):
    model, evidence = MODELS[name]
    assert _pairwise.structure(*factor_gibbs.pack(model)[4:], model.cardinalities) is not None
    x = factor_gibbs.gibbs(model, 20_000, burn_in=20, thin=2, n_chains=400,
                           evidence=evidence, rng=1)
    cond = model.condition(evidence) if evidence else model
    assert _within(cond, x, 400, _pairs(model)) < 5.0


@pytest.mark.parametrize("name", ["lattice q=3", "random graph, zeros, evidence"])
def test_general_kernel_on_the_same_models_matches_enumeration(name, monkeypatch):
    """The general kernel, forced, meets the same bounds: the two samplers agree in
    distribution."""
    model, evidence = MODELS[name]
    monkeypatch.setattr(_pairwise, "structure", lambda *a: None)
    x = factor_gibbs.gibbs(model, 20_000, burn_in=20, thin=2, n_chains=400,
                           evidence=evidence, rng=1)
    cond = model.condition(evidence) if evidence else model
    assert _within(cond, x, 400, _pairs(model)) < 5.0


def test_log_weights_path_when_rows_span_too_much():
    """A field spanning 700 in log-weight could underflow a product of rows: the kernel
    adds log-weights instead, with the same distribution."""
    rng = np.random.default_rng(3)
    card = np.array([3, 3, 3, 3])
    model, _ = _pairwise_graph(rng, 4, card, 1.0, 1.0, 0.0)
    big = FactorGraph(card, list(model.scopes) + [(0,)],
                      list(model.log_tables) + [np.array([0.0, -700.0, -1.0])])
    pw = _pairwise.structure(*factor_gibbs.pack(big)[4:], big.cardinalities)
    assert _pairwise.weights(pw, factor_gibbs.flat_tables(big))[1]
    x = factor_gibbs.gibbs(big, 20_000, burn_in=20, thin=2, n_chains=400, rng=2)
    assert _within(big, x, 400, _pairs(big)) < 5.0
    ref = factor_gibbs.gibbs_numpy(big, 200, burn_in=3, n_chains=20, rng=2)
    assert np.mean(factor_gibbs.gibbs(big, 200, burn_in=3, n_chains=20, rng=2) != ref) < 1e-3


@pytest.mark.parametrize("name", list(MODELS))
def test_numpy_reference_gives_the_same_bits(name):
    model, evidence = MODELS[name]
    kw = dict(burn_in=3, thin=2, n_chains=20, evidence=evidence, rng=4)
    a = factor_gibbs.gibbs(model, 60, **kw)
    assert np.array_equal(a, factor_gibbs.gibbs_numpy(model, 60, **kw))
    assert np.array_equal(a, factor_gibbs.gibbs(model, 60, **kw))


@pytest.mark.parametrize("seed", range(3))
def test_random_factor_graphs_of_pairs_reference_and_support(seed):
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, max_scope=2, evidence=seed % 2)
    kw = dict(burn_in=2, n_chains=9, rng=seed)
    a = factor_gibbs.gibbs(model, 27, **kw)
    assert np.array_equal(a, factor_gibbs.gibbs_numpy(model, 27, **kw))
    with np.errstate(invalid="ignore"):
        assert np.all(model.log_weight(a) > -np.inf)


def test_advance_continues_gibbs_and_duplicate_factors_are_summed():
    model = lattices.potts_lattice(3, 3, 3, rng=0)
    start = factor_gibbs.gibbs(model, 40, burn_in=1, rng=0)
    want = factor_gibbs.gibbs(model, 40, burn_in=4, init=start, n_chains=40, rng=9)
    assert np.array_equal(factor_gibbs.advance(model, start.copy(), 4, rng=9), want)
    # each coupling split in two halves, one of them transposed: summed, the same tables
    scopes = list(model.scopes)
    tables = [0.5 * t if len(s) == 2 else t for s, t in zip(model.scopes, model.log_tables)]
    for s, t in zip(model.scopes, model.log_tables):
        if len(s) == 2:
            scopes.append((s[1], s[0]))
            tables.append(0.5 * np.ascontiguousarray(t.T))
    split = FactorGraph(model.cardinalities, scopes, tables)
    got = factor_gibbs.gibbs(split, 40, burn_in=4, init=start, n_chains=40, rng=9)
    assert np.array_equal(got, want)


def test_colouring_is_proper_and_two_colours_on_a_lattice():
    lat = lattices.potts_lattice(4, 5, 2, rng=0)
    pw = _pairwise.structure(*factor_gibbs.pack(lat)[4:], lat.cardinalities)
    assert set(pw.colour.tolist()) == {0, 1}
    model, _ = _pairwise_graph(np.random.default_rng(1), 9, np.full(9, 3), 0.7, 1.0, 0.0)
    pw = _pairwise.structure(*factor_gibbs.pack(model)[4:], model.cardinalities)
    centre = np.repeat(np.arange(model.n), np.diff(pw.nptr))
    assert pw.colour.max() >= 2 and np.all(pw.colour[centre] != pw.colour[pw.nbr])
    order = _pairwise.sweep_order(pw, np.arange(model.n))
    assert sorted(order.tolist()) == list(range(model.n))
    assert np.all(np.diff(pw.colour[order]) >= 0)


def test_higher_order_models_are_not_pairwise():
    tri = lattices.triangle_lattice(2, 2, 2, rng=0)
    assert _pairwise.structure(*factor_gibbs.pack(tri)[4:], tri.cardinalities) is None


def test_bits_do_not_depend_on_the_threads():
    model = lattices.potts_lattice(4, 4, 3, rng=2)
    pw = _pairwise.structure(*factor_gibbs.pack(model)[4:], model.cardinalities)
    w, logs = _pairwise.weights(pw, factor_gibbs.flat_tables(model))
    order = _pairwise.sweep_order(pw, np.arange(model.n))
    M = 3 * _k.CHAIN_BLOCK + 5
    x0 = np.random.default_rng(0).integers(0, 3, (M, model.n))
    keys = np.random.default_rng(1).integers(0, 2**64, M, dtype=np.uint64)
    record = np.array([-1, 0, -1, 1])
    runs = []
    threads = numba.get_num_threads()
    try:
        for kernel, t in ((_k.sweeps_serial, 1), (_k.sweeps_parallel, 1),
                          (_k.sweeps_parallel, max(2, threads))):
            numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
            x = x0.copy()
            out = np.empty((2, M, model.n), dtype=np.int64)
            kernel(x, w, order, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, logs, keys,
                   record, out)
            runs.append((x, out))
    finally:
        numba.set_num_threads(threads)
    for x, out in runs[1:]:
        assert np.array_equal(x, runs[0][0]) and np.array_equal(out, runs[0][1])
    assert np.array_equal(runs[0][1][1], runs[0][0])  # the last sweep is recorded
    ref = x0.copy()
    ref_out = _pairwise.run_numpy(pw, w, logs, ref, order, keys, record, 2)
    assert np.array_equal(ref, runs[0][0]) and np.array_equal(ref_out, runs[0][1])
