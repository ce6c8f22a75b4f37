"""Numba kernels of the factor-graph elimination engine's tables
(:mod:`mrflib.inference.exact.elimination`; its orders' kernels are in
:mod:`mrflib.inference.exact._elimination_order_kernels`).

``logsumexp_reduce`` sums the exponentials of a C-contiguous table over any set of its
axes in two streaming passes (the maximum of each output cell, then the shifted sum), with
no temporary as large as the table: numpy's ``log(sum(exp(a - max)))`` allocates two. The
input is walked in memory order; an odometer over the leading axes tracks the output cell,
the last axis is an inner loop with its own output stride. The plain numpy twin is
:func:`mrflib.inference._factor_ops.logsumexp_numpy`; the tests compare both.

``product_sums`` sums a clique's linear-space products onto several outputs without making
the clique: it walks the clique in one of two axis orders (the cheaper by a cost estimate),
with runs of axes that every input and output walks contiguously merged into one, so rows
are long; ``blocked_order`` keeps each output block in cache while axis 0 is summed and
the largest input is read once, in runs. Where the merged rows are short (a clique of
binary or 4-state variables), the walk goes a block of trailing axes at a time, their
offsets tabled once (``clique_build`` builds log-space clique tables the same way). The
tests compare both orders with numpy broadcasting, and each blocked walk with its row
walk bit for bit.

``permuted_copy`` makes a transposed table C-contiguous in tiles that stay in cache (an
``opt_einsum`` result over many short axes, which numpy copies entry by entry); the tests
compare it with numpy's copy.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from mrflib._support.interpreted import interpret_small


@njit(cache=True)
def _pass(flat, shape, ostride, mx, out, second):  # pragma: no cover - compiled
    nd = shape.shape[0]
    inner = shape[nd - 1]
    s_in = ostride[nd - 1]
    coord = np.zeros(nd, dtype=np.int64)
    off = 0
    i = 0
    total = flat.shape[0]
    while i < total:
        if second:
            for j in range(inner):
                o = off + j * s_in
                out[o] += math.exp(flat[i + j] - mx[o])
        else:
            for j in range(inner):
                o = off + j * s_in
                if flat[i + j] > mx[o]:
                    mx[o] = flat[i + j]
        i += inner
        d = nd - 2
        while d >= 0:
            coord[d] += 1
            off += ostride[d]
            if coord[d] < shape[d]:
                break
            off -= ostride[d] * shape[d]
            coord[d] = 0
            d -= 1


@njit(cache=True)
def logsumexp_reduce(flat, shape, ostride, out):  # pragma: no cover - compiled
    """``out[o] = log Σ exp(flat[i])`` over the entries ``i`` whose kept coordinates give
    cell ``o = Σ_d coord_d ostride_d`` (``ostride_d = 0`` on a reduced axis); ``-inf``
    where every term is ``-inf``."""
    mx = np.empty(out.shape[0])
    for o in range(out.shape[0]):
        mx[o] = -np.inf
    # np.bool_: a literal argument would compile _pass once per value
    _pass(flat, shape, ostride, mx, out, np.bool_(False))
    for o in range(out.shape[0]):
        if not np.isfinite(mx[o]):
            mx[o] = 0.0
        out[o] = 0.0
    _pass(flat, shape, ostride, mx, out, np.bool_(True))
    for o in range(out.shape[0]):
        out[o] = math.log(out[o]) + mx[o] if out[o] > 0.0 else -np.inf


# --------------------------------------------------------------------------- cliques
@njit(cache=True)
def _advance(coord, off, strides, shape, first):  # pragma: no cover - compiled
    """Step the odometer ``coord`` over the axes ``first ..`` (last fastest), moving every
    input's offset ``off[k]`` by its stride."""
    d = shape.shape[0] - 1
    K = off.shape[0]
    while d >= first:
        coord[d] += 1
        for k in range(K):
            off[k] += strides[k, d]
        if coord[d] < shape[d]:
            return
        for k in range(K):
            off[k] -= strides[k, d] * shape[d]
        coord[d] = 0
        d -= 1


#: Entries of the block of trailing axes that :func:`clique_build` and
#: :func:`clique_product_sum_blocked` fill input by input (their offset tables are
#: ``inputs x BLOCK`` integers, made once per call).
BLOCK = 1024
#: Rows (merged last axis) shorter than this are summed by
#: :func:`clique_product_sum_blocked` in cliques of at least :data:`BLOCKED_MIN_ENTRIES`
#: entries.
SHORT_ROW = 64
#: Below this many entries (eight blocks) tabling a block's offsets costs more than the
#: odometer steps it saves (measured on cliques of 2- to 4-state variables: the row walk
#: is 2 to 5 times faster up to a few thousand entries, the blocked walk from about 8,000).
BLOCKED_MIN_ENTRIES = 8 * BLOCK


@njit(cache=True, inline="always")
def _block_start(shape):  # pragma: no cover - compiled
    """``(first, size)``: the block is the trailing axes ``first ..`` of at most
    :data:`BLOCK` cells (``size``), and at least the last axis."""
    nd = shape.shape[0]
    first = nd
    size = 1
    while first > 0 and (first == nd or size * shape[first - 1] <= BLOCK):
        first -= 1
        size *= shape[first]
    return first, size


@njit(cache=True)
def _block_offsets(strides, shape, first):  # pragma: no cover - compiled
    """Each input's offset (``[k, j]``) at every cell ``j`` (C order) of the axes
    ``first ..``, walked by an odometer (no division per cell)."""
    nd = shape.shape[0]
    K = strides.shape[0]
    size = 1
    for d in range(first, nd):
        size *= shape[d]
    idx = np.empty((K, size), dtype=np.int64)
    cur = np.zeros(K, dtype=np.int64)
    coord = np.zeros(nd, dtype=np.int64)
    for j in range(size):
        for k in range(K):
            idx[k, j] = cur[k]
        _advance(coord, cur, strides, shape, first)
    return idx


@njit(cache=True)
def clique_build(values, offsets, strides, shape, out):  # pragma: no cover - compiled
    """The clique table (C order, axes ``shape``): ``out[x] = Σ_k values[offsets[k] +
    Σ_d x_d strides[k, d]]``, the sum of the inputs laid out in ``values`` (a stride of
    ``0`` on an axis the input does not hold).

    The trailing axes of at most :data:`BLOCK` cells (at least the last axis) form a block
    whose offsets are tabled once; each block is summed input by input, so the odometer
    steps once per block rather than once per row, and an input constant over the block
    is one broadcast addition. Every entry is summed from ``0.0`` in input order, the
    floats of a cell-by-cell sum."""
    nd = shape.shape[0]
    K = offsets.shape[0]
    first, size = _block_start(shape)
    idx = _block_offsets(strides, shape, first)
    zero = np.int64(0)  # not a literal: _advance compiles once for every caller
    flat = np.zeros(K, dtype=np.bool_)
    for k in range(K):
        flat[k] = True
        for d in range(first, nd):
            if strides[k, d] != 0:
                flat[k] = False
    off = offsets.copy()
    coord = np.zeros(max(first, 1), dtype=np.int64)
    total = out.shape[0]
    i = 0
    while i < total:
        for j in range(size):
            out[i + j] = 0.0
        for k in range(K):
            base = off[k]
            if flat[k]:
                c = values[base]
                for j in range(size):
                    out[i + j] += c
            else:
                for j in range(size):
                    out[i + j] += values[base + idx[k, j]]
        i += size
        if first > 0:
            _advance(coord, off, strides, shape[:first], zero)
    return out


@njit(cache=True)
def clique_eliminate(values, offsets, strides, shape, maximize, out):  # pragma: no cover
    """Sum (log-sum-exp) or maximize axis 0 out of the clique table of
    :func:`clique_build` without making it: for each cell ``o`` of the other axes (C order)
    the ``shape[0]`` entries are summed from the inputs, then reduced with a shift by their
    maximum (``-inf`` when all are ``-inf``)."""
    nd = shape.shape[0]
    K = offsets.shape[0]
    off = offsets.copy()
    coord = np.zeros(nd, dtype=np.int64)
    card = shape[0]
    buf = np.empty(card)
    one = np.int64(1)  # not a literal: _advance compiles once for every caller
    for o in range(out.shape[0]):
        mx = -np.inf
        for x in range(card):
            s = 0.0
            for k in range(K):
                s += values[off[k] + x * strides[k, 0]]
            buf[x] = s
            if s > mx:
                mx = s
        if maximize or not mx > -np.inf:
            out[o] = mx
        else:
            acc = 0.0
            for x in range(card):
                acc += math.exp(buf[x] - mx)
            out[o] = mx + math.log(acc)
        if nd > 1:
            _advance(coord, off, strides, shape, one)
    return out


@njit(cache=True, inline="always")
def _prefix(pp, values, off, level_start, d0, upto):  # pragma: no cover - compiled
    """``pp[d + 1] = pp[d] · Π`` (the inputs of level ``d`` at their offsets) for ``d`` in
    ``d0 .. upto - 1``: the products of the levels whose axes moved."""
    for d in range(d0, upto):
        p = pp[d]
        for k in range(level_start[d], level_start[d + 1]):
            p *= values[off[k]]
        pp[d + 1] = p


@njit(cache=True, inline="always")
def _step(coord, off, strides, ooff, ostrides, shape, last):  # pragma: no cover - compiled
    """Step the odometer ``coord`` over the axes ``0 .. last`` (last fastest), moving every
    input's offset ``off[k]`` and output's ``ooff[r]`` by its stride; returns the axis
    that moved, ``-1`` when the walk is over."""
    d = last
    while d >= 0:
        coord[d] += 1
        for k in range(off.shape[0]):
            off[k] += strides[k, d]
        for r in range(ooff.shape[0]):
            ooff[r] += ostrides[r, d]
        if coord[d] < shape[d]:
            return d
        for k in range(off.shape[0]):
            off[k] -= strides[k, d] * shape[d]
        for r in range(ooff.shape[0]):
            ooff[r] -= ostrides[r, d] * shape[d]
        coord[d] = 0
        d -= 1
    return -1


@njit(cache=True)
def clique_product_sum(values, offsets, strides, level_start, shape, ooffsets, ostrides,
                       out):  # pragma: no cover - compiled
    """Sums of the clique table ``Π_k values[offsets[k] + Σ_d x_d strides[k, d]]`` (linear
    space) onto the outputs ``out[ooffsets[r] + Σ_d x_d ostrides[r, d]]`` (stride ``0`` on
    a summed axis), walking the clique in C order without making it.

    The inputs are sorted by *level*, their last axis of nonzero stride (``level_start[d]
    .. level_start[d + 1]`` are at level ``d``): the product of the levels up to ``d`` is
    kept and recomputed only when axis ``d`` moves, so an entry costs one multiplication
    per input on the last axis, plus one addition per output.
    """
    nd = shape.shape[0]
    R = ooffsets.shape[0]
    L = nd - 1
    off = offsets.copy()
    ooff = ooffsets.copy()
    coord = np.zeros(nd, dtype=np.int64)
    pp = np.empty(nd + 1)
    pp[0] = 1.0  # the empty product; pp[d + 1] is set before it is read
    tmp = np.empty(shape[L])
    d0 = 0
    while True:
        _prefix(pp, values, off, level_start, d0, L)
        base = pp[L]
        k0 = level_start[L]
        if level_start[L + 1] - k0 == 1 and R <= 2:  # the common cases, loops of their own
            b, s, o, so = off[k0], strides[k0, L], ooff[0], ostrides[0, L]
            if R == 1 and s == 1 and so == 1:  # contiguous rows: vectorized
                for j in range(shape[L]):
                    out[o + j] += base * values[b + j]
            elif R == 1:
                for j in range(shape[L]):
                    out[o + j * so] += base * values[b + j * s]
            else:
                o2, so2 = ooff[1], ostrides[1, L]
                for j in range(shape[L]):
                    p = base * values[b + j * s]
                    out[o + j * so] += p
                    out[o2 + j * so2] += p
        else:  # the row's products, then each output: simple loops
            for j in range(shape[L]):
                tmp[j] = base
            for k in range(k0, level_start[L + 1]):
                b, s = off[k], strides[k, L]
                for j in range(shape[L]):
                    tmp[j] *= values[b + j * s]
            for r in range(R):
                o, so = ooff[r], ostrides[r, L]
                for j in range(shape[L]):
                    out[o + j * so] += tmp[j]
        d = _step(coord, off, strides, ooff, ostrides, shape, L - 1)
        if d < 0:
            return out
        d0 = d


@njit(cache=True)
def clique_product_sum_blocked(values, offsets, strides, level_start, shape, ooffsets,
                               ostrides, out):  # pragma: no cover - compiled
    """:func:`clique_product_sum` a block of trailing axes at a time, for short rows (a
    clique of 4-state variables walks rows of 4 entries, and the odometer's step over every
    input and output cost more than the row): the trailing axes of at most :data:`BLOCK`
    cells have their offsets tabled once; a block's products start from the product of
    the inputs of the levels before it and multiply in the block's inputs one by one, in
    level order, then each output adds the block in order. Every entry is the same
    product and every output the same sum, in the same order, as
    :func:`clique_product_sum`'s."""
    nd = shape.shape[0]
    K = offsets.shape[0]
    R = ooffsets.shape[0]
    first, size = _block_start(shape)
    idx = _block_offsets(strides, shape, first)
    oidx = _block_offsets(ostrides, shape, first)
    kb = level_start[first]
    off = offsets.copy()
    ooff = ooffsets.copy()
    coord = np.zeros(nd, dtype=np.int64)
    pp = np.empty(nd + 1)
    pp[0] = 1.0
    tmp = np.empty(size)
    d0 = 0
    while True:
        _prefix(pp, values, off, level_start, d0, first)
        base = pp[first]
        for j in range(size):
            tmp[j] = base
        for k in range(kb, K):
            b = off[k]
            for j in range(size):
                tmp[j] *= values[b + idx[k, j]]
        for r in range(R):
            o = ooff[r]
            for j in range(size):
                out[o + oidx[r, j]] += tmp[j]
        d = _step(coord, off, strides, ooff, ostrides, shape, first - 1)
        if d < 0:
            return out
        d0 = d


@njit(cache=True)
def sparse_inner_order(strides, shape):  # pragma: no cover - compiled
    """An order of the clique's axes for :func:`product_sums`: the innermost is the one
    (not the first) fewest inputs vary along, ties to the last, and the first axis, which
    most inputs hold, just outside it."""
    nd = shape.shape[0]
    K = strides.shape[0]
    perm = np.empty(nd, dtype=np.int64)  # a loop, not np.arange: one generic less to compile
    for d in range(nd):
        perm[d] = d
    if nd > 1:
        inner = nd - 1
        best = K + 1
        for d in range(nd - 1, 0, -1):
            busy = 0
            for k in range(K):
                busy += strides[k, d] != 0
            if busy < best:
                best = busy
                inner = d
        j = 0
        for d in range(1, nd):
            if d != inner:
                perm[j] = d
                j += 1
        perm[nd - 2] = 0
        perm[nd - 1] = inner
    return perm


@njit(cache=True)
def _walk_layout(strides, shape, ostrides, perm):  # pragma: no cover - compiled
    """The clique's axes in the order ``perm`` with runs merged (:func:`merge_axes`), the
    inputs sorted by level: ``(order of inputs, their strides, level starts, shape,
    output strides)`` for :func:`clique_product_sum`."""
    nd0 = shape.shape[0]
    K = strides.shape[0]
    R = ostrides.shape[0]
    sp = np.empty(nd0, dtype=np.int64)
    stp = np.empty((K, nd0), dtype=np.int64)
    ostp = np.empty((R, nd0), dtype=np.int64)
    for d in range(nd0):
        sp[d] = shape[perm[d]]
        for k in range(K):
            stp[k, d] = strides[k, perm[d]]
        for r in range(R):
            ostp[r, d] = ostrides[r, perm[d]]
    shp, st0, ost = merge_axes(sp, stp, ostp)
    nd = shp.shape[0]
    level = np.zeros(K, dtype=np.int64)
    for k in range(K):
        for d in range(nd):
            if st0[k, d] != 0:
                level[k] = d
    # a stable counting sort by level (levels are axes: few), the order a stable argsort
    # gives, without compiling a general sort
    starts = np.zeros(nd + 1, dtype=np.int64)
    for k in range(K):
        starts[level[k] + 1] += 1
    for d in range(nd):
        starts[d + 1] += starts[d]
    fill = starts[:nd].copy()
    by = np.empty(K, dtype=np.int64)
    for k in range(K):
        by[fill[level[k]]] = k
        fill[level[k]] += 1
    st = np.empty((K, nd), dtype=np.int64)
    for i in range(K):
        for d in range(nd):
            st[i, d] = st0[by[i], d]
    return by, st, starts, shp, ost


@njit(cache=True, inline="always")
def _walked_as_one(outer, inner, size):  # pragma: no cover - compiled
    """Two neighbouring axes of strides ``outer`` and ``inner`` (the inner one of ``size``
    entries) are walked as one axis: both zero, or the outer steps over the whole inner."""
    return (outer == 0 and inner == 0) or (inner != 0 and outer == inner * size)


@njit(cache=True)
def layout_cost(strides, shape, ostrides, perm):  # pragma: no cover - compiled
    """A cost estimate of :func:`clique_product_sum` on :func:`_walk_layout`'s layout for
    ``perm``, without making it: per entry, a product per input of the last level and a
    sum per output; per row (and per step of an outer axis), an odometer step per input
    and output. Merged axes have all their strides zero or all nonzero (see :func:`merge_axes`),
    so an input is on the last level when its stride on the last axis of ``perm`` is not
    zero (or the axes merge into one), and the walk's size is the clique's."""
    nd = shape.shape[0]
    K = strides.shape[0]
    R = ostrides.shape[0]
    last = shape[perm[nd - 1]]  # entries of the last merged axis
    first = nd - 1  # its first axis
    for j in range(nd - 1, 0, -1):
        a, b = perm[j - 1], perm[j]
        ok = True
        for k in range(K):
            x, y = strides[k, a], strides[k, b]
            if not _walked_as_one(x, y, shape[b]):
                ok = False
        for r in range(R):
            x, y = ostrides[r, a], ostrides[r, b]
            if not _walked_as_one(x, y, shape[b]):
                ok = False
        if not ok:
            break
        last *= shape[a]
        first = j - 1
    size = 1.0
    for d in range(nd):
        size *= shape[d]
    on_last = 0
    for k in range(K):  # one merged axis holds every input, constant ones included
        on_last += first == 0 or strides[k, perm[nd - 1]] != 0
    return size * (on_last + R) + 4.0 * (size / last) * (K + R + 2)


@njit(cache=True)
def walk_of(strides, shape, ostrides):  # pragma: no cover - compiled
    """The walk :func:`product_sums` takes of a clique: the cheaper (by
    :func:`layout_cost`) of two axis orders, :func:`blocked_order` and
    :func:`sparse_inner_order`, runs of axes merged (:func:`merge_axes`), the inputs sorted
    by level: ``(order of inputs, their strides, level starts, shape, output strides,
    blocked)`` (blocked: by :func:`clique_product_sum_blocked`). It depends on the scopes
    only, so a caller that sums the same cliques again may keep it."""
    perm = blocked_order(strides, shape, 4096)
    other = sparse_inner_order(strides, shape)
    if layout_cost(strides, shape, ostrides, other) < layout_cost(strides, shape, ostrides,
                                                                  perm):
        perm = other
    by, st, starts, shp, ost = _walk_layout(strides, shape, ostrides, perm)
    size = 1
    for d in range(shp.shape[0]):
        size *= shp[d]
    return by, st, starts, shp, ost, shp[shp.shape[0] - 1] < SHORT_ROW and \
        size >= BLOCKED_MIN_ENTRIES


@njit(cache=True, inline="always")
def walk_sums(values, offsets, strides, level_start, shape, ooffsets, ostrides, blocked,
              out):  # pragma: no cover - compiled
    """The sums of a walk of :func:`walk_of` (``offsets`` in its order of inputs)."""
    if blocked:
        return clique_product_sum_blocked(values, offsets, strides, level_start, shape,
                                          ooffsets, ostrides, out)
    return clique_product_sum(values, offsets, strides, level_start, shape, ooffsets,
                              ostrides, out)


def product_sums(values: np.ndarray, offsets: np.ndarray, strides: np.ndarray,
                 shape: np.ndarray, ooffsets: np.ndarray, ostrides: np.ndarray,
                 out: np.ndarray) -> None:
    """:func:`clique_product_sum` of the walk :func:`walk_of` chooses. Not a kernel itself:
    the walk (small arrays) and the sums (the tables) are two calls, so that a first call
    on a small clique runs the walk without compiling it
    (:mod:`mrflib._support.interpreted`) and compiles only the sums."""
    by, st, starts, shp, ost, blocked = walk_of(strides, shape, ostrides)
    off = np.ascontiguousarray(offsets[by], dtype=np.int64)
    walk_sums(values, off, st, starts, shp, ooffsets, ost, blocked, out)


@njit(cache=True)
def _covers(strides, k):  # pragma: no cover - compiled
    """Whether input ``k`` holds every axis but (perhaps) the first: a downward message."""
    for d in range(1, strides.shape[1]):
        if strides[k, d] == 0:
            return False
    return True


@njit(cache=True)
def blocked_order(strides, shape, block):  # pragma: no cover - compiled
    """An order of the clique's axes for :func:`product_sums`. The *largest* input
    (of those not over every axis but the first) gives three groups of the other axes,
    each in clique order: those it does not hold, outermost; those it holds with a smaller
    input (not over every axis but the first); and its *own*, innermost, which every input
    and output then walks in long runs. Axis 0 goes in just before the trailing own axes
    whose entries, times ``shape[0]``, fit in ``block``, so each output block is summed
    over axis 0 in cache while the largest input is read once."""
    nd = shape.shape[0]
    K = strides.shape[0]
    big = -1
    most = -1.0
    for k in range(K):
        size = 1.0
        for d in range(nd):
            if strides[k, d] != 0:
                size *= shape[d]
        if size > most and not _covers(strides, k):
            most = size
            big = k
    group = np.zeros(nd, dtype=np.int64)  # 0: not held by big, 1: shared, 2: own
    for d in range(1, nd):
        if big >= 0 and strides[big, d] != 0:
            group[d] = 2
            for k in range(K):
                if k != big and strides[k, d] != 0 and not _covers(strides, k):
                    group[d] = 1
    perm = np.empty(nd, dtype=np.int64)
    m = 0
    for g in range(2):
        for d in range(1, nd):
            if group[d] == g:
                perm[m] = d
                m += 1
    own = np.empty(nd, dtype=np.int64)
    h = 0
    for d in range(1, nd):
        if group[d] == 2:
            own[h] = d
            h += 1
    q = h
    inner = shape[0]
    while q > 0 and inner * shape[own[q - 1]] <= block:
        q -= 1
        inner *= shape[own[q]]
    for i in range(q):
        perm[m] = own[i]
        m += 1
    perm[m] = 0
    m += 1
    for i in range(q, h):
        perm[m] = own[i]
        m += 1
    return perm


@njit(cache=True)
def merge_axes(shape, strides, ostrides):  # pragma: no cover - compiled
    """The clique's axes with every run of neighbours that each input and output walks as
    one axis merged: axes ``d`` and ``d + 1`` merge when every row of ``strides`` and
    ``ostrides`` has both zero, or ``stride[d] = stride[d + 1] * shape[d + 1]`` with
    ``stride[d + 1] != 0``. Returns ``(shape, strides, ostrides)`` of the merged axes
    (same C-order walk, longer rows)."""
    nd = shape.shape[0]
    K = strides.shape[0]
    R = ostrides.shape[0]
    shp = shape.copy()
    st = strides.copy()
    ost = ostrides.copy()
    m = 1
    for d in range(1, nd):
        ok = True
        for k in range(K):
            a, b = st[k, m - 1], strides[k, d]
            if not _walked_as_one(a, b, shape[d]):
                ok = False
        for r in range(R):
            a, b = ost[r, m - 1], ostrides[r, d]
            if not _walked_as_one(a, b, shape[d]):
                ok = False
        if ok:
            shp[m - 1] *= shape[d]
            for k in range(K):
                st[k, m - 1] = strides[k, d]
            for r in range(R):
                ost[r, m - 1] = ostrides[r, d]
        else:
            shp[m] = shape[d]
            for k in range(K):
                st[k, m] = strides[k, d]
            for r in range(R):
                ost[r, m] = ostrides[r, d]
            m += 1
    return shp[:m].copy(), st[:, :m].copy(), ost[:, :m].copy()


@njit(cache=True)
def linear_table(values, lin):  # pragma: no cover - compiled
    """``lin = exp(values - hi)`` with ``hi`` the largest finite entry; returns ``(hi,
    span)``, ``span = hi - lo`` with ``lo`` the smallest finite entry, or ``(-inf, inf)``
    (``lin`` unset) when no entry is finite."""
    hi = -np.inf
    lo = np.inf
    for i in range(values.shape[0]):
        x = values[i]
        if np.isfinite(x):
            hi = max(hi, x)
            lo = min(lo, x)
    if not np.isfinite(hi):
        return -np.inf, np.inf
    for i in range(values.shape[0]):
        lin[i] = math.exp(values[i] - hi)
    return hi, hi - lo


@njit(cache=True, inline="always")
def _widen(x, hi, lo):  # pragma: no cover - compiled
    """``(hi, lo)`` widened by the nonnegative ``x``: the largest entry and the smallest
    positive one, as :func:`extent` scans them."""
    y = x if x > 0.0 else np.inf
    return (x if x > hi else hi), (y if y < lo else lo)


@njit(cache=True)
def divide_extent(a, b, out):  # pragma: no cover - compiled
    """``out = a / b`` where ``b > 0`` and ``0`` elsewhere (a Hugin update: there ``a`` is
    zero too), and :func:`extent` of ``out``, in one pass instead of three."""
    hi = 0.0
    lo = np.inf
    for i in range(out.shape[0]):
        x = a[i] / b[i] if b[i] > 0.0 else 0.0
        out[i] = x
        hi, lo = _widen(x, hi, lo)
    return hi, lo


@njit(cache=True)
def extent(out):  # pragma: no cover - compiled
    """The largest entry of the nonnegative ``out`` and its smallest positive one (``(0,
    inf)`` when all are zero)."""
    hi = 0.0
    lo = np.inf
    for i in range(out.shape[0]):
        hi, lo = _widen(out[i], hi, lo)
    return hi, lo


@njit(cache=True)
def permuted_copy(src, shape, sstrides, out, block):  # pragma: no cover - compiled
    """``out``, C order over ``shape``, gets the entries of ``src`` at ``Σ_d i_d
    sstrides[d]``: a transposed array made C-contiguous in tiles.

    numpy copies such an array entry by entry along its last axis, which, for a table of
    many short axes (an ``opt_einsum`` result over 21 binary variables, transposed to the
    target's order), is both an interpreter of 2-entry rows and a scattered read: 9 to 20
    ms for 2^21 entries, against a 2 ms contraction. Here the output's trailing axes (at
    least ``block`` entries: contiguous writes) and, among the others, the axes of
    smallest source stride (at least ``block`` entries: contiguous reads) make a tile that
    stays in cache, its offsets tabled once (:func:`_block_offsets`); an odometer walks
    the remaining axes (:func:`_advance`)."""
    nd = shape.shape[0]
    ostrides = np.empty(nd, dtype=np.int64)
    step = 1
    for d in range(nd - 1, -1, -1):
        ostrides[d] = step
        step *= shape[d]
    g1 = 0
    p1 = 1
    while g1 < nd and p1 < block:
        p1 *= shape[nd - 1 - g1]
        g1 += 1
    rest = nd - g1
    # plain loops and insertion sorts (a few axes) rather than np.argsort, np.sort, fancy
    # indexing and np.concatenate, which take seconds to compile; the walk's order does not
    # change the copy
    zero = np.int64(0)  # int64 arguments, not literals, so each callee compiles once
    label = np.empty(nd, dtype=np.int64)  # each axis its own label, to sort axes by
    for d in range(nd):
        label[d] = d
    by_stride = label[:rest].copy()  # the leading axes by source stride
    _sort_by(by_stride, zero, rest, sstrides)
    g2 = 0
    p2 = 1
    while g2 < rest and p2 < block:
        p2 *= shape[by_stride[g2]]
        g2 += 1
    # the walk's axes: the odometer's, then the tile's (source-contiguous, output-trailing),
    # each group in increasing order
    m = rest - g2
    axes = np.empty(nd, dtype=np.int64)
    for i in range(m):
        axes[i] = by_stride[g2 + i]
    for i in range(g2):
        axes[m + i] = by_stride[i]
    for d in range(rest, nd):
        axes[d] = d
    _sort_by(axes, zero, m, label)
    _sort_by(axes, m, rest, label)
    sh = np.empty(nd, dtype=np.int64)
    st = np.empty((2, nd), dtype=np.int64)
    for d in range(nd):
        sh[d] = shape[axes[d]]
        st[0, d] = sstrides[axes[d]]
        st[1, d] = ostrides[axes[d]]
    idx = _block_offsets(st, sh, m)
    # the odometer's axes in arrays of their own: the signature _block_offsets calls
    # _advance with, so that it compiles once
    wst = np.empty((2, m), dtype=np.int64)
    wsh = np.empty(m, dtype=np.int64)
    for d in range(m):
        wsh[d] = sh[d]
        wst[0, d] = st[0, d]
        wst[1, d] = st[1, d]
    off = np.zeros(2, dtype=np.int64)
    coord = np.zeros(nd, dtype=np.int64)
    total = 1
    for d in range(m):
        total *= sh[d]
    for _ in range(total):
        for j in range(idx.shape[1]):
            out[off[1] + idx[1, j]] = src[off[0] + idx[0, j]]
        _advance(coord, off, wst, wsh, zero)


@njit(cache=True)
def _sort_by(items, lo, hi, key):  # pragma: no cover - compiled
    """Sort ``items[lo:hi]`` in place by increasing ``key[item]``, ties in their order (an
    insertion sort: a few axes)."""
    for i in range(lo + 1, hi):
        v = items[i]
        kv = key[v]
        j = i
        while j > lo and key[items[j - 1]] > kv:
            items[j] = items[j - 1]
            j -= 1
        items[j] = v


# a clique's sums run over a table no argument holds, and a table's scans compile in less
# time than a few interpreted calls take: they always compile
interpret_small(globals(), exclude=("clique_product_sum", "clique_product_sum_blocked",
                                   "walk_sums", "extent", "divide_extent", "linear_table"))
