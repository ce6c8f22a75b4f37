"""Tests of mrflib.inference.bounds (Leisink & Kappen, any-order lower bounds on Z)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import sympy as sp

from mrflib import BoltzmannMachine, bounds, exact, graphs
from mrflib.inference.bounds import expansion as partition_graphs
from mrflib.inference.bounds._bounds_kernels import mean_field_sweeps
from mrflib.repro import bounds_trials


def sk_model(N: int, sigma_w: float, rng, theta_sd: float = 0.2) -> BoltzmannMachine:
    """The SK model of section 5: θ ~ N(0, θ_sd²), w_ij ~ N(0, σ_w²/N), all pairs."""
    rng = np.random.default_rng(rng)
    E = graphs.complete(N)
    return BoltzmannMachine(rng.normal(0, theta_sd, N), E,
                            rng.normal(0, sigma_w / np.sqrt(N), len(E)))


# ----------------------------------------------------------------- eq. (2)-(4), (13)-(15)
def symbolic_bound(K: int, mus, x):
    """B_K by its definition: B_{k+2}(x) = e^μ(1 + x − μ) + ∫_μ^x ∫_μ^y B_k (B_0 = 0)."""
    B = sp.Integer(0)
    t, y = sp.symbols("t y")
    for mu in mus:
        inner = sp.integrate(B.subs(x, t), (t, mu, y))
        B = sp.exp(mu) * (1 + x - mu) + sp.integrate(inner, (y, mu, x))
    return sp.expand(B)


@pytest.mark.parametrize("K", [2, 4, 6, 8])
def test_coefficients_equal_symbolic_expansion(K):
    x = sp.Symbol("x")
    mus = sp.symbols(f"mu0:{K // 2}")
    B = sp.Poly(symbolic_bound(K, mus, x), x)
    rng = np.random.default_rng(K)
    for _ in range(3):
        vals = rng.uniform(-2, 2, K // 2)
        ours = bounds.coefficients(K, vals)
        sub = dict(zip(mus, vals))
        ref = [float(B.coeff_monomial(x**n).subs(sub)) for n in range(K)]
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)
    # symbolic input gives the same polynomial exactly
    sym = bounds.coefficients(K, list(mus))
    assert all(sp.simplify(sym[n] - B.coeff_monomial(x**n)) == 0 for n in range(K))


@pytest.mark.parametrize("K", [2, 4, 6, 8, 10])
def test_polynomial_is_lower_bound_touching_at_last_mu(K):
    rng = np.random.default_rng(K)
    xs = np.linspace(-6, 4, 401)
    for _ in range(20):
        mu = rng.uniform(-2, 2, K // 2)
        A = bounds.coefficients(K, mu)
        B = np.polynomial.polynomial.polyval(xs, A)
        assert np.all(np.exp(xs) - B >= -1e-9 * np.exp(np.abs(xs)))
        at = np.polynomial.polynomial.polyval(mu[-1], A)
        assert at == pytest.approx(math.exp(mu[-1]), rel=1e-10)


def test_taylor_at_zero_mu():
    A = bounds.coefficients(10, np.zeros(5))
    np.testing.assert_allclose(A, [1 / math.factorial(n) for n in range(10)], rtol=1e-14)


def test_optimal_mu_eq_14_15_symbolic():
    M = list(sp.symbols("M0:6"))
    mu = bounds.optimal_mu(M, 6)
    assert sp.simplify(mu[2] - M[1] / M[0]) == 0
    m2 = mu[2].subs(M[0], 1)
    eq15 = (sp.Rational(1, 6) * M[3] - sp.Rational(1, 2) * M[1] * m2**2 + m2**3 / 3) / (
        sp.Rational(1, 2) * M[2] - M[1] * m2 + m2**2 / 2)
    assert sp.simplify(mu[1].subs(M[0], 1) - eq15) == 0


def random_moments(rng, K, n_samples=50):
    """Moments of a random discrete ΔH (a valid moment sequence)."""
    v = rng.normal(0, rng.uniform(0.1, 2), n_samples)
    w = rng.dirichlet(np.ones(n_samples))
    return np.array([w @ v**n for n in range(K)])


@pytest.mark.parametrize("K", [4, 6, 8, 10])
def test_optimal_mu_is_global_maximum(K):
    rng = np.random.default_rng(K)
    from scipy.optimize import minimize

    for _ in range(5):
        M = random_moments(rng, K)
        mu = bounds.optimal_mu(M, K)

        def value(mu_, M=M):
            return float(bounds.coefficients(K, mu_) @ M)

        best = value(mu)
        # gradient zero and no better point from many starts (scipy only in the test)
        for start in [mu, mu + 0.3, rng.uniform(-2, 2, K // 2)]:
            res = minimize(lambda z, value=value: -value(z), start, method="Nelder-Mead",
                           options=dict(xatol=1e-10, fatol=1e-14, maxiter=4000))
            assert -res.fun <= best + 1e-9 * abs(best)


@pytest.mark.parametrize("K", [4, 6, 8, 10])
def test_Y_polynomials_are_negative(K):
    rng = np.random.default_rng(K)
    xs = np.linspace(-8, 8, 801)
    for _ in range(10):
        mu = rng.uniform(-2, 2, K // 2)
        for i in range(0, K - 2, 2):
            _, Y = bounds.derivative_polynomials(K, i, mu)
            assert np.all(np.polynomial.polynomial.polyval(xs, Y) <= 1e-12)


def test_bound_never_decreases_with_order_from_moments():
    rng = np.random.default_rng(3)
    for _ in range(50):
        M = random_moments(rng, 18)
        M[1] = 0.0 if rng.random() < 0.5 else M[1]
        vals = [bounds.log_expected_bound(M, o) for o in (1, 3, 5, 7, 9, 11, 17)]
        assert np.all(np.diff(vals) >= -1e-12)
        # and the expected bound is below ⟨e^ΔH⟩ (Jensen-free check with the sample law)


# ----------------------------------------------------------------- Table 1
def test_table1_moments_and_corrected_moments():
    m = sp.Symbol("m")
    central = bounds.central_moment_polynomials(7)
    corrected = bounds.corrected_moment_polynomials(7)
    s = {1: (1 + m) / 2, -1: (1 - m) / 2}
    for c in range(8):
        ref = sp.expand(sum(p * (v - m) ** c for v, p in s.items()))
        assert sp.expand(sum(int(a) * m**k for k, a in enumerate(central[c])) - ref) == 0
    printed = {  # Table 1 of the paper
        2: 1 - m**2, 3: -2 * m + 2 * m**3, 4: -2 + 8 * m**2 - 6 * m**4,
        5: 16 * m - 40 * m**3 + 24 * m**5, 6: 16 - 136 * m**2 + 240 * m**4 - 120 * m**6,
        7: -272 * m + 1232 * m**3 - 1680 * m**5 + 720 * m**7,
    }
    for c, ref in printed.items():
        assert sp.expand(sum(int(a) * m**k for k, a in enumerate(corrected[c])) - ref) == 0
    # corrected moments are the cumulants of s: log-mgf coefficients
    t = sp.Symbol("t")
    logmgf = sp.log(sum(p * sp.exp(t * (v - m)) for v, p in s.items()))
    ser = sp.series(logmgf, t, 0, 8).removeO()
    for c in range(2, 8):
        kc = sp.expand(ser.coeff(t, c) * sp.factorial(c))
        poly = sum(int(a) * m**k for k, a in enumerate(corrected[c]))
        assert sp.simplify(kc - poly) == 0
    vals = bounds.corrected_moments(np.array([0.3, -0.7]), 7)
    assert vals[4, 0] == pytest.approx(-2 + 8 * 0.09 - 6 * 0.3**4)


# ----------------------------------------------------------------- Table 2, graphs
TABLE2 = {2: (1, [1]), 3: (2, [1, 1]), 4: (5, [3, 2]), 5: (11, [4, 7]),
          6: (34, [11, 22, 1]), 7: (87, [18, 67, 2]), 8: (279, [45, 221, 13]),
          9: (897, [91, 744, 62])}


@pytest.mark.parametrize("order", sorted(TABLE2))
def test_partition_graph_counts_table2(order):
    gs = bounds.partition_graphs(order)
    total, by_clique = TABLE2[order]
    assert len(gs) == total
    sizes = [sum(1 for g in gs if g.clique_size == c) for c in range(2, 2 + len(by_clique))]
    assert sizes == by_clique
    for g in gs:
        assert g.order == order and min(g.degrees) >= 2
        assert all(u < v for u, v in g.edges)


def test_partition_graph_counts_small_cases():
    (g,) = bounds.partition_graphs(2)
    assert g.edges == ((0, 1), (0, 1)) and g.count == 2 and g.coefficient == 0.5
    counts = {g.edges: g.count for g in bounds.partition_graphs(3)}
    assert counts == {((0, 1), (0, 1), (0, 1)): 4, ((0, 1), (0, 2), (1, 2)): 8}


def brute_force_dh_moments(bm, m, order):
    """Reference: eq. (16) state by state, ΔH = H − H̃ − const with ⟨ΔH⟩ = 0."""
    X = exact.states(bm.n).astype(float)
    p = np.prod((1 + X * m) / 2, axis=1)
    h = np.arctanh(m)
    H = np.asarray(bm.log_weight(X.astype(np.int8)), dtype=float)
    d = H - X @ h
    d -= p @ d
    return np.array([p @ d**k for k in range(order + 1)])


def test_enumerate_matches_brute_force_for_any_m():
    rng = np.random.default_rng(0)
    bm = sk_model(7, 0.8, rng=rng)
    m = rng.uniform(-0.9, 0.9, 7)  # not a mean-field solution
    np.testing.assert_allclose(bounds.delta_h_moments(bm, m, 7, "enumerate"),
                               brute_force_dh_moments(bm, m, 7), rtol=1e-10, atol=1e-13)


def assert_moments_close(a, b, rtol=1e-10):
    scale = np.sqrt(max(b[2], 1e-300)) ** np.arange(len(b))  # ⟨ΔH²⟩^{n/2}
    np.testing.assert_array_less(np.abs(a - b), rtol * np.maximum(np.abs(b), scale) + 1e-300)


@pytest.mark.parametrize("N", range(6, 13))
def test_graphs_equal_enumerate_sk(N):
    # every order up to 9 at once: the moments 0..9 of one call
    bm = sk_model(N, 0.3 + 0.1 * N, rng=100 + N)
    m = bounds.mean_field_solution(bm, rng=0)
    a = bounds.delta_h_moments(bm, m, 9, "graphs")
    b = bounds.delta_h_moments(bm, m, 9, "enumerate")
    assert_moments_close(a, b)


def test_graphs_equal_enumerate_sparse_and_zero_field():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 3), 9, bias_scale=0.5,
                                 coupling_scale=0.6, rng=11)
    m = bounds.mean_field_solution(bm, rng=0)
    assert_moments_close(bounds.delta_h_moments(bm, m, 8, "graphs"),
                         bounds.delta_h_moments(bm, m, 8, "enumerate"))
    bm0 = BoltzmannMachine(np.zeros(8), graphs.complete(8), sk_model(8, 1.5, rng=4).coupling)
    z = bounds.mean_field_solution(bm0, solution="zero")
    assert_moments_close(bounds.delta_h_moments(bm0, z, 9, "graphs"),
                         bounds.delta_h_moments(bm0, z, 9, "enumerate"))


# ----------------------------------------------------------------- the bound
def test_bound_below_log_z_and_monotone_on_random_networks():
    rng = np.random.default_rng(2024)
    orders = [1, 3, 5, 7, 9]
    for trial in range(120):
        N = int(rng.integers(3, 11))
        if trial % 3 == 0:
            E = graphs.random_graph(N, 0.5, rng=rng)
            if len(E) == 0:
                continue
            bm = BoltzmannMachine(rng.normal(0, 0.5, N), E, rng.normal(0, 1.0, len(E)))
        else:
            bm = sk_model(N, rng.uniform(0.1, 2.5), rng=rng)
        logz = exact.log_partition(bm)
        lb = bounds.log_partition_lower_bounds(bm, orders, method="enumerate")
        assert np.all(lb <= logz + 1e-10), (trial, lb, logz)
        assert np.all(np.diff(lb) >= -1e-10), (trial, lb)
        m = bounds.mean_field_solution(bm, rng=0)
        assert lb[0] == pytest.approx(bounds.mean_field_log_partition(bm, m))


def test_log_partition_lower_bound_graph_method_and_any_m():
    bm = sk_model(10, 1.0, rng=7)
    logz = exact.log_partition(bm)
    g = bounds.log_partition_lower_bound(bm, 9, method="graphs")
    e = bounds.log_partition_lower_bound(bm, 9, method="enumerate")
    assert g == pytest.approx(e, rel=1e-12) and g <= logz
    # the bound holds for any factorized distribution (eq. 5), here a random one
    m = np.random.default_rng(1).uniform(-0.5, 0.5, 10)
    for o in (1, 5, 9):
        assert bounds.log_partition_lower_bound(bm, o, m=m, method="enumerate") <= logz


def test_pair_correlation_estimates():
    bm = sk_model(8, 0.4, rng=3)
    exact_corr = exact.moments(bm)[1][0]
    est = bounds.pair_correlation_estimates(bm, [1, 9], edge=0, method="enumerate")
    m = bounds.mean_field_solution(bm, rng=0)
    assert est[0] == pytest.approx(m[0] * m[1], abs=1e-6)
    assert abs(est[1] - exact_corr) < abs(est[0] - exact_corr)


# ----------------------------------------------------------------- mean field
def test_mean_field_fixed_point_and_kernel_reference():
    bm = sk_model(12, 1.5, rng=9)
    m = bounds.mean_field_solution(bm, rng=0)
    assert bounds.mean_field_residual(bm, m) < 1e-12
    # kernel vs plain loop
    theta, W = bm.bias.copy(), bm.coupling_matrix()
    m0 = np.random.default_rng(0).uniform(-1, 1, 12)
    a = m0.copy()
    mean_field_sweeps(theta, W, a, 3, 0.0)
    b = m0.copy()
    for _ in range(3):
        for i in range(12):
            b[i] = np.tanh(theta[i] + W[i] @ b)
    np.testing.assert_allclose(a, b, rtol=1e-14)
    # the chosen solution maximizes the first-order bound over the starts
    other = bounds.mean_field_solution(bm, init=-m)
    assert bounds.mean_field_log_partition(bm, m) >= bounds.mean_field_log_partition(
        bm, other) - 1e-12
    assert bounds.mean_field_log_partition(bm, m) <= exact.log_partition(bm)


def test_zero_solution():
    bm0 = BoltzmannMachine(np.zeros(6), graphs.complete(6), np.full(15, 0.1))
    assert np.all(bounds.mean_field_solution(bm0, solution="zero") == 0)
    with pytest.raises(ValueError, match="threshold"):
        bounds.mean_field_solution(sk_model(6, 1.0, rng=0), solution="zero")


# ----------------------------------------------------------------- validation
def test_bad_input():
    bm = sk_model(6, 1.0, rng=0)
    with pytest.raises(ValueError, match="K must be even"):
        bounds.coefficients(3, [0, 0])
    with pytest.raises(ValueError, match="mu must have"):
        bounds.coefficients(4, [0])
    with pytest.raises(ValueError, match="dh_moments"):
        bounds.optimal_mu([1.0, 0.0], 4)
    with pytest.raises(ValueError, match="order must be odd"):
        bounds.log_partition_lower_bound(bm, 4)
    with pytest.raises(ValueError, match="method"):
        bounds.delta_h_moments(bm, np.zeros(6), 3, method="magic")
    with pytest.raises(ValueError, match="mean-field"):
        bounds.delta_h_moments(bm, np.full(6, 0.1), 3, method="graphs")
    with pytest.raises(ValueError, match="m must"):
        bounds.delta_h_moments(bm, np.full(6, 1.5), 3, method="enumerate")
    with pytest.raises(TypeError, match="model must"):
        bounds.mean_field_solution("not a model", rng=0)
    with pytest.raises(ValueError, match="edge"):
        bounds.pair_correlation_estimates(bm, [1], edge=99)


def test_partition_graph_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MRFLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(partition_graphs, "_CONNECTED", {})
    first = bounds.connected_partition_graphs(5)
    assert bounds.partition_graph_cache_path().exists()
    assert not list(tmp_path.glob("*.tmp"))  # written atomically, nothing left behind
    monkeypatch.setattr(partition_graphs, "_CONNECTED", {})
    assert bounds.connected_partition_graphs(5) == first


def _damage(path, how):
    text = path.read_text()
    if how == "truncate":
        path.write_text(text[: len(text) // 2])
    elif how == "count":  # a valid JSON whose content no longer matches its checksum
        raw = json.loads(text)
        raw["connected"]["4"][0][2] += 1
        path.write_text(json.dumps(raw))
    elif how == "checksum":  # content edited and the checksum recomputed: a wrong graph
        raw = json.loads(text)
        raw["connected"]["4"][0][1][0] += 1
        raw["sha256"] = partition_graphs._digest(raw["connected"])
        path.write_text(json.dumps(raw))
    elif how == "version":
        raw = json.loads(text)
        raw["version"] = 1
        path.write_text(json.dumps(raw))
    else:
        path.write_bytes(b"\x00" * 64)


@pytest.mark.parametrize("how", ["truncate", "count", "checksum", "version", "garbage"])
def test_damaged_partition_graph_cache_is_regenerated(tmp_path, monkeypatch, how):
    monkeypatch.setenv("MRFLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(partition_graphs, "_CONNECTED", {})
    bm = sk_model(9, 1.0, rng=3)
    m = bounds.mean_field_solution(bm, rng=0)
    good = bounds.delta_h_moments(bm, m, 6, "graphs")
    path = bounds.partition_graph_cache_path()
    _damage(path, how)
    monkeypatch.setattr(partition_graphs, "_CONNECTED", {})
    partition_graphs._PLANS.clear()
    with pytest.warns(RuntimeWarning, match="partition-graph cache"):
        again = bounds.delta_h_moments(bm, m, 6, "graphs")
    np.testing.assert_array_equal(again, good)
    np.testing.assert_allclose(good, bounds.delta_h_moments(bm, m, 6, "enumerate"), rtol=1e-9,
                               atol=1e-12)
    # the regenerated file is intact again: read back without a warning
    monkeypatch.setattr(partition_graphs, "_CONNECTED", {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh = partition_graphs.connected_partition_graphs(4)
        assert bounds.connected_partition_graphs(4) == fresh


@pytest.mark.parametrize("sigma_w", [1.0, 4.0])
def test_high_order_bound_is_finite_and_below_log_z(sigma_w):
    # order 161: <dH^n> and the coefficients leave the float range (the plain float path
    # overflowed before); the multiple-precision path gives a finite valid bound
    bm = sk_model(8, sigma_w, rng=5)
    logz = exact.log_partition(bm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lb = bounds.log_partition_lower_bounds(bm, [41, 161], method="enumerate")
    assert np.all(np.isfinite(lb))
    assert np.all(lb <= logz + 1e-9 * abs(logz))
    assert lb[1] >= lb[0] - 1e-9 * abs(logz)
    # the adjoint eq. (13) of the multiple-precision path equals optimal_mu
    import mpmath

    M = bounds.delta_h_moments(bm, bounds.mean_field_solution(bm, rng=0), 9, "enumerate")
    adj = bounds._optimal_mu_adjoint([mpmath.mpf(v) for v in M], 10, mpmath.mpf(1))
    np.testing.assert_allclose([float(v) for v in adj], bounds.optimal_mu(M, 10), rtol=1e-9)


def test_sk_errors_table():
    df = bounds_trials.sk_errors(8, 1.0, 2, [1, 3], 0, solution=("best", "zero"), theta_sd=0.0)
    assert len(df) == 2 * 2 * 2
    assert (df.bound <= df.log_z + 1e-10).all() and (df.rel_error >= -1e-12).all()
    again = bounds_trials.sk_errors(8, 1.0, 2, [1, 3], 0, solution=("best", "zero"), theta_sd=0.0)
    assert df.equals(again)  # same seed, same numbers
    with pytest.raises(ValueError, match="N must"):
        bounds.sk_model(0, 1.0, rng=0)


def test_coefficients_and_moment_bound_at_high_order():
    # powers of mu beyond the float range are recomputed exactly: finite coefficients
    A = bounds.coefficients(400, np.full(200, 10.0))
    assert np.all(np.isfinite(A))
    np.testing.assert_allclose(A[:4], [1, 1, 1 / 2, 1 / 6], rtol=1e-5)
    with pytest.raises(ValueError, match="mu"):
        bounds.coefficients(4, [800.0, 0.0])  # e^800 itself is beyond floats
    # a discrete dH of spread 3: order 201 reaches log <e^dH> instead of overflowing
    x = np.random.default_rng(0).normal(0, 3, 200)
    x -= x.mean()
    M = np.array([np.mean(x**n) for n in range(202)])
    target = math.log(np.mean(np.exp(x)))
    low = bounds.log_expected_bound(M, 9)
    high = bounds.log_expected_bound(M, 201)
    assert low < high <= target + 1e-12
    assert high == pytest.approx(target, rel=1e-9)


# ---------------------------------------------------------------- deprecated arguments
RENAMED_BM = BoltzmannMachine.random(graphs.square_grid(2, 2), 4, coupling_scale=0.3, rng=3)
RENAMED_M = np.full(4, 0.1)
RENAMED = [
    ("mean_field_residual", dict(m=RENAMED_M)),
    ("mean_field_log_partition", dict(m=RENAMED_M)),
    ("mean_field_solution", dict(rng=0)),
    ("delta_h_moments", dict(m=RENAMED_M, order=3, method="enumerate")),
    ("log_partition_lower_bounds", dict(orders=[1, 3])),
    ("log_partition_lower_bound", dict(order=3)),
    ("pair_correlation_estimates", dict(orders=[1, 3])),
]


@pytest.mark.parametrize("name, kwargs", RENAMED, ids=[r[0] for r in RENAMED])
def test_model_argument_is_model_and_bm_still_works_with_a_warning(name, kwargs):
    fn = getattr(bounds, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = fn(model=RENAMED_BM, **kwargs)
    with pytest.warns(FutureWarning, match=rf"{name}\(bm=\.\.\.\).*{name}\(model=\.\.\.\)"):
        got = fn(bm=RENAMED_BM, **kwargs)
    np.testing.assert_array_equal(got, want)


def test_mean_field_is_a_deprecated_name_of_mean_field_solution():
    """Not the naive mean field of ``approx`` (a MeanFieldResult): the means ``m``, under a
    name of their own; the old name warns, names it and answers the same."""
    bm = BoltzmannMachine.random(graphs.complete(5), 5, coupling_scale=1.0, rng=4)
    want = bounds.mean_field_solution(bm, rng=0)
    with pytest.warns(FutureWarning, match=r"bounds\.mean_field\(\.\.\.\) is deprecated.*"
                                           r"bounds\.mean_field_solution\(\.\.\.\)"):
        got = bounds.mean_field(bm, rng=0)
    np.testing.assert_array_equal(got, want)
    assert "mean_field" not in bounds.__all__ and "mean_field_solution" in bounds.__all__


def test_mean_field_without_rng_warns_and_keeps_seed_zero():
    bm = BoltzmannMachine.random(graphs.complete(5), 5, coupling_scale=1.0, rng=4)
    with pytest.warns(FutureWarning, match=r"mean_field_solution\(\) without rng="):
        got = bounds.mean_field_solution(bm)
    np.testing.assert_array_equal(got, bounds.mean_field_solution(bm, rng=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing random is drawn: no seed to ask for
        bounds.mean_field_solution(bm, init=got)
        bounds.mean_field_solution(BoltzmannMachine(np.zeros(5), bm.edges, bm.coupling),
                          solution="zero")
