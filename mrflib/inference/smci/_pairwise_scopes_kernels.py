"""Numba kernels of 1-SMCI of the factor scopes of a pairwise factor graph
(:mod:`mrflib.inference.smci._pairwise_scopes`).

The weights ``w`` are those of :class:`mrflib.inference.sampling._pairwise.Pairwise` (a
variable's unary row at ``uoff[i]``; for its ``k``-th neighbour a table whose row of the
neighbour's state ``s`` starts at ``noff[k] + s * card[i]``), exponentiated rows (``logs``
false) or log-weights (``logs`` true); ``pe`` holds each pair's table over
``(x_lo, x_hi)`` at ``poff[p]``, exponentiated with its largest entry 1, or in logs.

Each variable ``i`` (in parallel) owns its conditional and the pairs it is the lower end
of. Its data rows are taken in blocks of :data:`ROW_BLOCK`, the block's index the innermost
loop, so that the compiler makes the products vector loops whatever the cardinality. For
a block: ``i``'s *cavity* towards each upper neighbour (its unary row times the rows of all
its other neighbours at their states) by a prefix and a suffix product over its neighbour
list, its conditional given the rest from the full product; then for each pair ``(i, j)``,
``j > i``, the cavity of ``j`` towards ``i`` and
``P(x_i, x_j | rest) ∝ cav_i(x_i) pe(x_i, x_j) cav_j(x_j)``. Every sum is over the rows in
order, into slots only that variable writes (with one batch, lane ``b`` of a block sums
its own rows and the lanes are added at the end): the sums do not depend on the threads.

With exponentiated rows (:func:`_variable_weights`, the path of every model whose weights
cannot underflow) the rows are padded to whole blocks, the scratch is flat and indexed by
unsigned integers, and a pair's conditional is summed as an outer product whose table is
applied once at the end; with log-weights (:func:`_variable`) the blocks may be partial
and every entry is exponentiated row by row.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mrflib.inference.sampling._pairwise_kernels import column_max, times_row, widths

__all__ = ["ROW_BLOCK", "TILE", "scope_sums_parallel", "scope_sums_serial", "transpose_rows"]

#: Data rows whose conditionals are computed together.
ROW_BLOCK = 16


@njit(cache=True)
def _normalized(acc, c, nb, logs, tot):  # pragma: no cover - numba
    """``acc[:c, :nb]`` exponentiated (logs: its largest entry per row to 0 first) and
    ``tot[b]`` set to the reciprocal of each column's sum (0 for a column of zeros)."""
    if logs:
        column_max(acc, c, nb, tot)
        for v in range(c):
            for b in range(nb):
                acc[v, b] = np.exp(acc[v, b] - tot[b]) if tot[b] > -np.inf else 0.0
    for b in range(nb):
        tot[b] = acc[0, b]
    for v in range(1, c):
        for b in range(nb):
            tot[b] += acc[v, b]
    for b in range(nb):
        tot[b] = 1.0 / tot[b] if tot[b] > 0.0 else 0.0  # a zero-weight row adds nothing


@njit(cache=True)
def _variable_weights(i, xt, n_rows, batch, one, w, pe, zeros, nptr, nbr, noff, uoff, card,
                      voff, pslot, poff, vacc, pacc, cmax):  # pragma: no cover - numba
    """:func:`_variable` on exponentiated rows, in blocks of exactly :data:`ROW_BLOCK`
    rows (``xt`` padded with state 0 to a multiple of it; lanes of rows ``>= n_rows``
    weigh 0), the scratch flat with the lane innermost (entry ``v`` of lane ``b`` at
    ``v * ROW_BLOCK + b``): loops of a fixed length, indexed by unsigned integers (a
    signed index is tested for a negative value on every read, which keeps the compiler
    from making vector loops). Each neighbour's row is gathered once (``rows``); the
    cavities towards the upper neighbours by a prefix and a suffix product over them;
    each pair's conditional ``cav_i(a) pe(a, s) cav_j(s) / Z`` summed as the outer
    product of ``cav_i / Z`` and ``cav_j`` (``Z = Σ_a cav_i(a) Σ_s pe(a, s) cav_j(s)``),
    ``pe`` applied once to the sums at the end (with batches: row by row). Rows of zero
    weight are looked for only when ``zeros`` (some weight is 0)."""
    R = ROW_BLOCK
    c = card[i]
    cR = c * R
    u0, v0 = uoff[i], voff[i]
    lo, hi = nptr[i], nptr[i + 1]
    N = xt.shape[1]
    bad = -1
    # the scratch: per neighbour entry its gathered rows, its cavity and its pair's sums,
    # per state the full product and a second product, per lane a row's table offset,
    # the normalizers and the lane mask
    d = hi - lo
    rows = np.empty(d * c * R)
    cav = np.empty(d * c * R)
    acc = np.empty(cmax * R)
    aj = np.empty(cmax * R)
    base = np.empty(R, dtype=np.uint64)
    tot = np.empty(R)
    vals = np.empty(R)
    loc = np.zeros(d * c * cmax * R)
    vloc = np.zeros(c * R)
    for r0 in range(0, N, R):
        live = min(R, n_rows - r0)  # the lanes of rows (the rest: padding)
        for b in range(live if zeros else 0):
            if w[u0 + xt[i, r0 + b]] == 0.0 and (bad < 0 or r0 + b < bad):
                bad = r0 + b
        # the neighbours' rows, the full product in acc, the prefixes in cav
        for v in range(c):
            wv = w[u0 + v]
            for b in range(R):
                acc[np.uint64(v * R + b)] = wv
        for k in range(lo, hi):
            o, j = np.uint64(noff[k]), nbr[k]
            g0 = (k - lo) * cR
            for b in range(R):
                xb = np.uint64(xt[np.uint64(j), np.uint64(r0 + b)])
                base[np.uint64(b)] = o + xb * np.uint64(c)
            for v in range(c):
                for b in range(R):
                    rows[np.uint64(g0 + v * R + b)] = w[base[np.uint64(b)] + np.uint64(v)]
            if pslot[k] >= 0:
                for t in range(cR):
                    cav[np.uint64(g0 + t)] = acc[np.uint64(t)]
            for t in range(cR):
                acc[np.uint64(t)] *= rows[np.uint64(g0 + t)]
        # suffix products into the cavities of the upper neighbours (aj as scratch)
        if hi > lo and pslot[hi - 1] >= 0:
            for t in range(cR):
                aj[np.uint64(t)] = 1.0
            for k in range(hi - 1, lo - 1, -1):
                if pslot[k] < 0:
                    break  # the lists are ascending: the upper neighbours come last
                g0 = (k - lo) * cR
                for t in range(cR):
                    cav[np.uint64(g0 + t)] *= aj[np.uint64(t)]
                for t in range(cR):
                    aj[np.uint64(t)] *= rows[np.uint64(g0 + t)]
        for b in range(R):
            tot[np.uint64(b)] = 0.0
        for v in range(c):
            for b in range(R):
                tot[np.uint64(b)] += acc[np.uint64(v * R + b)]
        for b in range(R):
            t_ = tot[np.uint64(b)]
            # a zero-weight row, and the padding, add nothing
            tot[np.uint64(b)] = 1.0 / t_ if t_ > 0.0 and b < live else 0.0
        if one:
            for v in range(c):
                for b in range(R):
                    vloc[np.uint64(v * R + b)] += (acc[np.uint64(v * R + b)]
                                                   * tot[np.uint64(b)])
        else:
            for v in range(c):
                for b in range(live):
                    vacc[batch[r0 + b], v0 + v] += acc[v * R + b] * tot[b]
        # the pairs (i, j), j > i
        for k in range(lo, hi):
            p = pslot[k]
            if p < 0:
                continue
            j = nbr[k]
            cb = card[j]
            p0 = poff[p]
            for b in range(live if zeros else 0):
                if (pe[p0 + xt[i, r0 + b] * cb + xt[j, r0 + b]] == 0.0
                        and (bad < 0 or r0 + b < bad)):
                    bad = r0 + b
            uj = uoff[j]
            for s in range(cb):
                ws = w[uj + s]
                for b in range(R):
                    aj[np.uint64(s * R + b)] = ws
            for kk in range(nptr[j], nptr[j + 1]):
                jj = nbr[kk]
                if jj == i:
                    continue
                oo = np.uint64(noff[kk])
                for b in range(R):
                    xb = np.uint64(xt[np.uint64(jj), np.uint64(r0 + b)])
                    base[np.uint64(b)] = oo + xb * np.uint64(cb)
                for s in range(cb):
                    for b in range(R):
                        aj[np.uint64(s * R + b)] *= w[base[np.uint64(b)] + np.uint64(s)]
            g0 = (k - lo) * cR
            for b in range(R):
                vals[np.uint64(b)] = 0.0
            for a in range(c):
                for b in range(R):
                    tot[np.uint64(b)] = 0.0
                for s in range(cb):
                    t = pe[p0 + a * cb + s]
                    for b in range(R):
                        tot[np.uint64(b)] += t * aj[np.uint64(s * R + b)]
                for b in range(R):
                    vals[np.uint64(b)] += cav[np.uint64(g0 + a * R + b)] * tot[np.uint64(b)]
            for b in range(R):
                v_ = vals[np.uint64(b)]
                vals[np.uint64(b)] = 1.0 / v_ if v_ > 0.0 and b < live else 0.0
            l0 = (k - lo) * c * cmax * R  # room for any pair of i
            for a in range(c):
                for b in range(R):
                    tot[np.uint64(b)] = cav[np.uint64(g0 + a * R + b)] * vals[np.uint64(b)]
                if one:
                    for s in range(cb):
                        at = l0 + (a * cb + s) * R
                        for b in range(R):
                            loc[np.uint64(at + b)] += (tot[np.uint64(b)]
                                                       * aj[np.uint64(s * R + b)])
                else:
                    for s in range(cb):
                        t = pe[p0 + a * cb + s]
                        for b in range(live):
                            pacc[batch[r0 + b], p0 + a * cb + s] += t * (tot[b]
                                                                         * aj[s * R + b])
    if one:
        for v in range(c):
            s_ = 0.0
            for b in range(R):
                s_ += vloc[v * R + b]
            vacc[0, v0 + v] += s_
        for k in range(lo, hi):
            p = pslot[k]
            if p < 0:
                continue
            l0 = (k - lo) * c * cmax * R
            for t in range(c * card[nbr[k]]):
                s_ = 0.0
                for b in range(R):
                    s_ += loc[l0 + t * R + b]
                pacc[0, poff[p] + t] += pe[poff[p] + t] * s_
    return bad


@njit(cache=True)
def _variable(i, xt, n_rows, batch, one, w, pe, logs, nptr, nbr, noff, uoff, card, voff, pslot,
              poff, vacc, pacc, cav, acc, aj, base, tot, vals, m, loc, vloc
              ):  # pragma: no cover - numba
    """Variable ``i``'s conditional and its pairs' conditionals over all rows, added to
    ``vacc`` and ``pacc``; returns the first row whose observed states have zero unary
    weight at ``i`` or zero pair weight at one of its pairs, or -1."""
    c = card[i]
    u0, v0 = uoff[i], voff[i]
    lo, hi = nptr[i], nptr[i + 1]
    zero = -np.inf if logs else 0.0
    unit = 0.0 if logs else 1.0
    N = n_rows
    bad = -1
    if one:
        vloc[:] = 0.0
        loc[:] = 0.0
    for r0 in range(0, N, ROW_BLOCK):
        nb = min(ROW_BLOCK, N - r0)
        for b in range(nb):
            if w[u0 + xt[i, r0 + b]] == zero and (bad < 0 or r0 + b < bad):
                bad = r0 + b
        # prefix products into the cavities, the full product in acc
        for v in range(c):
            for b in range(nb):
                acc[v, b] = w[u0 + v]
        for k in range(lo, hi):
            o, j = noff[k], nbr[k]
            for b in range(nb):
                base[b] = o + xt[j, r0 + b] * c
            for v in range(c):
                for b in range(nb):
                    cav[k - lo, v, b] = acc[v, b]
            times_row(acc, w, base, c, nb, logs)
        # suffix products (aj as scratch)
        for v in range(c):
            for b in range(nb):
                aj[v, b] = unit
        for k in range(hi - 1, lo - 1, -1):
            o, j = noff[k], nbr[k]
            for b in range(nb):
                base[b] = o + xt[j, r0 + b] * c
            if logs:
                for v in range(c):
                    for b in range(nb):
                        cav[k - lo, v, b] += aj[v, b]
            else:
                for v in range(c):
                    for b in range(nb):
                        cav[k - lo, v, b] *= aj[v, b]
            times_row(aj, w, base, c, nb, logs)
        _normalized(acc, c, nb, logs, tot)
        if one:
            for v in range(c):
                for b in range(nb):
                    vloc[v, b] += acc[v, b] * tot[b]
        else:
            for v in range(c):
                for b in range(nb):
                    vacc[batch[r0 + b], v0 + v] += acc[v, b] * tot[b]
        # the pairs (i, j), j > i
        for k in range(lo, hi):
            p = pslot[k]
            if p < 0:
                continue
            j = nbr[k]
            cb = card[j]
            p0 = poff[p]
            for b in range(nb):
                obs = pe[p0 + xt[i, r0 + b] * cb + xt[j, r0 + b]]
                if obs == zero and (bad < 0 or r0 + b < bad):
                    bad = r0 + b
            for s in range(cb):
                for b in range(nb):
                    aj[s, b] = w[uoff[j] + s]
            for kk in range(nptr[j], nptr[j + 1]):
                jj = nbr[kk]
                if jj == i:
                    continue
                oo = noff[kk]
                for b in range(nb):
                    base[b] = oo + xt[jj, r0 + b] * cb
                times_row(aj, w, base, cb, nb, logs)
            ci = k - lo
            size = c * cb
            for b in range(nb):
                vals[b] = 0.0
            if logs:  # the largest log-weight of each row to 0
                for b in range(nb):
                    tot[b] = -np.inf
                for a in range(c):
                    for s in range(cb):
                        t = pe[p0 + a * cb + s]
                        for b in range(nb):
                            m[a * cb + s, b] = cav[ci, a, b] + t + aj[s, b]
                            tot[b] = max(tot[b], m[a * cb + s, b])
                for t in range(size):
                    for b in range(nb):
                        m[t, b] = np.exp(m[t, b] - tot[b]) if tot[b] > -np.inf else 0.0
                        vals[b] += m[t, b]
            else:
                for a in range(c):
                    for s in range(cb):
                        t = pe[p0 + a * cb + s]
                        for b in range(nb):
                            m[a * cb + s, b] = cav[ci, a, b] * t * aj[s, b]
                for t in range(size):
                    for b in range(nb):
                        vals[b] += m[t, b]
            for b in range(nb):
                vals[b] = 1.0 / vals[b] if vals[b] > 0.0 else 0.0
            if one:  # lane by lane over the blocks, the lanes summed at the end
                for t in range(size):
                    for b in range(nb):
                        loc[ci, t, b] += m[t, b] * vals[b]
            else:
                for t in range(size):
                    for b in range(nb):
                        pacc[batch[r0 + b], p0 + t] += m[t, b] * vals[b]
    if one:
        for v in range(c):
            s_ = 0.0
            for b in range(ROW_BLOCK):
                s_ += vloc[v, b]
            vacc[0, v0 + v] += s_
        for k in range(lo, hi):
            p = pslot[k]
            if p < 0:
                continue
            size = c * card[nbr[k]]
            for t in range(size):
                s_ = 0.0
                for b in range(ROW_BLOCK):
                    s_ += loc[k - lo, t, b]
                pacc[0, poff[p] + t] += s_
    return bad


@njit(cache=True)
def _one_variable(i, xt, n_rows, batch, one, w, pe, logs, zeros, nptr, nbr, noff, uoff, card,
                  voff, pslot, poff, vacc, pacc, cmax, dmax):  # pragma: no cover - numba
    """Variable ``i``'s sums by :func:`_variable_weights` (exponentiated rows) or
    :func:`_variable` (log-weights), with scratch of its own."""
    if not logs:
        return _variable_weights(i, xt, n_rows, batch, one, w, pe, zeros, nptr, nbr, noff,
                                 uoff, card, voff, pslot, poff, vacc, pacc, cmax)
    R = ROW_BLOCK
    return _variable(i, xt, n_rows, batch, one, w, pe, logs, nptr, nbr, noff, uoff, card,
                     voff, pslot, poff, vacc, pacc, np.empty((dmax, cmax, R)),
                     np.empty((cmax, R)), np.empty((cmax, R)), np.empty(R, dtype=np.int64),
                     np.empty(R), np.empty(R), np.empty((cmax * cmax, R)),
                     np.zeros((dmax, cmax * cmax, R)), np.zeros((cmax, R)))


@njit(cache=True, parallel=True)
def scope_sums_parallel(xt, n_rows, batch, one, w, pe, logs, zeros, nptr, nbr, noff, uoff, card,
                        voff, pslot, poff, vacc, pacc, bad):  # pragma: no cover - numba
    """The per-batch sums of every variable's and every pair's conditional over the rows
    (``xt (n, M)`` transposed, its first ``n_rows`` columns the rows, ``M`` a multiple of
    :data:`ROW_BLOCK`; ``batch[r]`` the batch of row ``r``, all 0 when ``one``) into
    ``vacc`` and ``pacc`` (zeros on entry); ``bad[i]`` the first row (or -1) where ``i``'s
    unary weight, or one of its pairs' weight, of the observed states is zero (looked for
    with exponentiated rows only when ``zeros``: some weight is 0). The variables on all
    threads."""
    cmax, dmax = widths(nptr, card)
    for i in prange(card.shape[0]):
        bad[i] = _one_variable(i, xt, n_rows, batch, one, w, pe, logs, zeros, nptr, nbr, noff,
                               uoff, card, voff, pslot, poff, vacc, pacc, cmax, dmax)


@njit(cache=True)
def scope_sums_serial(xt, n_rows, batch, one, w, pe, logs, zeros, nptr, nbr, noff, uoff, card, voff,
                      pslot, poff, vacc, pacc, bad):  # pragma: no cover - numba
    """:func:`scope_sums_parallel` on one thread (the same operations, the same sums)."""
    cmax, dmax = widths(nptr, card)
    for i in range(card.shape[0]):
        bad[i] = _one_variable(i, xt, n_rows, batch, one, w, pe, logs, zeros, nptr, nbr, noff,
                               uoff, card, voff, pslot, poff, vacc, pacc, cmax, dmax)


#: Side of the tiles of :func:`transpose_rows`: a tile's rows and columns stay in cache.
TILE = 64


@njit(cache=True)
def transpose_rows(x, xt):  # pragma: no cover - numba
    """``xt[:, :N] = x.T`` (``x (N, n)``, any integer type; ``xt (n, M)``, ``M >= N``) by
    tiles of :data:`TILE` rows and columns (the rows of a large sample set are far apart:
    column by column, every read would miss the cache)."""
    N, n = x.shape
    for r0 in range(0, N, TILE):
        r1 = min(N, r0 + TILE)
        for c0 in range(0, n, TILE):
            c1 = min(n, c0 + TILE)
            for r in range(r0, r1):
                for c in range(c0, c1):
                    xt[c, r] = x[r, c]
