"""The pairwise binary backend of Gibbs sampling: Boltzmann machines, many chains at once.

The front is :mod:`mrflib.inference.sampling`, which chooses this backend for
:data:`~mrflib.models.structure.PAIRWISE_BINARY` models and checks the model there.

A sweep visits the spins ``0, 1, ..., n-1`` in order and redraws each from its
conditional, ``P(x_i = +1 | x_rest) = 1 / (1 + exp(-2 h_i))`` with the local field
``h_i = b_i + Σ_j J_ij x_j``. The uniforms are drawn from the caller's
:class:`numpy.random.Generator` in blocks of shape ``(sweeps, chains, n)`` and the
numba kernel consumes them in that order, so the result depends only on the seed,
not on the number of threads; chains run in parallel over the cores.

Bipartite graphs of at least 1024 spins (large lattices) are swept in checkerboard order
with integer thresholds instead (:mod:`mrflib.inference.sampling._checkerboard`); square
grids among them take a kernel specialised to the grid
(:mod:`mrflib.inference.sampling._grid_gibbs`, same bits), and the threshold tables are kept
with the graph for the last parameters seen, so that repeated calls on one model do not
rebuild them. That path draws its own SplitMix64 integers, not the uniforms of the
index-order sampler, so its seeded bits differ from the index-order sampler's; each path
gives the same bits for the same seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

from mrflib._support.threads import parallel_ok
from mrflib._support.validation import (
    as_rng,
    check_nodes,
    check_positive,
    check_spins,
    require_memory,
)
from mrflib.inference._fields import neighbour_fields
from mrflib.inference.sampling import _checkerboard
from mrflib.inference.sampling._counts import check_counts, gibbs_bytes
from mrflib.models._checks import check_spin_evidence
from mrflib.models.boltzmann import BoltzmannMachine, clamp

__all__ = ["gibbs", "sweep", "sweep_order", "UNIFORM_BLOCK", "MAX_TABLE_DEGREE"]

#: Uniforms drawn per block (bounds the buffer at 32 MiB of float64).
UNIFORM_BLOCK = 1 << 22
#: Largest degree for which the sampler tabulates the conditional over neighbour spins.
MAX_TABLE_DEGREE = 12


@njit(cache=True)
def _chain_sweeps(c, x, bias, indptr, indices, weights, off, tab, u, record,
                  out):  # pragma: no cover - numba
    n = x.shape[1]
    for s in range(u.shape[0]):
        for i in range(n):
            if off[i] >= 0:  # 1 + exp(-2 h_i) looked up by the neighbours' configuration
                cfg = 0
                for k in range(indptr[i], indptr[i + 1]):
                    cfg |= ((x[c, indices[k]] + 1) >> 1) << (k - indptr[i])
                t = tab[off[i] + cfg]
            else:
                h = bias[i]
                for k in range(indptr[i], indptr[i + 1]):
                    h += weights[k] * x[c, indices[k]]
                t = 1.0 + math.exp(-2.0 * h)
            if u[s, c, i] * t < 1.0:
                x[c, i] = 1
            else:
                x[c, i] = -1
        r = record[s]
        if r >= 0:
            for i in range(n):
                out[r, c, i] = x[c, i]


@njit(cache=True)
def _field_tables(bias, indptr, weights, use):  # pragma: no cover - numba
    """``1 + exp(-2 h_i)`` for every configuration of the neighbours of each node with
    ``use[i]`` (see :func:`mrflib.inference._fields.neighbour_fields`); offsets are -1 where
    unused."""
    off, h = neighbour_fields(bias, indptr, weights, use)
    tab = np.empty_like(h)
    for k in range(h.shape[0]):
        tab[k] = 1.0 + math.exp(-2.0 * h[k])
    return off, tab


@njit(cache=True, parallel=True)
def _gibbs_parallel(x, bias, indptr, indices, weights, off, tab, u, record,
                    out):  # pragma: no cover - numba
    for c in prange(x.shape[0]):
        _chain_sweeps(c, x, bias, indptr, indices, weights, off, tab, u, record, out)


@njit(cache=True)
def _gibbs_serial(x, bias, indptr, indices, weights, off, tab, u, record,
                  out):  # pragma: no cover - numba
    for c in range(x.shape[0]):
        _chain_sweeps(c, x, bias, indptr, indices, weights, off, tab, u, record, out)


def _gibbs_kernel(x, bias, indptr, indices, weights, u, record, out):
    """Chains in parallel when there is enough work to pay for a parallel region
    (a learning step sweeping a few hundred small chains is faster on one thread);
    each chain consumes its own slice of ``u``, so both paths give the same bits.
    Nodes whose ``2^degree`` neighbour configurations are few next to the updates of
    this call use a table of ``1 + exp(-2 h)`` instead of computing the exponential."""
    deg = np.diff(indptr)
    use = (deg <= MAX_TABLE_DEGREE) & (2.0**deg * 4 <= u.shape[0] * x.shape[0])
    off, tab = _field_tables(bias, indptr, weights, use)
    work = u.size + len(indices) * u.shape[0] * x.shape[0]
    kernel = _gibbs_parallel if x.shape[0] > 1 and parallel_ok(work) else _gibbs_serial
    kernel(x, bias, indptr, indices, weights, off, tab, u, record, out)


def _gibbs_reference(x, bias, indptr, indices, weights, u, record, out):
    """Plain-Python twin of :func:`_gibbs_kernel` (test reference, same uniforms)."""
    M, n = x.shape
    for c in range(M):
        for s in range(u.shape[0]):
            for i in range(n):
                h = bias[i] + np.dot(weights[indptr[i]:indptr[i + 1]],
                                     x[c, indices[indptr[i]:indptr[i + 1]]])
                x[c, i] = 1 if u[s, c, i] * (1.0 + math.exp(-2.0 * h)) < 1.0 else -1
            if record[s] >= 0:
                out[record[s], c] = x[c]


def _run(bm, x, n_sweeps, record_at, n_slots, rng, kernel=_gibbs_kernel):
    """Advance chains ``x`` in place by ``n_sweeps``; after sweep ``s`` (1-based) with
    ``record_at[s - 1] >= 0`` store the chains in that slot of the returned array.
    Large bipartite graphs go to :func:`mrflib.inference.sampling._checkerboard.run`."""
    if kernel is _gibbs_kernel and _checkerboard.applies(bm):
        return _checkerboard.run(bm, x, n_sweeps, record_at, n_slots, rng)
    indptr, indices, weights = bm.adjacency()
    bias = np.ascontiguousarray(bm.bias, dtype=np.float64)
    M, n = x.shape
    out = np.empty((n_slots, M, n), dtype=np.int8)
    block = max(1, UNIFORM_BLOCK // max(1, M * n))
    done = 0
    while done < n_sweeps:
        S = min(block, n_sweeps - done)
        u = rng.random((S, M, n))
        kernel(x, bias, indptr, indices, weights, u, record_at[done:done + S], out)
        done += S
    return out


def sweep_order(bm: BoltzmannMachine) -> np.ndarray:
    """The spins in the order a sweep visits them: ``0..n-1``, or colour blocks on bipartite
    graphs of at least :data:`mrflib.inference.sampling._checkerboard.MIN_NODES` spins."""
    if _checkerboard.applies(bm):
        return _checkerboard.layout(bm)[0]
    return np.arange(bm.n)


def sweep(bm: BoltzmannMachine, states: Any, n_sweeps: int, rng: Any) -> np.ndarray:
    """:func:`mrflib.inference.sampling.sweep` of a Boltzmann machine (checked there)."""
    x = check_spins(states, bm.n, "states").copy()
    n_sweeps = check_positive(n_sweeps, "n_sweeps", integer=True, allow_zero=True)
    rng = as_rng(rng)
    require_memory(gibbs_bytes(len(x), bm.n, 0, n_sweeps, UNIFORM_BLOCK),
                   f"sweep(n_sweeps={n_sweeps}) of {len(x)} chains of {bm.n} spins")
    if n_sweeps:
        _run(bm, x, n_sweeps, np.full(n_sweeps, -1, dtype=np.int64), 0, rng)
    return x


def gibbs(bm: BoltzmannMachine, n_samples: int, burn_in: int, thin: int,
          n_chains: int | None, init: Any, rng: Any, evidence: Any = None) -> np.ndarray:
    """:func:`mrflib.inference.sampling.gibbs` of a Boltzmann machine (checked there); with
    ``evidence`` ``{node: spin}``, the chains of the free spins' machine
    (:func:`mrflib.models.boltzmann.clamp`), the clamped spins filled in."""
    if evidence:
        return _clamped_gibbs(bm, n_samples, burn_in, thin, n_chains, init, rng, evidence)
    n_samples, burn_in, thin, n_chains, per_chain = check_counts(n_samples, burn_in, thin,
                                                                 n_chains)
    rng = as_rng(rng)
    n_sweeps = max(burn_in, 1) + (per_chain - 1) * thin
    require_memory(gibbs_bytes(n_chains, bm.n, per_chain, n_sweeps, UNIFORM_BLOCK),
                   f"gibbs(n_samples={n_samples}, burn_in={burn_in}, thin={thin}, "
                   f"n_chains={n_chains}) on {bm.n} spins")
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


def _clamped_gibbs(bm: BoltzmannMachine, n_samples: int, burn_in: int, thin: int,
                   n_chains: int | None, init: Any, rng: Any, evidence: Any) -> np.ndarray:
    """:func:`gibbs` under ``evidence``: the free spins sampled from their conditional."""
    evidence = check_spin_evidence(evidence)
    nodes = check_nodes(list(evidence), bm.n, "evidence")
    spins = list(evidence.values())
    if len(nodes) == bm.n:  # nothing left to draw: every sample is the evidence
        n_samples = check_counts(n_samples, burn_in, thin, n_chains)[0]
        x = np.zeros(bm.n, dtype=np.int8)
        x[nodes] = spins
        return np.tile(x, (n_samples, 1))
    free_bm, free, _ = clamp(bm, nodes, spins)
    if init is not None:
        init = check_spins(init, bm.n, "init")[:, free]
    drawn = gibbs(free_bm, n_samples, burn_in, thin, n_chains, init, rng)
    out = np.empty((len(drawn), bm.n), dtype=np.int8)
    out[:, free] = drawn
    out[:, nodes] = np.asarray(spins, dtype=np.int8)
    return out
