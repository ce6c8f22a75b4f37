"""Exact inference on Boltzmann machines by enumerating all ``2^n`` spin configurations.

State order: bit ``k`` of a state's index is spin ``k`` (bit set means ``x_k = +1``), so
spin 0 is the least significant digit, as in the flat order of ``book/notation.md``.

The kernels split the spins into a low block (``l`` spins) and a high block
(``h = n - l`` spins) and write every log-weight of ``P(x) ∝ exp(Σ b_i x_i + Σ J_ij x_i
x_j)`` (eq. (3) of the GSMCI paper) as

.. math::  \\log w(x) = E_{hi}(x_{hi}) + E_{lo}(x_{lo}) + x_{hi}^T W_{hi,lo} x_{lo},

so all ``2^n`` log-weights come from one ``(2^h, h) (h, l) (l, 2^l)`` BLAS product,
and all first and second moments from a handful of products of the same size
(``O(2^n (l + h))`` work instead of ``O(2^n n^2)`` for ``X^T diag(p) X``).
Everything is done in log space with a log-sum-exp shift. A model whose log-weights
would pass the float range is enumerated with its parameters scaled by ``2^-k``
(:func:`mrflib.models.boltzmann.overflow_exponent`), the differences to the largest
log-weight scaled back by ``2^k`` before the exponential: its probabilities, moments and
samples stay exact and finite, and ``log Z`` is ``+inf`` (with a warning) only when it is
beyond the range.

The front :mod:`mrflib.inference.exact` exports every public name here and chooses this
engine (``method="enumerate"``, or ``"auto"`` up to 20 spins); the helpers without an
underscore that are not in ``__all__`` are its kernels.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from mrflib._support.validation import check_indices, check_positive, check_spins, require_memory
from mrflib.models.boltzmann import (
    BoltzmannMachine,
    check_model,
    overflow_exponent,
    unscale_log_partition,
)
from mrflib.models.factor_graph import flat_index, flat_states
from mrflib.models.precision import checked

__all__ = ["states", "index_to_states", "states_to_index", "log_weights", "log_probabilities",
           "correlation_matrix", "covariance_matrix", "MAX_STATE_BYTES_FACTOR"]

#: Bytes per state the enumeration holds at its peak (three float64 tables of 2^n).
MAX_STATE_BYTES_FACTOR = 24


def check_enumerable(n: int, what: str = "exact enumeration") -> None:
    """Refuse (``ValueError`` naming ``what``) an enumeration of ``2^n`` states whose tables
    do not fit in memory."""
    require_memory(MAX_STATE_BYTES_FACTOR * 2.0**n, f"{what} of 2^{n} states")


def _check_bits(n: Any) -> int:
    """The number of spins of a flat-index table: ``0 <= n <= 62`` (indices are int64)."""
    n = check_positive(n, "n", integer=True, allow_zero=True)
    if n > 62:
        raise ValueError(f"n must be at most 62 (flat indices are int64), got {n}")
    return n


def index_to_states(index: Any, n: int) -> np.ndarray:
    """Spin configurations of flat state indices.

    Parameters
    ----------
    index : array_like of int
        Flat indices in ``0..2^n - 1`` (bit ``k`` is spin ``k``).
    n : int
        Number of spins, ``0 <= n <= 62``.

    Returns
    -------
    ndarray of int8, shape (len(index), n)
        The spins ``-1/+1``.
    """
    n = _check_bits(n)
    index = check_indices(index, 2**n, "index")
    return (2 * flat_states(index, np.full(n, 2)) - 1).astype(np.int8)


def states_to_index(x: Any, n: int | None = None) -> np.ndarray:
    """Flat state indices of spin configurations.

    Parameters
    ----------
    x : array_like of int, shape (M, n)
        Spins ``-1/+1``, at most 62 of them.
    n : int or None, default None
        Number of spins (``None``: ``x.shape[1]``).

    Returns
    -------
    ndarray of int64, shape (M,)
        The indices (bit ``k`` set where spin ``k`` is ``+1``).
    """
    s = check_spins(x, n, "x")
    if s.shape[1] > 62:
        raise ValueError(f"x has {s.shape[1]} spins; flat indices need at most 62")
    return flat_index(s > 0, np.full(s.shape[1], 2))


def states(n: int) -> np.ndarray:
    """All ``2^n`` configurations in flat index order.

    Parameters
    ----------
    n : int
        Number of spins, ``0 <= n <= 62``; refused (``ValueError``) when the table does not
        fit in memory.

    Returns
    -------
    ndarray of int8, shape (2^n, n)
        Row ``k``: the spins of index ``k``.
    """
    n = _check_bits(n)
    require_memory((18.0 * n + 16) * 2.0**n, f"the table of 2^{n} states (n={n})")
    return index_to_states(np.arange(2**n, dtype=np.int64), n)


def _split(n: int) -> tuple[int, int]:
    lo = n - n // 2
    return lo, n - lo


def _block_energy(X: np.ndarray, b: np.ndarray, W_upper: np.ndarray) -> np.ndarray:
    return X @ b + np.einsum("si,ij,sj->s", X, W_upper, X) if X.shape[1] else np.zeros(len(X))


def log_weight_table(bias: np.ndarray, edges: np.ndarray, coupling: np.ndarray
                     ) -> tuple[np.ndarray, int]:
    """All log-weights times ``2^-k`` as a ``(2^h, 2^l)`` matrix (row = high block, column
    = low block), and ``k`` (:func:`mrflib.models.boltzmann.overflow_exponent`; 0 in ordinary
    range)."""
    n = bias.shape[0]
    check_enumerable(n)
    k = overflow_exponent(bias, coupling)
    if k:
        bias, coupling = np.ldexp(bias, -k), np.ldexp(coupling, -k)
    lo, hi = _split(n)
    Xlo = states(lo).astype(np.float64)
    Xhi = states(hi).astype(np.float64)
    W = np.zeros((n, n))
    W[edges[:, 0], edges[:, 1]] = coupling  # upper triangle, i < j
    e_lo = _block_energy(Xlo, bias[:lo], W[:lo, :lo])
    e_hi = _block_energy(Xhi, bias[lo:], W[lo:, lo:])
    lw = (Xhi @ W[:lo, lo:].T) @ Xlo.T  # cross terms x_hi^T W_hi,lo x_lo
    lw += e_hi[:, None]
    lw += e_lo[None, :]
    return lw, k


def scaled_log_partition(lw: np.ndarray, k: int) -> float:
    """``2^-k log Z`` from log-weights times ``2^-k`` (one temporary of their size)."""
    shift = lw.max()
    tmp = lw - shift
    if k:
        with np.errstate(over="ignore"):  # far below the mode: -inf, weight 0
            tmp *= 2.0**k
    np.exp(tmp, out=tmp)
    return float(shift + np.log(tmp.sum()) / 2.0**k)


def normalize_in_place(lw: np.ndarray, k: int = 0) -> float:
    """Turn log-weights times ``2^-k`` into probabilities in place; return ``log Z``
    (``+inf`` with a warning beyond the float range)."""
    shift = lw.max()
    lw -= shift
    if k:
        with np.errstate(over="ignore"):  # far below the mode: -inf, weight 0
            lw *= 2.0**k
    np.exp(lw, out=lw)
    total = lw.sum()
    lw /= total
    return unscale_log_partition(float(shift + np.log(total) / 2.0**k), k)


def log_probabilities(model: BoltzmannMachine) -> np.ndarray:
    """``log P(x)`` of all ``2^n`` states, flat; ``-inf`` only where ``P(x)`` underflows.

    Holds at most two tables of ``2^n`` floats at a time (the divergences of
    :mod:`mrflib.inference.exact.divergence` compare two models by them).

    Parameters
    ----------
    model : BoltzmannMachine
        A machine of ``n`` spins, small enough to enumerate (a ``TypeError`` naming
        ``model`` for anything else).

    Returns
    -------
    ndarray of float64
        ``2^n`` log-probabilities in flat index order; ``-inf`` only where ``P(x)``
        underflows, also where the log-weights are beyond the float range
        (:func:`log_weights` is ``±inf`` there).

    Raises
    ------
    ValueError
        When the tables of an ``n`` would not fit in memory.
    """
    bm = check_model(model, "model")
    lw, k = log_weight_table(bm.bias, bm.edges, bm.coupling)
    lw = lw.ravel()
    if not k:
        lw -= scaled_log_partition(lw, k)
        return lw
    lw -= lw.max()  # then 2^k (lw - max) - log Σ exp(...): log 3 of three tied modes
    with np.errstate(over="ignore"):  # is below the last bit of the scaled log-weights
        lw *= 2.0**k
    lw -= scaled_log_partition(lw, 0)
    return lw


def moments_matrix(P: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Means and the full ``(n, n)`` second-moment matrix from the probability matrix."""
    lo, hi = _split(n)
    Xlo = states(lo).astype(np.float64)
    Xhi = states(hi).astype(np.float64)
    p_lo = P.sum(axis=0)
    p_hi = P.sum(axis=1)
    mean = np.concatenate([Xlo.T @ p_lo, Xhi.T @ p_hi])
    C = np.empty((n, n))
    C[:lo, :lo] = Xlo.T @ (p_lo[:, None] * Xlo)
    C[lo:, lo:] = Xhi.T @ (p_hi[:, None] * Xhi)
    cross = (Xhi.T @ P) @ Xlo  # (hi, lo)
    C[lo:, :lo] = cross
    C[:lo, lo:] = cross.T
    np.fill_diagonal(C, 1.0)
    return mean, C


def log_weights(model: BoltzmannMachine) -> np.ndarray:
    """Unnormalized log-probabilities of all ``2^n`` states.

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64, shape (2^n,)
        In flat index order. A log-weight beyond the float range is ``±inf`` (its
        probability is still finite: see :func:`mrflib.inference.exact.probabilities`).

    Raises
    ------
    ValueError
        When the tables of an ``n`` would not fit in memory.
    """
    bm = check_model(model, "model")
    lw, k = log_weight_table(bm.bias, bm.edges, bm.coupling)
    if not k:
        return lw.ravel()
    with np.errstate(over="ignore"):
        return np.ldexp(lw.ravel(), k)



def enumerated_moments(bm: BoltzmannMachine) -> tuple[float, np.ndarray, np.ndarray]:
    P, k = log_weight_table(bm.bias, bm.edges, bm.coupling)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its callers return no log Z
        logz = normalize_in_place(P, k)
    mean, C = moments_matrix(P, bm.n)
    return logz, mean, C



@checked
def correlation_matrix(model: BoltzmannMachine) -> np.ndarray:
    """Exact second moments ``⟨x_i x_j⟩`` for all pairs, by enumeration.

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64, shape (n, n)
        The second moments, ones on the diagonal.
    """
    _, _, C = enumerated_moments(check_model(model, "model"))
    return C


@checked
def covariance_matrix(model: BoltzmannMachine) -> np.ndarray:
    """Exact covariances ``⟨x_i x_j⟩ - ⟨x_i⟩⟨x_j⟩`` for all pairs, by enumeration.

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64, shape (n, n)
        The covariances.
    """
    _, mean, C = enumerated_moments(check_model(model, "model"))
    return C - np.outer(mean, mean)

