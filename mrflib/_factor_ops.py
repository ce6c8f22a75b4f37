"""Log-space table operations shared by the exact factor-graph engines.

Tables are numpy arrays whose axes are variables (a scope); ``-inf`` is a zero weight.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import _elimination_kernels as _kernels

__all__ = ["expand", "logsumexp", "logsumexp_numpy", "draw_categorical", "normalize_log",
           "KERNEL_MIN_SIZE"]

#: Tables with at least this many entries are reduced by the numba kernel.
KERNEL_MIN_SIZE = 4096


def expand(table: np.ndarray, scope: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """A view of ``table`` (axes = ``scope``) broadcastable over the axes ``target``.

    ``scope`` must be a subset of ``target``; its axes are moved into ``target``'s order and
    every variable of ``target`` outside ``scope`` becomes an axis of length one.
    """
    where = {v: i for i, v in enumerate(scope)}
    perm = [where[v] for v in target if v in where]
    t = np.transpose(table, perm) if perm != sorted(perm) else table
    shape = [table.shape[where[v]] if v in where else 1 for v in target]
    return t.reshape(shape)


def logsumexp_numpy(a: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """``log Σ exp(a)`` over ``axis``; ``-inf`` where every term is ``-inf`` (no NaN)."""
    if isinstance(axis, tuple) and not axis:
        return a
    m = np.max(a, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis))
    return out + np.squeeze(m, axis=axis)


def logsumexp(a: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """``log Σ exp(a)`` over ``axis`` (an int or a tuple of ints); ``-inf`` where every
    term is ``-inf``. Tables of at least :data:`KERNEL_MIN_SIZE` entries go to the numba
    kernel (two streaming passes, no temporary of the table's size), smaller ones to
    :func:`logsumexp_numpy`."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if not axes:
        return a
    if a.size < KERNEL_MIN_SIZE:
        return logsumexp_numpy(a, axes)
    a = np.ascontiguousarray(a, dtype=np.float64)
    axes = {int(d) % a.ndim for d in axes}
    kept = [d for d in range(a.ndim) if d not in axes]
    out_shape = tuple(a.shape[d] for d in kept)
    ostride = np.zeros(a.ndim, dtype=np.int64)
    step = 1
    for d in reversed(kept):
        ostride[d] = step
        step *= a.shape[d]
    out = np.empty(step)
    _kernels.logsumexp_reduce(a.ravel(), np.asarray(a.shape, dtype=np.int64), ostride, out)
    return out.reshape(out_shape)


def normalize_log(a: np.ndarray) -> np.ndarray:
    """``exp(a - logsumexp(a))``: the probabilities of log-weights ``a`` (all axes)."""
    total = logsumexp(a, tuple(range(a.ndim)))
    return np.exp(a - total)


def draw_categorical(logits: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One draw per row of the unnormalized log-probabilities ``logits (M, K)``.

    ``u (M,)`` are uniforms in ``[0, 1)``; the draw is the first ``j`` whose cumulative
    weight exceeds ``u`` times the row's total (inverse CDF), so a zero weight is never drawn.
    """
    m = np.max(logits, axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    cdf = np.cumsum(np.exp(logits - m), axis=1)
    target = u * cdf[:, -1]
    idx = np.sum(cdf <= target[:, None], axis=1)
    return np.minimum(idx, logits.shape[1] - 1).astype(np.int64)
