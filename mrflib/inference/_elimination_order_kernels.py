"""Numba kernels of the elimination orders (:mod:`mrflib.inference.elimination_order`,
:mod:`mrflib.inference.junction_tree`), on a dense boolean adjacency matrix.

``greedy_keyed`` runs a greedy elimination (min-fill, weighted min-fill, min-weight or
min-degree), updating only the keys of the nodes a step touches; ``order_cost`` scores a
given order (its largest clique and total table entries); ``clique_sizes_dense`` and
``scopes_dense`` list the cliques an order makes. The graph kernels change the matrix in
place; callers pass a copy they can lose. Table kernels are in
:mod:`mrflib.inference._elimination_kernels`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


# --------------------------------------------------------------------------- orders
@njit(cache=True)
def _touched(adj, nb, k, fill, done, mark, touched):  # pragma: no cover - compiled
    """The nodes whose key changes when a node with neighbours ``nb[:k]`` goes: those
    neighbours, and with ``fill`` their own live neighbours, into ``touched`` (marked in
    ``mark``); returns how many."""
    t = 0
    for i in range(k):
        a = nb[i]
        if not mark[a]:
            mark[a] = True
            touched[t] = a
            t += 1
        if fill:
            for b in range(adj.shape[0]):
                if adj[a, b] and not mark[b] and not done[b]:
                    mark[b] = True
                    touched[t] = b
                    t += 1
    return t


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


@njit(cache=True)
def scopes_dense(adj, order, pos, scope, sizes):  # pragma: no cover - compiled
    """Eliminate ``order`` on the dense adjacency ``adj`` (changed in place): row ``t`` of
    ``scope`` gets ``order[t]`` then its neighbours when it goes, sorted by elimination
    position ``pos``; ``sizes[t]`` is that clique's size. ``scope`` needs a column per node
    of the largest clique (the order's width plus one)."""
    n = adj.shape[0]
    for t in range(order.shape[0]):
        v = order[t]
        scope[t, 0] = v
        k = 0
        for u in range(n):
            if adj[v, u]:
                # insertion by elimination position
                j = k
                while j > 0 and pos[scope[t, j]] > pos[u]:
                    scope[t, j + 1] = scope[t, j]
                    j -= 1
                scope[t, j + 1] = u
                k += 1
        sizes[t] = k + 1
        for i in range(1, k + 1):
            a = scope[t, i]
            adj[a, v] = 0
            adj[v, a] = 0
        for i in range(1, k + 1):
            for j in range(1, k + 1):
                if i != j:
                    adj[scope[t, i], scope[t, j]] = 1


# --------------------------------------------------------------------------- greedy keys
@njit(cache=True)
def _row(adj, u, buf):  # pragma: no cover - compiled
    """The neighbours of ``u`` (increasing) into ``buf``; returns how many."""
    k = 0
    for w in range(adj.shape[0]):
        if adj[u, w]:
            buf[k] = w
            k += 1
    return k


@njit(cache=True)
def _greedy_key(adj, u, crit, logc, card, buf):  # pragma: no cover - compiled
    """The key of ``u`` by criterion ``crit`` (0 min-fill, 1 weighted-min-fill,
    2 min-weight, 3 min-degree), summed in increasing neighbour order as
    :func:`mrflib.inference.elimination_order.greedy_key` does."""
    k = _row(adj, u, buf)
    if crit == 3:
        return float(k)
    if crit == 2:
        s = 0.0
        for i in range(k):
            s += logc[buf[i]]
        return logc[u] + s
    if crit == 0:
        missing = 0
        for i in range(k):
            for j in range(k):
                if i != j and not adj[buf[i], buf[j]]:
                    missing += 1
        return float(missing // 2)
    total = 0.0
    for i in range(k):
        total += card[buf[i]]
    out = 0.0
    for i in range(k):
        a = buf[i]
        inside = 0.0
        for j in range(k):
            if adj[a, buf[j]]:
                inside += card[buf[j]]
        out += card[a] * (total - card[a] - inside)
    return out / 2


@njit(cache=True, inline="always")
def _eliminate_node(adj, v, nb, k):  # pragma: no cover - compiled
    """Eliminate ``v`` from the dense adjacency ``adj``: its ``k`` neighbours ``nb[:k]``
    forget it and become a clique (the fill edges)."""
    for i in range(k):
        adj[nb[i], v] = False
        adj[v, nb[i]] = False
    for i in range(k):
        for j in range(k):
            if i != j:
                adj[nb[i], nb[j]] = True


@njit(cache=True)
def order_cost(adj, order, logc, limit):  # pragma: no cover - compiled
    """Eliminate ``order`` on the dense adjacency ``adj`` (changed in place: pass a copy),
    as :func:`mrflib.inference.elimination_order.order_cliques` does without listing the
    cliques: ``(log largest table, total entries, 0)``, or at the first clique whose log
    size exceeds ``limit``, ``(its log size, 0, its variables)``. A clique's log size is
    its first variable's plus its neighbours' summed by increasing index."""
    nb = np.empty(adj.shape[0], dtype=np.int64)
    biggest = -np.inf
    total = 0.0
    for step in range(order.shape[0]):
        v = order[step]
        k = _row(adj, v, nb)
        rest = 0.0
        for i in range(k):
            rest += logc[nb[i]]
        size = logc[v] + rest
        biggest = max(biggest, size)
        if size > limit + 1e-9:
            return size, 0.0, k + 1
        total += math.exp(size)
        _eliminate_node(adj, v, nb, k)
    return (biggest if order.shape[0] else 0.0), total, 0


@njit(cache=True)
def greedy_keyed(adj, crit, logc, card, limit, max_work, order):  # pragma: no cover
    """Greedy elimination of every node of the dense adjacency ``adj`` (changed in place:
    pass a copy) by the key of :func:`_greedy_key`, ties to the smallest index; a node's
    key is recomputed only when its neighbourhood changed (the eliminated node's
    neighbours, and theirs for the fill criteria). Writes ``order``; returns ``0``, ``-1``
    once a clique's log size exceeds ``limit``, ``-2`` once the fill keys cost more than
    ``max_work`` pair checks."""
    n = adj.shape[0]
    key = np.empty(n)
    done = np.zeros(n, dtype=np.bool_)
    mark = np.zeros(n, dtype=np.bool_)
    nb = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    fill = crit <= 1
    work = 0
    for v in range(n):
        key[v] = _greedy_key(adj, v, crit, logc, card, buf)
    for step in range(n):
        v = np.int64(-1)  # not a literal: _row would compile once more for it
        for u in range(n):
            if not done[u] and (v < 0 or key[u] < key[v]):
                v = u
        k = _row(adj, v, nb)
        size = 0.0
        for i in range(k):
            size += logc[nb[i]]
        if logc[v] + size > limit + 1e-9:
            return -1
        done[v] = True
        order[step] = v
        _eliminate_node(adj, v, nb, k)
        t = _touched(adj, nb, k, fill, done, mark, touched)
        for i in range(t):
            u = touched[i]
            mark[u] = False
            if fill:
                d = _row(adj, u, buf)
                work += d * d
            key[u] = _greedy_key(adj, u, crit, logc, card, buf)
        if work > max_work:
            return -2
    return 0
