"""Log-space table operations shared by the exact factor-graph engines.

Tables are numpy arrays whose axes are variables (a scope); ``-inf`` is a zero weight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import _elimination_kernels as _kernels

__all__ = ["expand", "logsumexp", "logsumexp_numpy", "draw_categorical", "normalize_log",
           "KERNEL_MIN_SIZE", "clique_sum", "clique_sum_numpy", "clique_eliminate",
           "clique_eliminate_numpy", "clique_marginals"]

#: Tables with at least this many entries are reduced by the numba kernel.
KERNEL_MIN_SIZE = 4096
#: :func:`clique_eliminate` sums in linear space when the inputs' spans (largest minus
#: smallest finite log entry) add up to at most this: every product of exponentials,
#: each input shifted by its maximum, is then at least ``e^-700``, a normal float
#: (the smallest is about ``e^-708``), so nothing underflows.
LINEAR_SPAN = 700.0


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


def _inputs(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
            clique: Sequence[int], shape: Sequence[int]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels' layout of ``tables`` (axes = ``scopes``, each a subset of ``clique``):
    their entries end to end, where each starts, and each one's stride along every axis of
    the clique (``0`` on an axis it does not hold)."""
    pos = {v: d for d, v in enumerate(clique)}
    flat = [np.ascontiguousarray(t, dtype=np.float64).ravel() for t in tables]
    strides = np.zeros((len(flat), len(clique)), dtype=np.int64)
    offsets = np.zeros(len(flat), dtype=np.int64)
    start = 0
    for k, (t, s) in enumerate(zip(tables, scopes)):
        offsets[k] = start
        step = 1
        for v, m in zip(reversed(s), reversed(np.shape(t))):
            strides[k, pos[v]] = step
            step *= m
        start += flat[k].size
    values = np.concatenate(flat) if flat else np.zeros(1)
    return values, offsets, strides, np.asarray(shape, dtype=np.int64)


def clique_sum_numpy(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                     clique: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """``Σ_k tables[k]`` over the axes ``clique`` (numpy broadcasting; the reference of
    :func:`clique_sum`)."""
    acc = np.zeros(tuple(shape))
    for t, s in zip(tables, scopes):
        acc += expand(t, s, clique)
    return acc


def clique_sum(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
               clique: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """``Σ_k tables[k]`` over the axes ``clique`` (shape ``shape``), written in one pass
    by the numba kernel (no per-input pass over the table)."""
    values, offsets, strides, shp = _inputs(tables, scopes, clique, shape)
    out = np.empty(int(np.prod(shp)))
    _kernels.clique_build(values, offsets, strides, shp, out)
    return out.reshape(tuple(shape))


def clique_eliminate_numpy(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                           clique: Sequence[int], shape: Sequence[int],
                           maximize: bool = False) -> np.ndarray:
    """The reference of :func:`clique_eliminate`: build the table, then reduce axis 0."""
    acc = clique_sum_numpy(tables, scopes, clique, shape)
    return acc.max(axis=0) if maximize else logsumexp_numpy(acc, 0)


def clique_eliminate(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                     clique: Sequence[int], shape: Sequence[int],
                     maximize: bool = False) -> np.ndarray:
    """``log Σ_{x_0} exp Σ_k tables[k]`` (or ``max_{x_0}``) over the first variable of
    ``clique``, a table over the others, without making the clique table: in linear space
    by :func:`~mrflib._elimination_kernels.product_sums` when no product can underflow
    (see :data:`LINEAR_SPAN`), else in log space (each cell's ``shape[0]`` entries summed
    from the inputs and reduced at once)."""
    values, offsets, strides, shp = _inputs(tables, scopes, clique, shape)
    out = np.empty(int(np.prod(shp[1:])))
    if not maximize and tables:
        lin, top = _linear(values, offsets)
        if lin is not None:
            ostride = np.zeros((1, len(shp)), dtype=np.int64)
            for d in range(len(shp) - 1, 0, -1):
                ostride[0, d] = 1 if d == len(shp) - 1 else ostride[0, d + 1] * shp[d + 1]
            out = _product_sums(lin, offsets, strides, shp, np.zeros(1, dtype=np.int64),
                                ostride, out.size)
            with np.errstate(divide="ignore"):
                return (np.log(out) + float(top.sum())).reshape(tuple(shape[1:]))
    _kernels.clique_eliminate(values, offsets, strides, shp, bool(maximize), out)
    return out.reshape(tuple(shape[1:]))


def clique_marginals(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                     clique: Sequence[int], shape: Sequence[int],
                     targets: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """``log Σ exp Σ_k tables[k]`` onto each scope of ``targets`` (subsets of ``clique``,
    axes in the target's order). Multiplied in linear space in one pass without making the
    clique table when no product can underflow (see :data:`LINEAR_SPAN`); otherwise the
    table is made in log space and reduced once per target."""
    values, offsets, strides, shp = _inputs(tables, scopes, clique, shape)
    lin, top = _linear(values, offsets) if tables else (None, None)
    if lin is None:
        acc = clique_sum(tables, scopes, clique, shape)
        return [_reduce_to(acc, clique, s) for s in targets]
    pos = {v: d for d, v in enumerate(clique)}
    ostrides = np.zeros((len(targets), len(clique)), dtype=np.int64)
    ooffsets = np.zeros(len(targets), dtype=np.int64)
    start = 0
    for r, s in enumerate(targets):
        ooffsets[r] = start
        step = 1
        for v in reversed(s):
            ostrides[r, pos[v]] = step
            step *= int(shape[pos[v]])
        start += step
    out = _product_sums(lin, offsets, strides, shp, ooffsets, ostrides, start)
    with np.errstate(divide="ignore"):
        logs = np.log(out) + float(top.sum())
    return [logs[o:o + math.prod(int(shape[pos[v]]) for v in s)].reshape(
        tuple(int(shape[pos[v]]) for v in s)) for o, s in zip(ooffsets.tolist(), targets)]


def _product_sums(values: np.ndarray, offsets: np.ndarray, strides: np.ndarray,
                  shape: np.ndarray, ooffsets: np.ndarray, ostrides: np.ndarray,
                  size: int) -> np.ndarray:
    """``size`` output entries of :func:`~mrflib._elimination_kernels.product_sums`."""
    out = np.zeros(size)
    _kernels.product_sums(values, offsets, strides, shape, ooffsets, ostrides, out)
    return out


def _reduce_to(table: np.ndarray, clique: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """``log Σ exp table`` (axes ``clique``) onto ``target``'s axes, in its order."""
    keep = set(target)
    m = logsumexp(table, tuple(a for a, v in enumerate(clique) if v not in keep))
    kept = [v for v in clique if v in keep]
    return np.transpose(m, [kept.index(v) for v in target])


def _linear(values: np.ndarray, offsets: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """``(exp(values - top), top)`` with ``top`` each input's largest log entry, when the
    inputs can be multiplied in linear space without underflow (their spans add up to at
    most :data:`LINEAR_SPAN`, each finite somewhere); ``(None, None)`` otherwise."""
    lin = np.empty_like(values)
    top = np.empty(len(offsets))
    if _kernels.linear_inputs(values, offsets, LINEAR_SPAN, lin, top):
        return lin, top
    return None, None


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
