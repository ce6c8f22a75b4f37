"""Lower bounds of any order on the partition function (Leisink & Kappen).

Reference: M. A. R. Leisink and H. J. Kappen, *General lower bounds based on computer
generated higher order expansions* (UAI 2002), ``higher-order-bounds-leisink-kappen``.
Equation numbers below are the paper's.

Model convention
----------------
The paper writes ``p(s) ∝ exp(H(s))`` with ``H(s) = ½ Σ_ij w_ij s_i s_j + Σ_i θ_i s_i``,
``w`` symmetric with a zero diagonal, ``s_i = ±1``. Our
:class:`~mrflib.models.boltzmann.BoltzmannMachine` has ``P(x) ∝ exp(Σ_i b_i x_i + Σ_e J_e x_i x_j)``
with one term per edge ``i < j``. The ½ of the paper counts every pair twice, so the two
agree with **no sign change and no factor**: ``θ_i = b_i`` and ``w_ij = w_ji = J_e``
(``bm.coupling_matrix()``), ``w_ij = 0`` for pairs that are not edges. The SK model of
section 5 is the complete graph (:func:`mrflib.models.graphs.complete`).

The bound (eq. 5) with a factorized ``H̃(s) = Σ_i h_i s_i + const`` and ``m_i = tanh h_i``
reads ``log Z ≥ log Z̃ + log Σ_n A_{K;n} ⟨ΔH^n⟩`` where the constant is fixed by
``⟨ΔH⟩ = 0``, so that ``log Z̃`` is the mean-field free energy
(:func:`mean_field_log_partition`), which is also the first-order bound (``K = 2``).
The *order* of the bound is ``K − 1`` (odd): order 1 is mean field, order 9 uses
``⟨ΔH^n⟩`` up to ``n = 9``.

Indices are 0-based: ``mu[j]`` is the paper's ``μ_{2j}``; ``dh_moments[n]`` is ``⟨ΔH^n⟩``.

The expansion of section 4 (Table 1's corrected moments, the partition graphs with their
generation, canonical labelling, treewidth, disk cache and einsum plans) lives in
:mod:`mrflib.inference.bounds.expansion`, and the mean-field equations (17) with their
solution and free energy in :mod:`mrflib.inference.bounds.mean_field_equations`; the
public names of both are re-exported here. High orders, where
``⟨ΔH^n⟩`` or the coefficients leave the float range or cancel, are evaluated in multiple
precision (mpmath) instead of overflowing.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument, warn_deprecated
from mrflib._support.validation import (
    as_rng,
    check_array,
    check_positive,
    is_choice,
    require_memory,
)
from mrflib.inference import exact as _exact
from mrflib.inference.bounds.expansion import (
    MAX_GRAPH_ORDER,
    PartitionGraph,
    central_moment_polynomials,
    check_graph_order,
    connected_partition_graphs,
    corrected_moment_polynomials,
    corrected_moments,
    dh_moments_graphs,
    partition_graph_cache_path,
    partition_graphs,
)
from mrflib.inference.bounds.mean_field_equations import (
    MAX_MEAN_FIELD_STARTS as MAX_MEAN_FIELD_STARTS,
)
from mrflib.inference.bounds.mean_field_equations import (
    check_means,
    mean_field_log_partition,
    mean_field_residual,
    mean_field_solution,
)
from mrflib.models.boltzmann import BoltzmannMachine, check_model

__all__ = [
    "MAX_ORDER",
    "check_order",
    "coefficients",
    "derivative_polynomials",
    "optimal_mu",
    "log_expected_bound",
    "central_moment_polynomials",
    "corrected_moment_polynomials",
    "corrected_moments",
    "PartitionGraph",
    "partition_graphs",
    "connected_partition_graphs",
    "partition_graph_cache_path",
    "mean_field_solution",
    "mean_field_log_partition",
    "mean_field_residual",
    "delta_h_moments",
    "log_partition_lower_bound",
    "log_partition_lower_bounds",
    "pair_correlation_estimates",
    "sk_model",
]

#: Largest ``N`` the "enumerate" method accepts (2^N states are visited in blocks).
MAX_ENUMERATE_N = 30
#: ``method="auto"`` enumerates up to this many spins and uses the graphs beyond.
AUTO_ENUMERATE_N = 20
#: Highest order of a bound. Beyond order ~100 the optimal mu (eq. 13) cancels in floats and
#: is recomputed in mpmath at ``30 + order`` digits, at a cost that grows about as the cube
#: of the order: on one core, order 201 takes 3 s, order 401 11 s and order 1001 88 s (a
#: 6-spin model; the moments are cheap). The bound stops improving long before (the book's
#: tables stop at order 9), so orders past 401 are refused rather than left to run for minutes.
MAX_ORDER = 401
#: Largest residual of eq. (17) the "graphs" method accepts.
MEAN_FIELD_TOL = 1e-9


# ============================================================================ eq. (3), (8)
def _is_symbolic(values: Sequence[Any]) -> bool:
    # a sympy value exists only once sympy is imported: importing it here to find out
    # would cost a second and a half of a numeric caller's time limit
    sympy = sys.modules.get("sympy")
    return sympy is not None and any(isinstance(v, sympy.Basic) for v in values)


def _arith(symbolic: bool):
    """(exp, rational) for floats or for sympy expressions."""
    if symbolic:
        import sympy

        return sympy.exp, sympy.Rational
    return math.exp, lambda p, q: p / q


def _step(P: list, mu_k: Any, e: Any, rat) -> list:
    """One step of the recursion (3) (``e = e^{μ_k}``) or (8)/(22) (``e = 0``)."""
    K = len(P)
    new = [0] * K
    for n in range(K - 2):
        new[n + 2] = P[n] * rat(1, (n + 2) * (n + 1))
    s1 = 0
    s0 = 0
    for n in range(K):
        if P[n] != 0:
            s1 = s1 + P[n] * rat(1, n + 1) * mu_k ** (n + 1)
            s0 = s0 + P[n] * rat(1, n + 2) * mu_k ** (n + 2)
    new[1] = e - s1
    new[0] = e * (1 - mu_k) + s0
    return new


def _check_K(K: Any) -> int:
    K = check_positive(K, "K", integer=True)
    if K % 2:
        raise ValueError(f"K must be even (the bound B_K has odd order K-1), got {K}")
    return K


def check_order(order: Any) -> int:
    """The order ``K - 1`` of a bound (eq. (2)-(3)), checked: a positive odd integer, at most
    :data:`MAX_ORDER` (the bounds and their moments take it; a harness checks its orders
    by it before it runs).

    Parameters
    ----------
    order : int
        The order, ``K - 1`` with ``K`` even.

    Returns
    -------
    int
        ``order``; a ``ValueError`` naming ``order`` when it is not an odd positive integer
        at most :data:`MAX_ORDER`.
    """
    order = check_positive(order, "order", integer=True)
    if order % 2 == 0:
        raise ValueError(f"order must be odd (order = K-1 with K even), got {order}")
    if order > MAX_ORDER:
        raise ValueError(f"order must be at most MAX_ORDER = {MAX_ORDER}, got {order}: higher "
                         "orders need multiple-precision arithmetic whose cost grows as the "
                         "cube of the order (order 401 takes about 10 s, order 1001 about 90 s)")
    return order


def coefficients(K: int, mu: Any) -> np.ndarray:
    """Coefficients ``A_{K;n}``, ``n = 0..K-1``, of the bound ``e^x ≥ B_K(x)``, eq. (2)-(3).

    Parameters
    ----------
    K : int
        Even; the bound has order ``K - 1``.
    mu : sequence of length ``K // 2``
        The variational parameters ``μ_0, μ_2, ..., μ_{K-2}`` (``mu[j] = μ_{2j}``). Any real
        values give a valid bound. Sympy expressions are accepted and give exact
        symbolic coefficients (an object array).

    Returns
    -------
    numpy.ndarray, shape (K,)
        ``A_{K;0}, ..., A_{K;K-1}``: ``B_K(x) = Σ_n A_{K;n} x^n``.

    Notes
    -----
    The recursion (3) is ``B_{k+2}(x) = e^{μ_k}(1 + x − μ_k) + ∫_{μ_k}^x ∫_{μ_k}^y B_k``, so
    ``e^x − B_{k+2}(x) = ∫_{μ_k}^x (x − t)(e^t − B_k(t)) dt ≥ 0`` by induction from
    ``B_0 = 0``; ``B_K`` touches ``e^x`` at ``x = μ_{K-2}``.
    """
    K = _check_K(K)
    mu = _mu_list(mu, K)
    symbolic = _is_symbolic(mu)
    if not symbolic:
        mu = [float(v) for v in mu]
        if not all(math.isfinite(v) for v in mu):
            raise ValueError("mu must be finite")
    exp, rat = _arith(symbolic)
    A: list = [0] * K
    try:
        for mk in mu:
            A = _step(A, mk, exp(mk), rat)
    except OverflowError:  # a power of μ beyond floats: the same recursion in mpmath
        return _to_float(_mp_coefficients(mu, K), "mu: the coefficients A_{K;n}")
    if symbolic:
        return np.array(A, dtype=object)
    return np.array(A, dtype=np.float64)


def _mu_list(mu: Any, K: int) -> list:
    """``mu`` as a list of its ``K/2`` entries (floats or sympy expressions)."""
    mu = list(np.asarray(mu, dtype=object).ravel()) if not isinstance(mu, list) else list(mu)
    if len(mu) != K // 2:
        raise ValueError(f"mu must have K/2 = {K // 2} entries (μ_0, μ_2, ..., μ_K-2), "
                         f"got {len(mu)}")
    return mu


def _mp_coefficients(mu: list, K: int) -> list:
    import mpmath

    with mpmath.workdps(30 + K):
        one = mpmath.mpf(1)
        A: list = [0] * K
        for mk in mu:
            A = _step(A, one * mk, mpmath.exp(mk), lambda p, q: one * p / q)
        return A


def _to_float(values: list, what: str) -> np.ndarray:
    out = np.array([float(v) for v in values], dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{what} exceed the float range")
    return out


def derivative_polynomials(K: int, i: int, mu: Any) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of ``X_i(x)`` and ``Y_i(x)`` of eq. (12) (length ``K``).

    ``X_i`` (``Y_i``) is recursion (8) run from ``k = i + 2`` to ``K − 2`` starting from
    ``A'_{i+2} = x`` (``= −1``). The appendix shows ``Y_i(x) ≤ 0``.

    Parameters
    ----------
    K : int
        Even, positive; the bound has order ``K − 1``.
    i : int
        The paper's (even) index, in ``[0, K − 2]``.
    mu : sequence of length ``K // 2``
        All ``K/2`` variational parameters (``mu[j] = μ_{2j}``); ``X_i`` and ``Y_i``
        depend only on the ``μ_k`` with ``k > i``, and the entries with ``k ≤ i`` are
        ignored. Sympy expressions give symbolic coefficients.

    Returns
    -------
    X : numpy.ndarray, shape (K,)
        Coefficients of ``X_i`` in increasing powers of ``x`` (float64, or an object array
        of sympy expressions).
    Y : numpy.ndarray, shape (K,)
        Coefficients of ``Y_i``, likewise.
    """
    K = _check_K(K)
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i % 2 or not 0 <= i < K:
        raise ValueError(f"i must be an even integer in [0, {K - 2}], got {i!r}")
    return _derivative_polynomials(K, i, _mu_list(mu, K))


def _derivative_polynomials(K: int, i: int, mu: list) -> tuple[np.ndarray, np.ndarray]:
    symbolic = _is_symbolic(mu)
    _, rat = _arith(symbolic)
    X: list = [0] * K
    Y: list = [0] * K
    X[1] = 1
    Y[0] = -1
    for k in range(i + 2, K, 2):
        X = _step(X, mu[k // 2], 0, rat)
        Y = _step(Y, mu[k // 2], 0, rat)
    dtype = object if symbolic else np.float64
    return np.array(X, dtype=dtype), np.array(Y, dtype=dtype)


def _check_moments(dh_moments: Any, K: int) -> list:
    if isinstance(dh_moments, (list, tuple)) and _is_symbolic(dh_moments):
        M = list(dh_moments)
    else:
        M = list(check_array(dh_moments, "dh_moments", ndim=1))
    if len(M) < K:
        raise ValueError(f"dh_moments must hold <dH^n> for n = 0..K-1 = {K - 1}, "
                         f"got {len(M)} entries")
    return M[:K]


def optimal_mu(dh_moments: Any, K: int) -> np.ndarray:
    """Optimal variational parameters ``μ_0, ..., μ_{K-2}`` of eq. (13), no optimizer.

    ``μ_i = −⟨X_i(ΔH)⟩ / ⟨Y_i(ΔH)⟩`` depends only on the ``μ_k`` with ``k > i``, so the
    parameters are computed from the last one backwards: ``μ_{K-2} = ⟨ΔH⟩`` (eq. 14),
    then eq. (15), and so on. Each is the unique maximum of the bound in its coordinate
    given the later ones (``Y_i ≤ 0``, appendix), hence this is the global maximum of
    ``⟨B_K(ΔH)⟩`` over all ``μ``.

    Parameters
    ----------
    dh_moments : array_like
        ``dh_moments[n] = ⟨ΔH^n⟩`` for ``n = 0..K-1`` (at least ``K`` entries; ``[0]`` is
        1). A list of sympy symbols gives the symbolic solution.
    K : int
        Even; the bound has order ``K − 1``.

    Returns
    -------
    numpy.ndarray, shape (K // 2,)
        ``mu[j] = μ_{2j}``. If ``⟨Y_i⟩ = 0`` (``ΔH`` constant) the bound does not depend on
        ``μ_i`` and ``μ_i = μ_{i+2}`` is returned.
    """
    K = _check_K(K)
    M = _check_moments(dh_moments, K)
    try:
        return _optimal_mu(M, K)
    except OverflowError:  # a power of μ beyond floats: eq. (13) in mpmath
        import mpmath

        with mpmath.workdps(30 + K):
            one = mpmath.mpf(1)
            return _to_float(_optimal_mu_adjoint([one * v for v in M], K, one),
                             "dh_moments: the optimal mu")


def _optimal_mu(M: list, K: int) -> np.ndarray:
    symbolic = _is_symbolic(M)
    if symbolic:
        import sympy

        mu: list = [sympy.Integer(0)] * (K // 2)
    else:
        mu = [0.0] * (K // 2)
    for i in range(K - 2, -1, -2):
        X, Y = _derivative_polynomials(K, i, mu)
        ex = sum(X[n] * M[n] for n in range(K))
        ey = sum(Y[n] * M[n] for n in range(K))
        if symbolic:
            mu[i // 2] = -ex / ey
        elif ey == 0:
            mu[i // 2] = mu[i // 2 + 1] if i + 2 < K else 0.0
        else:
            mu[i // 2] = -float(ex) / float(ey)
    return np.array(mu, dtype=object if symbolic else np.float64)


def log_expected_bound(dh_moments: Any, order: int) -> float:
    """``log ⟨B_K(ΔH)⟩ = log Σ_n A_{K;n} ⟨ΔH^n⟩`` at the optimal ``μ`` (eq. 5, 13).

    Where floats overflow or cancel, the value is computed in multiple precision (mpmath).

    Parameters
    ----------
    dh_moments : array_like
        ``dh_moments[n] = ⟨ΔH^n⟩`` for ``n = 0..order`` (at least ``order + 1`` entries;
        ``[0]`` is 1).
    order : int
        ``K − 1``: odd, positive, at most :data:`MAX_ORDER`.

    Returns
    -------
    float
        The logarithm of the expected bound. With ``⟨ΔH⟩ = 0`` the value is ``≥ 0`` (the
        first-order bound is ``⟨B_2⟩ = 1``) and never decreases with the order (section 3);
        ``-inf`` when the expected bound is not positive.
    """
    order = check_order(order)
    K = order + 1
    M = np.asarray(_check_moments(dh_moments, K), dtype=np.float64)
    try:
        with np.errstate(over="raise", invalid="raise"):
            value = float(coefficients(K, optimal_mu(M, K)) @ M)
    except (OverflowError, FloatingPointError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):  # overflow or cancellation: exactly
        return _log_expected_bound_mp(M, 1.0, order)
    return math.log(value)


def _optimal_mu_adjoint(M: list, K: int, one: Any) -> list:
    """Eq. (13) in ``O(K^2)``: the moments are pulled back through the steps (8).

    ``⟨X_i(ΔH)⟩ = w·x`` and ``⟨Y_i(ΔH)⟩ = −w_0`` with ``w = T_{i+2}ᵀ ⋯ T_{K-2}ᵀ M``, ``T_k``
    the (linear) map of one step of recursion (8); ``w`` gains one factor per ``μ``.
    Same values as :func:`optimal_mu`, which rebuilds every ``X_i``, ``Y_i`` (``O(K^3)``).
    """
    mu = [one * 0] * (K // 2)
    w = list(M)
    for i in range(K - 2, -1, -2):
        ex, ey = w[1], -w[0]
        mu[i // 2] = -ex / ey if ey != 0 else (mu[i // 2 + 1] if i + 2 < K else one * 0)
        if i == 0:
            break
        mk = mu[i // 2]
        w = [(w[n + 2] / ((n + 2) * (n + 1)) if n < K - 2 else 0)
             - w[1] * mk ** (n + 1) / (n + 1) + w[0] * mk ** (n + 2) / (n + 2)
             for n in range(K)]
    return mu


def _log_expected_bound_mp(scaled_moments: np.ndarray, scale: float, order: int) -> float:
    """:func:`log_expected_bound` in multiple precision, for orders where floats fail.

    ``scaled_moments[n] = ⟨(ΔH / s)^n⟩`` (each in ``[-1, 1]``, ``s`` a power of two) are
    lifted exactly to ``⟨ΔH^n⟩`` in mpmath, which has no exponent range to overflow; the
    working precision grows with the order to absorb the cancellations of eq. (13).
    """
    import mpmath

    K = order + 1
    with mpmath.workdps(30 + order):
        one = mpmath.mpf(1)
        M = [one * float(v) * mpmath.mpf(scale) ** n for n, v in enumerate(scaled_moments[:K])]
        A: list = [0] * K
        for mk in _optimal_mu_adjoint(M, K, one):
            A = _step(A, mk, mpmath.exp(mk), lambda p, q: one * p / q)
        value = mpmath.fsum(a * b for a, b in zip(A, M))
        if not value > 0:
            return -math.inf
        return float(mpmath.log(value))


# ============================================================================ eq. (17)
def mean_field(*args: Any, **kwargs: Any) -> np.ndarray:
    """Deprecated name of :func:`mean_field_solution`, kept for one release.

    :func:`mrflib.inference.approx.mean_field.mean_field` is naive mean field on any
    model and returns a :class:`~mrflib.inference.approx.mean_field.MeanFieldResult`;
    this one returns the means ``m`` of eq. (17), so the two have different names.

    Parameters
    ----------
    *args, **kwargs
        Those of :func:`mean_field_solution`.

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
        :func:`mean_field_solution`'s means ``m``.
    """
    warn_deprecated("bounds.mean_field(...)", "bounds.mean_field_solution(...), which "
                    "returns the same means m")
    return mean_field_solution(*args, **kwargs)


# ============================================================================ eq. (16), (18)
def _dh_moments_enumerate(
    bm: BoltzmannMachine, m: np.ndarray, order: int, scale: float = 1.0
) -> np.ndarray:
    """``⟨(ΔH / scale)^n⟩`` of eq. (16) by visiting all 2^N states in blocks (any m)."""
    n = bm.n
    W = bm.coupling_matrix()
    theta = bm.bias
    interior = np.abs(m) < 1
    h = np.zeros(n)
    h[interior] = np.arctanh(m[interior])
    g = np.where(interior, theta + W @ m - h, 0.0)  # residual of eq. (17); 0 when |m| = 1
    lo = n - n // 2
    hi = n - lo
    require_memory(8.0 * (n + 4) * (2**lo + 2**hi), "the half-state tables")
    Xlo = _exact.states(lo).astype(np.float64)
    Xhi = _exact.states(hi).astype(np.float64)
    Dlo = Xlo - m[:lo]
    Dhi = Xhi - m[lo:]
    plo = np.prod((1 + Xlo * m[:lo]) / 2, axis=1)
    phi = np.prod((1 + Xhi * m[lo:]) / 2, axis=1)
    # ΔH = ½ δᵀWδ + g·δ, split into low-block, high-block and cross terms
    alo = 0.5 * np.einsum("si,ij,sj->s", Dlo, W[:lo, :lo], Dlo) + Dlo @ g[:lo]
    ahi = 0.5 * np.einsum("si,ij,sj->s", Dhi, W[lo:, lo:], Dhi) + Dhi @ g[lo:]
    cross = Dlo @ W[:lo, lo:]  # (2^lo, hi)
    M = np.zeros(order + 1)
    rows = max(1, (1 << 20) // max(1, Xhi.shape[0]))
    for start in range(0, Xlo.shape[0], rows):
        sl = slice(start, start + rows)
        D = cross[sl] @ Dhi.T
        D += alo[sl, None]
        D += ahi[None, :]
        if scale != 1.0:
            D /= scale
        T = plo[sl, None] * phi[None, :]
        M[0] += T.sum()
        for k in range(1, order + 1):
            T *= D
            M[k] += T.sum()
    return M


@renamed_argument("bm", "model")
def delta_h_moments(
    model: BoltzmannMachine, m: Any, order: int, method: str = "graphs"
) -> np.ndarray:
    """``⟨ΔH^n⟩``, ``n = 0..order``, under the factorized distribution with means ``m``.

    Parameters
    ----------
    model : BoltzmannMachine
    m : array_like, shape (n,)
        Means ``m_i = tanh h_i`` of the factorized ``H̃``.
    order : int
        Highest moment (any positive integer; the order-``K−1`` bound needs ``K − 1``).
    method : {"graphs", "enumerate"}, default "graphs"
        ``"enumerate"``: eq. (16) exactly, summing over all ``2^N`` states (``N ≤ 30``),
        valid for any ``m``. ``"graphs"``: eq. (18) by the partition-graph expansion of
        section 4: the cumulants of ``ΔH`` are sums over the *connected* partition graphs
        of their free index sums (eq. 19) with the corrected moments ``M'_c`` of Table 1
        on the vertices, contracted by variable elimination (``numpy.einsum`` along a
        greedy path: cost ``N^π`` for clique size ``π``); the moments follow from the
        cumulants, which adds exactly the paper's disconnected partitions. Requires ``m``
        to solve eq. (17) (residual ≤ ``MEAN_FIELD_TOL``) and ``order ≤ MAX_GRAPH_ORDER``.

    Returns
    -------
    numpy.ndarray, shape (order + 1,)
        ``[1, ⟨ΔH⟩ (= 0), ⟨ΔH²⟩, ...]``.
    """
    model = check_model(model, "model")
    m = check_means(m, model.n)
    order = check_positive(order, "order", integer=True)
    if method == "enumerate":
        if model.n > MAX_ENUMERATE_N:
            raise ValueError(f"method='enumerate' visits 2^N states; N = {model.n} is more "
                             f"than {MAX_ENUMERATE_N}: use method='graphs'")
        return _dh_moments_enumerate(model, m, order)
    if method == "graphs":
        check_graph_order(order)
        res = mean_field_residual(model, m)
        if not res <= MEAN_FIELD_TOL:
            raise ValueError(f"method='graphs' needs m solving the mean-field equations (17) "
                             f"(eq. 18 assumes it); residual {res:.3g} > {MEAN_FIELD_TOL:g}. "
                             f"Use mean_field_solution(model, rng=...) or method='enumerate'")
        return dh_moments_graphs(model.coupling_matrix(), m, order)
    raise ValueError(f"method must be 'graphs' or 'enumerate', got {method!r}")


# ============================================================================ the bound
def _auto_method(method: str, n: int, order: int) -> str:
    if method == "auto":
        return "enumerate" if n <= AUTO_ENUMERATE_N or order > MAX_GRAPH_ORDER else "graphs"
    if not is_choice(method, ("graphs", "enumerate")):
        raise ValueError(f"method must be 'auto', 'graphs' or 'enumerate', got {method!r}")
    return method


@renamed_argument("bm", "model")
def log_partition_lower_bounds(
    model: BoltzmannMachine,
    orders: Sequence[int],
    method: str = "auto",
    *,
    m: Any = None,
    time_limit: float | None = None,
) -> np.ndarray:
    """``log`` of the optimized bound (5) for several odd orders, sharing the moments.

    ``log Z ≥ log Z̃ + log Σ_n A_{K;n}(μ^opt) ⟨ΔH^n⟩`` with ``K = order + 1``.

    Parameters
    ----------
    model : BoltzmannMachine
    orders : sequence of int
        Odd orders, each at most :data:`MAX_ORDER`; not empty.
    method : {"auto", "graphs", "enumerate"}, default "auto"
        How the moments ``⟨ΔH^n⟩`` are computed (:func:`delta_h_moments`); ``"auto"``
        enumerates for ``N ≤ AUTO_ENUMERATE_N`` and uses the partition graphs beyond.
    m : array_like, shape (n,), optional
        The means of the factorized distribution. Default: :func:`mean_field_solution` ``(model,
        rng=0)``, under ``time_limit`` seconds when given.
    time_limit : float or None, default None
        Seconds for the mean-field starts when ``m`` is not given (they are what takes
        time).

    Returns
    -------
    numpy.ndarray of float64, shape (len(orders),)
        The lower bounds on ``log Z``, in the order of ``orders``.

    Raises
    ------
    TimeoutError
        When ``m`` is not given and no mean-field start converged within ``time_limit``.
    """
    model = check_model(model, "model")
    orders = [check_order(o) for o in np.atleast_1d(np.asarray(orders, dtype=object))]
    if not orders:
        raise ValueError("orders must not be empty")
    m = (mean_field_solution(model, time_limit=time_limit, rng=0) if m is None
         else check_means(m, model.n))
    top = max(orders)
    method = _auto_method(method, model.n, top)
    with np.errstate(over="ignore", invalid="ignore"):
        M = delta_h_moments(model, m, top, method) if top > 1 else np.array([1.0, 0.0])
    base = mean_field_log_partition(model, m)
    out = []
    scaled = None
    for o in orders:
        value = _plain_log_bound(M, o)
        if value is None:  # high order: moments or coefficients beyond float range
            if scaled is None:
                scaled = _scaled_moments(model, m, M, top, method)
            value = _log_expected_bound_mp(scaled[0], scaled[1], o)
        out.append(base + value)
    return np.array(out)


def _plain_log_bound(M: np.ndarray, order: int) -> float | None:
    """:func:`log_expected_bound`, or ``None`` where the moments overflowed."""
    if not np.all(np.isfinite(M[: order + 1])):
        return None
    return log_expected_bound(M, order)


def _scaled_moments(
    bm: BoltzmannMachine, m: np.ndarray, M: np.ndarray, order: int, method: str
) -> tuple[np.ndarray, float]:
    """``(⟨(ΔH / s)^n⟩, s)`` with ``s`` a power of two above ``max |ΔH|`` (eq. 16).

    ``|ΔH| ≤ ½ Σ_ij |w_ij| |δ_i| |δ_j| + Σ_i |g_i| |δ_i|`` with ``|δ_i| ≤ 1 + |m_i|`` and
    ``g`` the residual of eq. (17), so every scaled power lies in ``[-1, 1]``.
    """
    W = bm.coupling_matrix()
    d = 1.0 + np.abs(m)
    g = bm.bias + W @ m - np.arctanh(np.clip(m, -1 + 1e-300, 1 - 1e-16))
    g = np.where(np.abs(m) < 1, g, 0.0)
    bound = 0.5 * float(d @ np.abs(W) @ d) + float(np.abs(g) @ d)
    scale = 2.0 ** math.ceil(math.log2(max(bound, 1.0)))
    if method == "enumerate":
        return _dh_moments_enumerate(bm, m, order, scale), scale
    return M / scale ** np.arange(order + 1), scale


@renamed_argument("bm", "model")
def log_partition_lower_bound(
    model: BoltzmannMachine, order: int, method: str = "auto", *, m: Any = None,
    time_limit: float | None = None,
) -> float:
    """Lower bound of odd ``order`` on ``log Z`` (eq. 5 with the optimal μ of eq. 13).

    Order 1 is the mean-field bound; the bound never decreases with the order (section 3).

    Parameters
    ----------
    model : BoltzmannMachine
    order : int
        Odd, at most :data:`MAX_ORDER`.
    method : {"auto", "graphs", "enumerate"}, default "auto"
        As in :func:`log_partition_lower_bounds`.
    m : array_like, shape (n,), optional
        As in :func:`log_partition_lower_bounds`.
    time_limit : float or None, default None
        As in :func:`log_partition_lower_bounds`.

    Returns
    -------
    float
        The lower bound on ``log Z``.

    Raises
    ------
    TimeoutError
        When ``m`` is not given and no mean-field start converged within ``time_limit``.
    """
    return float(log_partition_lower_bounds(model, [order], m=m, method=method,
                                            time_limit=time_limit)[0])


@renamed_argument("bm", "model")
def pair_correlation_estimates(
    model: BoltzmannMachine,
    orders: Sequence[int],
    edge: int = 0,
    method: str = "auto",
    *,
    step: float = 1e-5,
    m: Any = None,
) -> np.ndarray:
    """``⟨s_i s_j⟩ ≈ ∂ log B / ∂ w_ij`` for one edge, from the bounds of several orders.

    The bound is differentiated by central differences in the coupling of edge ``edge``,
    the mean-field solution being followed continuously (warm start from ``m``). These
    estimates are neither upper nor lower bounds (section 5, Figure 3).

    Parameters
    ----------
    model : BoltzmannMachine
    orders : sequence of int
        Odd orders of the bounds, as in :func:`log_partition_lower_bounds`.
    edge : int, default 0
        The edge ``(i, j)``: a row index of ``model.edges``.
    method : {"auto", "graphs", "enumerate"}, default "auto"
        As in :func:`log_partition_lower_bounds`.
    step : float, default 1e-05
        Positive step of the central differences in ``w_ij``.
    m : array_like, shape (n,), optional
        The mean-field solution to start from. Default: :func:`mean_field_solution` ``(model,
        rng=0)``.

    Returns
    -------
    numpy.ndarray of float64, shape (len(orders),)
        The estimates of ``⟨s_i s_j⟩``, one per order; order 1 gives the naive mean-field
        ``m_i m_j``.
    """
    model = check_model(model, "model")
    if isinstance(edge, bool) or not isinstance(edge, (int, np.integer)) or not (
        0 <= edge < len(model.edges)
    ):
        raise ValueError(f"edge must be a row index of model.edges in "
                         f"[0, {len(model.edges)}), got {edge!r}")
    step = check_positive(step, "step")
    m = mean_field_solution(model, rng=0) if m is None else check_means(m, model.n)
    out = []
    for sign in (1.0, -1.0):
        theta = model.params.copy()
        theta[model.n + edge] += sign * step
        b2 = model.with_params(theta)
        m2 = mean_field_solution(b2, init=m)
        out.append(log_partition_lower_bounds(b2, orders, m=m2, method=method))
    return (out[0] - out[1]) / (2 * step)


# ============================================================================ section 5
def sk_model(
    N: int, sigma_w: float, *, rng: Any, theta_sd: float = 0.2
) -> BoltzmannMachine:
    """The SK model of section 5: all pairs, ``θ_i ~ N(0, θ_sd²)``, ``w_ij ~ N(0, σ_w²/N)``.

    Parameters
    ----------
    N : int
        Number of spins (positive).
    sigma_w : float
        Non-negative; the couplings' standard deviation is ``sigma_w / sqrt(N)``.
    rng : numpy.random.Generator or int
        The seed of the draws: the biases first (when ``theta_sd > 0``), then the couplings.
    theta_sd : float, default 0.2
        Non-negative standard deviation of the biases (``0``: all biases zero).

    Returns
    -------
    BoltzmannMachine
        The model on the complete graph (:func:`mrflib.models.graphs.complete`).
    """
    from mrflib.models import graphs

    N = check_positive(N, "N", integer=True)
    require_memory(80.0 * N * N, f"sk_model(N={N}): the complete graph on N = {N} spins")
    sigma_w = check_positive(sigma_w, "sigma_w", allow_zero=True)
    theta_sd = check_positive(theta_sd, "theta_sd", allow_zero=True)
    gen = as_rng(rng)
    E = graphs.complete(N)
    theta = gen.normal(0.0, theta_sd, N) if theta_sd > 0 else np.zeros(N)
    return BoltzmannMachine(theta, E, gen.normal(0.0, sigma_w / math.sqrt(N), len(E)))

