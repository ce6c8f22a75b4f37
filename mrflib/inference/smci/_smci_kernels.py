"""Numba kernels behind :mod:`mrflib.inference.smci` (validated by the public functions there).

Every kernel loops over the samples in order and accumulates in a fixed order, so
results are deterministic. Spins are ``int8`` rows of ``samples``; the graph comes as
one record ``g`` (:class:`mrflib.models.graphs.Structure`: ``indptr``, ``indices``, ``edge_ids``,
``edges``, ``edge_pos``), the parameters as ``bias``, the CSR ``weights`` (the couplings
in ``g.indices`` order) and ``coupling`` (per edge row). The kernels read the record's
fields once; the helpers they call in their loops take the arrays themselves.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._fields import neighbour_fields

#: Below this margin from a pole (``1 + u tanh J`` near 0, ``|tanh a tanh b|`` near 1) the
#: closed forms of the papers lose digits and can divide by zero; there the kernels switch
#: to the equivalent log-cosh forms. Above it the papers' forms are kept (same bits as
#: before) and their rounding error is below ``1e-13``.
SAFE = 2.0**-10
LOG2 = np.log(2.0)


@njit(cache=True)
def logcosh(x):
    """``log cosh x`` without overflow: ``|x| + log1p(exp(-2|x|)) - log 2``."""
    a = abs(x)
    return a + np.log1p(np.exp(-2.0 * a)) - LOG2


@njit(cache=True)
def pair_value(ga, gb, J, ta, tb, tJ):
    """``<x_a x_b>`` of two spins with fields ``ga``, ``gb`` and coupling ``J`` (eq. 15).

    The paper's ``tanh(atanh(t_a t_b) + J) = (u + tanh J) / (1 + u tanh J)``, ``u = t_a t_b``
    (``t = tanh`` of the fields, passed in), while the denominator is at least ``SAFE``;
    else the same value as ``tanh(J + (logcosh(ga + gb) - logcosh(ga - gb)) / 2)``, which
    is finite for every finite input (the denominator reaches 0 once ``tanh J`` rounds to
    1, i.e. ``|J| >~ 19``).
    """
    u = ta * tb
    d = 1.0 + u * tJ
    if d >= SAFE:
        return (u + tJ) / d
    return np.tanh(J + 0.5 * (logcosh(ga + gb) - logcosh(ga - gb)))


@njit(cache=True)
def local_fields_row(s, bias, indptr, indices, weights, out):
    """``out[i] = b_i + sum_j J_ij s_j`` for one configuration ``s`` (eq. 16)."""
    n = bias.shape[0]
    for i in range(n):
        h = bias[i]
        for p in range(indptr[i], indptr[i + 1]):
            h += weights[p] * s[indices[p]]
        out[i] = h


@njit(cache=True)
def local_fields(samples, g, bias, weights):
    """Local fields of every sample, ``(M, n)`` float64 (eq. 16)."""
    indptr, indices = g.indptr, g.indices
    M, n = samples.shape
    out = np.empty((M, n))
    for m in range(M):
        local_fields_row(samples[m], bias, indptr, indices, weights, out[m])
    return out


@njit(cache=True)
def mci_moments(samples, g):
    """Sample averages of ``x_i`` and ``x_i x_j`` (standard MCI)."""
    edges = g.edges
    M, n = samples.shape
    E = edges.shape[0]
    mean = np.zeros(n)
    pair = np.zeros(E)
    for m in range(M):
        s = samples[m]
        for i in range(n):
            mean[i] += s[i]
        for e in range(E):
            pair[e] += s[edges[e, 0]] * s[edges[e, 1]]
    return mean / M, pair / M


@njit(cache=True)
def smci1_tables(g, bias, weights, coupling, use_tab, use_pair):
    """Memo tables of eq. (14)-(17) over the finite set of neighbour configurations.

    ``gamma_i`` depends on the sample only through the ``2^deg(i)`` spin
    configurations of the neighbours of ``i`` (bit ``q`` of the configuration index is
    the ``q``-th neighbour, set for ``+1``). For each node with ``use_tab[i]`` we store
    ``tanh(gamma_i)`` and, for each incident edge ``e = (i, j)``, ``tanh(gamma_{i:j})``
    of eq. (17) (column 0; column 1 holds ``gamma_{i:j}`` itself for the stable form of
    :func:`pair_value`). ``g.edge_pos[e, 0]`` is the position of ``j`` among the neighbours
    of ``i``, ``g.edge_pos[e, 1]`` that of ``i`` among the neighbours of ``j``.
    Edges with ``use_pair[e]`` (and tables at both ends) also get the value of eq. (15)
    for every pair of configurations, indexed ``(cfg_j << deg_i) + cfg_i``.
    Returns ``(node_off, node_tab, edge_off (E, 2), edge_tab, pair_off (E,), pair_tab)``;
    offset -1 means no table (the six arrays are the ``tables`` of :func:`smci1_moments`).
    """
    indptr, edges, edge_pos = g.indptr, g.edges, g.edge_pos
    E = edges.shape[0]
    node_off, node_tab = neighbour_fields(bias, indptr, weights, use_tab)
    for c in range(node_tab.shape[0]):
        node_tab[c] = np.tanh(node_tab[c])
    edge_off = np.full((E, 2), -1, dtype=np.int64)
    esize = 0
    for e in range(E):
        for side in range(2):
            i = edges[e, side]
            if use_tab[i]:
                edge_off[e, side] = esize
                esize += 1 << (indptr[i + 1] - indptr[i])
    edge_tab = np.empty((esize, 2))
    for e in range(E):
        for side in range(2):
            i = edges[e, side]
            if not use_tab[i]:
                continue
            d = indptr[i + 1] - indptr[i]
            qx = edge_pos[e, side]
            for c in range(1 << d):
                h = bias[i]
                for q in range(d):
                    if q != qx:
                        h += weights[indptr[i] + q] * (2.0 * ((c >> q) & 1) - 1.0)
                edge_tab[edge_off[e, side] + c, 0] = np.tanh(h)
                edge_tab[edge_off[e, side] + c, 1] = h
    # eq. (15) for every pair of neighbour configurations of an edge's two ends:
    # (t_a t_b + tanh J) / (1 + t_a t_b tanh J), so a sample costs one lookup per edge
    pair_off = np.full(E, -1, dtype=np.int64)
    psize = 0
    for e in range(E):
        if use_pair[e] and edge_off[e, 0] >= 0 and edge_off[e, 1] >= 0:
            pair_off[e] = psize
            psize += 1 << (indptr[edges[e, 0] + 1] - indptr[edges[e, 0]]
                           + indptr[edges[e, 1] + 1] - indptr[edges[e, 1]])
    pair_tab = np.empty(psize)
    for e in range(E):
        if pair_off[e] < 0:
            continue
        J = coupling[e]
        t = np.tanh(J)
        da = indptr[edges[e, 0] + 1] - indptr[edges[e, 0]]
        db = indptr[edges[e, 1] + 1] - indptr[edges[e, 1]]
        for cb in range(1 << db):
            rb = edge_off[e, 1] + cb
            for ca in range(1 << da):
                ra = edge_off[e, 0] + ca
                pair_tab[pair_off[e] + (cb << da) + ca] = pair_value(
                    edge_tab[ra, 1], edge_tab[rb, 1], J, edge_tab[ra, 0], edge_tab[rb, 0], t)
    return node_off, node_tab, edge_off, edge_tab, pair_off, pair_tab


@njit(cache=True)
def smci1_moments(samples, g, bias, weights, coupling, tables):
    """1-SMCI, eq. (14)-(17) of the GSMCI paper, averaged over samples.

    Nodes with tables (``tables``, from :func:`smci1_tables`) look up ``tanh(gamma_i)``
    and ``tanh(gamma_{i:j})`` by the configuration of their neighbours; the others call
    tanh directly. Eq. (15) uses
    ``tanh(atanh(t_a t_b) + J) = (t_a t_b + tanh J) / (1 + t_a t_b tanh J)``.
    """
    indptr, indices, edges = g.indptr, g.indices, g.edges
    node_off, node_tab, edge_off, edge_tab, pair_off, pair_tab = tables
    M, n = samples.shape
    E = edges.shape[0]
    mean = np.zeros(n)
    pair = np.zeros(E)
    gam = np.empty(n)
    cfg = np.empty(n, dtype=np.int64)
    tJ = np.tanh(coupling)
    for m in range(M):
        s = samples[m]
        for i in range(n):
            if node_off[i] >= 0:
                c = 0
                for p in range(indptr[i], indptr[i + 1]):  # branch-free: bit set for +1
                    c |= ((s[indices[p]] + 1) >> 1) << (p - indptr[i])
                cfg[i] = c
                mean[i] += node_tab[node_off[i] + c]
            else:
                h = bias[i]
                for p in range(indptr[i], indptr[i + 1]):
                    h += weights[p] * s[indices[p]]
                gam[i] = h
                mean[i] += np.tanh(h)
        for e in range(E):
            i = edges[e, 0]
            j = edges[e, 1]
            if pair_off[e] >= 0:
                pair[e] += pair_tab[pair_off[e] + (cfg[j] << (indptr[i + 1] - indptr[i]))
                                    + cfg[i]]
                continue
            if edge_off[e, 0] >= 0:
                ga = edge_tab[edge_off[e, 0] + cfg[i], 1]
                ta = edge_tab[edge_off[e, 0] + cfg[i], 0]
            else:
                ga = gam[i] - coupling[e] * s[j]
                ta = np.tanh(ga)
            if edge_off[e, 1] >= 0:
                gb = edge_tab[edge_off[e, 1] + cfg[j], 1]
                tb = edge_tab[edge_off[e, 1] + cfg[j], 0]
            else:
                gb = gam[j] - coupling[e] * s[i]
                tb = np.tanh(gb)
            pair[e] += pair_value(ga, gb, coupling[e], ta, tb, tJ[e])
    return mean / M, pair / M


@njit(cache=True)
def _s2_node_term(bk, w, tw):
    """One term of the sum in eq. (24): ``atanh(tanh beta_k tanh w_{i,k})`` (``tw = tanh w``).

    Near ``|tanh beta_k tanh w| = 1`` the equal ``(logcosh(beta_k + w) - logcosh(beta_k - w))
    / 2`` is used (summing ``x_k`` out of ``exp(x_k (beta_k + w x_i))``).
    """
    p = np.tanh(bk) * tw
    if abs(p) <= 1.0 - SAFE:
        return np.arctanh(p)
    return 0.5 * (logcosh(bk + w) - logcosh(bk - w))


@njit(cache=True)
def _s2_edge_terms_stable(bk, wi, wj):
    """The k-terms of :func:`_s2_edge_terms` from ``c(a, b) = logcosh(beta_k + a wi + b wj)``:
    ``x_i``, ``x_j`` and ``x_i x_j`` components of ``log 2cosh(beta_k + wi x_i + wj x_j)``."""
    cpp = logcosh(bk + wi + wj)
    cpm = logcosh(bk + wi - wj)
    cmp_ = logcosh(bk - wi + wj)
    cmm = logcosh(bk - wi - wj)
    return (0.25 * (cpp + cpm - cmp_ - cmm), 0.25 * (cpp - cpm + cmp_ - cmm),
            0.25 * (cpp - cpm - cmp_ + cmm))


@njit(cache=True)
def _s2_edge_terms(bk, wi, wj, ti, tj, tpp, tmm):
    """One k-term of eq. (25) for xi_{i:j}, of eq. (25) with i <-> j for xi_{j:i}, and of
    eq. (26) for omega_{i,j}; ``ti = tanh w_ik``, ``tj = tanh w_jk``,
    ``tpp = tanh^2(w_ik + w_jk)``, ``tmm = tanh^2(w_ik - w_jk)``.

    The papers' forms while every atanh argument and every ``1 - tanh^2 tanh^2`` stays
    ``SAFE`` away from its pole; else :func:`_s2_edge_terms_stable` (the same values).
    """
    tb = np.tanh(bk)
    a1 = tb * ti
    a2 = tb * tj
    a3 = ti * tj
    n1 = 1.0 - np.tanh(bk + wi) ** 2 * tj * tj
    d1 = 1.0 - np.tanh(bk - wi) ** 2 * tj * tj
    n2 = 1.0 - np.tanh(bk + wj) ** 2 * ti * ti
    d2 = 1.0 - np.tanh(bk - wj) ** 2 * ti * ti
    n3 = 1.0 - tpp * tb * tb
    d3 = 1.0 - tmm * tb * tb
    if (max(abs(a1), abs(a2), abs(a3)) > 1.0 - SAFE
            or min(min(n1, d1), min(n2, d2), min(n3, d3)) < SAFE):
        return _s2_edge_terms_stable(bk, wi, wj)
    xij = np.arctanh(a1) + 0.25 * np.log(n1 / d1)
    xji = np.arctanh(a2) + 0.25 * np.log(n2 / d2)
    om = np.arctanh(a3) + 0.25 * np.log(n3 / d3)
    return xij, xji, om


@njit(cache=True)
def _field_excluding(c, k, bias, indptr, indices, weights, a, b):
    """``b_k + sum_l w_kl x_l`` over neighbours ``l`` of ``k`` other than ``a`` and ``b``,
    with the neighbour spins read from the bits of configuration index ``c``."""
    h = bias[k]
    for q in range(indptr[k + 1] - indptr[k]):
        p = indptr[k] + q
        l = indices[p]
        if l != a and l != b:
            h += weights[p] * (2.0 * ((c >> q) & 1) - 1.0)
    return h


@njit(cache=True)
def s2_tables(g, bias, weights, sets, use_tab):
    """Memo tables of the k-terms of eq. (24)-(26) by the configuration of k's neighbours.

    ``beta_k`` of eq. (19) for ``k`` in the independent set (``sets``, from
    :func:`s2_structure`) depends on the sample only through the spins of the neighbours
    of ``k`` other than the target, so each k-term takes at most ``2^deg(k)`` values.
    Returns ``(noff, ntab, eoff, etab)``; offsets are -1 where ``use_tab[k]`` is false.
    """
    indptr, indices, edges = g.indptr, g.indices, g.edges
    nptr, nk, nw, eptr, ek, ewi, ewj = sets
    n = bias.shape[0]
    E = edges.shape[0]
    noff = np.full(nk.shape[0], -1, dtype=np.int64)
    eoff = np.full(ek.shape[0], -1, dtype=np.int64)
    size = 0
    for p in range(nk.shape[0]):
        k = nk[p]
        if use_tab[k]:
            noff[p] = size
            size += 1 << (indptr[k + 1] - indptr[k])
    ntab = np.empty(size)
    size = 0
    for p in range(ek.shape[0]):
        k = ek[p]
        if use_tab[k]:
            eoff[p] = size
            size += 1 << (indptr[k + 1] - indptr[k])
    etab = np.empty((size, 3))
    for i in range(n):
        for p in range(nptr[i], nptr[i + 1]):
            if noff[p] < 0:
                continue
            k = nk[p]
            tw = np.tanh(nw[p])
            for c in range(1 << (indptr[k + 1] - indptr[k])):
                bk = _field_excluding(c, k, bias, indptr, indices, weights, i, i)
                ntab[noff[p] + c] = _s2_node_term(bk, nw[p], tw)
    for e in range(E):
        i = edges[e, 0]
        j = edges[e, 1]
        for p in range(eptr[e], eptr[e + 1]):
            if eoff[p] < 0:
                continue
            k = ek[p]
            wi = ewi[p]
            wj = ewj[p]
            ti = np.tanh(wi)
            tj = np.tanh(wj)
            tpp = np.tanh(wi + wj) ** 2
            tmm = np.tanh(wi - wj) ** 2
            for c in range(1 << (indptr[k + 1] - indptr[k])):
                bk = _field_excluding(c, k, bias, indptr, indices, weights, i, j)
                a, b, o = _s2_edge_terms(bk, wi, wj, ti, tj, tpp, tmm)
                etab[eoff[p] + c, 0] = a
                etab[eoff[p] + c, 1] = b
                etab[eoff[p] + c, 2] = o
    return noff, ntab, eoff, etab


@njit(cache=True)
def s2_moments(samples, g, bias, weights, coupling, sets, tables):
    """s2-SMCI, eq. (22)-(26) of the GSMCI paper, averaged over samples.

    ``sets = (nptr, nk, nw, eptr, ek, ewi, ewj)`` (:func:`s2_structure`): node target
    ``i`` has independent set ``nk[nptr[i]:nptr[i+1]]`` with couplings ``nw``
    (``w_{i,k}``); edge target ``e = (i, j)`` has ``ek[eptr[e]:eptr[e+1]]`` with
    couplings ``ewi`` (``w_{i,k}``) and ``ewj`` (``w_{j,k}``, zero if not adjacent).
    The fields ``beta`` of eq. (19) are the full local fields minus the couplings into
    the sum region. k-terms come from ``tables`` (:func:`s2_tables`) where available.
    """
    indptr, indices, edges = g.indptr, g.indices, g.edges
    nptr, nk, nw, eptr, ek, ewi, ewj = sets
    noff, ntab, eoff, etab = tables
    M, n = samples.shape
    E = edges.shape[0]
    mean = np.zeros(n)
    pair = np.zeros(E)
    gam = np.empty(n)
    cfg = np.zeros(n, dtype=np.int64)
    tJ = np.tanh(coupling)
    for m in range(M):
        s = samples[m]
        for i in range(n):
            h = bias[i]
            c = 0
            for p in range(indptr[i], indptr[i + 1]):
                sp = s[indices[p]]
                h += weights[p] * sp
                if sp > 0:
                    c |= 1 << (p - indptr[i])
            gam[i] = h
            cfg[i] = c
        # eq. (22), (24)
        for i in range(n):
            xi = gam[i]
            for p in range(nptr[i], nptr[i + 1]):
                k = nk[p]
                xi -= nw[p] * s[k]
                if noff[p] >= 0:
                    xi += ntab[noff[p] + cfg[k]]
                else:
                    xi += _s2_node_term(gam[k] - nw[p] * s[i], nw[p], np.tanh(nw[p]))
            mean[i] += np.tanh(xi)
        # eq. (23), (25), (26)
        for e in range(E):
            i = edges[e, 0]
            j = edges[e, 1]
            J = coupling[e]
            si = s[i]
            sj = s[j]
            xij = gam[i] - J * sj
            xji = gam[j] - J * si
            om = J
            for p in range(eptr[e], eptr[e + 1]):
                k = ek[p]
                wi = ewi[p]
                wj = ewj[p]
                xij -= wi * s[k]
                xji -= wj * s[k]
                if eoff[p] >= 0:
                    r = eoff[p] + cfg[k]
                    xij += etab[r, 0]
                    xji += etab[r, 1]
                    om += etab[r, 2]
                else:
                    a, b, o = _s2_edge_terms(
                        gam[k] - wi * si - wj * sj, wi, wj, np.tanh(wi), np.tanh(wj),
                        np.tanh(wi + wj) ** 2, np.tanh(wi - wj) ** 2)
                    xij += a
                    xji += b
                    om += o
            t = tJ[e] if eptr[e] == eptr[e + 1] else np.tanh(om)
            pair[e] += pair_value(xij, xji, om, np.tanh(xij), np.tanh(xji), t)
    return mean / M, pair / M


@njit(cache=True)
def _walk_reset(x, JA, H, L, Eh):
    """Recompute internal fields ``L = JA x``, ``0.5 x JA x`` and ``Eh_u = H_u . x``."""
    a = x.shape[0]
    fixed = 0.0
    for c in range(a):
        v = 0.0
        for d in range(a):
            v += JA[c, d] * x[d]
        L[c] = v
        fixed += 0.5 * v * x[c]
    for u in range(H.shape[0]):
        v = 0.0
        for c in range(a):
            v += H[u, c] * x[c]
        Eh[u] = v
    return fixed


@njit(cache=True)
def region_expectations(JA, H, in_target):
    """``rho_u = sum_x f(x) w_u(x) / sum_x w_u(x)``, ``w_u(x) = exp(x.JA.x/2 + H_u . x)``.

    Exact sum over the ``2^a`` configurations of a sum region (eq. 8-9, 13 of the GSMCI
    paper): ``JA`` (a, a) holds the couplings inside the region, ``H`` (U, a) the fields
    on it (biases plus couplings from the boundary) for each distinct boundary
    configuration, and ``f(x) = prod of x_c over in_target``. The configurations are
    visited in Gray-code order (one spin flip per step, energies updated in ``O(a + U)``
    and recomputed from scratch every 1024 steps); a first pass finds the largest
    log-weight of each ``u`` so that the second pass exponentiates without overflow.
    """
    a = JA.shape[0]
    U = H.shape[0]
    S = 1 << a
    x = -np.ones(a)
    L = np.empty(a)
    Eh = np.empty(U)
    mx = np.full(U, -np.inf)
    num = np.zeros(U)
    den = np.zeros(U)
    f0 = 1.0
    for c in range(a):
        if in_target[c]:
            f0 = -f0
    for sweep in range(2):
        for c in range(a):
            x[c] = -1.0
        f = f0
        fixed = _walk_reset(x, JA, H, L, Eh)
        for r in range(S):
            if r > 0:
                c = 0
                while not (r >> c) & 1:
                    c += 1
                xc = x[c]
                fixed -= 2.0 * xc * L[c]
                for d in range(a):
                    L[d] -= 2.0 * xc * JA[d, c]
                for u in range(U):
                    Eh[u] -= 2.0 * xc * H[u, c]
                x[c] = -xc
                if in_target[c]:
                    f = -f
                if (r & 1023) == 0:
                    fixed = _walk_reset(x, JA, H, L, Eh)
            if sweep == 0:
                for u in range(U):
                    v = fixed + Eh[u]
                    if v > mx[u]:
                        mx[u] = v
            else:
                for u in range(U):
                    w = np.exp(fixed + Eh[u] - mx[u])
                    den[u] += w
                    num[u] += f * w
    return num / den


@njit(cache=True)
def ais_steps(g, bias, weights, coupling, betas, x, logw, u):
    """Annealed importance sampling steps ``k = 1 .. len(betas) - 1`` for every chain.

    At step ``k`` each chain (row of ``x``, updated in place) adds
    ``(beta_k - beta_{k-1}) log f(x)`` to ``logw`` (``log f`` the model's log-weight) and
    makes one sequential Gibbs sweep at ``beta_k`` with the uniforms ``u[k - 1]``.
    """
    indptr, indices, edges = g.indptr, g.indices, g.edges
    M, n = x.shape
    E = edges.shape[0]
    for k in range(1, betas.shape[0]):
        bk = betas[k]
        db = betas[k] - betas[k - 1]
        for m in range(M):
            s = x[m]
            e_val = 0.0
            for i in range(n):
                e_val += bias[i] * s[i]
            for e in range(E):
                e_val += coupling[e] * s[edges[e, 0]] * s[edges[e, 1]]
            logw[m] += db * e_val
            for i in range(n):
                h = bias[i]
                for p in range(indptr[i], indptr[i + 1]):
                    h += weights[p] * s[indices[p]]
                if u[k - 1, m, i] * (1.0 + np.exp(-2.0 * bk * h)) < 1.0:
                    s[i] = 1
                else:
                    s[i] = -1


@njit(cache=True)
def _independent_set_kernel(cand, nc, indptr, indices, inU, W, out):
    """Algorithm 1 on the candidates ``cand[:nc]`` (sorted, marked in ``inU``); the chosen
    nodes are written to ``out`` (ascending) and their number returned. Min degree in U;
    ties of positive degree by largest ``W``, then smallest label; ``inU`` ends all False."""
    left = nc
    cnt = 0
    while left > 0:
        best = -1
        bdeg = 1 << 62
        bW = -1.0
        for a in range(nc):
            j = cand[a]
            if not inU[j]:
                continue
            d = 0
            for p in range(indptr[j], indptr[j + 1]):
                if inU[indices[p]]:
                    d += 1
            if d < bdeg or (d == bdeg and d > 0 and W[j] > bW):
                best = j
                bdeg = d
                bW = W[j]
        out[cnt] = best
        cnt += 1
        inU[best] = False
        left -= 1
        for p in range(indptr[best], indptr[best + 1]):
            k = indices[p]
            if inU[k]:
                inU[k] = False
                left -= 1
    out[:cnt].sort()
    return cnt


@njit(cache=True)
def s2_structure(g, weights):
    """Independent sets ``I_1(T)`` (Algorithm 1) of every node and edge target, flattened.

    Returns ``sets = (nptr, nk, nw, eptr, ek, ewi, ewj)`` as used by :func:`s2_moments`.
    """
    indptr, indices, edges = g.indptr, g.indices, g.edges
    n = indptr.shape[0] - 1
    E = edges.shape[0]
    inU = np.zeros(n, dtype=np.bool_)
    W = np.zeros(n)
    wi_of = np.zeros(n)
    wj_of = np.zeros(n)
    cand = np.empty(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    nptr = np.zeros(n + 1, dtype=np.int64)
    nk = np.empty(indptr[n], dtype=np.int64)
    nw = np.empty(indptr[n])
    for i in range(n):
        nc = 0
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            cand[nc] = k
            nc += 1
            inU[k] = True
            W[k] = abs(weights[p])
            wi_of[k] = weights[p]
        cnt = _independent_set_kernel(cand, nc, indptr, indices, inU, W, chosen)
        for a in range(cnt):
            nk[nptr[i] + a] = chosen[a]
            nw[nptr[i] + a] = wi_of[chosen[a]]
        nptr[i + 1] = nptr[i] + cnt
        for a in range(nc):
            W[cand[a]] = 0.0
            wi_of[cand[a]] = 0.0
    cap = 0
    for e in range(E):
        cap += indptr[edges[e, 0] + 1] - indptr[edges[e, 0]]
        cap += indptr[edges[e, 1] + 1] - indptr[edges[e, 1]]
    eptr = np.zeros(E + 1, dtype=np.int64)
    ek = np.empty(cap, dtype=np.int64)
    ewi = np.empty(cap)
    ewj = np.empty(cap)
    for e in range(E):
        i = edges[e, 0]
        j = edges[e, 1]
        nc = 0
        for t in range(2):
            v = i if t == 0 else j
            for p in range(indptr[v], indptr[v + 1]):
                k = indices[p]
                if k == i or k == j:
                    continue
                if not inU[k]:
                    inU[k] = True
                    cand[nc] = k
                    nc += 1
                W[k] += abs(weights[p])
                if t == 0:
                    wi_of[k] = weights[p]
                else:
                    wj_of[k] = weights[p]
        cand[:nc].sort()
        cnt = _independent_set_kernel(cand, nc, indptr, indices, inU, W, chosen)
        for a in range(cnt):
            k = chosen[a]
            ek[eptr[e] + a] = k
            ewi[eptr[e] + a] = wi_of[k]
            ewj[eptr[e] + a] = wj_of[k]
        eptr[e + 1] = eptr[e] + cnt
        for a in range(nc):
            W[cand[a]] = 0.0
            wi_of[cand[a]] = 0.0
            wj_of[cand[a]] = 0.0
    m = eptr[E]
    return (nptr, nk[:nptr[n]].copy(), nw[:nptr[n]].copy(), eptr, ek[:m].copy(),
            ewi[:m].copy(), ewj[:m].copy())


@njit(cache=True)
def smci1_counts(samples, g, node_off, node_size, pair_off, pair_size):
    """How often each neighbour configuration (per node) and each pair of configurations
    (per edge) occurs in ``samples``: the sufficient statistics of 1-SMCI for a fixed
    sample set (every node and edge must have a table, see :func:`smci1_tables`)."""
    indptr, indices, edges = g.indptr, g.indices, g.edges
    M, n = samples.shape
    E = edges.shape[0]
    node_cnt = np.zeros(node_size)
    pair_cnt = np.zeros(pair_size)
    cfg = np.empty(n, dtype=np.int64)
    for m in range(M):
        s = samples[m]
        for i in range(n):
            c = 0
            for p in range(indptr[i], indptr[i + 1]):
                c |= ((s[indices[p]] + 1) >> 1) << (p - indptr[i])
            cfg[i] = c
            node_cnt[node_off[i] + c] += 1.0
        for e in range(E):
            i = edges[e, 0]
            pair_cnt[pair_off[e] + (cfg[edges[e, 1]] << (indptr[i + 1] - indptr[i]))
                     + cfg[i]] += 1.0
    return node_cnt, pair_cnt


@njit(cache=True)
def smci1_from_counts(g, node_off, node_tab, node_cnt, pair_off, pair_tab, pair_cnt, M):
    """1-SMCI moments as count-weighted sums of the tables: the same averages as
    :func:`smci1_moments`, in ``O(table size)`` instead of ``O(M (n + E))``."""
    indptr, edges = g.indptr, g.edges
    n = indptr.shape[0] - 1
    E = edges.shape[0]
    mean = np.zeros(n)
    pair = np.zeros(E)
    for i in range(n):
        for c in range(node_off[i], node_off[i] + (1 << (indptr[i + 1] - indptr[i]))):
            mean[i] += node_cnt[c] * node_tab[c]
    for e in range(E):
        size = 1 << (indptr[edges[e, 0] + 1] - indptr[edges[e, 0]]
                     + indptr[edges[e, 1] + 1] - indptr[edges[e, 1]])
        for c in range(pair_off[e], pair_off[e] + size):
            pair[e] += pair_cnt[c] * pair_tab[c]
    return mean / M, pair / M
