"""1-SMCI of the factor scopes of a pairwise factor graph: every pair's conditional given
the rest, from the packed rows of :mod:`mrflib.inference.sampling._pairwise`.

For a factor on ``{i, j}``, 1-SMCI sums ``P(x_i, x_j | x_rest)`` over the sample set; with
pairwise factors that conditional is ``cav_i(x_i) T_ij(x_i, x_j) cav_j(x_j)``, where
``T_ij`` sums the tables of every factor on ``{i, j}`` and the cavity ``cav_i`` is ``i``'s
unary row times the rows of its other neighbours at their sampled states. A factor on
``{i}`` gets the conditional of ``x_i`` given the rest. The kernels
(:mod:`._pairwise_scopes_kernels`) compute every cavity of a row by a prefix and a suffix
product over each neighbour list, so a row costs ``O(edges q^2)``, with nothing of size
``N x factors`` kept (the rows are transposed once, in bytes when the cardinalities
allow, or read as persistent chains already held site-major). When no row can weigh
zero, one batch is asked for and the variables' neighbours have few joint
configurations (:func:`mrflib.inference.smci._scope_patterns.applies`),
:func:`scope_sums` tabulates the cavities over those configurations instead
(:mod:`mrflib.inference.smci._scope_patterns`: the same sums up to the order of
summation). :func:`_scope_sums_numpy` is the plain-numpy reference.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mrflib._support.threads import parallel_ok
from mrflib._support.validation import require_memory
from mrflib.inference.sampling import _pairwise
from mrflib.inference.smci import _pairwise_scopes_kernels as _k
from mrflib.inference.smci import _scope_patterns

__all__ = ["PairwiseScopes", "plan", "scope_sums", "flat_marginals", "transposed"]

class PairwiseScopes(NamedTuple):
    """A pairwise structure's packing for 1-SMCI of its scopes (:func:`plan`).

    ``pw`` the packing; pair ``p`` joins ``plo[p] < phi[p]``, its entry in ``plo``'s
    neighbour list is ``klo[p]`` (``khi[p]`` in ``phi``'s), its table over
    ``(x_lo, x_hi)`` at ``poff[p]`` of the pair tables, read from the packed
    log-weights at ``pidx``; ``eoff[k]`` the start of neighbour entry ``k``'s cavity in a
    row's buffer (the reference's), ``pslot[k]`` the pair of neighbour entry ``k`` when
    its centre is the pair's lower end (else -1), ``voff[i]`` the start of variable
    ``i``'s conditional; ``out`` maps every entry of
    the factors' flat tables to the joined ``(variables, pairs, [1])`` sums (the last: a
    factor of empty scope, whose marginal is 1).
    """

    pw: _pairwise.Pairwise
    plo: np.ndarray
    phi: np.ndarray
    klo: np.ndarray
    khi: np.ndarray
    poff: np.ndarray
    pidx: np.ndarray
    eoff: np.ndarray
    pslot: np.ndarray
    voff: np.ndarray
    out: np.ndarray


def plan(pw: _pairwise.Pairwise, fptr: np.ndarray, fvars: np.ndarray, fstride: np.ndarray,
         offsets: np.ndarray) -> PairwiseScopes:
    """The :class:`PairwiseScopes` of a pairwise structure.

    Parameters
    ----------
    pw : Pairwise
        :func:`mrflib.inference.sampling._pairwise.structure` of the packing below.
    fptr, fvars, fstride, offsets : ndarray of int64
        The factors' scopes, strides and table offsets
        (:func:`mrflib.inference.sampling.chains.pack`).

    Returns
    -------
    PairwiseScopes
    """
    card, n = pw.card, len(pw.card)
    centre = np.repeat(np.arange(n, dtype=np.int64), np.diff(pw.nptr))
    key = centre * n + pw.nbr  # ascending: the lists are sorted by centre, then neighbour
    klo = np.flatnonzero(centre < pw.nbr)
    plo, phi = centre[klo], pw.nbr[klo]
    khi = np.searchsorted(key, phi * n + plo)
    size = card[plo] * card[phi]
    poff = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    t = _pairwise.ragged_arange(size)
    a, b = t // np.repeat(card[phi], size), t % np.repeat(card[phi], size)
    # the lower variable's table holds the row of the upper's state b at b * card[lo]
    pidx = np.repeat(pw.noff[klo], size) + b * np.repeat(card[plo], size) + a
    eoff = np.concatenate([[0], np.cumsum(card[centre])]).astype(np.int64)
    voff = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
    out = _output_map(pw, plo, phi, poff, voff, fptr, fvars, fstride, offsets)
    pslot = np.full(len(pw.nbr), -1, dtype=np.int64)
    pslot[klo] = np.arange(len(klo))
    return PairwiseScopes(pw, plo, phi, klo.astype(np.int64), khi.astype(np.int64), poff,
                          pidx.astype(np.int64), eoff, pslot, voff, out)


def _output_map(pw, plo, phi, poff, voff, fptr, fvars, fstride, offsets) -> np.ndarray:
    """For every flat table entry, its position in the joined (variables, pairs, [1])."""
    n = len(pw.card)
    V, PA = int(voff[-1]), int(poff[-1])
    sizes = np.diff(fptr)
    fptr = fptr[:-1]
    tsize = np.ones(len(sizes), dtype=np.int64)
    one = sizes == 1
    two = sizes == 2
    tsize[one] = pw.card[fvars[fptr[one]]]
    tsize[two] = pw.card[fvars[fptr[two]]] * pw.card[fvars[fptr[two] + 1]]
    total = int(tsize.sum())
    out = np.full(total, V + PA, dtype=np.int64)
    k1 = np.flatnonzero(one)
    v1 = fvars[fptr[k1]]
    c1 = pw.card[v1]
    s1 = _pairwise.ragged_arange(c1)
    out[np.repeat(offsets[k1], c1) + s1 * np.repeat(fstride[fptr[k1]], c1)] = (
        np.repeat(voff[v1], c1) + s1)
    k2 = np.flatnonzero(two)
    va, vb = fvars[fptr[k2]], fvars[fptr[k2] + 1]
    lo, hi = np.minimum(va, vb), np.maximum(va, vb)
    pair = np.searchsorted(plo * n + phi, lo * n + hi)
    m = pw.card[va] * pw.card[vb]
    t = _pairwise.ragged_arange(m)
    cb = np.repeat(pw.card[vb], m)
    xa, xb = t // cb, t % cb
    flip = np.repeat(va > vb, m)
    x_lo, x_hi = np.where(flip, xb, xa), np.where(flip, xa, xb)
    at = (np.repeat(offsets[k2], m) + xa * np.repeat(fstride[fptr[k2]], m)
          + xb * np.repeat(fstride[fptr[k2] + 1], m))
    out[at] = V + np.repeat(poff[pair], m) + x_lo * np.repeat(pw.card[hi], m) + x_hi
    return out


def _scaled(sp: PairwiseScopes, pe: np.ndarray, top: np.ndarray) -> np.ndarray:
    """The pair tables' log-weights ``pe`` exponentiated, each less its largest entry
    ``top`` (0 where that is not finite)."""
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore"):
        return np.exp(pe - np.repeat(top, np.diff(sp.poff)))


def _weights(sp: PairwiseScopes, tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """The kernels' rows, pair tables and whether they are logs: exponentiated when no
    pair's conditional can underflow (the spreads of both variables' rows and of the
    pair's table within :data:`mrflib.inference.sampling._pairwise.LOG_RANGE` together).

    The log-weights are summed once per step. The variables' spreads are measured only
    when the bound that the rows' exponentiation finds anyway (the largest variable
    spread, twice, plus the widest pair table's) does not settle the test: the bound
    holding implies the measured test holds, so both decide alike."""
    pw = sp.pw
    lw = _pairwise.log_weights(pw, tables)
    pe = lw[sp.pidx]  # gathered before the rows are exponentiated in place
    w, logs, bound = _pairwise.weights_of_logs(pw, lw)
    if logs or not len(sp.plo):
        return w, pe, logs
    finite = np.isfinite(pe)
    starts = sp.poff[:-1]
    if finite.all():
        top = np.maximum.reduceat(pe, starts)
        spread = top - np.minimum.reduceat(pe, starts)
        raw = top
    else:
        top = np.maximum.reduceat(np.where(finite, pe, -np.inf), starts)
        low = np.minimum.reduceat(np.where(finite, pe, np.inf), starts)
        spread = np.where(np.isfinite(top), top - low, 0.0)
        raw = np.maximum.reduceat(pe, starts)
    if not 2.0 * bound + spread.max() <= _pairwise.LOG_RANGE:
        lw = _pairwise.log_weights(pw, tables)
        var = _variable_spreads(pw, lw)
        if not np.max(var[sp.plo] + var[sp.phi] + spread) <= _pairwise.LOG_RANGE:
            return lw, pe, True
    return w, _scaled(sp, pe, raw), False


def _variable_spreads(pw: _pairwise.Pairwise, lw: np.ndarray) -> np.ndarray:
    """Each variable's summed spread of its rows (as :func:`_pairwise.weights` bounds)."""
    finite = np.isfinite(lw)
    top = np.maximum.reduceat(np.where(finite, lw, -np.inf), pw.row_start)
    low = np.minimum.reduceat(np.where(finite, lw, np.inf), pw.row_start)
    spread = np.where(np.isfinite(top), top - low, 0.0)
    return np.add.reduceat(np.maximum.reduceat(spread, pw.block_start), pw.var_block)


def transposed(sp: PairwiseScopes, x: np.ndarray) -> np.ndarray:
    """The rows ``x (N, n)`` as the kernels read them: transposed (a variable's states
    contiguous), in the smallest integer type, padded with state 0 to a multiple of
    :data:`._pairwise_scopes_kernels.ROW_BLOCK` columns (the padding weighs nothing).

    Parameters
    ----------
    sp : PairwiseScopes
    x : ndarray of int, shape (N, n)
        The sample set (trusted).

    Returns
    -------
    ndarray of uint8 or int32, shape (n, M)
    """
    N, n = x.shape
    M = -(-N // _k.ROW_BLOCK) * _k.ROW_BLOCK
    dtype = np.uint8 if sp.pw.card.max(initial=1) <= 256 else np.int32
    xt = np.zeros((n, M), dtype=dtype)
    _k.transpose_rows(np.ascontiguousarray(x), xt)
    return xt


def _padded(xt: np.ndarray) -> np.ndarray:
    """Site-major rows ``xt (n, M)`` with state-0 columns added to a multiple of
    :data:`._pairwise_scopes_kernels.ROW_BLOCK` (``xt`` itself when it is one)."""
    n, M = xt.shape
    if M % _k.ROW_BLOCK == 0:
        return xt
    out = np.zeros((n, -(-M // _k.ROW_BLOCK) * _k.ROW_BLOCK), dtype=xt.dtype)
    out[:, :M] = xt
    return out


def scope_sums(sp: PairwiseScopes, tables: np.ndarray, x: np.ndarray | None,
               batch: np.ndarray, n_batches: int, xt: np.ndarray | None = None,
               keys: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Per-batch sums of 1-SMCI of every factor's scope, in the flat tables' layout, and
    the first row of zero weight (-1: none).

    Parameters
    ----------
    sp : PairwiseScopes
    tables : ndarray of float64
        The model's flat log-tables.
    x : ndarray of int64, shape (N, n), or None
        The sample set (trusted); ``None`` when ``xt`` holds it.
    batch : ndarray of int64, shape (N,)
        Each row's batch.
    n_batches : int
    xt : ndarray or None, default None
        The sample set site-major when the caller keeps it: :func:`transposed` of ``x``
        (a fixed sample set), or persistent chains held site-major
        (:func:`mrflib.inference.sampling._pairwise.site_major`, padded here when the
        row-by-row kernel needs it); ``None``: made here.
    keys : ndarray or None, default None
        :func:`mrflib.inference.smci._scope_patterns.keys` of the rows when the caller
        keeps them; ``None``: made here when the tables over the neighbours'
        configurations apply (:func:`mrflib.inference.smci._scope_patterns.applies`).

    Returns
    -------
    (ndarray of float64, shape (n_batches, len(tables)), int)
        The sums (a factor of empty scope: the batch's row count).
    """
    pw = sp.pw
    N, n = len(batch), len(pw.card)
    V, PA = int(sp.voff[-1]), int(sp.poff[-1])
    require_memory(8.0 * (2 * n_batches * (V + PA + len(tables)) + 3 * pw.size) + 4.0 * N * n,
                   f"the 1-SMCI sums of {n} variables and {len(sp.plo)} pairs")
    w, pe, logs = _weights(sp, tables)
    vacc = np.zeros((n_batches, V))
    pacc = np.zeros((n_batches, PA))
    zeros = bool(logs or np.any(w == 0.0) or np.any(pe == 0.0))  # a row may weigh 0
    if n_batches == 1 and not zeros and (keys is not None
                                         or _scope_patterns.applies(pw, N)):
        # every row weighs more than 0: none to refuse
        if keys is None:
            keys = _scope_patterns.keys(pw, transposed(sp, x) if xt is None else xt, N)
        _scope_patterns.pattern_sums(sp, w, pe, keys, vacc[0], pacc[0])
        joined = np.concatenate([vacc[0], pacc[0], [float(N)]])
        return joined[None, sp.out], -1
    xt = transposed(sp, x) if xt is None else _padded(xt)
    first = np.full(n, -1, dtype=np.int64)
    work = float(N) * (4 * len(pw.nbr) * 4 + 4 * PA)
    kernel = _k.scope_sums_parallel if parallel_ok(work) else _k.scope_sums_serial
    kernel(xt, N, np.ascontiguousarray(batch, dtype=np.int64), n_batches == 1, w, pe,
           bool(logs), zeros, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, sp.voff, sp.pslot,
           sp.poff, vacc, pacc, first)
    bad = first[first >= 0]
    counts = np.bincount(batch, minlength=n_batches).astype(np.float64)
    joined = np.concatenate([vacc, pacc, counts[:, None]], axis=1)
    return joined[:, sp.out], int(bad.min()) if len(bad) else -1


def flat_marginals(sp: PairwiseScopes, tables: np.ndarray, x: np.ndarray | None,
                   xt: np.ndarray | None = None, keys: np.ndarray | None = None,
                   n_rows: int | None = None) -> np.ndarray:
    """1-SMCI of every factor's scope over the rows ``x``, in the flat tables' layout
    (what :func:`mrflib.inference.smci.regions.flat_scope_marginals` returns).

    Parameters
    ----------
    sp : PairwiseScopes
    tables : ndarray of float64
        The model's flat log-tables.
    x : ndarray of int64, shape (N, n), or None
        The sample set (trusted); ``None`` when ``xt`` holds it.
    xt : ndarray or None, default None
        The sample set site-major, as in :func:`scope_sums`; ``None``: made here.
    keys : ndarray or None, default None
        As in :func:`scope_sums`.
    n_rows : int or None, default None
        The rows when ``x`` is ``None`` (``xt`` may hold padding past them).

    Returns
    -------
    ndarray of float64

    Raises
    ------
    ValueError
        When a row has zero weight under the model.
    """
    N = len(x) if n_rows is None else n_rows
    sums, bad = scope_sums(sp, tables, x, np.zeros(N, dtype=np.int64), 1, xt, keys)
    if bad >= 0:
        raise ValueError(f"samples[{bad}] has zero weight under the model: SMCI conditions "
                         "on states of positive weight")
    return sums[0] / N


def _scope_sums_numpy(sp: PairwiseScopes, tables: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Plain-numpy reference of :func:`flat_marginals` (log-weights, vectorised over rows;
    rows of zero weight are not checked)."""
    pw = sp.pw
    lw = _pairwise.log_weights(pw, tables)
    N, n = x.shape
    V, PA = int(sp.voff[-1]), int(sp.poff[-1])

    def cavity(i, skip):
        c = int(pw.card[i])
        s = np.repeat(lw[pw.uoff[i]:pw.uoff[i] + c][None, :], N, axis=0)
        for k in range(pw.nptr[i], pw.nptr[i + 1]):
            if k != skip:
                s = s + lw[pw.noff[k] + x[:, pw.nbr[k]][:, None] * c + np.arange(c)[None, :]]
        return s

    full = [cavity(i, -1) for i in range(n)]
    out = np.zeros(V + PA + 1)
    out[-1] = 1.0
    for i in range(n):
        p = np.exp(full[i] - full[i].max(axis=1, keepdims=True))
        out[sp.voff[i]:sp.voff[i + 1]] = (p / p.sum(axis=1, keepdims=True)).mean(axis=0)
    for p_ in range(len(sp.plo)):
        i, j = int(sp.plo[p_]), int(sp.phi[p_])
        ci, cj = int(pw.card[i]), int(pw.card[j])
        cav_i, cav_j = cavity(i, sp.klo[p_]), cavity(j, sp.khi[p_])
        pair = lw[sp.pidx[sp.poff[p_]:sp.poff[p_ + 1]]].reshape(ci, cj)
        s = cav_i[:, :, None] + pair[None] + cav_j[:, None, :]
        e = np.exp(s - s.max(axis=(1, 2), keepdims=True))
        e /= e.sum(axis=(1, 2), keepdims=True)
        out[V + sp.poff[p_]:V + sp.poff[p_ + 1]] = e.mean(axis=0).ravel()
    return out[sp.out]
