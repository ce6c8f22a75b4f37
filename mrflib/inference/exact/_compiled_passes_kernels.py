"""Numba kernels of :mod:`mrflib.inference.exact._compiled_passes`: a junction tree's whole upward
and downward sum-product passes in one call each, and its backward sampling.

They do, step for step and in the same order of operations, what the Python passes of
:class:`mrflib.inference.exact.elimination_plan.EliminationPlan` do when every message stays in
linear space (:class:`~mrflib.inference._factor_ops.Scaled`): the same kernel sums each
clique (:func:`~mrflib.inference._elimination_kernels.product_sums`), messages are scaled
by their largest entry, log scales are added by :func:`fsum` (``math.fsum``'s algorithm),
so the results are the same to the last bit. They stop (return ``False``) where the Python
pass would switch to log space, and the caller runs that pass instead.

All tables live in one ``pool``: the factors' linear tables (at their offsets in the
concatenated log tables), then the upward messages, then the downward ones. A junction
tree is given as ragged arrays (``ptr``, ``items``): the cliques' variables (the eliminated
one first), each step's children and assigned factors, and the factors' scopes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from mrflib._support.interpreted import interpret_small
from mrflib.inference._elimination_kernels import (
    divide_extent,
    extent,
    linear_table,
    walk_of,
    walk_sums,
)
from mrflib.inference._packed import advance


@njit(cache=True)
def fsum(xs, n):  # pragma: no cover - compiled
    """``math.fsum(xs[:n])`` for finite ``xs``, bit for bit: Shewchuk's exact partials
    and CPython's rounding of them (``Modules/mathmodule.c``, ``math_fsum``)."""
    p = np.empty(n + 1)
    m = 0
    for idx in range(n):
        x = xs[idx]
        i = 0
        for j in range(m):
            y = p[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                p[i] = lo
                i += 1
            x = hi
        m = i
        if x != 0.0:
            p[m] = x
            m += 1
    hi = 0.0
    if m > 0:
        m -= 1
        hi = p[m]
        lo = 0.0
        while m > 0:
            x = hi
            m -= 1
            y = p[m]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if m > 0 and ((lo < 0.0 and p[m - 1] < 0.0) or (lo > 0.0 and p[m - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


@njit(cache=True)
def _strides(items, lo, hi, card, clique, row):  # pragma: no cover - compiled
    """``row[d]``: the stride of ``clique[d]`` in a C-ordered table over the variables
    ``items[lo:hi]`` (``0`` when it is not one of them)."""
    step = 1
    for j in range(hi - 1, lo - 1, -1):
        v = items[j]
        for d in range(clique.shape[0]):
            if clique[d] == v:
                row[d] = step
        step *= card[v]


@njit(cache=True)
def _scale(out, log_scale, hi, lo, span_max):  # pragma: no cover - compiled
    """``_factor_ops._from_sums``: ``out`` divided in place by its largest entry ``hi``
    (``lo`` its smallest positive one); ``(True, log scale, span)``, or ``(False, ...)``
    where the Python pass would keep a log table (all zero, or too wide a span)."""
    if hi > 0.0:
        log_hi = math.log(hi)
        span = log_hi - math.log(lo)
        if span <= span_max:
            inv = 1.0 / hi
            for i in range(out.shape[0]):
                out[i] *= inv
            return True, log_scale + log_hi, span
    return False, 0.0, 0.0


@njit(cache=True)
def _inputs(t, card, cl_ptr, cl_var, ch_ptr, ch_idx, as_ptr, as_idx, fs_ptr, fs_var, ft_ptr,
            msg_pos, down_at):  # pragma: no cover - compiled
    """The inputs of step ``t`` as :func:`walk_of` reads them from the pool: its factors,
    its children's messages, then the downward message at ``down_at`` unless it is
    negative; their offsets and strides over the clique."""
    clique = cl_var[cl_ptr[t]:cl_ptr[t + 1]]
    n_in = as_ptr[t + 1] - as_ptr[t] + ch_ptr[t + 1] - ch_ptr[t] + (1 if down_at >= 0 else 0)
    offsets = np.empty(n_in, dtype=np.int64)
    strides = np.zeros((n_in, clique.shape[0]), dtype=np.int64)
    i = 0
    for a in range(as_ptr[t], as_ptr[t + 1]):
        k = as_idx[a]
        offsets[i] = ft_ptr[k]
        _strides(fs_var, fs_ptr[k], fs_ptr[k + 1], card, clique, strides[i])
        i += 1
    for a in range(ch_ptr[t], ch_ptr[t + 1]):
        c = ch_idx[a]
        offsets[i] = msg_pos[c]
        _strides(cl_var, cl_ptr[c] + 1, cl_ptr[c + 1], card, clique, strides[i])
        i += 1
    if down_at >= 0:
        offsets[i] = down_at
        _strides(cl_var, cl_ptr[t] + 1, cl_ptr[t + 1], card, clique, strides[i])
    return offsets, strides


@njit(cache=True)
def _scales(t, as_ptr, as_idx, ch_ptr, ch_idx, fac_ls, fac_span, msg_ls, msg_span, down,
            down_ls, down_span, span_max, ls):  # pragma: no cover - compiled
    """``(ok, log scale)`` of step ``t``'s inputs, in :func:`_inputs`' order (the downward
    message last, with ``down``): the fsum of their log scales, ``ok`` false when their
    spans add up past ``span_max`` (``_factor_ops._all_scaled``) or there is no input
    (``ls``: room for their log scales)."""
    total = 0.0
    i = 0
    for a in range(as_ptr[t], as_ptr[t + 1]):
        k = as_idx[a]
        total += fac_span[k]
        if not total <= span_max:
            return False, 0.0
        ls[i] = fac_ls[k]
        i += 1
    for a in range(ch_ptr[t], ch_ptr[t + 1]):
        c = ch_idx[a]
        total += msg_span[c]
        if not total <= span_max:
            return False, 0.0
        ls[i] = msg_ls[c]
        i += 1
    if down:
        total += down_span[t]
        if not total <= span_max:
            return False, 0.0
        ls[i] = down_ls[t]
        i += 1
    if i == 0:
        return False, 0.0
    return True, fsum(ls, i)


@njit(cache=True)
def _shape(card, clique):  # pragma: no cover - compiled
    shape = np.empty(clique.shape[0], dtype=np.int64)
    for d in range(clique.shape[0]):
        shape[d] = card[clique[d]]
    return shape


@njit(cache=True)
def _outputs(t, card, cl_ptr, cl_var, ch_ptr, ch_idx, as_ptr, as_idx, fs_ptr, fs_var,
             msg_pos, fm_pos, downward):  # pragma: no cover - compiled
    """The outputs of step ``t``: ``(offsets into the step's buffer, their end, strides
    over the clique, what each is)``. Upward, the message over ``clique[1:]``; downward,
    each child's separator (what: the child), the variable (what: -1), then each factor
    asked for, ``fm_pos[k + 1] > fm_pos[k]`` (what: the factor)."""
    clique = cl_var[cl_ptr[t]:cl_ptr[t + 1]]
    if not downward:
        ostrides = np.zeros((1, clique.shape[0]), dtype=np.int64)
        _strides(cl_var, cl_ptr[t] + 1, cl_ptr[t + 1], card, clique, ostrides[0])
        which = np.full(1, -1, dtype=np.int64)
        return np.zeros(2, dtype=np.int64), ostrides, which
    n_ch = ch_ptr[t + 1] - ch_ptr[t]
    n_out = n_ch + 1
    for a in range(as_ptr[t], as_ptr[t + 1]):
        if fm_pos[as_idx[a] + 1] > fm_pos[as_idx[a]]:
            n_out += 1
    ooffsets = np.zeros(n_out + 1, dtype=np.int64)
    ostrides = np.zeros((n_out, clique.shape[0]), dtype=np.int64)
    which = np.full(n_out, -1, dtype=np.int64)
    size = 0
    for r in range(n_ch):
        c = ch_idx[ch_ptr[t] + r]
        ooffsets[r] = size
        _strides(cl_var, cl_ptr[c] + 1, cl_ptr[c + 1], card, clique, ostrides[r])
        size += msg_pos[c + 1] - msg_pos[c]
        which[r] = c
    ooffsets[n_ch] = size
    _strides(cl_var, cl_ptr[t], cl_ptr[t] + 1, card, clique, ostrides[n_ch])
    size += card[clique[0]]
    r = n_ch + 1
    for a in range(as_ptr[t], as_ptr[t + 1]):
        k = as_idx[a]
        if fm_pos[k + 1] > fm_pos[k]:
            ooffsets[r] = size
            _strides(fs_var, fs_ptr[k], fs_ptr[k + 1], card, clique, ostrides[r])
            size += fm_pos[k + 1] - fm_pos[k]
            which[r] = k
            r += 1
    ooffsets[n_out] = size
    return ooffsets, ostrides, which


@njit(cache=True)
def walks(card, cl_ptr, cl_var, parent, ch_ptr, ch_idx, as_ptr, as_idx, fs_ptr, fs_var,
          ft_ptr, msg_pos, fm_pos, downward):  # pragma: no cover - compiled
    """Every step's walk (:func:`~mrflib.inference._elimination_kernels.walk_of`) of the
    upward pass, or with ``downward`` of the downward pass, end to end: they depend on the
    plan only, so a plan whose tables change (a learner's) sums its cliques again without
    choosing their walks again.

    Returns ``(in_ptr, in_off, nd_ptr, starts, shp, st_ptr, st, out_ptr, oo, ost_ptr, ost,
    which, blocked)``: step ``t``'s inputs' offsets in the walk's order at
    ``in_off[in_ptr[t]:in_ptr[t + 1]]``, their strides ``st[st_ptr[t]:st_ptr[t + 1]]`` (an
    input's row after another), the merged shape ``shp[nd_ptr[t]:nd_ptr[t + 1]]``, its
    level starts ``starts[nd_ptr[t] + t:nd_ptr[t + 1] + t + 1]``, the outputs' offsets and
    end ``oo[out_ptr[t] + t:out_ptr[t + 1] + t + 1]``, their strides
    ``ost[ost_ptr[t]:ost_ptr[t + 1]]``, what each output is (:func:`_outputs`) and whether
    the walk is blocked."""
    T = cl_ptr.shape[0] - 1
    # room for every step's arrays at their largest (merged shapes are no longer)
    n_in_all, st_all, nd_all, out_all, ost_all = 0, 0, 0, 0, 0
    for t in range(T):
        k = cl_ptr[t + 1] - cl_ptr[t]
        n_in = as_ptr[t + 1] - as_ptr[t] + ch_ptr[t + 1] - ch_ptr[t] + 1
        n_out = 1 + ch_ptr[t + 1] - ch_ptr[t] + as_ptr[t + 1] - as_ptr[t]
        n_in_all += n_in
        st_all += n_in * k
        nd_all += k
        out_all += n_out
        ost_all += n_out * k
    in_ptr = np.zeros(T + 1, dtype=np.int64)
    nd_ptr = np.zeros(T + 1, dtype=np.int64)
    st_ptr = np.zeros(T + 1, dtype=np.int64)
    out_ptr = np.zeros(T + 1, dtype=np.int64)
    ost_ptr = np.zeros(T + 1, dtype=np.int64)
    in_off = np.empty(n_in_all, dtype=np.int64)
    st = np.empty(st_all, dtype=np.int64)
    shp = np.empty(nd_all, dtype=np.int64)
    starts = np.empty(nd_all + T, dtype=np.int64)
    oo = np.empty(out_all + T, dtype=np.int64)
    ost = np.empty(ost_all, dtype=np.int64)
    which = np.empty(out_all, dtype=np.int64)
    blocked = np.zeros(T, dtype=np.bool_)
    down_base = msg_pos[T]
    for t in range(T):
        down_at = down_base + msg_pos[t] - msg_pos[0] if downward and parent[t] >= 0 else -1
        offsets, strides = _inputs(t, card, cl_ptr, cl_var, ch_ptr, ch_idx, as_ptr, as_idx,
                                   fs_ptr, fs_var, ft_ptr, msg_pos, down_at)
        ooffsets, ostrides, what = _outputs(t, card, cl_ptr, cl_var, ch_ptr, ch_idx, as_ptr,
                                            as_idx, fs_ptr, fs_var, msg_pos, fm_pos, downward)
        clique = cl_var[cl_ptr[t]:cl_ptr[t + 1]]
        by, wst, wstarts, wshp, wost, block = walk_of(strides, _shape(card, clique), ostrides)
        blocked[t] = block
        K, nd, R = by.shape[0], wshp.shape[0], wost.shape[0]
        for i in range(K):
            in_off[in_ptr[t] + i] = offsets[by[i]]
            for d in range(nd):
                st[st_ptr[t] + i * nd + d] = wst[i, d]
        for d in range(nd):
            shp[nd_ptr[t] + d] = wshp[d]
        for d in range(nd + 1):
            starts[nd_ptr[t] + t + d] = wstarts[d]
        for r in range(R):
            which[out_ptr[t] + r] = what[r]
            for d in range(nd):
                ost[ost_ptr[t] + r * nd + d] = wost[r, d]
        for r in range(R + 1):
            oo[out_ptr[t] + t + r] = ooffsets[r] if downward else 0
        in_ptr[t + 1] = in_ptr[t] + K
        nd_ptr[t + 1] = nd_ptr[t] + nd
        st_ptr[t + 1] = st_ptr[t] + K * nd
        out_ptr[t + 1] = out_ptr[t] + R
        ost_ptr[t + 1] = ost_ptr[t] + R * nd
    return (in_ptr, in_off, nd_ptr, starts, shp, st_ptr, st, out_ptr, oo, ost_ptr, ost, which,
            blocked)


@njit(cache=True, inline="always")
def _walk_sums(t, walk, values, out):  # pragma: no cover - compiled
    """The sums of step ``t``'s walk (:func:`walks`) of ``values`` onto ``out``."""
    (in_ptr, in_off, nd_ptr, starts, shp, st_ptr, st, out_ptr, oo, ost_ptr, ost, _,
     blocked) = walk
    nd = nd_ptr[t + 1] - nd_ptr[t]
    K = in_ptr[t + 1] - in_ptr[t]
    R = out_ptr[t + 1] - out_ptr[t]
    walk_sums(values, in_off[in_ptr[t]:in_ptr[t + 1]],
              st[st_ptr[t]:st_ptr[t + 1]].reshape((K, nd)),
              starts[nd_ptr[t] + t:nd_ptr[t + 1] + t + 1], shp[nd_ptr[t]:nd_ptr[t + 1]],
              oo[out_ptr[t] + t:out_ptr[t + 1] + t], ost[ost_ptr[t]:ost_ptr[t + 1]].reshape(
                  (R, nd)), blocked[t], out)


@njit(cache=True)
def upward(card, cl_ptr, cl_var, parent, ch_ptr, ch_idx, as_ptr, as_idx, fs_ptr, fs_var,
           ftab, ft_ptr, msg_pos, pool_size, span_max, walk):  # pragma: no cover - compiled
    """The upward pass: ``(ok, pool, fac_ls, fac_span, msg_ls, msg_span, msg_lh)``, step
    ``t``'s message (scaled, over ``clique[1:]``) at ``pool[msg_pos[t]:msg_pos[t + 1]]`` with
    log scale ``msg_ls[t]``, of which ``msg_lh[t]`` is its own part (the log of the largest
    sum it was divided by); ``ok`` false where the Python pass would leave linear space.
    ``walk``: the upward walks (:func:`walks`)."""
    K = ft_ptr.shape[0] - 1
    T = cl_ptr.shape[0] - 1
    pool = np.zeros(pool_size)
    fac_ls = np.empty(K)
    fac_span = np.empty(K)
    msg_ls = np.zeros(T)
    msg_span = np.zeros(T)
    msg_lh = np.zeros(T)
    ls = np.empty(K + T + 1)
    for k in range(K):
        hi, span = linear_table(ftab[ft_ptr[k]:ft_ptr[k + 1]], pool[ft_ptr[k]:ft_ptr[k + 1]])
        fac_ls[k] = hi
        fac_span[k] = span  # inf when no entry is finite: no step can take it
    for t in range(T):
        ok, log_scale = _scales(t, as_ptr, as_idx, ch_ptr, ch_idx, fac_ls, fac_span, msg_ls,
                                msg_span, False, msg_ls, msg_span, span_max, ls)
        if not ok:
            return False, pool, fac_ls, fac_span, msg_ls, msg_span, msg_lh
        out = pool[msg_pos[t]:msg_pos[t + 1]]  # zeros until now: summed in place
        _walk_sums(t, walk, pool, out)
        hi, lo = extent(out)
        ok, msg_ls[t], msg_span[t] = _scale(out, log_scale, hi, lo, span_max)
        if not ok:
            return False, pool, fac_ls, fac_span, msg_ls, msg_span, msg_lh
        msg_lh[t] = math.log(hi)
    return True, pool, fac_ls, fac_span, msg_ls, msg_span, msg_lh


@njit(cache=True)
def downward(card, cl_ptr, cl_var, parent, ch_ptr, ch_idx, as_ptr, as_idx, fs_ptr, fs_var,
             ft_ptr, msg_pos, pool, fac_ls, fac_span, msg_ls, msg_span, shift, down_base,
             marg_pos, fm_pos, span_max, walk):  # pragma: no cover - compiled
    """The downward (Hugin) pass after :func:`upward`: ``(ok, marg, marg_ls, fmarg,
    fmarg_ls)``, the scaled marginal of step ``t``'s variable at
    ``marg[marg_pos[t]:marg_pos[t + 1]]`` with log scale ``marg_ls[t]``, and of each factor
    ``k`` asked for (``fm_pos[k + 1] > fm_pos[k]``, its table's size) at
    ``fmarg[fm_pos[k]:fm_pos[k + 1]]`` with log scale ``fmarg_ls[k]``, axes in its scope's
    order (all before the root's ``shift[t]`` is taken off). Downward messages go to
    ``pool[down_base + msg_pos[t] - msg_pos[0]:...]``. ``walk``: the downward walks of
    :func:`walks` for ``fm_pos``."""
    T = cl_ptr.shape[0] - 1
    K = ft_ptr.shape[0] - 1
    down_ls = np.zeros(T)
    down_span = np.zeros(T)
    marg = np.zeros(marg_pos[T])
    marg_ls = np.zeros(T)
    fmarg = np.zeros(fm_pos[fm_pos.shape[0] - 1])
    fmarg_ls = np.zeros(fm_pos.shape[0] - 1)
    ls = np.empty(K + T + 1)
    out_ptr, oo, which = walk[7], walk[8], walk[11]
    for t in range(T - 1, -1, -1):
        ok, log_scale = _scales(t, as_ptr, as_idx, ch_ptr, ch_idx, fac_ls, fac_span, msg_ls,
                                msg_span, parent[t] >= 0, down_ls, down_span, span_max, ls)
        if not ok:
            return False, marg, marg_ls, fmarg, fmarg_ls
        n_ch = ch_ptr[t + 1] - ch_ptr[t]
        first, n_out = out_ptr[t] + t, out_ptr[t + 1] - out_ptr[t]
        out = np.zeros(oo[first + n_out])
        _walk_sums(t, walk, pool, out)
        for r in range(n_out):
            seg = out[oo[first + r]:oo[first + r + 1]]
            hi, lo = extent(seg)
            ok, ls_m, _ = _scale(seg, log_scale, hi, lo, span_max)
            if not ok:
                return False, marg, marg_ls, fmarg, fmarg_ls
            what = which[out_ptr[t] + r]
            if r >= n_ch:
                # a loop, not a slice assignment: the assignment's shape check compiles a
                # formatted exception (a dozen string kernels, seconds on a cold cache)
                at = marg_pos[t] if r == n_ch else fm_pos[what]
                dest = marg if r == n_ch else fmarg
                for i in range(seg.shape[0]):
                    dest[at + i] = seg[i]
                if r == n_ch:
                    marg_ls[t] = ls_m
                else:
                    fmarg_ls[what] = ls_m
                continue
            at = down_base + msg_pos[what] - msg_pos[0]
            q = pool[at:at + seg.shape[0]]
            hi, lo = divide_extent(seg, pool[msg_pos[what]:msg_pos[what + 1]], q)
            ok, down_ls[what], down_span[what] = _scale(q, ls_m - msg_ls[what] - shift[t], hi,
                                                        lo, span_max)
            if not ok:
                return False, marg, marg_ls, fmarg, fmarg_ls
    return True, marg, marg_ls, fmarg, fmarg_ls


@njit(cache=True, inline="always")
def _cumulate(vals, K, inv, cdf):  # pragma: no cover - compiled
    """``cdf[j] = Σ_{i <= j} exp(inv (vals[i] - max))`` (the largest weight ``exp(0) = 1``
    exactly; a max that is not finite taken as 0), as
    :func:`~mrflib.inference._factor_ops.draw_categorical` sums a row."""
    m = -np.inf
    for j in range(K):
        if vals[j] > m:
            m = vals[j]
    if not np.isfinite(m):
        m = 0.0
    total = 0.0
    for j in range(K):
        total += 1.0 if vals[j] == m else np.exp((vals[j] - m) * inv)
        cdf[j] = total


@njit(cache=True, inline="always")
def _drawn(cdf, K, u):  # pragma: no cover - compiled
    """The first state whose cumulative weight ``cdf`` exceeds ``u`` times the total."""
    target = u * cdf[K - 1]
    c = 0
    for j in range(K):
        if cdf[j] <= target:
            c += 1
    return min(c, K - 1)


@njit(cache=True)
def backward_sample(pool, order, card, cl_ptr, cl_var, in_ptr, in_off, in_vstride, dim_ptr,
                    dim_pos, dim_stride, u, urow, flip, x, inv):  # pragma: no cover - compiled
    """Backward sampling of the steps in reverse order, node-major: ``u[urow[v], s]`` (one
    minus it with ``flip``) decides variable ``v`` of sample ``s``, which goes to
    ``x[v, s]``. Each sample's row of the clique table ``(v, x_{N_t})`` is summed from the
    step's inputs, input after input (``pool`` at ``in_off``, plus each of their variables'
    strides ``dim_stride`` times its state, the variable at ``dim_pos`` in the clique, and
    ``in_vstride`` along ``v``), then ``v`` is the first state whose cumulative weight
    ``exp(inv (row - max))`` exceeds the uniform times the total
    (:func:`~mrflib.inference._factor_ops.draw_categorical`). A step whose rows are fewer
    than the samples has the cumulative weights of every row made first and looked up (one
    exp per row, not per sample: the same floats); a larger one sums each sample's row,
    all samples at once (their lookups pipeline)."""
    M = x.shape[1]
    T = order.shape[0]
    most_k, most_in, most_cl = 1, 1, 1
    for t in range(T):
        most_k = max(most_k, card[order[t]])
        most_in = max(most_in, in_ptr[t + 1] - in_ptr[t])
        most_cl = max(most_cl, cl_ptr[t + 1] - cl_ptr[t])
    idx = np.empty(M, dtype=np.int64)
    rows = np.empty((most_k, M))
    vals = np.empty(most_k)
    cdf = np.empty(most_k)
    table = np.empty(M + most_k)
    base = np.empty(most_in, dtype=np.int64)
    state = np.zeros(most_cl, dtype=np.int64)
    for t in range(T - 1, -1, -1):
        v = order[t]
        K = card[v]
        first, last = in_ptr[t], in_ptr[t + 1]
        c0, k = cl_ptr[t], cl_ptr[t + 1] - cl_ptr[t]
        us = u[urow[v]]
        dest = x[v]
        n_rows = 1
        for q in range(1, k):
            n_rows *= card[cl_var[c0 + q]]
        if n_rows * K <= M:
            # every row's cumulative weights, rows in C order over N_t (state[q - 1] is
            # the state of the clique's variable q)
            for q in range(k - 1):
                state[q] = 0
            for r in range(n_rows):
                for a in range(first, last):
                    at = in_off[a]
                    for d in range(dim_ptr[a], dim_ptr[a + 1]):
                        at += dim_stride[d] * state[dim_pos[d] - 1]
                    base[a - first] = at
                for j in range(K):
                    acc = 0.0
                    for a in range(first, last):
                        acc += pool[base[a - first] + j * in_vstride[a]]
                    vals[j] = acc
                _cumulate(vals, K, inv, table[r * K:(r + 1) * K])
                advance(state, k - 1, cl_var, c0 + 1, card)
            for s in range(M):
                idx[s] = 0
            step = K
            for q in range(k - 1, 0, -1):
                xs = x[cl_var[c0 + q]]
                for s in range(M):
                    idx[s] += step * xs[s]
                step *= card[cl_var[c0 + q]]
            for s in range(M):
                r = idx[s]
                dest[s] = _drawn(table[r:r + K], K, 1.0 - us[s] if flip else us[s])
            continue
        for j in range(K):
            row = rows[j]
            for s in range(M):
                row[s] = 0.0
        for a in range(first, last):
            off = in_off[a]
            vs = in_vstride[a]
            if dim_ptr[a] == dim_ptr[a + 1]:  # over the eliminated variable alone
                for j in range(K):
                    val = pool[off + j * vs]
                    row = rows[j]
                    for s in range(M):
                        row[s] += val
                continue
            for s in range(M):
                idx[s] = off
            for d in range(dim_ptr[a], dim_ptr[a + 1]):
                xs = x[cl_var[c0 + dim_pos[d]]]
                st = dim_stride[d]
                for s in range(M):
                    idx[s] += st * xs[s]
            for j in range(K):
                row = rows[j]
                at = j * vs
                for s in range(M):
                    row[s] += pool[idx[s] + at]
        for s in range(M):
            for j in range(K):
                vals[j] = rows[j, s]
            _cumulate(vals, K, inv, cdf)
            dest[s] = _drawn(cdf, K, 1.0 - us[s] if flip else us[s])


# the passes sum the cliques: their callers weigh them by the plan's entries (run_small)
interpret_small(globals(), exclude=("upward", "downward", "backward_sample"))
