"""Gibbs sampling of pairwise factor graphs: the packing, the colouring and the sweeps.

A factor graph whose factors all hold at most two variables (Potts and clock models,
fields, zero weights, any cardinalities, any graph) is packed once into per-variable
arrays: its unary tables summed per variable, and for each neighbour ``j`` of ``i`` the sum
of the tables of every factor on ``{i, j}``, oriented for ``i`` (one row of ``|X_i|``
entries per state of ``x_j``). A Gibbs update of ``x_i`` then reads its unary row and one
row per neighbour, with no factor indirection (the kernels are in
:mod:`mrflib.inference.sampling._pairwise_kernels`).

The weights are exponentiated once per model, each row divided by its largest entry, so an
update multiplies rows instead of taking one exponential per state, whenever no product
can underflow: when every variable's rows span at most :data:`LOG_RANGE` in log-weight
(their finite entries). Otherwise the kernels add log-weights (the same distribution).

A sweep visits the colour classes of a proper colouring in turn (two on a bipartite graph,
a checkerboard on a lattice; greedy colours otherwise), each class in index order. Every
update draws from its own counter-based SplitMix64 stream (chain, sweep, variable), so the
same seed gives the same bits whatever the number of threads. :func:`run_numpy` is the
plain-numpy reference of the kernels (the same draws in the same order).

When every variable has the same number of states, at most
:data:`~mrflib.inference.sampling._pairwise_kernels.MAX_FIXED_STATES`, and the weights are
products, the kernels compiled for that number take the chains site-major
(:func:`site_major`: ``(n, M)`` uint8, a variable's states in all chains adjacent), the
same bits. :func:`run` converts rows to that layout and back; persistent chains (CD, PCD
and SMCI-PCD) are kept in it and advanced by :func:`run_site_major`, with no conversion
per call.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from mrflib._support.threads import parallel_ok
from mrflib.inference.sampling import _pairwise_kernels as _k
from mrflib.inference.sampling._checkerboard import two_colouring

__all__ = ["Pairwise", "is_pairwise", "structure", "weights", "sweep_order", "run",
           "run_site_major", "site_major", "chain_major", "take_chains", "fixed_states",
           "ragged_arange", "log_weights", "weights_of_logs", "run_numpy"]

#: Largest spread (max - min of the finite log-weights, summed over a variable's unary row
#: and its neighbours' rows) for which the kernels multiply exponentiated rows: a product
#: of rows scaled to a largest entry of 1 stays above ``exp(-LOG_RANGE)``, far from
#: float64's underflow at ``exp(-708)``.
LOG_RANGE = 600.0


class Pairwise(NamedTuple):
    """The structure of a pairwise factor graph, for :func:`weights` and :func:`run`.

    ``nbr[nptr[i]:nptr[i+1]]`` are the neighbours of ``i`` (ascending); ``noff[k]`` the
    start of entry ``k``'s table in the flat weights (row of the neighbour's state ``s``
    at ``noff[k] + s * card[i]``), ``uoff[i]`` that of ``i``'s unary row, ``size`` their
    length. The weights are the model's flat tables mapped by ``src -> dst`` and summed
    (:func:`numpy.bincount`). ``row_start`` are the starts of the rows (``row_len`` long),
    ``block_start`` the first row of each table (a variable's unary row, then one table per
    neighbour) and ``var_block`` the first table of each variable. ``colour`` is a proper
    colouring of the graph (``None`` when built without, :func:`structure`).
    """

    card: np.ndarray
    nptr: np.ndarray
    nbr: np.ndarray
    noff: np.ndarray
    uoff: np.ndarray
    size: int
    src: np.ndarray
    dst: np.ndarray
    row_start: np.ndarray
    row_len: np.ndarray
    block_start: np.ndarray
    var_block: np.ndarray
    colour: np.ndarray | None
    #: Whether every weight comes from one table entry at most (no two factors on one
    #: scope): the weights are then a scatter of the tables, no sums.
    single: bool = False
    #: When every weight comes from exactly one table entry (every variable has one
    #: unary factor and each neighbour one pair factor): that entry, so that the
    #: log-weights are one gather ``tables[gather]`` (else ``None``).
    gather: np.ndarray | None = None


def is_pairwise(fptr: np.ndarray) -> bool:
    """Whether every factor of a packing (``fptr``: scope boundaries) holds at most two
    variables."""
    return bool(np.all(np.diff(fptr) <= 2))


def ragged_arange(lengths: np.ndarray) -> np.ndarray:
    """``0 .. lengths[k] - 1`` for each ``k``, concatenated (``int64``): each entry's place
    within its run, for packings of runs of these lengths (here and in
    :mod:`mrflib.inference.smci._pairwise_scopes`)."""
    total = int(lengths.sum())
    starts = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)


def structure(fptr: np.ndarray, fvars: np.ndarray, fstride: np.ndarray,
              offsets: np.ndarray, card: np.ndarray, colouring: bool = True
              ) -> Pairwise | None:
    """The pairwise structure of a model given as its factor-graph packing
    (:func:`mrflib.inference.sampling.chains.pack`), or ``None`` when some factor holds more
    than two variables.

    Parameters
    ----------
    fptr, fvars, fstride, offsets : ndarray of int64
        Scope boundaries, scope variables, their strides and the tables' offsets.
    card : ndarray of int64
        Cardinalities.
    colouring : bool
        Whether to colour the graph (``colour``, for the sweeps); ``False`` leaves
        ``colour`` ``None`` for the users that never sweep, and spares a cold first call
        the colouring kernels' compilation.

    Returns
    -------
    Pairwise or None
    """
    if not is_pairwise(fptr):
        return None
    card = np.ascontiguousarray(card, dtype=np.int64)
    n = len(card)
    sizes = np.diff(fptr)
    pk = np.flatnonzero(sizes == 2)
    uk = np.flatnonzero(sizes == 1)
    a, b = fvars[fptr[pk]], fvars[fptr[pk] + 1]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pairs, pair_of = np.unique(lo * n + hi, return_inverse=True)
    P = len(pairs)
    centre = np.concatenate([pairs // n, pairs % n]).astype(np.int64)
    other = np.concatenate([pairs % n, pairs // n]).astype(np.int64)
    order = np.lexsort((other, centre))
    centre, other = centre[order], other[order]
    directed = np.empty(2 * P, dtype=np.int64)
    directed[order] = np.arange(2 * P)  # directed[p]: lo -> hi, directed[P + p]: hi -> lo
    nptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(centre, minlength=n), out=nptr[1:])
    blk = card[other] * card[centre]
    per_var = card + np.bincount(centre, weights=blk, minlength=n).astype(np.int64)
    vstart = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_var, out=vstart[1:])
    uoff = vstart[:-1].copy()
    excl = np.zeros(2 * P + 1, dtype=np.int64)
    np.cumsum(blk, out=excl[1:])
    noff = uoff[centre] + card[centre] + excl[:-1] - excl[nptr[centre]]
    # unary factors: entry s of variable v's table adds to its row
    uv = fvars[fptr[uk]]
    ucnt = card[uv]
    us = ragged_arange(ucnt)
    src = [np.repeat(offsets[uk], ucnt) + us * np.repeat(fstride[fptr[uk]], ucnt),
           np.repeat(uoff[uv], ucnt) + us]
    # pair factors: each entry adds to the tables oriented for both of its variables
    first_lo = a == lo  # the factor's first variable is its pair's lower one
    d_a = np.where(first_lo, directed[pair_of], directed[P + pair_of])
    d_b = np.where(first_lo, directed[P + pair_of], directed[pair_of])
    m = card[a] * card[b]
    t = ragged_arange(m)
    ca, cb = np.repeat(card[a], m), np.repeat(card[b], m)
    xa, xb = t // cb, t % cb
    psrc = (np.repeat(offsets[pk], m) + xa * np.repeat(fstride[fptr[pk]], m)
            + xb * np.repeat(fstride[fptr[pk] + 1], m))
    dst_a = np.repeat(noff[d_a], m) + xb * ca + xa
    dst_b = np.repeat(noff[d_b], m) + xa * cb + xb
    src_all = np.concatenate([src[0], psrc, psrc]).astype(np.int64)
    dst_all = np.concatenate([src[1], dst_a, dst_b]).astype(np.int64)
    # rows: a variable's unary row, then card[j] rows per neighbour j, each card[i] long
    nrows = per_var // card
    row_var = np.repeat(np.arange(n, dtype=np.int64), nrows)
    row_start = uoff[row_var] + ragged_arange(nrows) * card[row_var]
    var_block = np.arange(n, dtype=np.int64) + nptr[:-1]
    block_rows = np.ones(n + 2 * P, dtype=np.int64)
    block_rows[centre + np.arange(2 * P) + 1] = card[other]
    block_start = np.cumsum(block_rows) - block_rows
    colour = _colouring(nptr, other) if colouring else None
    size = int(vstart[-1])
    hits = np.bincount(dst_all, minlength=size)
    single = bool(hits.max(initial=0) <= 1)
    gather = None
    if single and bool(np.all(hits == 1)):
        gather = np.empty(size, dtype=np.int64)
        gather[dst_all] = src_all
    return Pairwise(card, nptr, other, noff.astype(np.int64), uoff, size, src_all,
                    dst_all, row_start, card[row_var], block_start, var_block, colour, single,
                    gather)


def _colouring(nptr: np.ndarray, nbr: np.ndarray) -> np.ndarray:
    """Two colours on a bipartite graph, greedy colours otherwise."""
    n = len(nptr) - 1
    colour = np.empty(n, dtype=np.int64)
    two_colouring(nptr, nbr, colour, np.empty(n, dtype=np.int64))
    if len(colour) and colour[0] < 0:
        colour = _k.greedy_colouring(nptr, nbr)
    return colour


def sweep_order(pw: Pairwise, free: np.ndarray) -> np.ndarray:
    """The variables ``free`` in the order a sweep updates them: colour by colour, each
    colour class in index order."""
    free = np.asarray(free, dtype=np.int64)
    return free[np.lexsort((free, pw.colour[free]))] if len(free) else free


def log_weights(pw: Pairwise, tables: np.ndarray) -> np.ndarray:
    """The flat log-weights of the rows of ``pw``: every factor's entries of the flat
    log-tables ``tables`` (factor order) summed into the rows (the input of
    :func:`weights_of_logs`; the SMCI scope sums and the pseudo-likelihood read them too)."""
    if pw.gather is not None:  # the same values as the scatter below, in one pass
        return tables[pw.gather]
    if pw.single:  # the same values as the sums (0 + t = t), without the summing pass
        lw = np.zeros(pw.size)
        lw[pw.dst] = tables[pw.src]
        return lw
    return np.bincount(pw.dst, weights=tables[pw.src], minlength=pw.size)


def weights(pw: Pairwise, tables: np.ndarray) -> tuple[np.ndarray, bool]:
    """The kernels' weights of a model with flat log-tables ``tables`` (factor order) and
    whether they are log-weights: exponentiated rows, each scaled to a largest entry of 1,
    when no variable's rows span more than :data:`LOG_RANGE`, else the log-weights.

    Parameters
    ----------
    pw : Pairwise
    tables : ndarray of float64
        The model's log-tables raveled and joined in factor order.

    Returns
    -------
    (ndarray of float64, bool)
    """
    w, logs, _ = weights_of_logs(pw, log_weights(pw, tables))
    return w, logs


def weights_of_logs(pw: Pairwise, lw: np.ndarray) -> tuple[np.ndarray, bool, float]:
    """:func:`weights` of the log-weights ``lw`` (exponentiated in place when they are
    products), and an upper bound on every variable's spread (its rows' spreads summed
    as :data:`LOG_RANGE` bounds them; the exact largest when the rows have several
    lengths), for callers that bound further products of the rows without measuring the
    spreads again."""
    if pw.size == 0:
        return lw, False, 0.0
    q = fixed_states(pw)
    if q:
        fast, bound = _fixed_weights(pw, lw, q)
        if fast is not None:
            return fast, False, bound
    finite = np.isfinite(lw)
    top = np.maximum.reduceat(np.where(finite, lw, -np.inf), pw.row_start)
    low = np.minimum.reduceat(np.where(finite, lw, np.inf), pw.row_start)
    spread = np.where(np.isfinite(top), top - low, 0.0)
    per_block = np.maximum.reduceat(spread, pw.block_start)
    per_var = np.add.reduceat(per_block, pw.var_block)
    largest = float(per_var.max())
    if not largest <= LOG_RANGE:
        return lw, True, largest
    shift = np.repeat(np.where(np.isfinite(top), top, 0.0), pw.row_len)
    with np.errstate(invalid="ignore"):
        return np.exp(lw - shift), False, largest


def _fixed_weights(pw: Pairwise, lw: np.ndarray, q: int
                   ) -> tuple[np.ndarray | None, float]:
    """:func:`weights` in place on rows of one length ``q`` (a learner's every step):
    the rows as a ``(rows, q)`` array, no segmented reductions, and the quick bound on
    every variable's spread (the widest row's spread times the most tables of a
    variable). ``None`` when that bound exceeds :data:`LOG_RANGE`: the exact test
    decides then."""
    rows = lw.reshape(-1, q)
    # column by column: numpy's reductions along a short last axis are many times slower
    top = functools.reduce(np.maximum, (rows[:, v] for v in range(q)))
    if np.isneginf(lw).any():
        finite = np.where(np.isneginf(rows), np.inf, rows)
        low = functools.reduce(np.minimum, (finite[:, v] for v in range(q)))
        with np.errstate(invalid="ignore"):
            spread = np.where(np.isfinite(top), top - low, 0.0)
    else:
        spread = top - functools.reduce(np.minimum, (rows[:, v] for v in range(q)))
    tables_per_var = int(np.diff(pw.nptr).max(initial=0)) + 1
    bound = float(spread.max()) * tables_per_var
    if not bound <= LOG_RANGE:
        return None, bound
    rows -= np.where(np.isfinite(top), top, 0.0)[:, None]
    return np.exp(lw, out=lw), bound


def run(pw: Pairwise, w: np.ndarray, logs: bool, x: np.ndarray, order: np.ndarray,
        keys: np.ndarray, record: np.ndarray, n_slots: int, final: bool = True
        ) -> np.ndarray:
    """Advance the chains ``x (M, n)`` (int64, C-contiguous) in place by ``len(record)``
    sweeps over ``order``; after sweep ``s`` with ``record[s] >= 0`` the chains are stored
    in that slot of the returned ``(n_slots, M, n)`` array. ``keys`` (uint64, one per
    chain) seed the chains' streams. With ``final`` false, ``x`` may be left as it was
    (the kernels for a fixed number of states then skip converting the chains back, and
    a cold first call the compilation of that conversion): for callers that read only
    the records.

    Parameters
    ----------
    pw : Pairwise
    w : ndarray of float64
        :func:`weights`.
    logs : bool
        Whether ``w`` are log-weights.
    x : ndarray of int64, shape (M, n)
    order : ndarray of int64
        :func:`sweep_order`.
    keys : ndarray of uint64, shape (M,)
    record : ndarray of int64
    n_slots : int
    final : bool, default True
        Whether ``x`` must hold the chains' final states on return.

    Returns
    -------
    ndarray of int64, shape (n_slots, M, n)
    """
    M, n = x.shape
    out = np.empty((n_slots, M, n), dtype=np.int64)
    work = float(len(record)) * M * (len(order) + len(pw.nbr))
    q = fixed_states(pw)
    if q and not logs:
        xt = site_major(x)
        _run_fixed(pw, w, q, xt, order, keys, record, out)
        if final:
            _k.transpose(xt, x)
        return out
    parallel = M > _k.CHAIN_BLOCK and parallel_ok(work)
    kernel = _k.sweeps_parallel if parallel else _k.sweeps_serial
    kernel(x, w, order, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, bool(logs), keys, record,
           out)
    return out


def site_major(x: np.ndarray) -> np.ndarray:
    """Chains ``x (M, n)`` as the fixed-state kernels hold them: ``(n, M)`` uint8, a
    site's states of all chains adjacent (every state below 256).

    Parameters
    ----------
    x : ndarray of int, shape (M, n)

    Returns
    -------
    ndarray of uint8, shape (n, M)
    """
    x = np.ascontiguousarray(x)
    xt = np.empty(x.shape[::-1], dtype=np.uint8)
    _k.transpose(x, xt)
    return xt


def chain_major(xt: np.ndarray) -> np.ndarray:
    """The inverse of :func:`site_major`: ``(M, n)`` int64 chains."""
    x = np.empty(xt.shape[::-1], dtype=np.int64)
    _k.transpose(np.ascontiguousarray(xt), x)
    return x


def take_chains(xt: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The chains ``rows`` of site-major chains ``xt (n, M)``: ``xt[:, rows]``, C order."""
    out = np.empty((xt.shape[0], len(rows)), dtype=xt.dtype)
    _k.take_columns(xt, np.asarray(rows, dtype=np.int64), out)
    return out


def _chain_block(M: int) -> int:
    """Chains per task of the fixed-state kernels: at most
    :data:`~mrflib.inference.sampling._pairwise_kernels.FIXED_BLOCK`. Few blocks are of
    equal size (two blocks of 50 for 100 chains, not 64 and 36: the threads get equal
    work); many are of exactly that size, a block's states of a site then starting at a
    multiple of 64 bytes within the site's row."""
    if M >= 4 * _k.FIXED_BLOCK:
        return _k.FIXED_BLOCK
    blocks = max(1, -(-M // _k.FIXED_BLOCK))
    return max(1, -(-M // blocks))


def _run_fixed(pw: Pairwise, w: np.ndarray, q: int, xt: np.ndarray, order: np.ndarray,
               keys: np.ndarray, record: np.ndarray, out: np.ndarray) -> None:
    """The fixed-state kernel on site-major chains ``xt``, on every core when the work is
    large and the cores are idle."""
    n, M = xt.shape
    block = _chain_block(M)
    work = float(len(record)) * M * (len(order) + len(pw.nbr))
    parallel = M > block and parallel_ok(work)
    args = ((0.0,) * q, xt, xt.reshape(-1), w, order, pw.nptr, pw.nbr, pw.noff, pw.uoff, keys,
            record, out, block, 0, M)
    if parallel:  # a scratch table per block
        _k.fixed_parallel(*args, np.empty((-(-M // block), q**3)))
    else:
        _k.fixed_serial(*args, np.empty(q**3))


def run_site_major(pw: Pairwise, w: np.ndarray, logs: bool, xt: np.ndarray,
                   order: np.ndarray, keys: np.ndarray, n_sweeps: int) -> np.ndarray:
    """:func:`run` without records on site-major chains ``xt (n, M)`` (uint8,
    :func:`site_major`), in place: the same draws as :func:`run` on ``chain_major(xt)``.
    Persistent chains kept in this layout cost no conversion per call when every variable
    has the same number of states and the weights are products; otherwise the chains are
    converted for the general kernel and back.

    Parameters
    ----------
    pw : Pairwise
    w : ndarray of float64
        :func:`weights`.
    logs : bool
        Whether ``w`` are log-weights.
    xt : ndarray of uint8, shape (n, M)
    order : ndarray of int64
        :func:`sweep_order`.
    keys : ndarray of uint64, shape (M,)
    n_sweeps : int

    Returns
    -------
    ndarray of uint8
        ``xt`` itself.
    """
    record = np.full(n_sweeps, -1, dtype=np.int64)
    n, M = xt.shape
    q = fixed_states(pw)
    if q and not logs:
        _run_fixed(pw, w, q, xt, order, keys, record, np.empty((0, M, n), dtype=np.int64))
        return xt
    x = chain_major(xt)
    run(pw, w, logs, x, order, keys, record, 0)
    _k.transpose(x, xt)
    return xt


def fixed_states(pw: Pairwise) -> int:
    """The number of states shared by every variable when it is at most
    :data:`~mrflib.inference.sampling._pairwise_kernels.MAX_FIXED_STATES` (the kernels
    compiled for it apply), else 0."""
    if len(pw.card) == 0:
        return 0
    q = int(pw.card[0])
    return q if q <= _k.MAX_FIXED_STATES and bool(np.all(pw.card == q)) else 0


def _uniforms_numpy(keys: np.ndarray, counter: int) -> np.ndarray:
    """The uniforms of draw ``counter`` of the streams ``keys`` (as the kernels)."""
    z = keys + np.uint64((counter + 1) * 0x9E3779B97F4A7C15 % 2**64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def run_numpy(pw: Pairwise, w: np.ndarray, logs: bool, x: np.ndarray, order: np.ndarray,
              keys: np.ndarray, record: np.ndarray, n_slots: int) -> np.ndarray:
    """Plain-numpy reference of :func:`run` (the same draws, the same operations in the
    same order; vectorised over chains)."""
    M, n = x.shape
    out = np.empty((n_slots, M, n), dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint64)
    for s in range(len(record)):
        for i in order.tolist():
            c = int(pw.card[i])
            score = np.repeat(w[pw.uoff[i]:pw.uoff[i] + c][None, :], M, axis=0)
            for k in range(pw.nptr[i], pw.nptr[i + 1]):
                rows = w[pw.noff[k] + x[:, pw.nbr[k]][:, None] * c + np.arange(c)[None, :]]
                score = score + rows if logs else score * rows
            if logs:
                score = np.exp(score - score.max(axis=1, keepdims=True))
            cum = np.cumsum(score, axis=1)
            target = _uniforms_numpy(keys, s * n + i) * cum[:, -1]
            x[:, i] = (cum[:, :c - 1] <= target[:, None]).sum(axis=1)
        if record[s] >= 0:
            out[record[s]] = x
    return out
