"""Tests of image restoration: io.images, models.image_noise, inference.point_estimates."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from mrflib import FactorGraph, exact
from mrflib.inference.approx import point_estimates as pe
from mrflib.io import images
from mrflib.models import image_noise as inz
from mrflib.models.factor_graph import all_states
from mrflib.models.lattices import potts_lattice


def blocks(rows: int, cols: int, q: int) -> np.ndarray:
    """A piecewise-constant test image: vertical bands of the q levels."""
    return (np.arange(cols)[None, :] * q // cols).repeat(rows, axis=0).astype(np.int64)


# ------------------------------------------------------------------------ loader and levels
def test_quantize_uses_levels_evenly_and_keeps_their_order():
    grey = np.random.default_rng(0).random((40, 50))
    x = images.quantize(grey, 4)
    assert x.dtype == np.int64 and x.shape == grey.shape
    assert np.array_equal(np.bincount(x.ravel()), [500] * 4)
    darkest, brightest = grey[x == 0].max(), grey[x == 3].min()
    assert darkest < brightest
    assert np.all(images.quantize(np.ones((2, 3)), 3) == 2)  # ties go up, not split


def test_sample_image_is_the_china_photograph_in_q_levels():
    pytest.importorskip("sklearn")
    x = images.sample_image("china.jpg", q=4)
    assert x.shape == (427, 640) and x.dtype == np.int64
    counts = np.bincount(x.ravel(), minlength=4)
    assert counts.min() > 0.24 * x.size and counts.max() < 0.26 * x.size
    grey = images.sample_grey("china.jpg")
    assert grey.shape == (427, 640) and 0.0 <= grey.min() and grey.max() <= 1.0


# ------------------------------------------------------------------------ channel
@pytest.mark.parametrize("noise", inz.NOISES)
@pytest.mark.parametrize("q", [2, 3, 4, 7])
@pytest.mark.parametrize("rate", [0.0, 0.05, 0.3, 0.99])
def test_channel_likelihood_sums_to_one(noise, q, rate):
    P = inz.channel(q, noise, rate)
    assert P.shape == (q, q) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    # the chance that a pixel changes is the rate, except for salt-and-pepper's extremes,
    # which stay unchanged when the noise draws their own level
    changed = 1.0 - np.diag(P)
    if noise == "flip":
        np.testing.assert_allclose(changed, rate)
    else:
        np.testing.assert_allclose(changed[1:-1], rate)
        np.testing.assert_allclose(changed[[0, -1]], rate / 2)


@pytest.mark.parametrize("noise", inz.NOISES)
def test_corrupt_draws_from_the_channel(noise):
    x = blocks(200, 300, 4)
    y = inz.corrupt(x, 4, noise, 0.3, rng=1)
    P = inz.channel(4, noise, 0.3)
    for level in range(4):
        freq = np.bincount(y[x == level], minlength=4) / np.sum(x == level)
        np.testing.assert_allclose(freq, P[level], atol=0.01)


def test_corrupt_seed_gives_fixed_bits():
    x = blocks(3, 8, 4)
    a = inz.corrupt(x, 4, "flip", 0.5, rng=7)
    np.testing.assert_array_equal(a, inz.corrupt(x, 4, "flip", 0.5,
                                                 rng=np.random.default_rng(7)))
    assert not np.array_equal(a, inz.corrupt(x, 4, "flip", 0.5, rng=8))
    # the draw is pinned: one uniform per pixel, row-major, inverted through the channel
    u = np.random.default_rng(7).random(x.shape)
    cum = np.cumsum(inz.channel(4, "flip", 0.5), axis=1)[x]
    np.testing.assert_array_equal(a, np.sum(u[..., None] >= cum, axis=-1))
    assert np.array_equal(inz.corrupt(x, 4, "flip", 0.0, rng=0), x)


# ------------------------------------------------------------------------ posterior
@pytest.mark.parametrize("noise", inz.NOISES)
def test_posterior_equals_brute_force(noise):
    q, rows, cols, rate = 3, 2, 3, 0.25
    prior = potts_lattice(rows, cols, q, coupling=0.7, rng=3)  # random fields and couplings
    y = np.array([[0, 1, 2], [2, 2, 0]])
    post = inz.posterior(prior, y, q, noise, rate)
    X = all_states(np.full(rows * cols, q))
    with np.errstate(divide="ignore"):
        logP = np.log(inz.channel(q, noise, rate))
        lw = prior.log_weight(X) + logP[X, y.ravel()[None, :]].sum(axis=1)
    np.testing.assert_allclose(post.log_weight(X), lw)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    margs = exact.marginals(post)
    for i in range(rows * cols):
        ref = np.bincount(X[:, i], weights=p, minlength=q)
        np.testing.assert_allclose(margs[i], ref, atol=1e-12)


def test_potts_grid_is_the_homogeneous_potts_model():
    fg = inz.potts_grid(2, 3, 3, 0.8, field=[0.1, 0.0, -0.2])
    X = all_states(np.full(6, 3))
    img = X.reshape(-1, 2, 3)
    same = (img[:, :, 1:] == img[:, :, :-1]).sum(axis=(1, 2)) + \
        (img[:, 1:, :] == img[:, :-1, :]).sum(axis=(1, 2))
    ref = 0.8 * same + np.array([0.1, 0.0, -0.2])[X].sum(axis=1)
    np.testing.assert_allclose(fg.log_weight(X), ref)
    assert fg.n_factors == 7 + 6


# ------------------------------------------------------------------------ restoration
@pytest.fixture(scope="module")
def small_problem():
    x = blocks(8, 8, 3)
    y = inz.corrupt(x, 3, "flip", 0.2, rng=2)
    post = inz.posterior(inz.potts_grid(8, 8, 3, 1.5), y, 3, "flip", 0.2)
    return x, y, post


def test_restoration_lowers_the_error(small_problem):
    x, y, post = small_problem
    noisy = np.mean(y != x)
    assert noisy > 0.1
    exact_mpm = pe.modes(exact.marginals(post))
    assert np.mean(exact_mpm != x.ravel()) < noisy / 2
    for method, opts in (("lbp", {}), ("mean-field", {}),
                         ("gibbs", dict(n_samples=400, burn_in=50, n_chains=4))):
        state, res = pe.mpm(post, method, rng=0, **opts)
        assert state.dtype == np.int64 and state.shape == (64,)
        assert np.mean(state != x.ravel()) < noisy, method
    r = pe.icm(post, pe.mpm(post, "lbp")[0])
    assert r.converged and np.mean(r.state != x.ravel()) < noisy


def test_mpm_of_exact_marginals_is_their_argmax(small_problem):
    _, _, post = small_problem
    state, res = pe.mpm(post, "exact")
    np.testing.assert_array_equal(state, [int(np.argmax(m)) for m in res.marginals])


def test_icm_never_lowers_the_log_weight_and_ends_at_a_local_maximum(small_problem):
    _, y, post = small_problem
    start = y.ravel()
    r = pe.icm(post, start)
    assert r.converged and r.changes[-1] == 0 and r.sweeps == len(r.changes)
    assert r.log_weight >= post.log_weight(start)
    assert r.log_weight == pytest.approx(post.log_weight(r.state))
    assert r.log_weight <= exact.map_assignment(post)[1] + 1e-9
    for i in range(post.n):  # no single change improves it
        for v in range(3):
            z = r.state.copy()
            z[i] = v
            assert post.log_weight(z) <= r.log_weight + 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icm_kernel_matches_numpy_reference(seed):
    fg = potts_lattice(4, 5, 3, coupling=1.0, couplings="mixed", rng=seed)
    init = np.random.default_rng(seed).integers(0, 3, fg.n)
    a, b = pe.icm(fg, init), pe._icm_numpy(fg, init)
    np.testing.assert_array_equal(init, np.random.default_rng(seed).integers(0, 3, fg.n))
    np.testing.assert_array_equal(a.state, b.state)
    assert a.changes == b.changes and a.log_weight == b.log_weight
    short = pe.icm(fg, init, max_sweeps=1)
    assert short.sweeps == 1 and short.changes == a.changes[:1]


def test_salt_and_pepper_middle_levels_are_evidence():
    x = blocks(6, 6, 4)
    y = inz.corrupt(x, 4, "salt-pepper", 0.3, rng=0)
    post = inz.posterior(inz.potts_grid(6, 6, 4, 1.0), y, 4, "salt-pepper", 0.3)
    state, _ = pe.mpm(post, "lbp")
    middle = (y.ravel() == 1) | (y.ravel() == 2)
    np.testing.assert_array_equal(state[middle], y.ravel()[middle])


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("call, name", [
    (lambda: images.quantize(np.zeros(5), 4), "grey"),
    (lambda: images.quantize(np.zeros((2, 2, 3)), 4), "grey"),
    (lambda: images.quantize(np.full((2, 2), np.nan), 4), "grey"),
    (lambda: images.quantize(np.zeros((2, 2)), 1), "q"),
    (lambda: images.sample_image("lena.png"), "name"),
    (lambda: inz.channel(4, "gaussian", 0.1), "noise"),
    (lambda: inz.channel(1, "flip", 0.1), "q"),
    (lambda: inz.channel(4, "flip", 1.0), "rate"),
    (lambda: inz.channel(4, "flip", -0.1), "rate"),
    (lambda: inz.channel(4, "flip", math.nan), "rate"),
    (lambda: inz.corrupt(np.zeros(6, int), 4, rng=0), "image"),
    (lambda: inz.corrupt(np.zeros((2, 3, 1), int), 4, rng=0), "image"),
    (lambda: inz.corrupt(np.full((2, 3), 4), 4, rng=0), "image"),
    (lambda: inz.corrupt(np.full((2, 3), -1), 4, rng=0), "image"),
    (lambda: inz.corrupt(np.full((2, 3), 0.5), 4, rng=0), "image"),
    (lambda: inz.corrupt(np.zeros((2, 3), int), 4, rate=1.5, rng=0), "rate"),
    (lambda: inz.corrupt(np.zeros((2, 3), int), 4, rng="seed"), "rng"),
    (lambda: inz.posterior(inz.potts_grid(2, 3, 4, 1.0), np.zeros((3, 2), int) + 5, 4),
     "noisy"),
    (lambda: inz.posterior(inz.potts_grid(2, 2, 4, 1.0), np.zeros((2, 3), int), 4), "prior"),
    (lambda: inz.posterior(inz.potts_grid(2, 3, 3, 1.0), np.zeros((2, 3), int), 4), "prior"),
    (lambda: inz.potts_grid(2, 3, 4, math.inf), "coupling"),
    (lambda: inz.potts_grid(2, 3, 4, 1.0, field=[0.0, 1.0]), "field"),
    (lambda: inz.potts_grid(0, 3, 4, 1.0), "rows"),
    (lambda: pe.icm(inz.potts_grid(2, 3, 4, 1.0), np.zeros(5, int)), "init"),
    (lambda: pe.icm(inz.potts_grid(2, 3, 4, 1.0), np.full(6, 4)), "init"),
    (lambda: pe.icm(inz.potts_grid(2, 3, 4, 1.0), np.zeros((2, 6), int)), "init"),
    (lambda: pe.icm(inz.potts_grid(2, 3, 4, 1.0), np.zeros(6, int), max_sweeps=0),
     "max_sweeps"),
    (lambda: pe.mpm(inz.potts_grid(2, 3, 4, 1.0), "nonsense"), "method"),
])
def test_bad_input_is_a_named_value_error(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_a_prior_of_the_wrong_type_is_a_named_type_error():
    with pytest.raises(TypeError, match="prior must be a FactorGraph"):
        inz.posterior("prior", np.zeros((2, 3), int), 4)


# ------------------------------------------------------------------------ sizes and huge numbers
IMG = np.zeros((2, 3), int)
BIG = [
    ("quantize", lambda q: images.quantize(np.zeros((2, 3)), q)),
    ("sample_image", lambda q: images.sample_image("china.jpg", q)),
    ("channel flip", lambda q: inz.channel(q)),
    ("channel salt-pepper", lambda q: inz.channel(q, "salt-pepper")),
    ("corrupt", lambda q: inz.corrupt(IMG, q, rng=0)),
    # (a prior of q states per pixel with no factor: it holds no table of q entries)
    ("posterior", lambda q: inz.posterior(FactorGraph([q] * 6, [], []), IMG, q)),
    ("potts_grid", lambda q: inz.potts_grid(2, 3, q, 1.0)),
]


# q levels past memory: a table of q entries (quantize), or of q x q (the others)
TOO_MANY = [(c, 10**12) for _, c in BIG] + [(c, 10**6) for _, c in BIG[2:]]


@pytest.mark.parametrize("call, q", TOO_MANY,
                         ids=[f"{name}-{q}" for q in ("1e12", "1e6")
                              for name, _ in (BIG if q == "1e12" else BIG[2:])])
def test_levels_beyond_memory_are_refused_by_name_before_allocating(call, q):
    """``q`` levels whose tables do not fit: a ``ValueError`` naming ``q`` and the bytes,
    raised before any table of ``q`` entries is allocated."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"q = {q} levels|channel\(q = {q}\)") as err:
            call(q)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "would need" in str(err.value) and "of memory" in str(err.value)
    assert peak < 16 * 2**20


@pytest.mark.parametrize("q", [2**63, 10**400], ids=["2^63", "1e400"])
@pytest.mark.parametrize("call", [
    *(c for name, c in BIG if name != "posterior"),
    lambda q: inz.posterior(inz.potts_grid(2, 3, 4, 0.5), IMG, q),
    lambda q: inz.check_image(IMG, q),
], ids=[name for name, _ in BIG if name != "posterior"] + ["posterior", "check_image"])
def test_levels_beyond_int64_are_refused_by_name(call, q):
    with pytest.raises(ValueError, match=r"q must be at most \d+ \(an int64\)"):
        call(q)


@pytest.mark.parametrize("call, name", [
    (lambda: inz.channel(4, "flip", 10**400), "rate"),
    (lambda: inz.corrupt(IMG, 4, "flip", -10**400, rng=0), "rate"),
    (lambda: inz.posterior(inz.potts_grid(2, 3, 4, 0.5), IMG, 4, "flip", 10**400), "rate"),
    (lambda: inz.potts_grid(2, 3, 4, 10**400), "coupling"),
])
def test_reals_past_the_float_range_are_named(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ------------------------------------------------------------------------ the chapter's harness
def test_learned_prior_and_restoration_on_a_small_image():
    from mrflib.repro import image_restoration as ir

    # bands with a few odd pixels: on perfect bands pseudo-likelihood has no finite optimum
    clean = inz.corrupt(blocks(12, 12, 3), 3, "flip", 0.05, rng=0)
    fit = ir.learn_prior(clean, 3, "mple")
    J = ir.couplings(fit)
    assert J["J_h"] > 0 and J["J_v"] > 0  # equal neighbours are the rule
    imgs, rows = ir.restore(clean, fit.model, 3, "flip", 0.2,
                            methods={"MPM (loopy BP)": ("lbp", {})}, rng=0)
    names = [r["method"] for r in rows]
    assert names == ["noisy", "median 3x3", "median 5x5", "MPM (loopy BP)", "ICM"]
    assert set(imgs) == {"clean", *names}
    err = {r["method"]: r["error"] for r in rows}
    assert err["MPM (loopy BP)"] < err["noisy"]
    assert err["noisy"] == ir.error_rate(imgs["noisy"], clean)
    again = ir.restore(clean, fit.model, 3, "flip", 0.2,
                       methods={"MPM (loopy BP)": ("lbp", {})}, rng=0)[0]
    for name in imgs:
        np.testing.assert_array_equal(again[name], imgs[name])


@pytest.mark.parametrize("call, name", [
    (lambda ir: ir.learn_prior(np.zeros(6, int), 3), "clean"),
    (lambda ir: ir.learn_prior(np.full((2, 3), 3), 3), "clean"),
    (lambda ir: ir.restore(np.zeros((2, 3, 1), int), inz.potts_grid(2, 3, 3, 0.5), 3, "flip",
                           0.1, methods={}, rng=0), "clean"),
    (lambda ir: ir.restore(np.zeros((2, 3), int), inz.potts_grid(2, 3, 3, 0.5), 3, "flip",
                           1.0, methods={}, rng=0), "rate"),
    (lambda ir: ir.error_rate(np.zeros(5), np.zeros((2, 3))), "restored"),
])
def test_harness_bad_input_is_named(call, name):
    from mrflib.repro import image_restoration as ir

    with pytest.raises(ValueError, match=name):
        call(ir)
