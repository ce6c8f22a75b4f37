"""Tests of mrflib.inference.smci against brute-force enumeration (GSMCI paper, eq. 8, 12-26)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, smci
from mrflib.inference.smci import _spin_estimators as se
from mrflib.repro import smci_trials

TOL = 1e-12


# ----------------------------------------------------------------------------- references
def naive_rho(bm, x, T, A):
    """Brute force eq. (13): sum over x_A of f(x_T) P(x_A | rest of x), from log_weight."""
    A = list(A)
    if not A:
        return float(np.prod(x[list(T)]))
    num = den = 0.0
    lws, fs = [], []
    for vals in itertools.product((-1, 1), repeat=len(A)):
        y = x.copy()
        y[A] = vals
        lws.append(bm.log_weight(y))
        fs.append(np.prod(y[list(T)]))
    lws = np.array(lws)
    w = np.exp(lws - lws.max())
    num, den = float(np.dot(w, fs)), float(w.sum())
    return num / den


def naive_gsmci(bm, samples, T, A):
    return float(np.mean([naive_rho(bm, x, T, A) for x in samples]))


def naive_variance(bm, T, A):
    """M v(A) of eq. (12) by brute force: Var over exact P of the per-state terms."""
    X = exact.states(bm.n)
    p = exact.probabilities(bm)
    rho = np.array([naive_rho(bm, x, T, A) for x in X])
    return float(p @ rho**2 - (p @ rho) ** 2)


def models():
    """Small models of different shapes (grid, random, dense, isolated node, no bias)."""
    out = []
    e = graphs.square_grid(3, 3)
    out.append(BoltzmannMachine.random(e, 9, bias_scale=0.5, coupling_scale=0.8, rng=1))
    e = graphs.random_graph(8, 0.45, rng=3)
    out.append(BoltzmannMachine.random(e, 8, bias_scale=0.3, coupling_scale=1.0, rng=2))
    e = graphs.complete(6)
    out.append(BoltzmannMachine.random(e, 6, bias_scale=0.2, coupling_scale=0.5, rng=4))
    e = np.array([[0, 1], [1, 2], [1, 3], [2, 3]])  # node 4 isolated
    out.append(BoltzmannMachine.random(e, 5, bias_scale=0.4, coupling_scale=0.6, rng=5))
    e = graphs.square_grid(2, 4)
    bm = BoltzmannMachine.random(e, 8, rng=6)
    out.append(BoltzmannMachine(np.zeros(8), e, bm.coupling))  # no bias (learning use)
    return out


MODELS = models()


def targets(bm):
    return [np.array([i]) for i in range(bm.n)] + [e for e in bm.edges]


# ----------------------------------------------------------------------------- moments
@pytest.mark.parametrize("method", smci.METHODS)
@pytest.mark.parametrize("k", range(len(MODELS)))
def test_moments_match_bruteforce_gsmci(method, k):
    bm = MODELS[k]
    s = exact.sample(bm, 13, rng=k)
    mean, pair = smci.moments(bm, s, method)
    assert mean.shape == (bm.n,) and pair.shape == (len(bm.edges),)
    ref = [naive_gsmci(bm, s, T, smci.sum_region(bm, T, method)) for T in targets(bm)]
    np.testing.assert_allclose(mean, ref[: bm.n], rtol=0, atol=TOL)
    np.testing.assert_allclose(pair, ref[bm.n:], rtol=0, atol=TOL)


@pytest.mark.parametrize("method", smci.METHODS)
@pytest.mark.parametrize("M", [1, 7, 300])
def test_moments_match_numpy_reference(method, M):
    for bm in MODELS:
        s = exact.sample(bm, M, rng=M)
        got = smci.moments(bm, s, method)
        ref = se._moments_numpy(bm, s, method)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=0, atol=TOL)


def test_numpy_reference_on_a_large_sparse_graph():
    # n > 256 takes the sparse-gather path of the numpy reference
    bm = BoltzmannMachine.random(graphs.square_grid(17, 17), 289, rng=3)
    s = (2 * np.random.default_rng(0).integers(0, 2, size=(7, 289)) - 1).astype(np.int8)
    for method in ("1-smci", "s2-smci"):
        for a, b in zip(smci.moments(bm, s, method), se._moments_numpy(bm, s, method)):
            np.testing.assert_allclose(a, b, rtol=0, atol=TOL)


def test_regions_of_methods():
    bm = MODELS[0]  # 3x3 grid, node 4 in the middle
    assert smci.sum_region(bm, [4], "mci").size == 0
    assert smci.sum_region(bm, [4], "1-smci").tolist() == [4]
    assert smci.sum_region(bm, [4], "2-smci").tolist() == [1, 3, 4, 5, 7]
    # neighbours of a grid node are independent, so s2 = 2-SMCI for node targets
    assert smci.sum_region(bm, [4], "s2-smci").tolist() == [1, 3, 4, 5, 7]
    assert smci.sum_region(bm, [4], "k-smci", k=3).tolist() == list(range(9))


def test_mci_is_sample_average():
    bm = MODELS[1]
    s = exact.sample(bm, 50, rng=0)
    mean, pair = smci.moments(bm, s, "mci")
    np.testing.assert_allclose(mean, s.mean(0), atol=TOL)
    np.testing.assert_allclose(pair, (s[:, bm.edges[:, 0]] * s[:, bm.edges[:, 1]]).mean(0),
                               atol=TOL)


def test_strong_couplings_stay_accurate():
    e = graphs.square_grid(3, 3)
    bm = BoltzmannMachine.random(e, 9, bias_scale=2.0, coupling_scale=4.0, rng=7)
    s = exact.sample(bm, 20, rng=1)
    for method in smci.METHODS:
        mean, pair = smci.moments(bm, s, method)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(pair))
        ref = [naive_gsmci(bm, s, T, smci.sum_region(bm, T, method)) for T in targets(bm)]
        np.testing.assert_allclose(np.concatenate([mean, pair]), ref, rtol=0, atol=1e-9)


def test_table_and_direct_paths_agree():
    # few samples: high-degree nodes skip the memo tables (2^deg > M)
    bm = MODELS[2]
    for M in (1, 3, 40, 200):
        s = exact.sample(bm, M, rng=M)
        a = smci.moments(bm, s, "1-smci")
        b = se._moments_numpy(bm, s, "1-smci")
        np.testing.assert_allclose(a[0], b[0], atol=TOL)
        np.testing.assert_allclose(a[1], b[1], atol=TOL)


def test_moments_deterministic():
    bm = MODELS[0]
    s = exact.sample(bm, 100, rng=0)
    for method in smci.METHODS:
        a = smci.moments(bm, s, method)
        b = smci.moments(bm, s.copy(), method)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_estimators_converge_to_exact():
    bm = MODELS[0]
    s = exact.sample(bm, 20000, rng=11)
    m_ex, p_ex = exact.moments(bm)
    for method in smci.METHODS:
        mean, pair = smci.moments(bm, s, method)
        assert np.max(np.abs(mean - m_ex)) < 0.05
        assert np.max(np.abs(pair - p_ex)) < 0.05


# ----------------------------------------------------------------------------- GSMCI
def test_gsmci_general_regions_match_bruteforce():
    rng = np.random.default_rng(0)
    for bm in MODELS:
        s = exact.sample(bm, 9, rng=rng)
        for _ in range(6):
            size_t = int(rng.integers(1, 4))
            T = np.sort(rng.choice(bm.n, size=size_t, replace=False))
            extra = rng.choice(np.setdiff1d(np.arange(bm.n), T),
                               size=int(rng.integers(0, bm.n - size_t + 1)), replace=False)
            A = np.union1d(T, extra)
            got = smci.gsmci(bm, s, T, A)
            assert abs(got - naive_gsmci(bm, s, T, A)) < TOL
            vals = smci.gsmci_values(bm, s, T, A)
            assert vals.shape == (9,)
            np.testing.assert_allclose(vals, [naive_rho(bm, x, T, A) for x in s], atol=TOL)
        # empty region is MCI; whole graph is the exact value
        T = [0, bm.n - 1]
        assert smci.gsmci(bm, s, T, []) == pytest.approx(np.mean(s[:, 0] * s[:, -1]), abs=TOL)
        full = smci.gsmci(bm, s, T, np.arange(bm.n))
        C = exact.correlation_matrix(bm)
        assert abs(full - C[0, bm.n - 1]) < TOL


# ----------------------------------------------------------------------------- s2 regions
def is_independent(edges, nodes):
    s = set(nodes)
    return not any(i in s and j in s for i, j in edges.tolist())


def test_s2_region_is_maximal_independent_set_of_N1():
    for bm in MODELS + [BoltzmannMachine.random(graphs.random_graph(14, 0.4, rng=9), 14,
                                                rng=9)]:
        nb = graphs.neighbours(bm.edges, bm.n)
        for T in targets(bm):
            I = smci.s2_independent_set(bm, T)
            N1 = graphs.N_k(bm.edges, bm.n, T, 1)
            assert set(I) <= set(N1)
            assert is_independent(bm.edges, I)
            # maximal: every other node of N_1(T) touches I (the loop ran until U was empty)
            for j in set(N1.tolist()) - set(I.tolist()):
                assert set(nb[j].tolist()) & set(I.tolist())
            assert smci.s2_region(bm, T).tolist() == sorted(set(T.tolist()) | set(I.tolist()))


def test_s2_tie_break_by_W():
    # T = {0}; N_1 = {1, 2} joined by an edge: both have degree 1 in U, the one with the
    # stronger coupling to the target wins (section 4.1)
    e = np.array([[0, 1], [0, 2], [1, 2]])
    bm = BoltzmannMachine(np.zeros(3), e, [0.1, -0.5, 0.3])
    assert smci.s2_independent_set(bm, [0]).tolist() == [2]
    bm = BoltzmannMachine(np.zeros(3), e, [-0.6, 0.5, 0.3])
    assert smci.s2_independent_set(bm, [0]).tolist() == [1]
    # minimum degree first: a path 1-2-3 around target 0 gives {1, 3}, not {2}
    e = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]])
    bm = BoltzmannMachine(np.zeros(4), e, [0.1, 0.9, 0.1, 0.2, 0.2])
    assert smci.s2_independent_set(bm, [0]).tolist() == [1, 3]


# ----------------------------------------------------------------------------- variance
def test_asymptotic_variance_matches_bruteforce():
    bm = MODELS[3]
    for T in ([0], [1, 2], [2, 3], [4], [0, 3]):
        for A in ([], T, sorted(set(T) | {1}), list(range(bm.n))):
            if A and not set(T) <= set(A):
                continue
            got = smci.asymptotic_variance(bm, T, A)
            assert abs(got - naive_variance(bm, T, A)) < TOL
    # MCI: Var f = 1 - <f>^2 ; whole graph: zero
    mean, _ = exact.moments(bm)
    assert abs(smci.asymptotic_variance(bm, [0], []) - (1 - mean[0] ** 2)) < TOL
    assert smci.asymptotic_variance(bm, [0], range(bm.n)) < TOL


def test_theorem_2_nested_regions():
    rng = np.random.default_rng(1)
    for bm in MODELS[:3]:
        for _ in range(4):
            T = np.sort(rng.choice(bm.n, size=int(rng.integers(1, 3)), replace=False))
            rest = rng.permutation(np.setdiff1d(np.arange(bm.n), T))
            chain = [np.array([], dtype=int)] + [np.union1d(T, rest[:k])
                                                for k in range(len(rest) + 1)]
            v = [smci.asymptotic_variance(bm, T, A) for A in chain]
            assert all(a >= b - 1e-14 for a, b in zip(v, v[1:])), v
            assert v[-1] < 1e-12


def test_method_ordering_of_variances():
    for bm in MODELS:
        for T in targets(bm):
            v = [smci.asymptotic_variance(bm, T, smci.sum_region(bm, T, m))
                 for m in smci.METHODS]
            assert all(a >= b - 1e-14 for a, b in zip(v, v[1:])), (T, v)


# ----------------------------------------------------------------------------- bad input
def test_bad_input_raises():
    bm = MODELS[0]
    s = exact.sample(bm, 5, rng=0)
    with pytest.raises(ValueError, match="method"):
        smci.moments(bm, s, "3-smci")
    with pytest.raises(ValueError, match="samples"):
        smci.moments(bm, s[:, :4], "1-smci")
    with pytest.raises(ValueError, match="samples"):
        smci.moments(bm, np.zeros_like(s), "1-smci")
    with pytest.raises(ValueError, match="samples"):
        smci.moments(bm, s[:0], "mci")
    with pytest.raises(TypeError, match="model"):
        smci.moments("not a model", s, "mci")
    with pytest.raises(ValueError, match="region"):
        smci.gsmci(bm, s, [0, 1], [0, 2])
    with pytest.raises(ValueError, match="target"):
        smci.gsmci(bm, s, [], [0])
    with pytest.raises(ValueError, match="target"):
        smci.gsmci(bm, s, [9], [9])
    with pytest.raises(ValueError, match="region"):
        smci.asymptotic_variance(bm, [0], [1, 1])
    with pytest.raises(ValueError, match="k"):
        smci.sum_region(bm, [0], "k-smci", k=0)
    with pytest.raises(ValueError, match="method"):
        smci.sum_region(bm, [0], "smci")
    with pytest.raises(ValueError, match="target"):
        smci.s2_region(bm, [0, 0])
    with pytest.raises(ValueError, match="mean"):
        smci.covariances(bm, np.zeros(3), np.zeros(3))
    big = BoltzmannMachine.random(graphs.complete(30), 30, rng=0)
    with pytest.raises(ValueError, match="region"):
        smci.gsmci(big, np.ones((1, 30)), [0], np.arange(30))


def test_covariances():
    bm = MODELS[1]
    mean, pair = exact.moments(bm)
    cov = smci.covariances(bm, mean, pair)
    C = exact.covariance_matrix(bm)
    np.testing.assert_allclose(cov, C[bm.edges[:, 0], bm.edges[:, 1]], atol=TOL)


def test_large_region_gray_code_walk():
    # an 11-spin sum region exercises the periodic recomputation of the Gray-code walk;
    # reference: the conditional from the full table of 2^12 log-weights
    e = graphs.square_grid(3, 4)
    bm = BoltzmannMachine.random(e, 12, bias_scale=0.5, coupling_scale=1.0, rng=8)
    s = exact.sample(bm, 6, rng=2)
    T, A = [5, 6], [i for i in range(12) if i != 0]
    X = exact.states(12)
    lw = exact.log_weights(bm)
    for x in s:
        keep = X[:, 0] == x[0]
        w = np.exp(lw[keep] - lw[keep].max())
        ref = float(w @ (X[keep, 5] * X[keep, 6]) / w.sum())
        assert abs(smci.gsmci(bm, x[None], T, A) - ref) < TOL


# ----------------------------------------------------------------------------- AIS, experiment
def test_ais_moments_converge_and_are_deterministic():
    bm = MODELS[0]
    m_ex, p_ex = exact.moments(bm)
    mean, pair = smci.ais_moments(bm, 3000, beta_step=0.02, rng=0)
    assert np.max(np.abs(mean - m_ex)) < 0.1 and np.max(np.abs(pair - p_ex)) < 0.1
    a = smci.ais_moments(bm, 20, beta_step=0.1, rng=5)
    b = smci.ais_moments(bm, 20, beta_step=0.1, rng=5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="beta_step"):
        smci.ais_moments(bm, 10, beta_step=0.0, rng=0)
    with pytest.raises(ValueError, match="beta_step"):
        smci.ais_moments(bm, 10, beta_step=2.0, rng=0)
    with pytest.raises(ValueError, match="rng"):
        smci.ais_moments(bm, 10, rng=None)


def test_covariance_mae_trial():
    bm = MODELS[0]
    rows = smci_trials.covariance_mae_trial(bm, [5, 50], burn_in=5, rng=0, ais_beta_step=0.5)
    assert [(r["M"], r["method"]) for r in rows] == [
        (M, m) for M in (5, 50) for m in (*smci.METHODS, "ais")]
    assert all(np.isfinite(r["mae"]) and r["mae"] >= 0 for r in rows)
    again = smci_trials.covariance_mae_trial(bm, [5, 50], burn_in=5, rng=0, ais_beta_step=0.5)
    assert rows == again
    with pytest.raises(ValueError, match="method"):
        smci_trials.covariance_mae_trial(bm, [5], ["mle"], burn_in=5, rng=0)


def test_s2_structure_kernel_matches_python_reference():
    rng = np.random.default_rng(4)
    for t in range(60):
        n = int(rng.integers(2, 14))
        e = graphs.random_graph(n, rng.uniform(0.1, 0.9), rng=rng)
        if len(e) == 0:
            continue
        # discrete couplings make ties of W_j frequent
        c = rng.choice([-0.5, 0.5, 0.3, 0.0], size=len(e)) if t % 2 else rng.uniform(-1, 1, len(e))
        bm = BoltzmannMachine(np.zeros(n), e, c)
        for a, b in zip(se._s2_structure(bm), se._s2_structure_reference(bm)):
            assert np.array_equal(a, b)


# ----------------------------------------------------------------------------- properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

reals = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(a=reals, b=reals, c=reals, s=st.sampled_from([-1, 1]), t=st.sampled_from([-1, 1]))
def test_one_edge_closed_forms_equal_enumeration(a, b, c, s, t):
    # a single edge (0, 1) with a boundary spin 2 coupled to both: eq. (14)-(15) and
    # eq. (22)-(26) (node 2 is the independent set of the edge target) against eq. (8)
    e = np.array([[0, 1], [0, 2], [1, 2]])
    bm = BoltzmannMachine([a, b, 0.5 * c], e, [c, 0.7 * a, -0.4 * b])
    x = np.array([[s, t, s * t]])
    for method in ("1-smci", "s2-smci", "2-smci"):
        mean, pair = smci.moments(bm, x, method)
        for T, got in [([0], mean[0]), ([1], mean[1]), ([0, 1], pair[0])]:
            ref = naive_gsmci(bm, x, T, smci.sum_region(bm, T, method))
            assert abs(got - ref) < 1e-12


def test_1smci_count_path_matches_per_sample_kernel():
    """With every node and edge tabulated (sparse graph, many samples) 1-SMCI is computed
    from configuration counts, cached by content; it must equal the per-sample kernel and
    the numpy reference, and a changed sample set must not hit the cache."""
    from mrflib.inference.smci import _smci_kernels as K

    bm = BoltzmannMachine.random(graphs.square_grid(3, 4), 12, bias_scale=0.4,
                                 coupling_scale=0.6, rng=4)
    s = exact.sample(bm, 3000, rng=2)
    mean, pair = smci.moments(bm, s, "1-smci")
    ref_mean, ref_pair = se._moments_numpy(bm, s, "1-smci")
    np.testing.assert_allclose(mean, ref_mean, atol=1e-12)
    np.testing.assert_allclose(pair, ref_pair, atol=1e-12)
    g, weights, E = bm.graph.structure, bm.adjacency()[2], len(bm.edges)
    tables = K.smci1_tables(g, bm.bias, weights, bm.coupling, np.ones(12, bool),
                            np.zeros(E, bool))
    per_sample = K.smci1_moments(s, g, bm.bias, weights, bm.coupling, tables)
    np.testing.assert_allclose(pair, per_sample[1], atol=1e-12)
    s2 = s.copy()
    s2[:, 0] *= -1
    assert not np.allclose(smci.moments(bm, s2, "1-smci")[1], pair)
    np.testing.assert_allclose(smci.moments(bm, s2, "1-smci")[1],
                               se._moments_numpy(bm, s2, "1-smci")[1], atol=1e-12)


# ----------------------------------------------------------------------------- numerical range
def extreme_model(J, graph="grid", seed=0):
    """A frustrated model with couplings of magnitude about ``J`` (mixed signs) and biases
    of magnitude up to ``0.3 J``: tanh of every coupling rounds to +-1 once |J| >~ 19."""
    e = graphs.square_grid(3, 3) if graph == "grid" else graphs.complete(5)
    n = int(e.max()) + 1
    rng = np.random.default_rng(seed)
    coupling = J * rng.choice([-1.0, 1.0], size=len(e)) * rng.uniform(0.5, 1.0, len(e))
    return BoltzmannMachine(0.3 * J * rng.uniform(-1, 1, n), e, coupling)


@pytest.mark.parametrize("graph", ["grid", "complete"])
@pytest.mark.parametrize("J", [5.0, 20.0, 40.0, 1e3])
def test_estimators_finite_and_exact_at_large_couplings(J, graph):
    """Extreme couplings: 1-SMCI, s2-SMCI and 2-SMCI stay finite and equal the brute-force
    conditional expectations (eq. 13) for |J| in {5, 20, 40, 1e3}; uniform random sample
    points reach the configurations where tanh(J) rounding to 1 used to divide by zero."""
    bm = extreme_model(J, graph)
    s = (2 * np.random.default_rng(1).integers(0, 2, size=(60, bm.n)) - 1).astype(np.int8)
    s = np.concatenate([s, exact.sample(bm, 20, rng=2)])
    for method in ("1-smci", "s2-smci", "2-smci"):
        mean, pair = smci.moments(bm, s, method)
        ref_mean, ref_pair = se._moments_numpy(bm, s, method)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(pair))
        for t, T in enumerate(targets(bm)):
            A = smci.sum_region(bm, T, method)
            want = naive_gsmci(bm, s, T, A)
            got = mean[t] if t < bm.n else pair[t - bm.n]
            ref = ref_mean[t] if t < bm.n else ref_pair[t - bm.n]
            assert abs(got - want) < 1e-9, (method, T.tolist(), got, want)
            assert abs(ref - want) < 1e-9, (method, T.tolist(), ref, want)


@pytest.mark.parametrize("J", [5.0, 20.0, 40.0, 1e3])
def test_tabulated_and_per_sample_paths_agree_at_large_couplings(J):
    """The count/table path (many samples) and the per-sample path (few samples) of 1-SMCI
    and s2-SMCI give the same finite values at large couplings."""
    bm = extreme_model(J)
    s = (2 * np.random.default_rng(3).integers(0, 2, size=(4000, bm.n)) - 1).astype(np.int8)
    for method in ("1-smci", "s2-smci"):
        many = smci.moments(bm, s, method)
        few = [smci.moments(bm, s[k:k + 1], method) for k in range(0, 4000, 400)]
        ref = se._moments_numpy(bm, s[::400], method)
        assert np.all(np.isfinite(many[0])) and np.all(np.isfinite(many[1]))
        np.testing.assert_allclose(np.mean([f[0] for f in few], 0), ref[0], atol=1e-9)
        np.testing.assert_allclose(np.mean([f[1] for f in few], 0), ref[1], atol=1e-9)
        np.testing.assert_allclose(many[0], se._moments_numpy(bm, s, method)[0], atol=1e-9)
        np.testing.assert_allclose(many[1], se._moments_numpy(bm, s, method)[1], atol=1e-9)


@pytest.mark.parametrize("J", [5.0, 20.0, 40.0, 1e3])
def test_asymptotic_variance_finite_at_large_couplings(J):
    """Eq. (12) stays finite, agrees with the brute force and keeps Theorem 2's order."""
    bm = extreme_model(J)
    for T in ([4], [0, 1]):
        A1 = np.asarray(T)
        A2 = smci.sum_region(bm, T, "2-smci")
        v0 = smci.asymptotic_variance(bm, T, [])
        v1 = smci.asymptotic_variance(bm, T, A1)
        v2 = smci.asymptotic_variance(bm, T, A2)
        assert all(np.isfinite(v) and v >= 0 for v in (v0, v1, v2))
        assert v0 + 1e-12 >= v1 and v1 + 1e-12 >= v2
        assert abs(v1 - naive_variance(bm, T, A1)) < 1e-9


def test_ais_finite_at_large_couplings():
    bm = extreme_model(1e3)
    mean, pair = smci.ais_moments(bm, 4, beta_step=0.25, rng=0)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(pair))
    assert np.all(np.abs(mean) <= 1) and np.all(np.abs(pair) <= 1)


# ----------------------------------------------------------------------------- renamed
RENAMED_BM = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, coupling_scale=0.5, rng=2)
RENAMED_DATA = exact.sample(RENAMED_BM, 20, rng=0)
RENAMED = [
    ("s2_independent_set", dict(target=[0])),
    ("s2_region", dict(target=[0])),
    ("sum_region", dict(target=[0], method="k-smci", k=2)),
    ("gsmci_values", dict(samples=RENAMED_DATA, target=[0, 1], region=[0, 1, 2])),
    ("gsmci", dict(samples=RENAMED_DATA, target=[0, 1], region=[0, 1, 2])),
    ("covariances", dict(mean=np.zeros(6), pair=np.zeros(len(RENAMED_BM.edges)))),
    ("asymptotic_variance", dict(target=[0], region=[0, 1])),
    ("ais_moments", dict(n_samples=3, beta_step=0.25, rng=0)),
]


@pytest.mark.parametrize("name, kwargs", RENAMED, ids=[r[0] for r in RENAMED])
def test_model_argument_is_model_and_bm_still_works_with_a_warning(name, kwargs):
    import warnings

    fn = getattr(smci, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = fn(model=RENAMED_BM, **kwargs)
    with pytest.warns(FutureWarning, match=rf"{name}\(bm=\.\.\.\)"):
        got = fn(bm=RENAMED_BM, **kwargs)
    for a, b in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                    np.atleast_1d(want) if not isinstance(want, tuple) else want):
        np.testing.assert_array_equal(a, b)
