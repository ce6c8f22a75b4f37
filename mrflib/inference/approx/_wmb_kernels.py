"""Numba kernels of :mod:`mrflib.inference.approx.wmb`, each with the plain numpy reference the
tests use.

* :func:`power_lse` is the weighted (power) sum of a mini-bucket over its first axis,
  ``w log Σ_{x_0} exp(a / w)`` (Liu and Ihler 2011, eq. (5) in log space), with ``-inf``
  entries (zero weights) exact: a column of ``-inf`` gives ``-inf``, never NaN.
* :func:`conditional_entropy` is ``H(x_0 | x_rest)`` of the normalized belief
  ``b ∝ exp(a)``, the gradient of the bound with respect to the mini-bucket's weight
  (``0 log 0 = 0``).
* :func:`log_marginal0` is the normalized log marginal of the first axis (a belief on the
  bucket's variable).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["power_lse", "power_lse_numpy", "conditional_entropy", "conditional_entropy_numpy",
           "log_marginal0", "log_marginal0_numpy"]


@njit(cache=True)
def _power_lse(a, inv_w, out):  # pragma: no cover - numba
    m_rows, n_cols = a.shape
    w = 1.0 / inv_w
    for j in range(n_cols):
        top = -np.inf
        for i in range(m_rows):
            if a[i, j] > top:
                top = a[i, j]
        if top == -np.inf:
            out[j] = -np.inf
            continue
        s = 0.0
        for i in range(m_rows):
            s += math.exp((a[i, j] - top) * inv_w)
        out[j] = top + w * math.log(s)


def power_lse(a: np.ndarray, w: float) -> np.ndarray:
    """``w log Σ_{x_0} exp(a / w)`` over axis 0 of the log table ``a``, a table over the
    other axes; ``-inf`` where every entry of the column is ``-inf``."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    rest = a.shape[1:]
    flat = a.reshape(a.shape[0], -1)
    out = np.empty(flat.shape[1])
    _power_lse(flat, 1.0 / float(w), out)
    return out.reshape(rest)


def power_lse_numpy(a: np.ndarray, w: float) -> np.ndarray:
    """The numpy reference of :func:`power_lse`."""
    top = np.max(a, axis=0, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = w * np.log(np.sum(np.exp((a - shift) / w), axis=0))
    return out + shift[0]


@njit(cache=True, inline="always")
def _largest(a):  # pragma: no cover - numba
    top = -np.inf
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] > top:
                top = a[i, j]
    return top


@njit(cache=True)
def _conditional_entropy(a):  # pragma: no cover - numba
    m_rows, n_cols = a.shape
    top = _largest(a)
    if top == -np.inf:
        return 0.0
    total = 0.0
    for i in range(m_rows):
        for j in range(n_cols):
            total += math.exp(a[i, j] - top)
    h = 0.0
    for j in range(n_cols):
        col = 0.0
        for i in range(m_rows):
            col += math.exp(a[i, j] - top)
        if col <= 0.0:
            continue
        for i in range(m_rows):
            p = math.exp(a[i, j] - top)
            if p > 0.0:
                h -= p / total * math.log(p / col)
    return h


def conditional_entropy(a: np.ndarray) -> float:
    """``H(x_0 | x_rest)`` in nats of the belief ``b ∝ exp(a)`` (``a`` a log table, axis 0
    the eliminated variable)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    return float(_conditional_entropy(a.reshape(a.shape[0], -1)))


def conditional_entropy_numpy(a: np.ndarray) -> float:
    """The numpy reference of :func:`conditional_entropy`."""
    a = a.reshape(a.shape[0], -1)
    top = np.max(a)
    if top == -np.inf:
        return 0.0
    p = np.exp(a - top)
    col = p.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / col), 0.0)
    return float(-terms.sum() / p.sum())


@njit(cache=True)
def _log_marginal0(a, out):  # pragma: no cover - numba
    m_rows, n_cols = a.shape
    top = _largest(a)
    if top == -np.inf:
        out[:] = -np.inf
        return
    total = 0.0
    for i in range(m_rows):
        s = 0.0
        for j in range(n_cols):
            s += math.exp(a[i, j] - top)
        out[i] = s
        total += s
    for i in range(m_rows):
        if out[i] > 0.0:
            out[i] = math.log(out[i] / total)
        else:  # underflow is not a zero: the row's own log-sum, below the top's
            out[i] = _row_lse(a, i) - top - math.log(total)


@njit(cache=True)
def _row_lse(a, i):  # pragma: no cover - numba
    """``log Σ_j exp(a[i, j])`` (``-inf`` for a row of zeros)."""
    top = -np.inf
    for j in range(a.shape[1]):
        if a[i, j] > top:
            top = a[i, j]
    if top == -np.inf:
        return -np.inf
    s = 0.0
    for j in range(a.shape[1]):
        s += math.exp(a[i, j] - top)
    return top + math.log(s)


def log_marginal0(a: np.ndarray) -> np.ndarray:
    """The normalized log marginal of axis 0 of the log table ``a`` (all ``-inf`` when
    every entry is; ``-inf`` only for a row of ``-inf``, never for one whose mass
    underflows beside the largest row)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    out = np.empty(a.shape[0])
    _log_marginal0(a.reshape(a.shape[0], -1), out)
    return out


def log_marginal0_numpy(a: np.ndarray) -> np.ndarray:
    """The numpy reference of :func:`log_marginal0`."""
    a = a.reshape(a.shape[0], -1)
    top = np.max(a)
    if top == -np.inf:
        return np.full(a.shape[0], -np.inf)
    s = np.exp(a - top).sum(axis=1)
    with np.errstate(divide="ignore"):
        out = np.log(s / s.sum())
        rows = np.max(a, axis=1)
        under = (s == 0) & (rows > -np.inf)  # underflow, not a zero
        lse = rows[under] + np.log(np.exp(a[under] - rows[under, None]).sum(axis=1))
    out[under] = lse - top - np.log(s.sum())
    return out
