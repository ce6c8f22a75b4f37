"""The mean-field equations (17) of Leisink & Kappen, ``m_i = tanh(θ_i + Σ_j w_ij m_j)``:
their solution (:func:`mean_field_solution`), its residual (:func:`mean_field_residual`)
and the mean-field free energy ``log Z̃`` (:func:`mean_field_log_partition`), the bound of
order 1 and the factorized distribution the higher orders of
:mod:`mrflib.inference.bounds` expand around. The model convention is that module's:
``θ_i = b_i`` and ``w_ij = w_ji = J_e``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from scipy.special import xlogy

from mrflib._support.deprecation import renamed_argument, warn_deprecated
from mrflib._support.validation import as_rng, check_array, check_positive
from mrflib.inference.bounds._bounds_kernels import mean_field_sweeps
from mrflib.models.boltzmann import BoltzmannMachine, check_model

__all__ = ["MAX_MEAN_FIELD_STARTS", "mean_field_solution", "mean_field_log_partition",
           "mean_field_residual"]

#: Largest ``n_starts`` :func:`mean_field_solution` accepts (the default is 8).
MAX_MEAN_FIELD_STARTS = 10_000

# mean_field_solution's rng when the caller passes none: seed 0, with a FutureWarning, so that the
# results of callers that relied on the seed stay the same while they add one
_SEED_ZERO = object()


@renamed_argument("bm", "model")
def mean_field_residual(model: BoltzmannMachine, m: Any) -> float:
    """``max_i |m_i − tanh(θ_i + Σ_j w_ij m_j)|``: how far ``m`` is from solving eq. (17).

    Parameters
    ----------
    model : BoltzmannMachine
    m : array_like, shape (n,)
        Means in ``[-1, 1]``.

    Returns
    -------
    float
        The largest residual of eq. (17) over the spins.
    """
    model = check_model(model, "model")
    m = check_means(m, model.n)
    return float(np.max(np.abs(m - np.tanh(model.bias + model.coupling_matrix() @ m))))


@renamed_argument("bm", "model")
def mean_field_log_partition(model: BoltzmannMachine, m: Any) -> float:
    """``log Z̃`` of eq. (6) with the constant of eq. (16) fixed by ``⟨ΔH⟩ = 0``.

    ``log Z̃ = Σ_i S(m_i) + Σ_i θ_i m_i + ½ Σ_ij w_ij m_i m_j`` with the binary entropy
    ``S(m) = −Σ_± (1 ± m)/2 log((1 ± m)/2)``.

    Parameters
    ----------
    model : BoltzmannMachine
    m : array_like, shape (n,)
        Means in ``[−1, 1]^N`` (any, not only solutions of eq. (17)).

    Returns
    -------
    float
        The mean-field free energy: the first-order bound (``K = 2``) on ``log Z``.
    """
    model = check_model(model, "model")
    m = check_means(m, model.n)
    p, q = (1 + m) / 2, (1 - m) / 2
    entropy = -float(np.sum(xlogy(p, p) + xlogy(q, q)))
    W = model.coupling_matrix()
    return entropy + float(model.bias @ m) + 0.5 * float(m @ W @ m)


def check_means(m: Any, n: int, name: str = "m") -> np.ndarray:
    """``m`` as an array of ``n`` means in ``[-1, 1]`` (``ValueError`` naming ``name``
    otherwise)."""
    m = check_array(m, name, shape=(n,))
    if np.any(np.abs(m) > 1):
        raise ValueError(f"{name} must lie in [-1, 1] (m_i = tanh h_i)")
    return m


def _starts(first: np.ndarray, n_starts: int, gen: np.random.Generator) -> Iterator[np.ndarray]:
    """``first``, then ``n_starts - 1`` uniform points of ``[-1, 1]^n``, drawn one at a time."""
    yield first
    for _ in range(n_starts - 1):
        yield gen.uniform(-1, 1, first.size)


@renamed_argument("bm", "model")
def mean_field_solution(
    model: BoltzmannMachine,
    *,
    solution: str = "best",
    n_starts: int = 8,
    damping: float = 0.5,
    tol: float = 1e-13,
    max_iter: int = 5000,
    init: Any = None,
    rng: Any = _SEED_ZERO,
    time_limit: float | None = None,
) -> np.ndarray:
    """A solution ``m = tanh h`` of the mean-field equations (17).

    Parameters
    ----------
    model : BoltzmannMachine
    solution : {"best", "zero"}, default "best"
        ``"best"``: damped iteration ``m ← (1 − d) m + d tanh(θ + w m)`` from several starts
        (``tanh θ`` and ``n_starts − 1`` uniform random points, or ``init`` alone), each
        finished by sequential updates (coordinate ascent, guaranteed to converge) when the
        damped iteration does not converge in ``max_iter`` steps; among the fixed points the
        one with the largest first-order bound (:func:`mean_field_log_partition`) is
        returned. ``"zero"``: the ``h = 0`` solution, which solves eq. (17) when all
        thresholds are zero (Figure 4); refused otherwise.
    n_starts : int, default 8
        Starts of ``"best"``, at most :data:`MAX_MEAN_FIELD_STARTS`.
    damping : float, default 0.5
        The damping ``d`` of the iteration, in (0, 1].
    tol : float, default 1e-13
        Convergence tolerance on ``max |Δm|``.
    max_iter : int, default 5000
        Iteration cap of each start (damped iterations, then as many sequential sweeps).
    init : array_like, shape (n,), optional
        A single start in ``[-1, 1]^n``, used instead of the random starts.
    rng : numpy.random.Generator or int
        The seed of the random starts. Omitting it (the random starts then use seed 0)
        is deprecated and warns with a :class:`FutureWarning` when the random starts are
        drawn (``solution="best"`` without ``init``).
    time_limit : float or None, default None
        Seconds: no iteration starts after them, and the best fixed point found so far is
        returned (fewer starts tried). Without it every start runs to its end.

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
        The means ``m``.

    Raises
    ------
    TimeoutError
        When the time limit passes before any start has converged.
    """
    model = check_model(model, "model")
    if solution == "zero":
        return _zero_solution(model)
    damping, tol, max_iter, stop = _iteration_settings(solution, n_starts, damping, tol,
                                                       max_iter, time_limit)
    theta = np.ascontiguousarray(model.bias, dtype=np.float64)
    W = np.ascontiguousarray(model.coupling_matrix())
    if init is not None:
        starts = [check_means(init, model.n, "init")]
    else:
        if rng is _SEED_ZERO:
            # stacklevel 4: past the renamed_argument wrapper, at the caller's line
            warn_deprecated("mean_field_solution() without rng=",
                            "mean_field_solution(..., rng=<seed or Generator>)", stacklevel=4)
            rng = 0
        gen = as_rng(rng)
        starts = _starts(np.tanh(theta), n_starts, gen)
    best = _best_fixed_point(model, theta, W, starts, damping, tol, max_iter, stop)
    if best is None and time.perf_counter() >= stop:
        raise TimeoutError(f"the mean-field iteration did not converge from any start within "
                           f"time_limit={time_limit:g} s")
    if best is None:
        raise ValueError("the mean-field iteration did not converge from any start; raise "
                         "max_iter or tol")
    return best


def _zero_solution(model: BoltzmannMachine) -> np.ndarray:
    """``solution="zero"`` of :func:`mean_field_solution`: ``m = 0``, refused where a
    threshold is not zero."""
    if np.any(model.bias != 0):
        raise ValueError("solution='zero' (h = 0) solves eq. (17) only when every "
                         "threshold (bias) is zero")
    return np.zeros(model.n)


def _iteration_settings(solution: Any, n_starts: Any, damping: Any, tol: Any, max_iter: Any,
                        time_limit: Any) -> tuple[float, float, int, float]:
    """The checked ``damping``, ``tol``, ``max_iter`` of :func:`mean_field_solution`'s
    ``"best"``, and the :func:`time.perf_counter` time its iterations stop at (``inf``: no
    limit); ``n_starts`` is checked too."""
    if solution != "best":
        raise ValueError(f"solution must be 'best' or 'zero', got {solution!r}")
    n_starts = check_positive(n_starts, "n_starts", integer=True)
    if n_starts > MAX_MEAN_FIELD_STARTS:
        raise ValueError(f"n_starts must be at most {MAX_MEAN_FIELD_STARTS} (each start is a "
                         f"full mean-field iteration), got {n_starts}")
    damping = check_positive(damping, "damping")
    if damping > 1:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    tol = check_positive(tol, "tol")
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    stop = (math.inf if time_limit is None
            else time.perf_counter() + check_positive(time_limit, "time_limit", allow_zero=True))
    return damping, tol, max_iter, stop


def _best_fixed_point(model: BoltzmannMachine, theta: np.ndarray, W: np.ndarray,
                      starts: Iterable[np.ndarray], damping: float, tol: float, max_iter: int,
                      stop: float) -> np.ndarray | None:
    """Among the fixed points reached from ``starts`` before the clock's ``stop``
    (:func:`_fixed_point`), the one of the largest first-order bound
    (:func:`mean_field_log_partition`); ``None`` when none converged."""
    best, best_val = None, -math.inf
    for m0 in starts:
        if time.perf_counter() >= stop:
            break
        m = _fixed_point(theta, W, m0, damping, tol, max_iter, stop)
        if m is None:
            continue
        val = mean_field_log_partition(model, m)
        if val > best_val:
            best, best_val = m, val
    return best


def _fixed_point(theta: np.ndarray, W: np.ndarray, m0: np.ndarray, damping: float, tol: float,
                 max_iter: int, stop: float) -> np.ndarray | None:
    """The fixed point ``tanh(θ + W m)`` the damped iteration from ``m0`` reaches, finished
    by sequential sweeps (:func:`_sweeps_within`) when it does not converge in ``max_iter``
    steps; ``None`` when neither converges by ``max_iter`` or the clock's ``stop``."""
    n = theta.size
    m = m0.astype(np.float64).copy()
    converged = False
    for _ in range(max_iter):
        new = np.tanh(theta + W @ m)
        change = np.max(np.abs(new - m)) if n else 0.0
        m = (1 - damping) * m + damping * new
        if change < tol:
            converged = True
            break
        if time.perf_counter() >= stop:
            break
    if not converged and time.perf_counter() < stop:
        converged = _sweeps_within(theta, W, m, max_iter, tol, stop)
    return np.tanh(theta + W @ m) if converged else None


def _sweeps_within(theta: np.ndarray, W: np.ndarray, m: np.ndarray, max_iter: int,
                   tol: float, stop: float) -> bool:
    """Sequential sweeps on ``m`` in place until converged (``True``), ``max_iter`` sweeps
    or the clock's ``stop``; in rounds that cost about a hundredth of a second (the same
    sweeps as one call of the kernel, whose state is ``m`` alone)."""
    if stop == math.inf:
        _, change = mean_field_sweeps(theta, W, m, max_iter, tol)
        return bool(change < tol)
    per_round = max(1, int(1e7 / max(W.size, 1)))
    done = 0
    while done < max_iter and time.perf_counter() < stop:
        k = min(per_round, max_iter - done)
        did, change = mean_field_sweeps(theta, W, m, k, tol)
        done += did
        if change < tol:
            return True
    return False
