"""Tests of mrflib.learning.learners against independent, brute-force references.

The references here use only ``BoltzmannMachine.log_weight`` and itertools
enumeration: objectives are evaluated from their definitions (flipped-spin ratios),
their gradients by central finite differences, the exact moments by summing over
all states.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib.learning import learners
from mrflib.learning._problem import Problem
from mrflib.repro import learning_trials

# ----------------------------------------------------------------------------- references


def all_states(n):
    return np.array(list(itertools.product([-1, 1], repeat=n)), dtype=np.int8)


def brute_moments(bm):
    """Exact <x_i> and edge <x_i x_j> by summing log_weight over every state."""
    s = all_states(bm.n)
    lw = bm.log_weight(s)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    sf = s.astype(float)
    e = bm.edges
    return p @ sf, p @ (sf[:, e[:, 0]] * sf[:, e[:, 1]])


def flip_ratios(bm, data):
    """lw(x) - lw(x^{-i}) for every data point and node, from log_weight only."""
    x = np.asarray(data, dtype=np.int8)
    lw = bm.log_weight(x)
    out = np.empty(x.shape)
    for i in range(bm.n):
        y = x.copy()
        y[:, i] = -y[:, i]
        out[:, i] = lw - bm.log_weight(y)
    return out


def ref_objective(bm, data, method):
    """The objectives from their definitions (to be maximised)."""
    d = flip_ratios(bm, data)  # log P(x)/P(x^-i)
    if method == "mple":  # sum_i log P(x_i | x_-i), eq. (7)
        val = -np.logaddexp(0.0, -d)
    elif method == "rm":  # -sum_i g(P(x)/P(x^-i))^2, g(r) = 1/(1+r)
        val = -(1.0 / (1.0 + np.exp(d))) ** 2
    else:  # -sum_i exp((E(x) - E(x^-i))/2), E = -log weight
        val = -np.exp(-d / 2.0)
    return val.sum(axis=1).mean()


def fd_gradient(f, theta, h=1e-5):
    g = np.empty_like(theta)
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = h
        g[k] = (f(theta + e) - f(theta - e)) / (2 * h)
    return g


def brute_smci1_pair(bm, data):
    """m^1SMCI_ij of eq. (23): conditional expectation of x_i x_j given the rest, by
    enumerating the four values of (x_i, x_j) with log_weight."""
    x = np.asarray(data, dtype=np.int8)
    out = np.zeros(len(bm.edges))
    for k, (i, j) in enumerate(bm.edges):
        lws, vals = [], []
        for a, b in itertools.product([-1, 1], repeat=2):
            y = x.copy()
            y[:, i], y[:, j] = a, b
            lws.append(bm.log_weight(y))
            vals.append(a * b)
        lw = np.array(lws)
        p = np.exp(lw - lw.max(axis=0))
        p /= p.sum(axis=0)
        out[k] = np.mean(np.array(vals) @ p)
    return out


def brute_smci1_mean(bm, data):
    x = np.asarray(data, dtype=np.int8)
    d = flip_ratios(bm, x)  # log P(x_i)/P(-x_i) given rest
    p = 1.0 / (1.0 + np.exp(-d))
    return np.mean(x * (2 * p - 1), axis=0)


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def problem():
    edges = graphs.square_grid(3, 3)
    gen = BoltzmannMachine.random(edges, 9, bias_scale=0.2, coupling_scale=0.4, rng=1)
    data = exact.sample(gen, 400, rng=2)
    return edges, gen, data


@pytest.fixture(scope="module")
def mle(problem):
    edges, _, data = problem
    return learning.fit(data, edges, "mle").model


def theta_of(bm):
    return np.concatenate([bm.bias, bm.coupling])


# ----------------------------------------------------------------------------- objectives


@pytest.mark.parametrize("method", learning.LOCAL_METHODS)
def test_objective_matches_definition(problem, method):
    edges, gen, data = problem
    bm = BoltzmannMachine.random(edges, 9, rng=5)
    ref = ref_objective(bm, data, method)
    assert learning.objective(bm, data, method) == pytest.approx(ref, rel=1e-12)
    value, gb, gj = learners._local_terms_numpy(bm, data, method)
    assert value == pytest.approx(ref, rel=1e-12)
    # the numba loop and the vectorized numpy path give the same gradient
    nb, nj = learning.objective_gradient(bm, data, method)
    np.testing.assert_allclose(nb, gb, atol=1e-13)
    np.testing.assert_allclose(nj, gj, atol=1e-13)
    # and both equal finite differences of the definition
    fd = fd_gradient(lambda t: ref_objective(bm.with_params(t), data, method), theta_of(bm))
    np.testing.assert_allclose(np.concatenate([gb, gj]), fd, atol=1e-7)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.0, 3.0))
def test_objective_paths_agree(seed, scale):
    """Property: numba and numpy evaluations agree, also for strong couplings."""
    edges = graphs.random_graph(6, 0.6, rng=seed)
    bm = BoltzmannMachine.random(edges, 6, bias_scale=scale, coupling_scale=scale, rng=seed)
    data = exact.sample(bm, 30, rng=seed + 1)
    for method in learning.LOCAL_METHODS:
        v1 = learning.objective(bm, data, method)
        v2, gb, gj = learners._local_terms_numpy(bm, data, method)
        assert v1 == pytest.approx(v2, rel=1e-10, abs=1e-12)
        nb, nj = learning.objective_gradient(bm, data, method)
        np.testing.assert_allclose(nb, gb, atol=1e-10)
        np.testing.assert_allclose(nj, gj, atol=1e-10)


def test_directions_equal_mle_gradient_at_zero(problem):
    """The scaling rule: at theta = 0 every ascent direction is eq. (5)."""
    edges, _, data = problem
    zero = BoltzmannMachine(np.zeros(9), edges, np.zeros(len(edges)))
    ref = learning.ascent_direction(zero, data, "mle")
    for method in ("mple", "rm", "mpf", "1-smci"):
        db, dj = learning.ascent_direction(zero, data, method)
        np.testing.assert_allclose(db, ref[0], atol=1e-12)
        np.testing.assert_allclose(dj, ref[1], atol=1e-12)


def test_mple_direction_is_eq13(problem):
    edges, _, data = problem
    bm = BoltzmannMachine.random(edges, 9, rng=7)
    _, dj = learning.ascent_direction(bm, data, "mple")
    x = data.astype(float)
    m = np.tanh(bm.local_field(data))
    i, j = edges[:, 0], edges[:, 1]
    m_mple = np.mean(x[:, j] * m[:, i] + x[:, i] * m[:, j], axis=0) / 2  # eq. (11)
    np.testing.assert_allclose(dj, np.mean(x[:, i] * x[:, j], axis=0) - m_mple, atol=1e-13)


# ----------------------------------------------------------------------------- stationarity


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("method", learning.LOCAL_METHODS)
def test_local_learners_reach_their_optimum(problem, method, bias):
    edges, _, data = problem
    fit = learning.fit(data, edges, method, bias=bias, tol=1e-8, progress=False)
    assert fit.converged
    theta = fit.model.params
    fd = fd_gradient(lambda t: ref_objective(fit.model.with_params(t), data, method), theta)
    free = slice(None) if bias else slice(9, None)
    assert np.max(np.abs(fd[free])) < 1e-6
    if not bias:
        assert np.all(fit.model.bias == 0)
    # the quasi-Newton path reaches the same optimum
    qn = learning.fit(data, edges, method, bias=bias, solver="lbfgs", tol=1e-7)
    assert qn.converged and qn.solver == "lbfgs"
    np.testing.assert_allclose(qn.model.params, theta, atol=2e-6)
    assert learning.objective(qn.model, data, method) == pytest.approx(
        learning.objective(fit.model, data, method), abs=1e-11
    )


@pytest.mark.parametrize("bias", [True, False])
def test_smci_learner_solves_eq27(problem, bias):
    edges, _, data = problem
    fit = learning.fit(data, edges, "1-smci", bias=bias, tol=1e-9, progress=False)
    assert fit.converged
    x = data.astype(float)
    pair_data = np.mean(x[:, edges[:, 0]] * x[:, edges[:, 1]], axis=0)
    np.testing.assert_allclose(brute_smci1_pair(fit.model, data), pair_data, atol=1e-8)
    if bias:
        np.testing.assert_allclose(brute_smci1_mean(fit.model, data), x.mean(0), atol=1e-8)
    else:
        assert np.all(fit.model.bias == 0)


def independent_mle(data, edges, n, bias):
    """Exact ML by scipy BFGS on a brute-force log-likelihood (no mrflib.inference.exact)."""
    s = all_states(n).astype(float)
    feats_s = np.concatenate([s, s[:, edges[:, 0]] * s[:, edges[:, 1]]], axis=1)
    x = data.astype(float)
    target = np.concatenate([x.mean(0), np.mean(x[:, edges[:, 0]] * x[:, edges[:, 1]], 0)])
    if not bias:
        feats_s, target = feats_s[:, n:], target[n:]

    def negll(t):
        lw = feats_s @ t
        c = lw.max()
        logz = c + np.log(np.exp(lw - c).sum())
        p = np.exp(lw - logz)
        return logz - t @ target, p @ feats_s - target

    res = scipy.optimize.minimize(negll, np.zeros(feats_s.shape[1]), jac=True, method="BFGS",
                                  options=dict(gtol=1e-10))
    return res.x if bias else np.concatenate([np.zeros(n), res.x])


@pytest.mark.parametrize("bias", [True, False])
def test_mle_matches_independent_optimisation(problem, bias):
    edges, _, data = problem
    ref = independent_mle(data, edges, 9, bias)
    fit = learning.fit(data, edges, "mle", bias=bias)
    np.testing.assert_allclose(fit.model.params, ref, atol=1e-5)
    grad = learning.fit(data, edges, "mle", bias=bias, solver="gradient", learning_rate=0.5,
                        tol=1e-8)
    assert grad.converged
    np.testing.assert_allclose(grad.model.params, ref, atol=1e-6)
    # stationarity by brute-force moments
    mean, pair = brute_moments(grad.model)
    x = data.astype(float)
    np.testing.assert_allclose(pair, np.mean(x[:, edges[:, 0]] * x[:, edges[:, 1]], 0),
                               atol=1e-7)
    if bias:
        np.testing.assert_allclose(mean, x.mean(0), atol=1e-7)


def test_theorem1_variances(problem):
    """Eq. (30)-(31) against brute-force rho's; v^MPLE >= v^1SMCI on every edge."""
    edges, gen, _ = problem
    bm = BoltzmannMachine.random(edges, 9, bias_scale=0.3, coupling_scale=0.8, rng=11)
    v_mple, v_smci = learning.estimator_variances(bm)
    s = all_states(9)
    lw = bm.log_weight(s)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    _, pair = brute_moments(bm)
    sf = s.astype(float)
    # rho^MPLE from eq. (11): M_i = E[x_i | rest] from the flip ratios
    d = flip_ratios(bm, s)
    M = np.tanh(d / 2.0) * sf  # E[x_i | x_-i] = tanh(h_i); d = 2 x_i h_i
    i, j = edges[:, 0], edges[:, 1]
    rho_m = 0.5 * (sf[:, j] * M[:, i] + sf[:, i] * M[:, j])
    np.testing.assert_allclose(v_mple, p @ rho_m**2 - pair**2, atol=1e-12)
    rho_s = np.array([brute_smci1_pair(bm, s[k : k + 1]) for k in range(len(s))])
    np.testing.assert_allclose(v_smci, p @ rho_s**2 - pair**2, atol=1e-12)
    assert np.all(v_mple >= v_smci - 1e-14)
    assert np.all(v_smci >= 0)


# ----------------------------------------------------------------------------- driver


def test_history_and_reference(problem, mle):
    edges, _, data = problem
    fit = learning.fit(data, edges, "mpf", reference=mle, max_steps=30, tol=0, progress=False)
    assert fit.n_steps == 30 and not fit.converged
    assert fit.params.shape == (31, 9 + len(edges))
    np.testing.assert_array_equal(fit.params[0], 0)
    np.testing.assert_array_equal(fit.params[-1], fit.model.params)
    hist = fit.history
    assert list(hist.columns) == ["step", "grad_max", "mae"]
    assert len(hist) == 31
    assert hist["mae"].iloc[0] == pytest.approx(np.mean(np.abs(mle.coupling)))
    assert hist["mae"].iloc[-1] == pytest.approx(learning.mae(fit.model, mle))
    # one step of the driver is theta + eta * Delta
    d = learning.ascent_direction(BoltzmannMachine(np.zeros(9), edges, np.zeros(len(edges))),
                                  data, "mpf")
    np.testing.assert_allclose(fit.params[1], 0.2 * np.concatenate(d), atol=1e-14)
    quiet = learning.fit(data, edges, "mpf", record=False, max_steps=5, tol=0)
    assert quiet.params is None and len(quiet.history) == 0
    lb = learning.fit(data, edges, "mpf", solver="lbfgs", reference=mle)
    assert lb.mae.shape == (lb.n_steps + 1,)


def test_init_and_max_steps_zero(problem, mle):
    edges, _, data = problem
    fit = learning.fit(data, edges, "mple", init=mle, max_steps=0)
    assert fit.n_steps == 0
    np.testing.assert_array_equal(fit.model.params, mle.params)


@pytest.mark.parametrize("method", ["cd", "pcd"])
def test_cd_pcd_reproducible(problem, mle, method):
    edges, _, data = problem
    kw = dict(max_steps=150, learning_rate=0.05, progress=False)
    a = learning.fit(data, edges, method, rng=3, **kw)
    b = learning.fit(data, edges, method, rng=np.random.default_rng(3), **kw)
    c = learning.fit(data, edges, method, rng=4, **kw)
    np.testing.assert_array_equal(a.model.params, b.model.params)
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.array_equal(a.model.params, c.model.params)
    # both approach the MLE (stochastic, loose)
    assert learning.mae(a.model, mle) < 0.1
    small = learning.fit(data, edges, method, rng=3, n_chains=50, k=2, max_steps=20)
    assert small.n_steps == 20


# ----------------------------------------------------------------------------- bad input


def test_bad_input(problem):
    edges, _, data = problem
    with pytest.raises(ValueError, match="method"):
        learning.fit(data, edges, "bogus")
    with pytest.raises(ValueError, match="data"):
        learning.fit((data + 1) // 2, edges, "mple")
    with pytest.raises(ValueError, match="data"):
        learning.fit(data[:, :5], edges, "mple", n=9)
    with pytest.raises(ValueError, match="edges"):
        learning.fit(data[:, :5], edges, "mple")
    with pytest.raises(ValueError, match="data"):
        learning.fit(data[:0], edges, "mple")
    with pytest.raises(ValueError, match="data"):
        learning.fit(data.astype(float) * np.nan, edges, "mple")
    with pytest.raises(ValueError, match="edges"):
        learning.fit(data, edges[::-1], "mple")
    with pytest.raises(ValueError, match="learning_rate"):
        learning.fit(data, edges, "mple", learning_rate=-0.1)
    with pytest.raises(ValueError, match="max_steps"):
        learning.fit(data, edges, "mple", max_steps=1.5)
    with pytest.raises(ValueError, match="tol"):
        learning.fit(data, edges, "mple", tol=-1)
    with pytest.raises(ValueError, match="options"):
        learning.fit(data, edges, "mple", k=3)
    with pytest.raises(ValueError, match="solver"):
        learning.fit(data, edges, "1-smci", solver="lbfgs")
    with pytest.raises(ValueError, match="rng"):
        learning.fit(data, edges, "pcd")
    with pytest.raises(ValueError, match="n_chains"):
        learning.fit(data, edges, "pcd", rng=0, n_chains=0)
    with pytest.raises(ValueError, match="bias"):
        learning.fit(data, edges, "mple", bias="no")
    with pytest.raises(ValueError, match="init"):
        learning.fit(data, edges, "mple", init=np.zeros(3))
    with pytest.raises(ValueError, match="reference"):
        learning.fit(data, edges, "mple", reference=np.zeros(3))
    with pytest.raises(ValueError, match="n"):
        learning.fit(data, edges, "mple", n=0)
    with pytest.raises(ValueError, match="objective"):
        learning.objective(BoltzmannMachine.random(edges, 9, rng=0), data, "1-smci")
    with pytest.raises(FloatingPointError, match="learning_rate"):
        learning.fit(data, edges, "mpf", learning_rate=1e6, max_steps=50)


def test_trusted_model_matches_constructor(problem):
    edges, _, data = problem
    prob = Problem(data, edges)
    theta = np.random.default_rng(0).normal(size=9 + len(edges))
    fast, ref = prob.trusted_model(theta), prob.model(theta)
    assert fast == ref
    for a, b in zip(fast.adjacency(), ref.adjacency()):
        np.testing.assert_array_equal(a, b)
    assert not fast.coupling.flags.writeable


# ----------------------------------------------------------------------------- SMCI + PCD


def brute_region_expectation(bm, data, target, region):
    """E[prod_{t in target} x_t | x outside region] averaged over data, by enumeration."""
    x = np.asarray(data, dtype=np.int8)
    region = list(region)
    lws, fs = [], []
    for vals in itertools.product([-1, 1], repeat=len(region)):
        y = x.copy()
        y[:, region] = vals
        lws.append(bm.log_weight(y))
        fs.append(np.prod(y[:, list(target)], axis=1))
    lw, f = np.array(lws), np.array(fs, dtype=float)
    p = np.exp(lw - lw.max(axis=0))
    p /= p.sum(axis=0)
    return float(np.mean((f * p).sum(axis=0)))


def test_s2_smci_fixed_solves_its_equation(problem):
    from mrflib import smci

    edges, _, data = problem
    fit = learning.fit(data, edges, "s2-smci", tol=1e-8, progress=False)
    assert fit.converged
    bm = fit.model
    x = data.astype(float)
    for i in range(9):
        region = smci.s2_region(bm, [i])
        assert brute_region_expectation(bm, data, [i], region) == pytest.approx(x[:, i].mean(),
                                                                                abs=1e-7)
    for (i, j) in edges:
        region = smci.s2_region(bm, [i, j])
        assert brute_region_expectation(bm, data, [i, j], region) == pytest.approx(
            np.mean(x[:, i] * x[:, j]), abs=1e-7)


@pytest.mark.parametrize("estimator", ["mci", "1-smci", "s2-smci"])
def test_smci_pcd_huge_sample_set_gives_mle_step(problem, estimator):
    """With an exact sample set of 200k points, the first Algorithm-2 update is the exact
    MLE gradient step eq. (5) (up to Monte Carlo error)."""
    edges, _, data = problem
    bm = BoltzmannMachine.random(edges, 9, rng=21)
    samples = exact.sample(bm, 200_000, rng=22)
    eta = 0.1
    fit = learning.fit(data, edges, "smci-pcd", rng=0, estimator=estimator, samples=samples,
                       init=bm, max_steps=1, learning_rate=eta)
    step = (fit.params[1] - fit.params[0]) / eta
    mean, pair = brute_moments(bm)
    x = data.astype(float)
    exact_grad = np.concatenate([x.mean(0) - mean,
                                 np.mean(x[:, edges[:, 0]] * x[:, edges[:, 1]], 0) - pair])
    np.testing.assert_allclose(step, exact_grad, atol=0.01)


def test_smci_pcd_chains_and_reproducibility(problem, mle):
    edges, _, data = problem
    kw = dict(estimator="1-smci", extension_rate=3, kappa=1, learning_rate=0.05)
    start = learning.fit(data, edges, "smci-pcd", rng=0, max_steps=0, **kw)
    np.testing.assert_array_equal(start.chains, np.tile(data, (3, 1)))  # S_0
    a = learning.fit(data, edges, "smci-pcd", rng=5, max_steps=100, reference=mle, **kw)
    b = learning.fit(data, edges, "smci-pcd", rng=np.random.default_rng(5), max_steps=100, **kw)
    c = learning.fit(data, edges, "smci-pcd", rng=6, max_steps=100, **kw)
    assert a.chains.shape == (3 * len(data), 9)
    np.testing.assert_array_equal(a.chains, b.chains)
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.array_equal(a.chains, c.chains)
    assert a.mae[-1] < a.mae[0]
    # plain PCD from the same replicated chains
    p = learning.fit(data, edges, "pcd", rng=5, extension_rate=3, max_steps=5)
    assert p.chains.shape == (3 * len(data), 9)


def test_smci_pcd_bad_input(problem):
    edges, _, data = problem
    with pytest.raises(ValueError, match="estimator"):
        learning.fit(data, edges, "smci-pcd", rng=0, estimator="3-smci")
    with pytest.raises(ValueError, match="kappa"):
        learning.fit(data, edges, "smci-pcd", rng=0, kappa=0)
    with pytest.raises(ValueError, match="extension_rate"):
        learning.fit(data, edges, "smci-pcd", rng=0, extension_rate=1.5)
    with pytest.raises(ValueError, match="samples"):
        learning.fit(data, edges, "smci-pcd", rng=0, samples=data, extension_rate=2)
    with pytest.raises(ValueError, match="samples"):
        learning.fit(data, edges, "smci-pcd", rng=0, samples=data[:, :3])
    with pytest.raises(ValueError, match="rng"):
        learning.fit(data, edges, "smci-pcd")
    with pytest.raises(ValueError, match="n_chains"):
        learning.fit(data, edges, "pcd", rng=0, n_chains=5, extension_rate=2)


def test_mae_trial_reproducible(problem):
    edges, gen, _ = problem
    rows, curves = learning_trials.mae_trial(gen, edges, 300, ("mple", "1-smci"), rng=0,
                                             curves=True, max_steps=40, tol=0.0)
    assert [r["method"] for r in rows] == ["mple", "1-smci"]
    assert all(r["N"] == 300 and r["steps"] == 40 for r in rows)
    assert curves["mple"].shape == (41,)
    again, _ = learning_trials.mae_trial(gen, edges, 300, ("mple", "1-smci"), rng=0,
                                         max_steps=40, tol=0.0)
    assert [r["mae"] for r in rows] == [r["mae"] for r in again]


# --------------------------------------------------------------------------- one fit interface
def test_fit_lap_equals_lap_fit_ising(problem):
    import warnings

    from mrflib import lap

    edges, _, data = problem
    f = learning.fit(data, edges, "lap")
    assert f.model == lap.fit_ising(data, edges)
    assert f.method == f.solver == "lap" and f.converged and f.n_steps >= 1
    assert f.stop_reason.startswith("converged")
    g = learning.fit(data, graphs.Graph(9, edges), "lap", cliques="maximal", l2=0.1)
    assert g.model == lap.fit_ising(data, edges, cliques="maximal", l2=0.1)
    with pytest.warns(FutureWarning, match=r"return_info=\.\.\.\) is deprecated.*learning\.fit"
                                           r'\(data, edges, "lap"\)'):
        bm, info = lap.fit_ising(data, edges, return_info=True)
    assert bm == f.model and info["converged"].all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lap.fit_ising(data, edges)
    with pytest.raises(ValueError, match="bias"):
        learning.fit(data, edges, "lap", bias=False)
    with pytest.raises(ValueError, match="unknown options"):
        learning.fit(data, edges, "lap", k=2)
    with pytest.raises(ValueError, match="ascent direction"):
        learning.ascent_direction(f.model, data, "lap")


@pytest.mark.parametrize("method", learning.METHODS)
def test_every_learner_returns_one_result_type(problem, method):
    edges, _, data = problem
    kw = dict(rng=0, max_steps=3) if method in learning.STOCHASTIC_METHODS else {}
    f = learning.fit(data, graphs.Graph(9, edges), method, **kw)
    assert isinstance(f, learning.Fit) and isinstance(f.model, BoltzmannMachine)
    assert isinstance(f.stop_reason, str) and f.stop_reason
    assert f.converged == f.stop_reason.startswith("converged")
    assert f.n_steps >= 0 and f.seconds > 0 and "step" in f.history.columns
    assert f.model.edges.tolist() == edges.tolist()


@pytest.mark.parametrize("method, kwargs", [
    ("mle", {}), ("mple", {}), ("mple", {"solver": "lbfgs"}), ("rm", {}), ("mpf", {}),
    ("cd", {"rng": 0}), ("pcd", {"rng": 0}), ("smci-pcd", {"rng": 0}), ("1-smci", {}),
    ("lap", {}),
])
@pytest.mark.parametrize("name", ["tol", "learning_rate", "k", "extension_rate", "l2"])
def test_fit_refuses_numbers_given_as_text(method, kwargs, name):
    """``tol="1e-3"`` ran (float() read the text); every numeric option of fit, and of the
    factor-graph learners, is now a ValueError naming it (or an unknown option)."""
    data = np.random.default_rng(0).choice([-1, 1], size=(30, 3)).astype(np.int8)
    refused = rf"{name} must be (a real number|an integer)|unknown options"
    with pytest.raises(ValueError, match=refused):
        learning.fit(data, np.array([[0, 1], [1, 2]]), method, max_steps=2, progress=False,
                     **kwargs, **{name: "0.5"})
    if name == "tol" and method in ("mle", "mple", "lap"):
        from mrflib import FactorGraph

        fg = FactorGraph([2, 2, 2], [(0, 1), (1, 2)], [np.zeros((2, 2))] * 2)
        with pytest.raises(ValueError, match="tol must be a real number"):
            learning.fit((data > 0).astype(int), fg, method, tol="1e-3")
