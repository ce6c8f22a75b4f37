"""Checkerboard Gibbs sweeps specialised to square grids (the hot path of large lattices).

Same draws, same bits as the general checkerboard kernels of
:mod:`mrflib.inference.sampling._checkerboard`
(the tests compare them, and a plain-Python reference, bit for bit); only the memory
layout and the loop structure differ:

* each chain's spins are held as two padded ``(rows + 2, ceil(cols / 2) + 2)`` byte
  arrays, one per colour: the four neighbours of a spin sit at fixed offsets (same column
  of the rows above and below, two adjacent columns of its own row) and a missing
  neighbour at the boundary reads a padding zero, so there is no CSR indirection;
* the threshold of each spin is looked up in a 16-entry table indexed by the canonical
  configuration ``up | left << 1 | right << 2 | down << 3`` (entries for absent neighbours
  are never read); every entry is computed with the same floating-point operations, in the
  same CSR order, as :func:`mrflib.inference.sampling._checkerboard._threshold_tables`, so it has
  the same
  bits;
* SplitMix64 is a counter generator, so a sweep's ``ceil(n / 2)`` 64-bit draws are produced
  in one vectorised loop; the spin at sweep position ``a`` uses 32-bit word ``a`` of them
  (low half for even ``a``, high half for odd ``a``), exactly as the general kernels do;
* each grid row is updated in two passes: table indices (contiguous byte loads, vectorised),
  then the comparisons.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mrflib.inference._splitmix import GAMMA, MIX1, MIX2, acceptance_threshold

__all__ = ["grid_tables", "run_grid"]


def row_starts(rows: int, cols: int) -> np.ndarray:
    """``(2, rows + 1)``: sweep position of the first spin of colour ``k`` in row ``r``
    (colour ``(r + c) % 2``, colour 0 first, row-major within a colour)."""
    n = rows * cols
    starts = np.zeros((2, rows + 1), dtype=np.int64)
    r = np.arange(rows)
    for k in (0, 1):
        counts = (cols - (k + r) % 2 + 1) // 2
        starts[k, 0] = 0 if k == 0 else (n + 1) // 2
        starts[k, 1:] = starts[k, 0] + np.cumsum(counts)
    return starts


@njit(cache=True)
def grid_tables(bias, ptr, nbr, weights, order, cols):  # pragma: no cover - numba
    """``(n * 16,)`` thresholds: entry ``16 a + cfg`` for the spin at sweep position ``a``
    and canonical neighbour configuration ``cfg`` (0 where a bit names an absent
    neighbour). ``bias``, ``ptr``, ``nbr``, ``weights`` are in sweep order (see
    :func:`mrflib.inference.sampling._checkerboard.layout`)."""
    n = bias.shape[0]
    thr = np.zeros(n * 16, dtype=np.int64)
    h = np.empty(16)
    for a in range(n):
        i, lo = order[a], ptr[a]
        h[:] = bias[a]
        absent = 15
        for k in range(lo, ptr[a + 1]):  # the order and the operations of neighbour_fields
            diff = order[nbr[k]] - i
            s = 0 if diff == -cols else 3 if diff == cols else 1 if diff == -1 else 2
            absent &= ~(1 << s)
            for cfg in range(16):  # all 16 configurations at once (vectorised)
                h[cfg] += weights[k] * (2.0 * ((cfg >> s) & 1) - 1.0)
        for cfg in range(16):
            if not cfg & absent:
                thr[16 * a + cfg] = acceptance_threshold(h[cfg])
    return thr


@njit(cache=True)
def _draws(z, buf):  # pragma: no cover - numba
    """Fill ``buf`` with the next ``len(buf)`` SplitMix64 outputs after state ``z``;
    returns the new state (a counter: draw ``k`` mixes ``z + (k + 1) * gamma``)."""
    for k in range(buf.shape[0]):
        r = z + np.uint64(k + 1) * GAMMA
        r = (r ^ (r >> np.uint64(30))) * MIX1
        r = (r ^ (r >> np.uint64(27))) * MIX2
        buf[k] = r ^ (r >> np.uint64(31))
    return z + np.uint64(buf.shape[0]) * GAMMA


@njit(cache=True)
def _exchange(x, g, starts, cols, to_grid):  # pragma: no cover - numba
    """Copy one chain between ``x`` (±1, node order) and ``g`` (0/1, padded colours)."""
    for k in range(2):
        for r in range(starts.shape[1] - 1):
            first = (k + r) % 2
            for j in range(starts[k, r + 1] - starts[k, r]):
                i = r * cols + first + 2 * j
                if to_grid:
                    g[k, r + 1, j + 1] = x[i] > 0
                else:
                    x[i] = 2 * np.int8(g[k, r + 1, j + 1]) - 1


@njit(cache=True)
def _half_sweep(g, k, starts, thr, words, idx):  # pragma: no cover - numba
    """Redraw every spin of colour ``k`` (their neighbours all have colour ``1 - k``)."""
    for r in range(starts.shape[1] - 1):
        x, up, mid, down = g[k, r + 1], g[1 - k, r], g[1 - k, r + 1], g[1 - k, r + 2]
        sh = (k + r) % 2  # left neighbour in mid[j + sh], right in mid[j + sh + 1]
        a0 = starts[k, r]
        cnt = starts[k, r + 1] - a0
        for j in range(cnt):
            idx[j] = 16 * (a0 + j) + (up[j + 1] | (mid[j + sh] << 1)
                                      | (mid[j + sh + 1] << 2) | (down[j + 1] << 3))
        for j in range(cnt):
            x[j + 1] = np.int64(words[a0 + j]) < thr[idx[j]]


@njit(cache=True)
def _grid_chain(c, xs, cols, starts, thr, state, record, out):  # pragma: no cover - numba
    """All sweeps of chain ``c``; records in node order like the general kernels."""
    rows, n = starts.shape[1] - 1, xs.shape[1]
    g = np.zeros((2, rows + 2, (cols + 1) // 2 + 2), dtype=np.uint8)
    buf = np.empty((n + 1) // 2, dtype=np.uint64)
    words = buf.view(np.uint32)  # word a: low half of draw a // 2 if a is even, else high
    idx = np.empty(g.shape[2], dtype=np.int64)
    _exchange(xs[c], g, starts, cols, True)
    z = state[c]
    for s in range(record.shape[0]):
        z = _draws(z, buf)
        _half_sweep(g, 0, starts, thr, words, idx)
        _half_sweep(g, 1, starts, thr, words, idx)
        if record[s] >= 0:
            _exchange(out[record[s], c], g, starts, cols, False)
    state[c] = z
    _exchange(xs[c], g, starts, cols, False)


@njit(cache=True, parallel=True)
def _grid_parallel(xs, cols, starts, thr, state, record, out):  # pragma: no cover - numba
    for c in prange(xs.shape[0]):
        _grid_chain(c, xs, cols, starts, thr, state, record, out)


@njit(cache=True)
def _grid_serial(xs, cols, starts, thr, state, record, out):  # pragma: no cover - numba
    for c in range(xs.shape[0]):
        _grid_chain(c, xs, cols, starts, thr, state, record, out)


def run_grid(x, graph, thr, state, record_at, n_slots, parallel):
    """Advance chains ``x`` (int8 ±1, node order) on the square grid ``graph`` in place;
    see :func:`mrflib.inference.sampling._checkerboard.run` for the arguments and the returned
    records."""
    rows, cols = graph.grid_shape()
    starts = graph.memo("square-grid-row-starts", lambda g: row_starts(rows, cols))
    out = np.empty((n_slots,) + x.shape, dtype=np.int8)
    kernel = _grid_parallel if parallel else _grid_serial
    kernel(x, cols, starts, thr, state, record_at, out)
    return out
