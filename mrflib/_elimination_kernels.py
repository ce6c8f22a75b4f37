"""Numba kernels of the factor-graph elimination engine (:mod:`mrflib.elimination`).

``logsumexp_reduce`` sums the exponentials of a C-contiguous table over any set of its
axes in two streaming passes (the maximum of each output cell, then the shifted sum), with
no temporary as large as the table: numpy's ``log(sum(exp(a - max)))`` allocates two. The
input is walked in memory order; an odometer over the leading axes tracks the output cell,
the last axis is an inner loop with its own output stride. The plain numpy twin is
:func:`mrflib._factor_ops.logsumexp_numpy`; the tests compare both.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


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
    mx = np.full(out.shape[0], -np.inf)
    _pass(flat, shape, ostride, mx, out, False)
    for o in range(out.shape[0]):
        if not np.isfinite(mx[o]):
            mx[o] = 0.0
        out[o] = 0.0
    _pass(flat, shape, ostride, mx, out, True)
    for o in range(out.shape[0]):
        out[o] = math.log(out[o]) + mx[o] if out[o] > 0.0 else -np.inf


# --------------------------------------------------------------------------- orders
@njit(cache=True)
def _fill_key(adj, u, buf):  # pragma: no cover - compiled
    """Pairs of neighbours of ``u`` not yet adjacent (the fill edges of eliminating ``u``)."""
    n = adj.shape[0]
    k = 0
    for w in range(n):
        if adj[u, w]:
            buf[k] = w
            k += 1
    missing = 0
    for i in range(k):
        for j in range(k):
            if i != j and adj[buf[i], buf[j]] == 0:
                missing += 1
    return missing // 2


@njit(cache=True)
def greedy_dense(adj, free, fill, limit, order):  # pragma: no cover - compiled
    """Greedy elimination of the nodes ``free`` on the dense adjacency ``adj`` (changed in
    place: pass a copy): repeatedly the node of smallest key (its degree, or with ``fill``
    its number of fill edges), ties to the smallest index. Writes ``order`` and returns its
    length, or ``-1`` once a clique would exceed ``limit`` nodes."""
    n = adj.shape[0]
    deg = np.zeros(n, dtype=np.int64)
    key = np.zeros(n, dtype=np.int64)
    done = np.ones(n, dtype=np.bool_)
    nb = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    mark = np.zeros(n, dtype=np.bool_)
    m = 0
    for v in range(n):
        for u in range(n):
            deg[v] += adj[v, u]
        if free[v]:
            done[v] = False
            m += 1
            key[v] = _fill_key(adj, v, buf) if fill else deg[v]
    for step in range(m):
        v = -1
        for u in range(n):
            if not done[u] and (v < 0 or key[u] < key[v]):
                v = u
        k = 0
        for u in range(n):
            if adj[v, u]:
                nb[k] = u
                k += 1
        if k + 1 > limit:
            return -1
        done[v] = True
        order[step] = v
        for i in range(k):
            adj[nb[i], v] = 0
            adj[v, nb[i]] = 0
            deg[nb[i]] -= 1
        for i in range(k):
            for j in range(k):
                if i != j and adj[nb[i], nb[j]] == 0:
                    adj[nb[i], nb[j]] = 1
                    deg[nb[i]] += 1
        t = 0
        for i in range(k):
            a = nb[i]
            if not mark[a]:
                mark[a] = True
                touched[t] = a
                t += 1
            if fill:
                for b in range(n):
                    if adj[a, b] and not mark[b] and not done[b]:
                        mark[b] = True
                        touched[t] = b
                        t += 1
        for i in range(t):
            u = touched[i]
            mark[u] = False
            key[u] = _fill_key(adj, u, buf) if fill else deg[u]
    return m


@njit(cache=True)
def clique_sizes_dense(adj, order, limit, sizes):  # pragma: no cover - compiled
    """Eliminate ``order`` on the dense adjacency ``adj`` (changed in place): ``sizes[t]``
    is the number of neighbours of ``order[t]`` when it goes. Returns the number of steps
    done; it stops early at the first clique of more than ``limit`` nodes (its size is
    then ``sizes`` at the returned index)."""
    n = adj.shape[0]
    nb = np.empty(n, dtype=np.int64)
    for t in range(order.shape[0]):
        v = order[t]
        k = 0
        for u in range(n):
            if adj[v, u]:
                nb[k] = u
                k += 1
        sizes[t] = k
        if k + 1 > limit:
            return t
        for i in range(k):
            adj[nb[i], v] = 0
            adj[v, nb[i]] = 0
        for i in range(k):
            for j in range(k):
                if i != j:
                    adj[nb[i], nb[j]] = 1
    return order.shape[0]
