"""Gibbs sweeps in checkerboard order for large bipartite graphs (lattices).

On a bipartite graph (square grids, cubic lattices, chimera) a sweep redraws all spins
of one colour, then all of the other: spins of one colour are conditionally independent,
so this is one systematic scan. The chains are stored in that order (contiguous colour
blocks, spins as 0/1 bytes); the acceptance threshold of each spin is looked up in a table over its
neighbours' configurations (low degree) and compared with 32-bit random integers from a
SplitMix64 stream (Steele, Lea & Flood 2014) per chain, seeded from the caller's
:class:`numpy.random.Generator`. ``P(x_i = +1 | rest)`` is thereby rounded to a multiple
of ``2^-32``. The result depends only on the seed, not on the number of threads nor on
whether a threshold was tabulated.

:mod:`mrflib.inference.sampling` uses this path for bipartite graphs of at least
:data:`MIN_NODES` spins, where it runs at the per-core limit; smaller or non-bipartite
graphs keep the index-order sampler (its own seeded bits).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from mrflib._support.threads import parallel_ok
from mrflib.inference._fields import neighbour_fields
from mrflib.inference._splitmix import LOW32, TWO32, acceptance_threshold, splitmix64

__all__ = ["MIN_NODES", "applies", "layout", "run", "two_colouring"]

#: Smallest bipartite graph sampled in checkerboard order.
MIN_NODES = 1024
#: Largest degree for which the sampler tabulates the conditional over neighbour spins.
MAX_TABLE_DEGREE = 12
#: Largest threshold tables (with their parameter copies) kept with a graph between calls
#: (a 100x100 grid needs 1.5 MB; 64 MiB covers square grids of up to about 440,000 spins).
KEEP_TABLE_BYTES = 1 << 26
#: A node's threshold table (``2^degree`` entries) is built when it has at most this many
#: entries per update of the node in the call: an entry (one exponential) costs about a
#: fifth of an untabulated update (measured on a 100x100 grid: 19 ns against 100 ns).
_TABLE_PAYS = 4.0


@njit(cache=True, inline="always")
def _update_table(a, r, x, ptr, nbr, off, thr):  # pragma: no cover - numba
    """Redraw spin ``a`` of one chain ``x`` with the 32 random bits ``r`` (tabulated)."""
    lo = ptr[a]
    cfg = 0
    for k in range(lo, ptr[a + 1]):
        cfg |= np.int64(x[nbr[k]]) << (k - lo)
    x[a] = r < thr[off[a] + cfg]


@njit(cache=True, inline="always")
def _update_any(a, r, x, ptr, nbr, weights, bias, off, thr):  # pragma: no cover - numba
    """:func:`_update_table`, or the field summed directly where ``off[a] < 0``."""
    if off[a] >= 0:
        _update_table(a, r, x, ptr, nbr, off, thr)
        return
    h = bias[a]
    for k in range(ptr[a], ptr[a + 1]):
        h += weights[k] * (2.0 * x[nbr[k]] - 1.0)
    x[a] = r < acceptance_threshold(h)


@njit(cache=True, inline="always")
def _record(r, c, x, order, out):  # pragma: no cover - numba
    if r >= 0:
        for a in range(x.shape[0]):
            out[r, c, order[a]] = 2 * np.int8(x[a]) - 1


@njit(cache=True)
def _sweeps_table(c, xs, ptr, nbr, weights, bias, off, thr, state, record, order,
                  out):  # pragma: no cover - numba
    """All sweeps of chain ``c`` when every node is tabulated (lattices: the hot path;
    kept apart from :func:`_sweeps_any`, whose direct-field branch slows LLVM's loop
    several-fold even when never taken)."""
    x, z, n = xs[c], state[c], xs.shape[1]
    for s in range(record.shape[0]):
        for a in range(0, n - 1, 2):  # two 32-bit draws per 64 random bits
            z, bits = splitmix64(z)
            _update_table(a, np.int64(bits & LOW32), x, ptr, nbr, off, thr)
            _update_table(a + 1, np.int64(bits >> np.uint64(32)), x, ptr, nbr, off, thr)
        if n % 2:
            z, bits = splitmix64(z)
            _update_table(n - 1, np.int64(bits & LOW32), x, ptr, nbr, off, thr)
        _record(record[s], c, x, order, out)
    state[c] = z


@njit(cache=True)
def _sweeps_any(c, xs, ptr, nbr, weights, bias, off, thr, state, record, order,
                out):  # pragma: no cover - numba
    """:func:`_sweeps_table` for graphs with untabulated (high-degree) nodes."""
    x, z, n = xs[c], state[c], xs.shape[1]
    for s in range(record.shape[0]):
        for a in range(0, n - 1, 2):
            z, bits = splitmix64(z)
            _update_any(a, np.int64(bits & LOW32), x, ptr, nbr, weights, bias, off, thr)
            _update_any(a + 1, np.int64(bits >> np.uint64(32)), x, ptr, nbr, weights, bias,
                        off, thr)
        if n % 2:
            z, bits = splitmix64(z)
            _update_any(n - 1, np.int64(bits & LOW32), x, ptr, nbr, weights, bias, off, thr)
        _record(record[s], c, x, order, out)
    state[c] = z


@njit(cache=True, parallel=True)
def _gibbs_parallel(table_only, *args):  # pragma: no cover - numba
    for c in prange(args[0].shape[0]):
        if table_only:
            _sweeps_table(c, *args)
        else:
            _sweeps_any(c, *args)


@njit(cache=True)
def _gibbs_serial(table_only, *args):  # pragma: no cover - numba
    for c in range(args[0].shape[0]):
        if table_only:
            _sweeps_table(c, *args)
        else:
            _sweeps_any(c, *args)


@njit(cache=True)
def _threshold_tables(bias, ptr, weights, use):  # pragma: no cover - numba
    """Thresholds for every neighbour configuration of the nodes with ``use[a]`` (see
    :func:`mrflib.inference._fields.neighbour_fields`); offsets are -1 where unused."""
    off, h = neighbour_fields(bias, ptr, weights, use)
    thr = np.empty(h.shape[0], dtype=np.int64)
    for k in range(h.shape[0]):
        thr[k] = acceptance_threshold(h[k])
    return off, thr


@njit(cache=True)
def two_colouring(indptr, indices, colour, queue):  # pragma: no cover - numba
    """Colours 0/1 of a bipartite graph by breadth-first search into ``colour``, or ``-1``
    for every node of a graph that is not bipartite.

    The graph is in CSR form (the neighbours of ``i`` are
    ``indices[indptr[i]:indptr[i + 1]]``); ``colour`` and ``queue`` are int64 arrays of
    one entry per node, allocated by the caller (a kernel's own allocations would cost a
    cold first call the compilation of numpy's ``full`` and ``empty``). The checkerboard
    sweeps and the pairwise sampler's colouring
    (:mod:`mrflib.inference.sampling._pairwise`) both use it."""
    n = indptr.shape[0] - 1
    for s in range(n):
        colour[s] = -1
    for s in range(n):
        if colour[s] >= 0:
            continue
        colour[s] = 0
        head, tail = 0, 1
        queue[0] = s
        while head < tail:
            i = queue[head]
            head += 1
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if colour[j] < 0:
                    colour[j] = 1 - colour[i]
                    queue[tail] = j
                    tail += 1
                elif colour[j] == colour[i]:
                    for t in range(n):
                        colour[t] = -1
                    return


def _layout(graph) -> tuple:
    """Sweep order, the CSR adjacency in that order and whether the graph is bipartite
    (kept with the graph by :meth:`mrflib.models.graphs.Graph.memo`)."""
    n = graph.n
    indptr, indices, eids = graph.csr
    colour = np.empty(n, dtype=np.int64)
    two_colouring(indptr, indices, colour, np.empty(n, dtype=np.int64))
    order = np.arange(n) if n and colour[0] < 0 else np.argsort(colour, kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    deg = np.diff(indptr)[order]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg, out=ptr[1:])
    take = np.concatenate([np.arange(indptr[i], indptr[i + 1]) for i in order] or [[]])
    take = take.astype(np.int64)
    out = (order.astype(np.int64), ptr, pos[indices[take]], eids[take])
    for arr in out:
        arr.flags.writeable = False
    return out + (bool(n and colour[0] >= 0),)


def layout(bm) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(order, ptr, nbr, eids)`` of ``bm``'s graph (cached per graph); ``order[0] < 0``
    never happens: ``bipartite(bm)`` tells whether ``order`` is a colour order."""
    return bm.graph.memo("checkerboard-layout", _layout)


def applies(bm) -> bool:
    """Whether :mod:`mrflib.inference.sampling` uses this path: bipartite graphs of at least
    :data:`MIN_NODES` spins."""
    return bm.n >= MIN_NODES and bool(layout(bm)[4])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same bytes (``-0.0`` and ``0.0`` differ)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                               np.ascontiguousarray(b).view(np.uint8)))


def _cached_tables(bm, kind: str, extra: np.ndarray, compute, build: bool = True):
    """``compute()`` for ``bm``'s parameters, kept with its graph for the most recent
    parameters (one entry per ``kind``), so that repeated calls on one model do not
    rebuild the threshold tables; ``None`` when absent and ``build`` is false.

    Keyed on the bytes of ``bm.bias``, ``bm.coupling`` and ``extra`` (compared in full:
    a few microseconds), so a model with new parameters never meets stale tables. Tables
    over :data:`KEEP_TABLE_BYTES` are not kept (rebuilt in every call)."""
    store = bm.graph.memo("checkerboard-tables", lambda graph: {})
    key = (bm.bias, bm.coupling, extra)
    hit = store.get(kind)
    if hit is not None and all(_same(a, b) for a, b in zip(hit[0], key)):
        return hit[1]
    if not build:
        return None
    value = compute()
    arrays = value if isinstance(value, tuple) else (value,)
    if sum(a.nbytes for a in arrays + key) <= KEEP_TABLE_BYTES:
        store[kind] = (tuple(np.array(a, copy=True) for a in key), value)
    else:
        store.pop(kind, None)
    return value


def _sweep_params(bm, order, eids):
    """Biases and CSR weights in sweep order."""
    bias = np.ascontiguousarray(np.asarray(bm.bias, dtype=np.float64)[order])
    weights = np.ascontiguousarray(np.asarray(bm.coupling, dtype=np.float64)[eids])
    return bias, weights


def _grid_run(bm, x, shape, use, state, record_at, n_slots, parallel):
    """:func:`run` through :mod:`mrflib.inference.sampling._grid_gibbs` when the grid's threshold
    tables
    are cached for these parameters or pay for themselves in this call; else ``None``."""
    from mrflib.inference.sampling import _grid_gibbs

    order, ptr, nbr, eids, _ = layout(bm)

    def build():
        bias, weights = _sweep_params(bm, order, eids)
        return _grid_gibbs.grid_tables(bias, ptr, nbr, weights, order, shape[1])

    thr = _cached_tables(bm, "grid", _NO_EXTRA, build, build=bool(use.all()))
    if thr is None:
        return None
    return _grid_gibbs.run_grid(x, bm.graph, thr, state, record_at, n_slots, parallel)


_NO_EXTRA = np.zeros(0)


def run(bm, x, n_sweeps, record_at, n_slots, rng, kernel=None):
    """Advance chains ``x`` in place by ``n_sweeps``; after sweep ``s`` (1-based) with
    ``record_at[s - 1] >= 0`` store the chains in that slot of the returned array.

    Nodes whose ``2^degree`` neighbour configurations are few next to the updates of
    this call use a threshold table; the others compute it (same bits either way).
    Square grids go to the specialised kernel of :mod:`mrflib.inference.sampling._grid_gibbs` (same
    bits
    again) unless ``kernel`` names one of the general kernels (tests). Threshold tables
    are kept with the graph for the last parameters seen. Chains run in parallel when
    the work pays for a parallel region.
    """
    order, ptr, nbr, eids, _ = layout(bm)
    M, n = x.shape
    state = rng.integers(0, 2**64, size=M, dtype=np.uint64)
    deg = np.diff(ptr)
    use = (deg <= MAX_TABLE_DEGREE) & (2.0**deg <= _TABLE_PAYS * n_sweeps * M)
    parallel = M > 1 and parallel_ok(float(n_sweeps) * M * (n + nbr.size))
    shape = bm.graph.grid_shape()
    if kernel is None and shape is not None:
        out = _grid_run(bm, x, shape, use, state, record_at, n_slots, parallel)
        if out is not None:
            return out
    bias, weights = _sweep_params(bm, order, eids)
    off, thr = _cached_tables(bm, "csr", use,
                              lambda: _threshold_tables(bias, ptr, weights, use))
    xp = np.ascontiguousarray(x[:, order] > 0, dtype=np.uint8)  # spins as 0/1 bits
    out = np.empty((n_slots, M, n), dtype=np.int8)
    if kernel is None:
        kernel = _gibbs_parallel if parallel else _gibbs_serial
    kernel(bool(np.all(off >= 0)), xp, ptr, nbr, weights, bias, off, thr, state, record_at,
           order, out)
    x[:, order] = 2 * xp.astype(np.int8) - 1
    return out


def _gibbs_reference(table_only, xp, ptr, nbr, weights, bias, off, thr, state, record, order, out):
    """Plain-Python twin of the kernels (test reference: same random bits, direct fields)."""
    mask = (1 << 64) - 1

    def draw(c):
        z = (int(state[c]) + 0x9E3779B97F4A7C15) & mask
        state[c] = z
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    def threshold(h):
        p = 1.0 / (1.0 + math.exp(-2.0 * h)) if h >= 0 else math.exp(2 * h) / (1 + math.exp(2 * h))
        return math.floor(p * TWO32 + 0.5)

    M, n = xp.shape
    for c in range(M):
        for s in range(record.shape[0]):
            bits = []
            for _ in range((n + 1) // 2):
                z = draw(c)
                bits += [z & 0xFFFFFFFF, z >> 32]
            for a in range(n):
                h = bias[a]
                for k in range(ptr[a], ptr[a + 1]):
                    h += weights[k] * (2.0 * xp[c, nbr[k]] - 1.0)
                xp[c, a] = bits[a] < threshold(h)
            if record[s] >= 0:
                out[record[s], c, order] = 2 * xp[c].astype(np.int8) - 1


