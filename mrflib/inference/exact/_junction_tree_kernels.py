"""Numba kernels of the junction-tree engine (:mod:`mrflib.inference.exact.junction_tree`).

Tables are flat ``float64`` arrays of log-values over the ``2^k`` states of a clique
scope ``S_t = (v, N_t)``; bit ``q`` of an index is the spin of ``S_t[q]`` (set means +1),
so the eliminated spin ``v`` is bit 0 and the message ``N_t`` is the index shifted right
by one. A child's message is read through a split lookup table: the index into the
child's scope is ``map[lo + (i & mask)] + map[hi + (i >> L)]`` with ``L = k // 2``.

The tree reaches the kernels as one record ``tree``, the tuple of arrays named by
:data:`TREE` (built by :class:`mrflib.inference.exact.junction_tree.JunctionTree`); the parameters
(``bias``, ``coupling``) and the work arrays stay separate arguments. (A plain tuple:
numba types a ``NamedTuple`` in Python at every call, which an MLE fit would pay at
every step.)

The parameters reach the kernels scaled by ``2^-k`` (``k`` from
:func:`mrflib.models.boltzmann.overflow_exponent`, ``inv = 2^k``): every table and message is then
the
true one times ``2^-k``, and a log-sum-exp multiplies the shifted differences by ``inv``
and the log of the sum by ``1 / inv``. With ``inv = 1`` (every model of ordinary range)
the multiplications are exact and the results are those of the unscaled formulas.

Every kernel has its plain-Python twin in ``kernel.py_func``; the tests compare both.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: The arrays of the ``tree`` record, in order: the elimination ``order``; the scope of
#: step ``t``, ``scope_nodes[scope_ptr[t]:scope_ptr[t + 1]]``; its ``parent`` step (-1:
#: a root); its edges ``edge_id[edge_ptr[t]:edge_ptr[t + 1]]`` with the position
#: ``edge_q`` of their other end in the scope; its children
#: ``children[child_ptr[t]:child_ptr[t + 1]]`` with their split lookup tables at
#: ``maps[child_map[a]:]``; and its message's offset ``msg_off[t]``.
TREE = ("order", "scope_ptr", "scope_nodes", "parent", "edge_ptr", "edge_id", "edge_q",
        "child_ptr", "children", "child_map", "maps", "msg_off")


@njit(cache=True)
def _logaddexp(a: float, b: float, inv: float) -> float:
    """``log(e^a + e^b)`` for log-values scaled by ``1 / inv``."""
    if a >= b:
        return a + np.log1p(np.exp((b - a) * inv)) / inv
    return b + np.log1p(np.exp((a - b) * inv)) / inv


@njit(cache=True)
def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(cache=True)
def _local_table(t, table, k, v, bias, coupling, edge_ptr, edge_id, edge_q):
    """``table[i] = x_v (b_v + Σ_u J_vu x_u)`` over the scope of step ``t``."""
    for j in range(1 << (k - 1)):
        i = j << 1
        h = bias[v]
        for e in range(edge_ptr[t], edge_ptr[t + 1]):
            if (i >> edge_q[e]) & 1:
                h += coupling[edge_id[e]]
            else:
                h -= coupling[edge_id[e]]
        table[i] = -h
        table[i + 1] = h


@njit(cache=True)
def _add_message(table, k, msg, maps, off):
    """``table[i] += msg[index of i in the message's scope]``."""
    L = k // 2
    mask = (1 << L) - 1
    hi = off + (1 << L)
    for i in range(1 << k):
        table[i] += msg[maps[off + (i & mask)] + maps[hi + (i >> L)]]


@njit(cache=True)
def _build_table(t, table, order, scope_ptr, bias, coupling, edge_ptr, edge_id, edge_q,
                 child_ptr, children, child_map, maps, msg_off, msgs):
    """Local potentials of step ``t`` plus the upward messages of its children."""
    k = scope_ptr[t + 1] - scope_ptr[t]
    _local_table(t, table, k, order[t], bias, coupling, edge_ptr, edge_id, edge_q)
    for a in range(child_ptr[t], child_ptr[t + 1]):
        c = children[a]
        kc = scope_ptr[c + 1] - scope_ptr[c] - 1
        _add_message(table, k, msgs[msg_off[c]:msg_off[c] + (1 << kc)], maps, child_map[a])
    return k


@njit(cache=True)
def upward(tree, bias, coupling, msgs, logodds, want_logodds, table, inv):
    """Eliminate the spins in order; return ``log Z`` (sum over the roots' messages),
    all scaled by ``1 / inv``.

    ``msgs[msg_off[t]:]`` receives ``log Σ_{x_v} exp(table_t)`` over ``N_t``; with
    ``want_logodds`` also ``logodds = table_t(x_v=+1) - table_t(x_v=-1)`` for sampling.
    """
    (order, scope_ptr, _, parent, edge_ptr, edge_id, edge_q, child_ptr, children, child_map,
     maps, msg_off) = tree
    logz = 0.0
    for t in range(order.shape[0]):
        k = _build_table(t, table, order, scope_ptr, bias, coupling, edge_ptr, edge_id, edge_q,
                         child_ptr, children, child_map, maps, msg_off, msgs)
        base = msg_off[t]
        for j in range(1 << (k - 1)):
            a = table[2 * j]
            b = table[2 * j + 1]
            msgs[base + j] = _logaddexp(a, b, inv)
            if want_logodds:
                logodds[base + j] = b - a
        if parent[t] < 0:
            logz += msgs[base]
    return logz


@njit(cache=True)
def _belief_moments(t, table, prob, k, v, edge_ptr, edge_id, edge_q, mean, pair, inv):
    """Normalize the clique belief (``table`` in log, ``prob`` linear) and read
    ``<x_v>`` and ``<x_v x_u>`` for the edges of this clique."""
    size = 1 << k
    m = table[0]
    for i in range(size):
        if table[i] > m:
            m = table[i]
    s = 0.0
    for i in range(size):
        e = np.exp((table[i] - m) * inv)
        prob[i] = e
        s += e
    c = m + np.log(s) / inv
    inv = 1.0 / s
    mv = 0.0
    for e in range(edge_ptr[t], edge_ptr[t + 1]):
        pair[edge_id[e]] = 0.0
    for i in range(size):
        table[i] -= c
        p = prob[i] * inv
        prob[i] = p
        if not i & 1:
            p = -p
        mv += p
        for e in range(edge_ptr[t], edge_ptr[t + 1]):
            if (i >> edge_q[e]) & 1:
                pair[edge_id[e]] += p
            else:
                pair[edge_id[e]] -= p
    mean[v] = mv


@njit(cache=True)
def _down_message_linear(table, prob, k, msg, maps, off, mx, acc, inv):
    """Hugin update from the linear belief ``prob``: ``msg <- log Σ_{S \\ N_c} p - msg``.

    Falls back to the log-space :func:`_down_message` when a separator state's
    probability is too small to be summed in linear space (below 1e-250).
    """
    size_c = msg.shape[0]
    L = k // 2
    mask = (1 << L) - 1
    hi = off + (1 << L)
    for j in range(size_c):
        acc[j] = 0.0
    for i in range(1 << k):
        acc[maps[off + (i & mask)] + maps[hi + (i >> L)]] += prob[i]
    for j in range(size_c):
        if acc[j] < 1e-250:
            _down_message(table, k, msg, maps, off, mx, acc, inv)
            return
    for j in range(size_c):
        msg[j] = np.log(acc[j]) / inv - msg[j]


@njit(cache=True)
def _down_message(table, k, msg, maps, off, mx, acc, inv):
    """``msg <- log Σ_{S \\ N_c} exp(table - msg)`` (Hugin update, in place on ``msg``)."""
    size_c = msg.shape[0]
    L = k // 2
    mask = (1 << L) - 1
    hi = off + (1 << L)
    for j in range(size_c):
        mx[j] = -np.inf
        acc[j] = 0.0
    for i in range(1 << k):
        j = maps[off + (i & mask)] + maps[hi + (i >> L)]
        val = table[i] - msg[j]
        if val > mx[j]:
            mx[j] = val
    for i in range(1 << k):
        j = maps[off + (i & mask)] + maps[hi + (i >> L)]
        acc[j] += np.exp((table[i] - msg[j] - mx[j]) * inv)
    for j in range(size_c):
        msg[j] = mx[j] + np.log(acc[j]) / inv


@njit(cache=True)
def downward(tree, bias, coupling, msgs, table, prob, mx, acc, mean, pair, inv):
    """Distribute from the roots; fill ``mean`` (n,) and ``pair`` (E,).

    Needs the upward ``msgs``; each child's slot is overwritten by its downward message.
    """
    (order, scope_ptr, _, parent, edge_ptr, edge_id, edge_q, child_ptr, children, child_map,
     maps, msg_off) = tree
    for t in range(order.shape[0] - 1, -1, -1):
        k = _build_table(t, table, order, scope_ptr, bias, coupling, edge_ptr, edge_id, edge_q,
                         child_ptr, children, child_map, maps, msg_off, msgs)
        if parent[t] >= 0:
            base = msg_off[t]
            for i in range(1 << k):
                table[i] += msgs[base + (i >> 1)]
        _belief_moments(t, table, prob, k, order[t], edge_ptr, edge_id, edge_q, mean, pair,
                        inv)
        for a in range(child_ptr[t], child_ptr[t + 1]):
            c = children[a]
            kc = scope_ptr[c + 1] - scope_ptr[c] - 1
            _down_message_linear(table, prob, k, msgs[msg_off[c]:msg_off[c] + (1 << kc)], maps,
                                 child_map[a], mx, acc, inv)


@njit(cache=True)
def sample(tree, logodds, uniforms, out, inv):
    """Backward sampling: spins in reverse elimination order, each from
    ``P(x_v = +1 | x_{N_t}) = sigmoid(inv * logodds_t[x_{N_t}])``.

    Node-major layout: ``uniforms[t, s]`` decides spin ``order[t]`` of sample ``s`` and
    ``out[v, s]`` receives it, so one node's table and rows stay in cache.
    """
    order, scope_ptr, scope_nodes, _, _, _, _, _, _, _, _, msg_off = tree
    n = order.shape[0]
    m = out.shape[1]
    idx = np.empty(m, dtype=np.int64)
    for t in range(n - 1, -1, -1):
        p0 = scope_ptr[t]
        k = scope_ptr[t + 1] - p0
        v = order[t]
        base = msg_off[t]
        idx[:] = base
        for q in range(1, k):
            row = out[scope_nodes[p0 + q]]
            bit = 1 << (q - 1)
            for s in range(m):
                if row[s] > 0:
                    idx[s] += bit
        u = uniforms[t]
        dest = out[v]
        for s in range(m):
            dest[s] = 1 if u[s] < _sigmoid(logodds[idx[s]] * inv) else -1


@njit(cache=True)
def fill_maps(scope_ptr, scope_pos, parent, children, child_map, maps):
    """Split lookup tables from each parent's scope to each child's message scope.

    Scopes are sorted by elimination position (``scope_pos``), so a merge walk finds
    the rank of every parent-scope spin in the child's message scope (-1 if absent).
    """
    rank = np.empty(64, dtype=np.int64)
    for a in range(children.shape[0]):
        c = children[a]
        p = parent[c]
        p0, kp = scope_ptr[p], scope_ptr[p + 1] - scope_ptr[p]
        c0, kc = scope_ptr[c] + 1, scope_ptr[c + 1] - scope_ptr[c] - 1
        r = 0
        for q in range(kp):
            rank[q] = -1
            if r < kc and scope_pos[c0 + r] == scope_pos[p0 + q]:
                rank[q] = r
                r += 1
        L = kp // 2
        off = child_map[a]
        for lo, nb in ((0, L), (L, kp - L)):
            for x in range(1 << nb):
                val = 0
                for q in range(nb):
                    if rank[lo + q] >= 0 and (x >> q) & 1:
                        val |= 1 << rank[lo + q]
                maps[off + x] = val
            off += 1 << nb


@njit(cache=True)
def edge_positions(scope_ptr, scope_nodes, step, other, out):
    """Position of ``other[e]`` within the scope of step ``step[e]``."""
    for e in range(step.shape[0]):
        t = step[e]
        for q in range(scope_ptr[t], scope_ptr[t + 1]):
            if scope_nodes[q] == other[e]:
                out[e] = q - scope_ptr[t]
                break
