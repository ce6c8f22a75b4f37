"""Numba kernels of the elimination orders (:mod:`mrflib.inference.exact.elimination_order`),
on an adjacency matrix of bits.

Row ``u`` of the matrix is ``words(n)`` unsigned 64-bit words, bit ``w`` of word ``w // 64``
set when ``u`` and ``w`` are adjacent (:func:`bit_matrix` builds it). A node's neighbours
are listed in increasing order a word at a time, so listing a row of a sparse graph costs
its words and its neighbours, not its ``n`` columns; eliminating a node ORs its row into
its neighbours'.

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
from numba import njit, uint64

from mrflib._support.interpreted import interpret_small

__all__ = ["bit_matrix", "words", "greedy_keyed", "order_cost", "clique_sizes_dense",
           "scopes_dense"]

_ONE = np.uint64(1)
# de Bruijn sequence and table: the index of a word's lowest set bit in one multiply
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_BIT_OF = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _BIT_OF[(((1 << _i) * 0x03F79D71B4CB0A89) % 2**64) >> 58] = _i


def words(n: int) -> int:
    """Words of one row of an ``n``-node bit matrix."""
    return max(1, (n + 63) // 64)


def bit_matrix(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The ``(n, words(n))`` bit matrix with bits ``(rows[i], cols[i])`` set (pairs may
    repeat; give both directions of an undirected edge)."""
    bits = np.zeros((n, words(n)), dtype=np.uint64)
    cols = np.asarray(cols, dtype=np.int64)
    np.bitwise_or.at(bits, (np.asarray(rows, dtype=np.int64), cols >> 6),
                     np.left_shift(_ONE, (cols & 63).astype(np.uint64)))
    return bits


# --------------------------------------------------------------------------- bits
@njit(cache=True, inline="always")
def _has(bits, a, b):  # pragma: no cover - compiled
    """``a`` and ``b`` are adjacent."""
    return (bits[a, b >> 6] >> uint64(b & 63)) & uint64(1) != 0


@njit(cache=True, inline="always")
def _row(bits, u, buf):  # pragma: no cover - compiled
    """The neighbours of ``u`` (increasing) into ``buf``; returns how many."""
    # typed int64 from the start: a literal 0 would have the callers that take the count
    # compile a second time, for the literal
    k = np.int64(0)
    for w in range(bits.shape[1]):
        x = bits[u, w]
        while x != 0:
            low = x & (~x + uint64(1))
            buf[k] = 64 * w + _BIT_OF[(low * _DEBRUIJN) >> uint64(58)]
            k += 1
            x ^= low
    return k


@njit(cache=True, inline="always")
def _eliminate_node(bits, v, nb, k):  # pragma: no cover - compiled
    """Eliminate ``v``: its ``k`` neighbours ``nb[:k]`` (its row) forget it and become a
    clique (the fill edges); its row is cleared."""
    off = ~(uint64(1) << uint64(v & 63))
    for i in range(k):
        a = nb[i]
        for w in range(bits.shape[1]):
            bits[a, w] |= bits[v, w]
        bits[a, v >> 6] &= off
        bits[a, a >> 6] &= ~(uint64(1) << uint64(a & 63))
    for w in range(bits.shape[1]):
        bits[v, w] = 0


# --------------------------------------------------------------------------- orders
@njit(cache=True)
def clique_sizes_dense(bits, order, limit, sizes):  # pragma: no cover - compiled
    """Eliminate ``order`` on the bit matrix ``bits`` (changed in place): ``sizes[t]`` is
    the number of neighbours of ``order[t]`` when it goes. Returns the number of steps
    done; it stops early at the first clique of more than ``limit`` nodes (its size is
    then ``sizes`` at the returned index)."""
    nb = np.empty(bits.shape[0], dtype=np.int64)
    for t in range(order.shape[0]):
        v = order[t]
        k = _row(bits, v, nb)
        sizes[t] = k
        if k + 1 > limit:
            return t
        _eliminate_node(bits, v, nb, k)
    return order.shape[0]


@njit(cache=True)
def scopes_dense(bits, order, pos, scope, sizes):  # pragma: no cover - compiled
    """Eliminate ``order`` on the bit matrix ``bits`` (changed in place): row ``t`` of
    ``scope`` gets ``order[t]`` then its neighbours when it goes, sorted by elimination
    position ``pos``; ``sizes[t]`` is that clique's size. ``scope`` needs a column per node
    of the largest clique (the order's width plus one)."""
    nb = np.empty(bits.shape[0], dtype=np.int64)
    for t in range(order.shape[0]):
        v = order[t]
        scope[t, 0] = v
        k = _row(bits, v, nb)
        for i in range(k):
            u = nb[i]
            j = i  # insertion by elimination position
            while j > 0 and pos[scope[t, j]] > pos[u]:
                scope[t, j + 1] = scope[t, j]
                j -= 1
            scope[t, j + 1] = u
        sizes[t] = k + 1
        _eliminate_node(bits, v, nb, k)


# --------------------------------------------------------------------------- greedy keys
@njit(cache=True)
def _greedy_key(bits, u, k, buf, crit, logc, card):  # pragma: no cover - compiled
    """The key of ``u``, whose ``k`` neighbours are ``buf[:k]``, by criterion ``crit``
    (0 min-fill, 1 weighted-min-fill, 2 min-weight, 3 min-degree), summed in increasing
    neighbour order as :func:`mrflib.inference.exact.elimination_order.greedy_key` does."""
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
                if i != j and not _has(bits, buf[i], buf[j]):
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
            if _has(bits, a, buf[j]):
                inside += card[buf[j]]
        out += card[a] * (total - card[a] - inside)
    return out / 2


@njit(cache=True)
def _touched(bits, nb, k, fill, done, mask, touched):  # pragma: no cover - compiled
    """The nodes whose key changes when a node with neighbours ``nb[:k]`` goes: those
    neighbours, and with ``fill`` their own live neighbours, into ``touched`` (``mask``:
    a row of scratch words); returns how many."""
    if not fill:
        # a loop, not a slice copy: the copy's shape check compiles a formatted exception
        for i in range(k):
            touched[i] = nb[i]
        return k
    mask[:] = 0
    for i in range(k):
        a = nb[i]
        mask[a >> 6] |= uint64(1) << uint64(a & 63)
        for w in range(bits.shape[1]):
            mask[w] |= bits[a, w]
    t = 0
    for w in range(mask.shape[0]):
        x = mask[w]
        while x != 0:
            low = x & (~x + uint64(1))
            b = 64 * w + _BIT_OF[(low * _DEBRUIJN) >> uint64(58)]
            if not done[b]:
                touched[t] = b
                t += 1
            x ^= low
    return t


@njit(cache=True)
def order_cost(bits, order, logc, limit):  # pragma: no cover - compiled
    """Eliminate ``order`` on the bit matrix ``bits`` (changed in place: pass a copy), as
    :func:`mrflib.inference.exact.elimination_order.order_cliques` does without listing the
    cliques: ``(log largest table, total entries, 0)``, or at the first clique whose log
    size exceeds ``limit``, ``(its log size, 0, its variables)``. A clique's log size is
    its first variable's plus its neighbours' summed by increasing index."""
    nb = np.empty(bits.shape[0], dtype=np.int64)
    biggest = -np.inf
    total = 0.0
    for step in range(order.shape[0]):
        v = order[step]
        k = _row(bits, v, nb)
        rest = 0.0
        for i in range(k):
            rest += logc[nb[i]]
        size = logc[v] + rest
        biggest = max(biggest, size)
        if size > limit + 1e-9:
            return size, 0.0, k + 1
        total += math.exp(size)
        _eliminate_node(bits, v, nb, k)
    return (biggest if order.shape[0] else 0.0), total, 0


@njit(cache=True, inline="always")
def _before(key, a, b):  # pragma: no cover - compiled
    """Node ``a`` goes before ``b``: a smaller key, ties to the smaller index."""
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@njit(cache=True)
def _sift_down(heap, pos, key, i, n):  # pragma: no cover - compiled
    """Move node ``heap[i]`` down ``heap[:n]`` to its place, keeping ``pos[node]`` its
    index in the heap."""
    u = heap[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _before(key, heap[c + 1], heap[c]):
            c += 1
        if not _before(key, heap[c], u):
            break
        heap[i] = heap[c]
        pos[heap[i]] = i
        i = c
    heap[i] = u
    pos[u] = i


@njit(cache=True)
def _sift(heap, pos, key, i, n):  # pragma: no cover - compiled
    """Restore the order of the heap ``heap[:n]`` after node ``heap[i]``'s key changed."""
    u = heap[i]
    while i > 0:
        p = (i - 1) // 2
        if not _before(key, u, heap[p]):
            break
        heap[i] = heap[p]
        pos[heap[i]] = i
        i = p
    heap[i] = u
    pos[u] = i
    _sift_down(heap, pos, key, i, n)


@njit(cache=True)
def greedy_keyed(bits, crit, logc, card, limit, max_work, order):  # pragma: no cover
    """Greedy elimination of every node of the bit matrix ``bits`` (changed in place:
    pass a copy) by the key of :func:`_greedy_key`, ties to the smallest index (a binary
    heap on ``(key, index)``); a node's key is recomputed only when its neighbourhood
    changed (the eliminated node's neighbours, and theirs for the fill criteria). Writes
    ``order``; returns ``0``, ``-1`` once a clique's log size exceeds ``limit``, ``-2``
    once the fill keys cost more than ``max_work`` pair checks."""
    n = bits.shape[0]
    key = np.empty(n)
    done = np.zeros(n, dtype=np.bool_)
    mask = np.empty(bits.shape[1], dtype=np.uint64)
    nb = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    heap = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    fill = crit <= 1
    work = 0
    for v in range(n):
        key[v] = _greedy_key(bits, v, _row(bits, v, buf), buf, crit, logc, card)
        heap[v] = v
        pos[v] = v
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(heap, pos, key, i, n)
    live = n
    top = np.int64(0)  # not a literal 0: _sift_down would compile again for the literal
    for step in range(n):
        v = heap[0]
        live -= 1
        if live > 0:
            heap[0] = heap[live]
            _sift_down(heap, pos, key, top, live)
        k = _row(bits, v, nb)
        size = 0.0
        for i in range(k):
            size += logc[nb[i]]
        if logc[v] + size > limit + 1e-9:
            return -1
        done[v] = True
        order[step] = v
        _eliminate_node(bits, v, nb, k)
        t = _touched(bits, nb, k, fill, done, mask, touched)
        for i in range(t):
            u = touched[i]
            d = _row(bits, u, buf)
            if fill:
                work += d * d
            new = _greedy_key(bits, u, d, buf, crit, logc, card)
            if new != key[u]:
                key[u] = new
                _sift(heap, pos, key, pos[u], live)
        if work > max_work:
            return -2
    return 0


# --------------------------------------------------------------------------- sweeps
@njit(cache=True)
def rcm_dense(bits, out):  # pragma: no cover - compiled
    """Reverse Cuthill-McKee order of the (connected) graph of the bit matrix ``bits``
    into ``out``, as :func:`mrflib.inference.exact.elimination_order._rcm` gives it: breadth-first
    from the lowest-numbered node of least degree, each node's unvisited neighbours
    appended by increasing degree (ties by number), the sequence reversed."""
    n = bits.shape[0]
    degree = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    start = 0
    for u in range(n):
        degree[u] = _row(bits, u, buf)
        if degree[u] < degree[start]:
            start = u
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    order[0] = start
    seen[start] = True
    head, tail = 0, 1
    while head < tail:
        k = _row(bits, order[head], buf)
        head += 1
        first = tail
        for i in range(k):
            u = buf[i]
            if seen[u]:
                continue
            seen[u] = True
            j = tail  # insertion by degree, stable: ties keep increasing number
            while j > first and degree[order[j - 1]] > degree[u]:
                order[j] = order[j - 1]
                j -= 1
            order[j] = u
            tail += 1
    for i in range(tail):
        out[i] = order[tail - 1 - i]
    return tail


# the orders' work grows with the square of the variables, not with the arrays: their
# callers weigh them (run_small with n times the bit matrix's words)
interpret_small(globals(), exclude=("greedy_keyed", "rcm_dense", "clique_sizes_dense",
                                    "scopes_dense", "order_cost"))
