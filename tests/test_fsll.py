"""Tests of mrflib.learning.fsll against brute-force enumeration (Takabatake & Akaho)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrflib import fsll
from mrflib.learning import _fsll_kernels as K
from mrflib.learning import _fsll_tables

MIXED = (2, 3, 4, 5, 8)


def brute_phi(y_digits, x_digits, cards):
    """Phi_y(x) straight from eq. (3)-(5), one variable at a time."""
    v = 1.0
    for yi, xi, k in zip(y_digits, x_digits, cards):
        if k & (k - 1) == 0:
            v *= (-1) ** bin(yi & xi).count("1")
        elif yi > 0:
            v *= 1.0 if xi == yi else -1.0
    return v


def all_digits(cards):
    # x_0 least significant: itertools.product varies the LAST factor fastest
    return [tuple(reversed(t)) for t in itertools.product(*[range(k) for k in reversed(cards)])]


def brute_kl(p, q):
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


# --------------------------------------------------------------------------- state order, bases
def test_flat_order_x0_least_significant():
    cards = (3, 2, 4)
    digits = np.array(all_digits(cards))
    idx = fsll.flat_index(digits, cards)
    np.testing.assert_array_equal(idx, np.arange(24))
    np.testing.assert_array_equal(fsll.unflatten(idx, cards), digits)
    assert fsll.flat_index([[2, 1, 3]], cards)[0] == 2 + 3 * (1 + 2 * 3)


def test_local_basis_eq4_eq5():
    H4 = fsll.local_basis(4)
    H4_ref = [[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]
    np.testing.assert_array_equal(H4, H4_ref)
    np.testing.assert_array_equal(H4 @ H4.T, 4 * np.eye(4))
    B3 = fsll.local_basis(3)
    np.testing.assert_array_equal(B3, [[1, 1, 1], [-1, 1, -1], [-1, -1, 1]])
    for k in (2, 3, 5, 6, 8):
        B = fsll.local_basis(k)
        assert set(np.unique(B)) <= {-1.0, 1.0}
        assert np.linalg.matrix_rank(B) == k


def test_basis_matrix_brute_force_and_theorem1():
    cards = (2, 3, 4)
    M = fsll.basis_matrix(cards)
    digits = all_digits(cards)
    ref = np.array([[brute_phi(y, x, cards) for x in digits] for y in digits])
    np.testing.assert_array_equal(M, ref)
    assert np.linalg.matrix_rank(M) == M.shape[0]  # Theorem 1: linearly independent
    for y in (0, 5, 23):
        np.testing.assert_array_equal(fsll.basis_function(y, cards), M[y])
    np.testing.assert_array_equal(fsll.basis_function([1, 2, 3], cards), M[1 + 2 * 2 + 3 * 6])


def test_walsh_product_is_xor():
    cards = (2, 4, 8)
    M = fsll.basis_matrix(cards)
    rng = np.random.default_rng(0)
    for _ in range(20):
        y, z = rng.integers(0, 64, size=2)
        np.testing.assert_array_equal(M[y] * M[z], M[y ^ z])


# --------------------------------------------------------------------------- dual transform
def test_dual_equals_brute_force_mixed():
    cards = MIXED
    X = math.prod(cards)
    rng = np.random.default_rng(1)
    p = rng.random(X)
    p /= p.sum()
    fast = fsll.dual(p, cards)
    np.testing.assert_allclose(fast, fsll.dual(p, cards, method="reference"), atol=1e-13)
    # independent brute force on a few y: sum_x p(x) Phi_y(x) from eq. (3)-(5)
    xs = all_digits(cards)
    for y in rng.integers(0, X, size=15).tolist() + [0, X - 1]:
        yd = fsll.unflatten([y], cards)[0]
        ref = sum(p[i] * brute_phi(yd, x, cards) for i, x in enumerate(xs))
        assert fast[y] == pytest.approx(ref, abs=1e-13)
    assert fast[0] == pytest.approx(1.0)


@pytest.mark.parametrize("cards", [(2,) * 10, (8, 8, 4), (3, 3, 3, 2), (5, 2, 2, 6)])
def test_dual_and_synthesize_match_reference(cards):
    X = math.prod(cards)
    rng = np.random.default_rng(2)
    a = rng.normal(size=X)
    np.testing.assert_allclose(fsll.dual(a, cards), fsll.dual(a, cards, method="reference"),
                               atol=1e-10)
    np.testing.assert_allclose(fsll.synthesize(a, cards),
                               fsll.synthesize(a, cards, method="reference"), atol=1e-10)


def test_probabilities_are_eq3():
    cards = (3, 2, 4)
    rng = np.random.default_rng(3)
    theta = {1: 0.3, 7: -0.8, 23: 0.5}
    M = fsll.basis_matrix(cards)
    lw = sum(v * M[y] for y, v in theta.items())
    ref = np.exp(lw) / np.exp(lw).sum()
    np.testing.assert_allclose(fsll.probabilities(theta, cards), ref, rtol=1e-12)
    dense = np.zeros(24)
    dense[[1, 7, 23]] = [0.3, -0.8, 0.5]
    np.testing.assert_allclose(fsll.probabilities(dense, cards), ref, rtol=1e-12)
    del rng


# --------------------------------------------------------------------------- incremental update
@pytest.mark.parametrize("cards", [(2,) * 10, MIXED, (3, 5), (4, 3, 2)])
def test_incremental_dual_update_matches_fresh_transform(cards):
    X = math.prod(cards)
    rng = np.random.default_rng(4)
    theta = np.zeros(X)
    tb = fsll.dual(np.full(X, 1.0 / X), cards)
    scratch = np.empty(X)
    for _ in range(300):
        y = int(rng.integers(1, X))
        d = float(rng.normal(scale=0.3))
        theta[y] += d
        fsll.dual_update(tb, y, d, cards, out=tb, scratch=scratch)
    fresh = fsll.dual(fsll.probabilities(theta, cards), cards)
    np.testing.assert_allclose(tb, fresh, atol=1e-10)


def test_dual_update_one_step_tanh_addition():
    cards = (2,) * 6
    tb = fsll.dual(fsll.probabilities({5: 0.4, 9: -0.2}, cards), cards)
    new = fsll.dual_update(tb, 9, 0.7, cards)
    assert new[9] == pytest.approx(math.tanh(math.atanh(tb[9]) + 0.7))  # eq. (16)
    assert new[0] == pytest.approx(1.0)
    ref = fsll.dual(fsll.probabilities({5: 0.4, 9: 0.5}, cards), cards)
    np.testing.assert_allclose(new, ref, atol=1e-13)


def test_algorithm3_matches_reference():
    for cards in [(2,) * 8, MIXED]:
        X = math.prod(cards)
        rng = np.random.default_rng(5)
        p = rng.random(X)
        p /= p.sum()
        y = int(rng.integers(1, X))
        ref = p * np.exp(0.37 * fsll.basis_function(y, cards))
        ref /= ref.sum()
        seg = _fsll_tables.segment_arrays(np.array(cards))
        stride, k, _ = seg
        K.algorithm3(p, 0.37, seg, ((y // stride) % k).astype(np.int64))
        np.testing.assert_allclose(p, ref, rtol=1e-12)


# --------------------------------------------------------------------------- candidates
def test_eq19_is_the_kl_change_along_a_line():
    cards = (3, 2, 2)
    X = 12
    rng = np.random.default_rng(6)
    pd = rng.random(X)
    pd /= pd.sum()
    theta = {3: 0.2, 7: -0.5}
    p0 = fsll.probabilities(theta, cards)
    d = fsll.dual(pd, cards)
    for y, new in [(7, 0.4), (5, -1.1), (3, 0.0)]:
        t0 = fsll.dual(p0, cards)[y]
        th1 = dict(theta)
        th1[y] = new
        p1 = fsll.probabilities(th1, cards)
        t1 = fsll.dual(p1, cards)[y]
        assert float(fsll.delta_kl(d[y], t0, t1)) == pytest.approx(
            brute_kl(pd, p1) - brute_kl(pd, p0), abs=1e-12)
        # eq. (16): theta_bar_y along the line
        assert t1 == pytest.approx(math.tanh(new - theta.get(y, 0.0) + math.atanh(t0)))


@settings(max_examples=200, deadline=None)
@given(st.floats(-0.999, 0.999), st.floats(-0.999, 0.999), st.floats(0, 0.1))
def test_lower_bound_eq21(d, t0, r):
    lb = float(fsll.append_lower_bound(d, t0, r))
    ex = float(fsll.append_delta(d, t0, r))
    assert lb <= ex + 1e-12
    assert float(fsll.append_lower_bound(d, d, r)) == pytest.approx(r)
    assert float(fsll.append_delta(d, d, r)) == pytest.approx(r)


def test_regularization_eq7():
    cards = (2, 3, 2)
    N = 500
    y = fsll.flat_index([[1, 2, 0]], cards)[0]
    expected = (math.log(N) / 2 + math.log(3 * 1) + math.log(3 * 2)) / N
    assert fsll.regularization(y, cards, N) == pytest.approx(expected)
    lo, hi = _fsll_tables.cost_tables(np.array(cards), N)
    ys = np.arange(12)
    np.testing.assert_allclose(hi[ys // lo.size] + lo[ys % lo.size],
                               fsll.regularization(ys, cards, N))


# --------------------------------------------------------------------------- learning
def _sample(p, n, rng, cards):
    idx = np.random.default_rng(rng).choice(p.size, size=n, p=p)
    return fsll.unflatten(idx, cards)


@pytest.mark.parametrize("cards", [(2,) * 8, (3, 2, 4, 2)])
def test_fit_cost_monotone_and_consistent(cards):
    X = math.prod(cards)
    rng = np.random.default_rng(7)
    p = rng.random(X) ** 3
    p /= p.sum()
    N = 3000
    data = _sample(p, N, 8, cards)
    m = fsll.fit(data, cards)
    assert m.n_basis > 0
    assert np.all(np.diff(m.history) < 0)  # every step lowers the cost (by >= eps)
    assert m.history[0] - m.history[-1] > 0
    pd = np.bincount(fsll.flat_index(data, cards), minlength=X) / N
    q = m.probabilities()
    assert m.kl_data == pytest.approx(brute_kl(pd, q), abs=1e-9)
    r = sum(fsll.regularization(y, cards, N) for y in m.theta)
    assert m.cost == pytest.approx(m.kl_data + r, abs=1e-9)
    # the paper's update (Algorithm 3 + fresh transform) takes the same path
    m2 = fsll.fit(data, cards, update="transform")
    assert [mv[:2] for mv in m2.moves] == [mv[:2] for mv in m.moves]
    np.testing.assert_allclose(m2.history, m.history, atol=1e-9)
    # skipping by eq. (21) changes nothing but the work
    m3 = fsll.fit(data, cards, use_bound=False)
    assert [mv[:2] for mv in m3.moves] == [mv[:2] for mv in m.moves]
    assert m.n_exact < m3.n_exact
    # threads change nothing
    m4 = fsll.fit(data, cards, parallel=True)
    assert m4.moves == m.moves and np.array_equal(m4.history, m.history)


def test_fit_at_convergence_no_candidate_improves():
    cards = (2, 3, 2)
    X = 12
    rng = np.random.default_rng(9)
    p = rng.random(X)
    p /= p.sum()
    N = 2000
    data = _sample(p, N, 10, cards)
    m = fsll.fit(data, cards, eps=1e-10)
    pd = np.bincount(fsll.flat_index(data, cards), minlength=X) / N
    base = m.cost
    M = fsll.basis_matrix(cards)
    # brute force: best single-coordinate move by a fine 1-d search, costs by enumeration
    for y in range(1, X):
        for v in np.linspace(-3, 3, 121):
            th = dict(m.theta)
            if v == 0.0:
                th.pop(y, None)
            else:
                th[y] = v
            q = np.exp(sum(t * M[z] for z, t in th.items()) if th else np.zeros(X))
            q /= q.sum()
            c = brute_kl(pd, q) + sum(fsll.regularization(z, cards, N) for z in th)
            assert c >= base - 1e-8


def test_fit_recovers_fsll_distribution_as_n_grows():
    cards = (2, 2, 3, 2, 2)
    true = {1: 0.6, 2: -0.5, 3: 0.4, 2 + 4 * 1: 0.5, 1 + 2 * 12: -0.7, 3 + 4 * 2 + 12 * 1: 0.6}
    p = fsll.probabilities(true, cards)
    kls = []
    for N in (300, 3000, 30000, 300000):
        m = fsll.fit(_sample(p, N, 11, cards), cards)
        kls.append(brute_kl(p, m.probabilities()))
    assert kls[-1] < 2e-4
    assert kls[-1] < kls[1] < kls[0]
    assert set(true) <= set(m.theta)


def test_fit_handles_constant_features():
    # x_1 = x_0 always: d_bar for Phi_{(1,1)} is exactly 1 (infinite theta, clipped)
    data = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]] * 50)
    m = fsll.fit(data, (2, 2, 2))
    assert np.all(np.isfinite(list(m.theta.values())))
    q = m.probabilities()
    assert np.all(np.isfinite(q)) and q.sum() == pytest.approx(1.0)
    assert q[fsll.flat_index(data[:4], (2, 2, 2))].sum() > 0.99


def test_fit_is_deterministic():
    data = _sample(np.full(16, 1 / 16), 200, 12, (2,) * 4)
    a, b = fsll.fit(data, (2,) * 4), fsll.fit(data, (2,) * 4)
    assert a.moves == b.moves and np.array_equal(a.history, b.history)


# --------------------------------------------------------------------------- memory, input checks
def test_memory_refused_before_allocation():
    with pytest.raises(ValueError, match="would need"):
        fsll.fit(np.zeros((3, 44), dtype=int), (2,) * 44)
    with pytest.raises(ValueError, match="would need"):
        fsll.dual(np.zeros(1), (2,) * 44)
    assert fsll.memory_required((2,) * 20) == 2 * 8 * 2**20
    assert fsll.memory_required((2,) * 20, "transform") == 3 * 8 * 2**20
    assert fsll.memory_required((3, 2)) == 3 * 8 * 6


@pytest.mark.parametrize(
    "data, cards, match",
    [
        (np.array([[0, 2]]), (2, 2), "column 1"),
        (np.array([[0, -1]]), (2, 3), "column 1"),
        (np.array([[0, 1, 0]]), (2, 2), "shape"),
        (np.array([[0.5, 1]]), (2, 2), "integer"),
        (np.zeros((0, 2), dtype=int), (2, 2), "at least one"),
        (np.array([[0, 1]]), (2, 1), "cardinalities"),
        (np.array([[0, 1]]), (2.5, 2), "cardinalities"),
    ],
)
def test_fit_rejects_bad_input(data, cards, match):
    with pytest.raises(ValueError, match=match):
        fsll.fit(data, cards)


def test_other_bad_input():
    with pytest.raises(ValueError, match="eps"):
        fsll.fit(np.array([[0, 1]]), (2, 2), eps=-1)
    with pytest.raises(ValueError, match="update"):
        fsll.fit(np.array([[0, 1]]), (2, 2), update="fast")
    with pytest.raises(ValueError, match="p must have shape"):
        fsll.dual(np.ones(5), (2, 2))
    with pytest.raises(ValueError, match="finite"):
        fsll.dual(np.array([1, np.nan, 0, 0]), (2, 2))
    with pytest.raises(ValueError, match="y must contain integer indices"):
        fsll.dual_update(np.ones(4), 4, 0.1, (2, 2))
    with pytest.raises(ValueError, match="index"):
        fsll.unflatten([7], (2, 3))


def test_fit_exposes_the_shared_result_fields():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 2, size=(200, 3))
    data[:150, 1] = data[:150, 0]  # correlated: the search takes several steps
    data[:120, 2] = 1
    m = fsll.fit(data, [2, 2, 2])
    assert m.model is m and m.converged and m.stop_reason.startswith("converged")
    assert m.n_steps == len(m.moves) and m.seconds > 0 and len(m.history) == m.n_steps + 1
    short = fsll.fit(data, [2, 2, 2], max_steps=1)
    assert not short.converged and "max_steps" in short.stop_reason
