"""Numba kernels of :mod:`mrflib.learning.learners` (private; validated callers only).

The local objectives (pseudo-likelihood, ratio matching, minimum probability flow)
all have the form ``(1/N) sum_mu sum_i phi(x_i h_i)`` with the local field
``h_i = b_i + sum_j J_ij x_j``, and 1-SMCI's moment estimates are averages of functions
of a node's neighbours or an edge's boundary: all depend on the data only through the
counts of local patterns. :func:`local_patterns` counts them once per fit;
:func:`pattern_objective` and :func:`smci1_moments` evaluate from the counts (cost
independent of N); :func:`local_objective_gradient` runs over distinct data rows where
patterns would not be fewer (dense graphs). Serial and ``parallel`` twins give the same
bits (disjoint writes, reductions in a fixed order). The plain-numpy references are
:func:`mrflib.learning._local.local_terms_numpy` and
:func:`mrflib.inference.smci._spin_estimators._moments_numpy`.

The graph comes as one record ``g`` (:class:`mrflib.models.graphs.Structure`); counted
patterns as one triple ``(codes, weights, poff)`` (:func:`mrflib.learning._local.compress`: group
``k``'s codes are ``codes[poff[k]:poff[k + 1]]``, bit ``q`` set when member ``q`` is +1,
seen with frequency ``weights``); parameters (``bias``, ``coupling``) and data stay
separate arguments. (Plain tuples, not ``NamedTuple`` records: numba types a named
tuple in Python at every call, about 2 us, which the learners would pay at every step.)
The kernels read the records once; the inlined helpers take the arrays themselves.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from mrflib._support._sort_kernels import sort_int64

MPLE, RM, MPF = 0, 1, 2


@njit(cache=True, inline="always")
def _phi(u, kind, shift):
    """Objective term phi(u) and d phi / d u at u = x_i h_i (maximised).

    ``shift`` (MPF only) scales the term by ``exp(-shift)``: with ``shift`` the largest
    exponent ``max(-u)`` over the data (:func:`mpf_max_exponent`) no term overflows and the
    largest is ``exp(0) = 1``, so ``log K = shift + log(sum of scaled terms)`` is finite for
    every finite model. ``shift = 0`` gives the plain terms, bit for bit.
    """
    if kind == MPLE:
        # log P(x_i | rest) = u - log(2 cosh h) = -log(1 + exp(-2u))
        if u > 0.0:
            t = math.exp(-2.0 * u)
            return -math.log1p(t), 2.0 * t / (1.0 + t)
        t = math.exp(2.0 * u)
        return 2.0 * u - math.log1p(t), 2.0 / (1.0 + t)
    if kind == RM:
        # -g(P(x)/P(x^-i))^2 with g(r) = 1/(1 + r), P(x)/P(x^-i) = exp(2u)
        if u > 0.0:
            t = math.exp(-2.0 * u)
            s = t / (1.0 + t)
        else:
            s = 1.0 / (1.0 + math.exp(2.0 * u))
        return -s * s, 4.0 * s * s * (1.0 - s)
    # MPF, single-spin-flip connectivity: -exp((E(x) - E(x^-i)) / 2) = -exp(-u)
    t = math.exp(-u - shift)
    return -t, t


@njit(cache=True, inline="always")
def _row_field(xs, i, bias, coupling, indptr, indices, eids):
    """Local field ``h_i = b_i + sum_j J_ij x_j`` of the spins ``xs`` (CSR order)."""
    h = bias[i]
    for p in range(indptr[i], indptr[i + 1]):
        h += coupling[eids[p]] * xs[indices[p]]
    return h


@njit(cache=True, inline="always")
def _pattern_field(c, i, lo, d, bias, coupling, eids):
    """``(x_i, h_i)`` of node ``i``'s pattern code ``c`` (bit 0: x_i, bit q + 1: the q-th
    neighbour, CSR order from ``lo``; ``d`` neighbours)."""
    h = bias[i]
    for q in range(d):
        h += coupling[eids[lo + q]] * (2.0 * ((c >> (q + 1)) & 1) - 1.0)
    return 2.0 * (c & 1) - 1.0, h


@njit(cache=True)
def local_objective_gradient(x, weights, g, bias, coupling, kind, want_value,
                             shift=0.0):  # pragma: no cover - numba
    """Weighted objective and raw gradient (d/db (n,), d/dJ (E,)) over rows of ``x``.

    ``x`` int8 (K, n) (distinct data rows), ``weights`` (K,) (their frequencies); ``g``
    the graph's record. Used where the rows are fewer than the local patterns (dense
    graphs). ``shift``: see :func:`_phi`.
    """
    indptr, indices, eids, edges = g.indptr, g.indices, g.edge_ids, g.edges
    K, n = x.shape
    E = edges.shape[0]
    gb = np.zeros(n)
    gj = np.zeros(E)
    gi = np.empty(n)
    xs = np.empty(n)
    value = 0.0
    for mu in range(K):
        w = weights[mu]
        for i in range(n):
            xs[i] = x[mu, i]
        for i in range(n):
            h = _row_field(xs, i, bias, coupling, indptr, indices, eids)
            val, dphi = _phi(xs[i] * h, kind, shift)
            if want_value:
                value += w * val
            # d phi(x_i h_i) / d h_i = x_i phi'(u)
            gi[i] = w * xs[i] * dphi
            gb[i] += gi[i]
        for e in range(E):
            i, j = edges[e, 0], edges[e, 1]
            gj[e] += gi[i] * xs[j] + gi[j] * xs[i]
    return value, gb, gj


# ----------------------------------------------------------------- local-pattern counts
# The objectives depend on the data only through how often each node's local pattern
# (x_i, x_N(i)) occurs. A pattern is a code: bit 0 is x_i = +1, bit q + 1 is the q-th
# neighbour (CSR order) = +1.


@njit(cache=True, inline="always")
def _group_codes(g, xt, gptr, gnodes):
    """The pattern of group ``g`` in every column of ``xt`` (bit q: member q is +1)."""
    N = xt.shape[1]
    lo, d = gptr[g], gptr[g + 1] - gptr[g]
    buf = np.empty(N, dtype=np.int64)
    for mu in range(N):
        buf[mu] = 0
    for q in range(d):
        row = gnodes[lo + q]
        for mu in range(N):
            buf[mu] |= np.int64((xt[row, mu] + 1) >> 1) << q
    return buf


@njit(cache=True, inline="always")
def _counted_patterns(g, buf, d, cap_off, codes, counts, size):
    """Group ``g``'s distinct codes ``buf`` of ``d`` bits (few possible patterns: all
    counted) and their counts into ``codes/counts[cap_off[g]:]``, ascending."""
    base, k = cap_off[g], 0
    cnt = np.empty(1 << d, dtype=np.int64)
    for c in range(1 << d):
        cnt[c] = 0
    for mu in range(buf.shape[0]):
        cnt[buf[mu]] += 1
    for c in range(1 << d):
        if cnt[c]:
            codes[base + k] = c
            counts[base + k] = cnt[c]
            k += 1
    size[g] = k


@njit(cache=True, inline="always")
def _group_patterns(g, xt, gptr, gnodes, cap_off, codes, counts, size):
    """Distinct patterns of group ``g`` (bit q: member q is +1) and their counts, into
    ``codes/counts[cap_off[g]:]``, codes ascending."""
    N = xt.shape[1]
    d = gptr[g + 1] - gptr[g]
    buf = _group_codes(g, xt, gptr, gnodes)
    if (1 << d) <= 2 * N:  # few possible patterns: count them all
        _counted_patterns(g, buf, d, cap_off, codes, counts, size)
        return
    # sort and run-length
    base, k = cap_off[g], 0
    buf = sort_int64(buf)
    start = 0
    for mu in range(1, N + 1):
        if mu == N or buf[mu] != buf[start]:
            codes[base + k] = buf[start]
            counts[base + k] = mu - start
            k += 1
            start = mu
    size[g] = k


@njit(cache=True)
def local_patterns(xt, gptr, gnodes, cap_off):  # pragma: no cover - numba
    """Distinct patterns of spins ``xt`` (n, N) on each group of nodes.

    Group ``g`` is ``gnodes[gptr[g]:gptr[g + 1]]`` and may use
    ``codes[cap_off[g]:cap_off[g + 1]]``; returns ``(codes, counts, size)`` with
    ``size[g]`` the patterns found.
    """
    G = gptr.shape[0] - 1
    codes = np.empty(cap_off[G], dtype=np.int64)
    counts = np.empty(cap_off[G], dtype=np.int64)
    size = np.empty(G, dtype=np.int64)
    for g in range(G):
        _group_patterns(g, xt, gptr, gnodes, cap_off, codes, counts, size)
    return codes, counts, size


@njit(cache=True)
def local_patterns_counted(xt, gptr, gnodes, cap_off):  # pragma: no cover - numba
    """:func:`local_patterns` when every group's patterns are few enough to count them
    all (``2^size <= 2 N``, a lattice's): the same result without the sort, whose
    compilation a cold first call would pay for nothing."""
    G = gptr.shape[0] - 1
    codes = np.empty(cap_off[G], dtype=np.int64)
    counts = np.empty(cap_off[G], dtype=np.int64)
    size = np.empty(G, dtype=np.int64)
    for g in range(G):
        buf = _group_codes(g, xt, gptr, gnodes)
        _counted_patterns(g, buf, gptr[g + 1] - gptr[g], cap_off, codes, counts, size)
    return codes, counts, size


@njit(cache=True, parallel=True)
def local_patterns_parallel(xt, gptr, gnodes, cap_off):  # pragma: no cover - numba
    """:func:`local_patterns` with groups spread over the cores (same result)."""
    G = gptr.shape[0] - 1
    codes = np.empty(cap_off[G], dtype=np.int64)
    counts = np.empty(cap_off[G], dtype=np.int64)
    size = np.empty(G, dtype=np.int64)
    for g in prange(G):
        _group_patterns(g, xt, gptr, gnodes, cap_off, codes, counts, size)
    return codes, counts, size


@njit(cache=True)
def edge_boundaries(g):  # pragma: no cover - numba
    """Boundary of each edge ``{i, j}``: ``N(i) - j`` then ``N(j) - i`` (CSR order).

    Returns ``(gptr, gnodes, geid, n_first)``: members, the edge joining each member to
    its endpoint, and how many members belong to ``i``.
    """
    indptr, indices, eids, edges = g.indptr, g.indices, g.edge_ids, g.edges
    E = edges.shape[0]
    gptr = np.zeros(E + 1, dtype=np.int64)
    for e in range(E):
        i, j = edges[e, 0], edges[e, 1]
        gptr[e + 1] = gptr[e] + (indptr[i + 1] - indptr[i]) + (indptr[j + 1] - indptr[j]) - 2
    gnodes = np.empty(gptr[E], dtype=np.int64)
    geid = np.empty(gptr[E], dtype=np.int64)
    n_first = np.empty(E, dtype=np.int64)
    for e in range(E):
        k = gptr[e]
        ei, ej = edges[e, 0], edges[e, 1]
        for end, other in ((ei, ej), (ej, ei)):
            for p in range(indptr[end], indptr[end + 1]):
                if indices[p] != other:
                    gnodes[k] = indices[p]
                    geid[k] = eids[p]
                    k += 1
            if end == ei:
                n_first[e] = k - gptr[e]
    return gptr, gnodes, geid, n_first


@njit(cache=True, inline="always")
def _logcosh2(x):
    """``log(2 cosh x)``, overflow-free."""
    a = abs(x)
    return a + math.log1p(math.exp(-2.0 * a))


@njit(cache=True)
def smci1_moments(nodes, pairs, bnd, g, bias, coupling):  # pragma: no cover - numba
    """``(mean, pair)``: :func:`smci1_means` and :func:`smci1_pairs` in one call."""
    return smci1_means(nodes, g, bias, coupling), smci1_pairs(pairs, bnd, g, bias, coupling)


@njit(cache=True)
def smci1_means(nodes, g, bias, coupling):  # pragma: no cover - numba
    """1-SMCI means ``<tanh h_i>``, eq. (14) of Yasuda (2018), over the node patterns
    ``nodes`` (bit 0, the node's own spin, is not used)."""
    ncodes, nweights, npoff = nodes
    indptr, eids = g.indptr, g.edge_ids
    n = bias.shape[0]
    mean = np.zeros(n)
    for i in range(n):
        lo, d = indptr[i], indptr[i + 1] - indptr[i]
        acc = 0.0
        for k in range(npoff[i], npoff[i + 1]):
            c = ncodes[k]
            h = bias[i]
            for q in range(d):
                h += coupling[eids[lo + q]] * (2.0 * ((c >> (q + 1)) & 1) - 1.0)
            acc += nweights[k] * math.tanh(h)
        mean[i] = acc
    return mean


@njit(cache=True)
def smci1_pairs(pairs, bnd, g, bias, coupling):  # pragma: no cover - numba
    """1-SMCI pair estimates, eq. (15)-(17) of Yasuda (2018), over the edge-boundary
    patterns ``pairs`` (boundaries ``bnd = (gptr, geid, n_first)``, see
    :func:`edge_boundaries`): ``<tanh(J_ij + atanh(tanh a tanh b))>`` with ``a``, ``b``
    the fields of ``i`` and ``j`` without the edge, in the stable form
    ``atanh(tanh a tanh b) = (log cosh(a + b) - log cosh(a - b)) / 2``."""
    ecodes, eweights, epoff = pairs
    gptr, geid, n_first = bnd
    edges = g.edges
    pair = np.empty(coupling.shape[0])
    for e in range(coupling.shape[0]):
        lo, d, f = gptr[e], gptr[e + 1] - gptr[e], n_first[e]
        J = coupling[e]
        acc = 0.0
        for k in range(epoff[e], epoff[e + 1]):
            c = ecodes[k]
            a, b = bias[edges[e, 0]], bias[edges[e, 1]]
            for q in range(d):
                t = coupling[geid[lo + q]] * (2.0 * ((c >> q) & 1) - 1.0)
                if q < f:
                    a += t
                else:
                    b += t
            acc += eweights[k] * math.tanh(J + 0.5 * (_logcosh2(a + b) - _logcosh2(a - b)))
        pair[e] = acc
    return pair


@njit(cache=True, inline="always")
def _node_terms(i, codes, weights, poff, bias, coupling, indptr, eids, kind, value, gb,
                gslot, shift):
    """Objective terms of node ``i`` summed over its weighted patterns."""
    lo, d = indptr[i], indptr[i + 1] - indptr[i]
    v, gsum = 0.0, 0.0
    for p in range(lo, lo + d):
        gslot[p] = 0.0
    for k in range(poff[i], poff[i + 1]):
        c = codes[k]
        xi, h = _pattern_field(c, i, lo, d, bias, coupling, eids)
        val, dphi = _phi(xi * h, kind, shift)
        w = weights[k]
        v += w * val
        g = w * xi * dphi  # d phi(x_i h_i) / d h_i, weighted
        gsum += g
        for q in range(d):
            gslot[lo + q] += g * (2.0 * ((c >> (q + 1)) & 1) - 1.0)
    value[i] = v
    gb[i] = gsum


@njit(cache=True)
def _reduce(value, gslot, eids, E):  # pragma: no cover - numba
    """The objective ``Σ_i value[i]`` and the couplings' gradient ``gj[e] = Σ gslot[p]``
    over the CSR slots ``p`` of edge ``e``, each sum in CSR order (the same on any number
    of threads)."""
    gj = np.empty(E)
    for e in range(E):
        gj[e] = 0.0
    for p in range(eids.shape[0]):  # CSR order: the same sum on any number of threads
        gj[eids[p]] += gslot[p]
    total = 0.0
    for i in range(value.shape[0]):
        total += value[i]
    return total, gj


@njit(cache=True)
def pattern_objective(pat, g, bias, coupling, kind, shift=0.0):  # pragma: no cover - numba
    """Objective and raw gradient ``(value, d/db (n,), d/dJ (E,))`` from the weighted
    patterns ``pat = (codes, weights, poff)`` (node ``i``'s own spin at bit 0, its
    neighbours after; ``shift``: see :func:`_phi`).

    Each node's terms are reduced as soon as they are in: the slots in CSR order, the
    nodes in order, so every sum adds what :func:`_reduce` adds in its order (the same
    bits), without a kernel of its own for a cold first call to compile."""
    codes, weights, poff = pat
    indptr, eids = g.indptr, g.edge_ids
    n = bias.shape[0]
    value, gb, gslot = np.empty(n), np.empty(n), np.empty(eids.shape[0])
    gj = np.empty(coupling.shape[0])
    for e in range(coupling.shape[0]):
        gj[e] = 0.0
    total = 0.0
    for i in range(n):
        _node_terms(i, codes, weights, poff, bias, coupling, indptr, eids, kind, value, gb,
                    gslot, shift)
        total += value[i]
        for p in range(indptr[i], indptr[i + 1]):
            gj[eids[p]] += gslot[p]
    return total, gb, gj


@njit(cache=True, parallel=True)
def pattern_objective_parallel(pat, g, bias, coupling, kind,
                               shift=0.0):  # pragma: no cover - numba
    """:func:`pattern_objective` with nodes spread over the cores (same bits)."""
    codes, weights, poff = pat
    indptr, eids = g.indptr, g.edge_ids
    n = bias.shape[0]
    value, gb, gslot = np.empty(n), np.empty(n), np.empty(eids.shape[0])
    for i in prange(n):
        _node_terms(i, codes, weights, poff, bias, coupling, indptr, eids, kind, value, gb,
                    gslot, shift)
    total, gj = _reduce(value, gslot, eids, coupling.shape[0])
    return total, gb, gj


@njit(cache=True)
def mpf_max_exponent(pat, g, bias, coupling):  # pragma: no cover - numba
    """The largest MPF exponent ``-u = -x_i h_i`` over the stored patterns (the shift that
    makes :func:`pattern_objective` finite); ``-inf`` if there are none."""
    codes, _, poff = pat
    indptr, eids = g.indptr, g.edge_ids
    best = -np.inf
    for i in range(bias.shape[0]):
        lo, d = indptr[i], indptr[i + 1] - indptr[i]
        for k in range(poff[i], poff[i + 1]):
            xi, h = _pattern_field(codes[k], i, lo, d, bias, coupling, eids)
            best = max(best, -xi * h)
    return best


@njit(cache=True)
def mpf_max_exponent_rows(x, g, bias, coupling):  # pragma: no cover - numba
    """:func:`mpf_max_exponent` over the rows of ``x`` (for
    :func:`local_objective_gradient`)."""
    indptr, indices, eids = g.indptr, g.indices, g.edge_ids
    best = -np.inf
    xs = np.empty(x.shape[1])
    for mu in range(x.shape[0]):
        for i in range(x.shape[1]):
            xs[i] = x[mu, i]
        for i in range(x.shape[1]):
            best = max(best, -xs[i] * _row_field(xs, i, bias, coupling, indptr, indices, eids))
    return best


@njit(cache=True)
def transpose(x):  # pragma: no cover - numba
    """``x.T`` as a C-contiguous copy, in cache-sized tiles (numpy's strided copy of an
    int8 (20000, 256) array takes 30x longer)."""
    N, n = x.shape
    out = np.empty((n, N), dtype=x.dtype)
    B = 64
    for r0 in range(0, N, B):
        for c0 in range(0, n, B):
            r1 = r0 + B if r0 + B < N else N  # not min(): one overload fewer to compile
            c1 = c0 + B if c0 + B < n else n
            for r in range(r0, r1):
                for c in range(c0, c1):
                    out[c, r] = x[r, c]
    return out


@njit(cache=True)
def data_moments(x, g):  # pragma: no cover - numba
    """Integer sums ``sum_mu x_i`` (n,) and ``sum_mu x_i x_j`` (E,) in one pass over rows."""
    edges = g.edges
    N, n = x.shape
    s1 = np.empty(n, dtype=np.int64)
    s2 = np.empty(edges.shape[0], dtype=np.int64)
    for i in range(n):  # not np.zeros: one allocation kernel for a cold first call
        s1[i] = 0
    for e in range(edges.shape[0]):
        s2[e] = 0
    for mu in range(N):
        for i in range(n):
            s1[i] += x[mu, i]
        for e in range(edges.shape[0]):
            s2[e] += x[mu, edges[e, 0]] * x[mu, edges[e, 1]]
    return s1, s2
