"""Gibbs sampling of Boltzmann machines, many independent chains at once.

A sweep redraws every spin once from its conditional,
``P(x_i = +1 | x_rest) = 1 / (1 + exp(-2 h_i))`` with the local field
``h_i = b_i + Σ_j J_ij x_j``, in a fixed order: on a bipartite graph (square grids,
cubic lattices, chimera) all spins of one colour, then all of the other (checkerboard
order; spins of one colour are conditionally independent, so this is one systematic
scan), otherwise ``0, 1, ..., n-1``. The kernel stores the chains in that order
(contiguous colour blocks), looks the acceptance threshold up in a table over the
neighbours' configurations for low-degree nodes, and compares it with 32-bit random
integers from a SplitMix64 stream per chain, seeded from the caller's
:class:`numpy.random.Generator`. The result depends only on the seed, not on the
number of threads nor on whether a node's threshold was tabulated.

Seeded outputs changed in issue 17 (float uniforms against ``1 + exp(-2h)`` in index
order before; integer thresholds in colour order now): the same seed gives the same
bits with this code, not with the earlier releases.

:func:`exact` draws i.i.d. samples by enumeration for small ``n``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from numba import njit, prange

from . import exact as _exact
from ._fields import neighbour_fields
from ._threads import blas_single_threaded, parallel_ok
from ._validation import as_rng, check_positive, check_spins, require_memory
from .model import BoltzmannMachine

__all__ = ["gibbs", "sweep", "exact", "sweep_order", "MAX_TABLE_DEGREE"]

#: Largest degree for which the sampler tabulates the conditional over neighbour spins.
MAX_TABLE_DEGREE = 12
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = 4294967296.0


@njit(cache=True, inline="always")
def _splitmix64(z):  # pragma: no cover - numba
    """``(new state, 64 random bits)`` of SplitMix64 (Steele, Lea & Flood 2014)."""
    z = z + _GAMMA
    r = (z ^ (z >> np.uint64(30))) * _MIX1
    r = (r ^ (r >> np.uint64(27))) * _MIX2
    return z, r ^ (r >> np.uint64(31))


@njit(cache=True, inline="always")
def _threshold(h):  # pragma: no cover - numba
    """``round(2^32 P(x = +1 | h))``: a 32-bit random integer below it draws ``+1``."""
    if h >= 0.0:
        p = 1.0 / (1.0 + math.exp(-2.0 * h))
    else:
        e = math.exp(2.0 * h)
        p = e / (1.0 + e)
    return np.int64(math.floor(p * _TWO32 + 0.5))


@njit(cache=True, inline="always")
def _update_table(a, r, x, ptr, nbr, off, thr):  # pragma: no cover - numba
    """Redraw spin ``a`` of one chain ``x`` with the 32 random bits ``r`` (tabulated)."""
    lo = ptr[a]
    cfg = 0
    for k in range(lo, ptr[a + 1]):
        cfg |= ((x[nbr[k]] + 1) >> 1) << (k - lo)
    x[a] = 1 if r < thr[off[a] + cfg] else -1


@njit(cache=True, inline="always")
def _update_any(a, r, x, ptr, nbr, weights, bias, off, thr):  # pragma: no cover - numba
    """:func:`_update_table`, or the field summed directly where ``off[a] < 0``."""
    if off[a] >= 0:
        _update_table(a, r, x, ptr, nbr, off, thr)
        return
    h = bias[a]
    for k in range(ptr[a], ptr[a + 1]):
        h += weights[k] * x[nbr[k]]
    x[a] = 1 if r < _threshold(h) else -1


@njit(cache=True, inline="always")
def _record(r, c, x, order, out):  # pragma: no cover - numba
    if r >= 0:
        for a in range(x.shape[0]):
            out[r, c, order[a]] = x[a]


@njit(cache=True)
def _sweeps_table(c, xs, ptr, nbr, weights, bias, off, thr, state, record, order,
                  out):  # pragma: no cover - numba
    """All sweeps of chain ``c`` when every node is tabulated (lattices: the hot path;
    kept apart from :func:`_sweeps_any`, whose direct-field branch slows LLVM's loop
    several-fold even when never taken)."""
    x, z, n = xs[c], state[c], xs.shape[1]
    for s in range(record.shape[0]):
        for a in range(0, n - 1, 2):  # two 32-bit draws per 64 random bits
            z, bits = _splitmix64(z)
            _update_table(a, np.int64(bits & _LOW32), x, ptr, nbr, off, thr)
            _update_table(a + 1, np.int64(bits >> np.uint64(32)), x, ptr, nbr, off, thr)
        if n % 2:
            z, bits = _splitmix64(z)
            _update_table(n - 1, np.int64(bits & _LOW32), x, ptr, nbr, off, thr)
        _record(record[s], c, x, order, out)
    state[c] = z


@njit(cache=True)
def _sweeps_any(c, xs, ptr, nbr, weights, bias, off, thr, state, record, order,
                out):  # pragma: no cover - numba
    """:func:`_sweeps_table` for graphs with untabulated (high-degree) nodes."""
    x, z, n = xs[c], state[c], xs.shape[1]
    for s in range(record.shape[0]):
        for a in range(0, n - 1, 2):
            z, bits = _splitmix64(z)
            _update_any(a, np.int64(bits & _LOW32), x, ptr, nbr, weights, bias, off, thr)
            _update_any(a + 1, np.int64(bits >> np.uint64(32)), x, ptr, nbr, weights, bias,
                        off, thr)
        if n % 2:
            z, bits = _splitmix64(z)
            _update_any(n - 1, np.int64(bits & _LOW32), x, ptr, nbr, weights, bias, off, thr)
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
    :func:`mrflib._fields.neighbour_fields`); offsets are -1 where unused."""
    off, h = neighbour_fields(bias, ptr, weights, use)
    thr = np.empty(h.shape[0], dtype=np.int64)
    for k in range(h.shape[0]):
        thr[k] = _threshold(h[k])
    return off, thr


@njit(cache=True)
def _two_colouring(indptr, indices):  # pragma: no cover - numba
    """Colours 0/1 of a bipartite graph by breadth-first search, or ``None``-like -1s."""
    n = indptr.shape[0] - 1
    colour = np.full(n, -1, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
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
                    return np.full(n, -1, dtype=np.int64)
    return colour


@lru_cache(maxsize=16)
def _layout(n: int, edges_b: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sweep order and the CSR adjacency in that order, cached per graph."""
    from . import graphs

    edges = np.frombuffer(edges_b, dtype=np.int64).reshape(-1, 2)
    indptr, indices, eids = graphs.adjacency(edges, n)
    colour = _two_colouring(indptr, indices)
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
    return out


def sweep_order(bm: BoltzmannMachine) -> np.ndarray:
    """The order in which a sweep visits the spins: colour blocks on bipartite graphs."""
    return _layout(_model(bm).n, np.ascontiguousarray(bm.edges, dtype=np.int64).tobytes())[0]


def _run(bm, x, n_sweeps, record_at, n_slots, rng, kernel=None):
    """Advance chains ``x`` in place by ``n_sweeps``; after sweep ``s`` (1-based) with
    ``record_at[s - 1] >= 0`` store the chains in that slot of the returned array.

    Nodes whose ``2^degree`` neighbour configurations are few next to the updates of
    this call use a threshold table; the others compute it (same bits either way).
    Chains run in parallel when the work pays for a parallel region.
    """
    order, ptr, nbr, eids = _layout(bm.n, np.ascontiguousarray(bm.edges, np.int64).tobytes())
    bias = np.ascontiguousarray(np.asarray(bm.bias, dtype=np.float64)[order])
    weights = np.ascontiguousarray(np.asarray(bm.coupling, dtype=np.float64)[eids])
    M, n = x.shape
    state = rng.integers(0, 2**64, size=M, dtype=np.uint64)
    deg = np.diff(ptr)
    use = (deg <= MAX_TABLE_DEGREE) & (2.0**deg * 4 <= float(n_sweeps) * M)
    off, thr = _threshold_tables(bias, ptr, weights, use)
    xp = np.ascontiguousarray(x[:, order])
    out = np.empty((n_slots, M, n), dtype=np.int8)
    if kernel is None:
        work = float(n_sweeps) * M * (n + nbr.size)
        kernel = _gibbs_parallel if M > 1 and parallel_ok(work) else _gibbs_serial
    kernel(bool(np.all(off >= 0)), xp, ptr, nbr, weights, bias, off, thr, state, record_at,
           order, out)
    x[:, order] = xp
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
        return math.floor(p * _TWO32 + 0.5)

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
                    h += weights[k] * xp[c, nbr[k]]
                xp[c, a] = 1 if bits[a] < threshold(h) else -1
            if record[s] >= 0:
                out[record[s], c, order] = xp[c]


def _model(bm: Any) -> BoltzmannMachine:
    if not isinstance(bm, BoltzmannMachine):
        raise ValueError(f"bm must be a BoltzmannMachine, got {type(bm).__name__}")
    return bm


@blas_single_threaded
def sweep(bm: BoltzmannMachine, states: Any, n_sweeps: int, rng: Any) -> np.ndarray:
    """Advance each chain (row of ``states``) by ``n_sweeps`` Gibbs sweeps.

    This is the chain update of persistent contrastive divergence (Tieleman 2008)
    and of Algorithm 2 of the GSMCI paper. Returns a new ``int8`` array; ``states``
    is not modified.
    """
    bm = _model(bm)
    x = check_spins(states, bm.n, "states").copy()
    n_sweeps = check_positive(n_sweeps, "n_sweeps", integer=True, allow_zero=True)
    rng = as_rng(rng)
    if n_sweeps:
        _run(bm, x, n_sweeps, np.full(n_sweeps, -1, dtype=np.int64), 0, rng)
    return x


@blas_single_threaded
def gibbs(
    bm: BoltzmannMachine,
    n_samples: int,
    *,
    burn_in: int,
    thin: int = 1,
    n_chains: int | None = None,
    init: Any = None,
    rng: Any,
) -> np.ndarray:
    """Draw ``n_samples`` configurations by Gibbs sampling.

    ``n_chains`` independent chains (default: one per sample) start from uniformly
    random spins (or ``init``), run ``burn_in`` sweeps, then each records a sample
    every ``thin`` sweeps until ``n_samples`` are collected. Rows are ordered by
    recording time, then chain: row ``t * n_chains + c`` is chain ``c``'s ``t``-th sample.

    Parameters
    ----------
    bm : BoltzmannMachine
    n_samples : int
    burn_in : int
        Sweeps discarded before the first sample (keyword-only: choose it).
    thin : int
        Sweeps between successive samples of one chain.
    n_chains : int, optional
        Independent chains; at most ``n_samples``.
    init : array_like, shape (n_chains, n), optional
        Starting spins.
    rng : Generator or int

    Returns
    -------
    ndarray of int8, shape (n_samples, n)
    """
    bm = _model(bm)
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    burn_in = check_positive(burn_in, "burn_in", integer=True, allow_zero=True)
    thin = check_positive(thin, "thin", integer=True)
    n_chains = n_samples if n_chains is None else check_positive(n_chains, "n_chains",
                                                                 integer=True)
    if n_chains > n_samples:
        raise ValueError(f"n_chains must be at most n_samples ({n_samples}), got {n_chains}")
    rng = as_rng(rng)
    per_chain = -(-n_samples // n_chains)
    require_memory(2.0 * per_chain * n_chains * bm.n, f"{n_samples} samples of {bm.n} spins")
    if init is None:
        x = (2 * rng.integers(0, 2, size=(n_chains, bm.n)) - 1).astype(np.int8)
    else:
        x = check_spins(init, bm.n, "init").copy()
        if len(x) != n_chains:
            raise ValueError(f"init must have n_chains = {n_chains} rows, got {len(x)}")
    first = max(burn_in, 1)  # the first sample is taken after at least one sweep
    n_sweeps = first + (per_chain - 1) * thin
    record = np.full(n_sweeps, -1, dtype=np.int64)
    record[first - 1::thin] = np.arange(per_chain)
    out = _run(bm, x, n_sweeps, record, per_chain, rng)
    return out.reshape(per_chain * n_chains, bm.n)[:n_samples]


def exact(bm: BoltzmannMachine, n_samples: int, rng: Any) -> np.ndarray:
    """I.i.d. samples by enumeration (small ``n`` only); see :func:`mrflib.exact.sample`."""
    return _exact.sample(bm, n_samples, rng)
