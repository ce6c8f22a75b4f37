"""Minimum probability flow at any finite model: the stable log-flow form, the bounded
objective L-BFGS minimises, and the refusals where ``K`` itself overflows float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib.learning import _flow, learners
from mrflib.learning._local import LocalObjective


def log_flow_numpy(bm, data):
    """Per-sample reference: ``log K`` by scipy's logsumexp and ``grad K / K`` from the
    softmax weights of the terms ``exp(-x_i h_i)``."""
    x = np.asarray(data, dtype=np.float64)
    u = x * bm.local_field(data)
    log_k = logsumexp(-u) - math.log(x.shape[0])
    a = np.exp(-u - logsumexp(-u))  # the terms' shares of K
    gh = -a * x  # d log K / d h_i, per sample
    ei, ej = bm.edges[:, 0], bm.edges[:, 1]
    return log_k, gh.sum(axis=0), (gh[:, ei] * x[:, ej] + gh[:, ej] * x[:, ei]).sum(axis=0)


def _problem(kind, scale, seed=0):
    edges, n = {"grid": (graphs.square_grid(3, 4), 12), "dense": (graphs.complete(70), 70),
                "king": (graphs.king_grid(3, 3), 9)}[kind]
    rng = np.random.default_rng(seed)
    bm = BoltzmannMachine(scale * 0.3 * rng.uniform(-1, 1, n), edges,
                          scale * rng.choice([-1.0, 1.0], size=len(edges)))
    data = (2 * rng.integers(0, 2, size=(80, n)) - 1).astype(np.int8)
    return bm, data


@pytest.mark.parametrize("kind", ["grid", "king", "dense"])
@pytest.mark.parametrize("scale", [0.5, 3.0, 1e3, 1e5])
def test_log_flow_is_finite_and_equals_the_stable_reference(kind, scale):
    """Compressed (patterns; rows on the dense graph) and per-sample agree at every scale,
    also where ``K`` overflows (couplings of 1e3 and more): ``log K`` to 1e-12, the
    gradient ``grad K / K`` (shares of the terms ``exp(-u)``, each known only to ``|u| eps``
    since ``u`` is) to 1e-12 plus that conditioning limit."""
    bm, data = _problem(kind, scale)
    local = LocalObjective(data, bm.graph, "mpf")
    assert local.mode == ("rows" if kind == "dense" else "patterns")
    log_k, gb, gj = learning.mpf_log_flow(bm, data)
    ref_k, ref_b, ref_j = log_flow_numpy(bm, data)
    assert np.isfinite(log_k) and np.all(np.isfinite(gb)) and np.all(np.isfinite(gj))
    assert log_k == pytest.approx(ref_k, rel=1e-12, abs=1e-12)
    cond = 1e-12 + 8 * np.finfo(float).eps * np.max(np.abs(data * bm.local_field(data)))
    np.testing.assert_allclose(gb, ref_b, rtol=cond, atol=cond)
    np.testing.assert_allclose(gj, ref_j, rtol=cond, atol=cond)
    if scale <= 3.0:  # K in range: the log form is log(-objective), its gradient grad K / K
        value = learning.objective(bm, data, "mpf")
        assert log_k == pytest.approx(math.log(-value), rel=1e-12)
        pb, pj = learning.objective_gradient(bm, data, "mpf")
        np.testing.assert_allclose(gb, pb / value, rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(gj, pj / value, rtol=1e-11, atol=1e-14)
        v2, b2, j2 = learners._local_terms_numpy(bm, data, "mpf")  # per sample, plain
        assert value == pytest.approx(v2, rel=1e-12)  # 1e-12 of the flow's own size:
        np.testing.assert_allclose(pb, b2, rtol=1e-12, atol=1e-12 * -value)
        np.testing.assert_allclose(pj, j2, rtol=1e-12, atol=1e-12 * -value)
    else:  # -K itself is beyond float64: refused by name, with log K in the message
        for fn in (learning.objective, learning.objective_gradient):
            with pytest.raises(ValueError, match="model: the MPF .* exp"):
                fn(bm, data, "mpf")


def test_shifted_kernel_scales_every_term_and_zero_shift_is_the_plain_kernel():
    bm, data = _problem("grid", 1.0)
    local = LocalObjective(data, bm.graph, "mpf")
    theta = bm.params
    plain = local(theta)
    for a, b in zip(plain, local(theta, True, 0.0)):
        np.testing.assert_array_equal(a, b)
    c = local.max_exponent(theta)
    u = data * bm.local_field(data)
    assert c == np.max(-u)
    for a, b in zip(plain, local(theta, True, c)):
        np.testing.assert_allclose(np.asarray(b) * math.exp(c), a, rtol=1e-13)


def test_underflowing_flow_stays_finite():
    """Couplings of 1e3 that agree with every sample: every term underflows, K = 0 in float64
    (a finite objective), and log K is still exact."""
    edges = graphs.square_grid(2, 3)
    data = np.ones((5, 6), dtype=np.int8)
    bm = BoltzmannMachine(np.full(6, 1e3), edges, np.full(len(edges), 1e3))
    assert learning.objective(bm, data, "mpf") == 0.0
    log_k, gb, gj = learning.mpf_log_flow(bm, data)
    assert log_k == pytest.approx(log_flow_numpy(bm, data)[0], rel=1e-12)
    assert np.all(np.isfinite(gb)) and np.all(np.isfinite(gj))


def test_bounded_flow_is_the_flow_below_t_and_its_log_continuation_above():
    bm, data = _problem("grid", 0.5)
    local = LocalObjective(data, bm.graph, "mpf")
    bounded = _flow.BoundedFlow(local)
    for a, b in zip(bounded(bm.params), local(bm.params)):
        np.testing.assert_array_equal(a, b)  # K <= T: the plain kernel, bit for bit
    big, _ = _problem("grid", 1e3)
    log_k, gb, gj = _flow.log_flow(local, big.params)
    t = math.exp(bounded.log_t)
    assert log_k > bounded.log_t
    value, b, j = bounded(big.params)
    assert value == pytest.approx(-t * (1 + log_k - bounded.log_t), rel=1e-13)
    np.testing.assert_allclose(b, -t * gb, rtol=1e-13)
    np.testing.assert_allclose(j, -t * gj, rtol=1e-13)


@pytest.mark.parametrize("scale", [20.0, 1e3])
def test_lbfgs_from_huge_couplings_reaches_the_mpf_optimum(scale):
    """From an initial model far out (K = exp(thousands)) L-BFGS on the bounded flow reaches
    the optimum it reaches from zero; gradient ascent refuses, naming learning_rate."""
    edges = graphs.square_grid(2, 3)
    rng = np.random.default_rng(0)
    data = (2 * rng.integers(0, 2, size=(60, 6)) - 1).astype(np.int8)
    init = BoltzmannMachine(np.zeros(6), edges, scale * rng.choice([-1.0, 1.0], len(edges)))
    ref = learning.fit(data, edges, "mpf", solver="lbfgs", progress=False)
    fit = learning.fit(data, edges, "mpf", solver="lbfgs", init=init, progress=False)
    assert ref.converged and fit.converged
    np.testing.assert_allclose(fit.model.params, ref.model.params, atol=1e-5)
    assert np.all(np.isfinite(fit.grad_max))
    with pytest.raises(ValueError, match="learning_rate"):
        learning.fit(data, edges, "mpf", init=init, progress=False)
    with pytest.raises(FloatingPointError):  # still the error it was
        learning.fit(data, edges, "mpf", init=init, progress=False)


def test_mpf_log_flow_refuses_bad_input():
    bm, data = _problem("grid", 1.0)
    with pytest.raises(TypeError, match="model"):
        learning.mpf_log_flow(None, data)
    for bad in (data[:0], data[:, :3], 2 * data, np.full(data.shape, np.nan)):
        with pytest.raises(ValueError, match="data"):
            learning.mpf_log_flow(bm, bad)
    assert exact.log_partition(bm) > 0  # the model is an ordinary one
