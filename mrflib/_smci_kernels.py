"""Numba kernels behind :mod:`mrflib.smci` (validated by the public functions there).

Every kernel loops over the samples in order and accumulates in a fixed order, so
results are deterministic. Spins are ``int8`` rows of ``samples``; the model is
given as CSR adjacency ``(indptr, indices, weights)`` plus ``edges``/``coupling``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def local_fields_row(s, bias, indptr, indices, weights, out):
    """``out[i] = b_i + sum_j J_ij s_j`` for one configuration ``s`` (eq. 16)."""
    n = bias.shape[0]
    for i in range(n):
        g = bias[i]
        for p in range(indptr[i], indptr[i + 1]):
            g += weights[p] * s[indices[p]]
        out[i] = g


@njit(cache=True)
def local_fields(samples, bias, indptr, indices, weights):
    """Local fields of every sample, ``(M, n)`` float64 (eq. 16)."""
    M, n = samples.shape
    out = np.empty((M, n))
    for m in range(M):
        local_fields_row(samples[m], bias, indptr, indices, weights, out[m])
    return out


@njit(cache=True)
def mci_moments(samples, edges):
    """Sample averages of ``x_i`` and ``x_i x_j`` (standard MCI)."""
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
def smci1_tables(bias, indptr, indices, weights, edges, edge_pos, use_tab):
    """Memo tables of eq. (14)-(17) over the finite set of neighbour configurations.

    ``gamma_i`` depends on the sample only through the ``2^deg(i)`` spin
    configurations of the neighbours of ``i`` (bit ``q`` of the configuration index is
    the ``q``-th neighbour, set for ``+1``). For each node with ``use_tab[i]`` we store
    ``tanh(gamma_i)`` and, for each incident edge ``e = (i, j)``, ``tanh(gamma_{i:j})``
    of eq. (17). ``edge_pos[e, 0]`` is the position of ``j`` among the neighbours of
    ``i``, ``edge_pos[e, 1]`` that of ``i`` among the neighbours of ``j``.
    Returns ``(node_off, node_tab, edge_off (E, 2), edge_tab)``; offset -1 means no table.
    """
    n = bias.shape[0]
    E = edges.shape[0]
    node_off = np.full(n, -1, dtype=np.int64)
    edge_off = np.full((E, 2), -1, dtype=np.int64)
    size = 0
    for i in range(n):
        if use_tab[i]:
            node_off[i] = size
            size += 1 << (indptr[i + 1] - indptr[i])
    node_tab = np.empty(size)
    esize = 0
    for e in range(E):
        for side in range(2):
            i = edges[e, side]
            if use_tab[i]:
                edge_off[e, side] = esize
                esize += 1 << (indptr[i + 1] - indptr[i])
    edge_tab = np.empty(esize)
    for i in range(n):
        if not use_tab[i]:
            continue
        d = indptr[i + 1] - indptr[i]
        for c in range(1 << d):
            g = bias[i]
            for q in range(d):
                g += weights[indptr[i] + q] * (2.0 * ((c >> q) & 1) - 1.0)
            node_tab[node_off[i] + c] = np.tanh(g)
    for e in range(E):
        for side in range(2):
            i = edges[e, side]
            if not use_tab[i]:
                continue
            d = indptr[i + 1] - indptr[i]
            qx = edge_pos[e, side]
            for c in range(1 << d):
                g = bias[i]
                for q in range(d):
                    if q != qx:
                        g += weights[indptr[i] + q] * (2.0 * ((c >> q) & 1) - 1.0)
                edge_tab[edge_off[e, side] + c] = np.tanh(g)
    return node_off, node_tab, edge_off, edge_tab


@njit(cache=True)
def smci1_moments(samples, bias, indptr, indices, weights, edges, coupling,
                  node_off, node_tab, edge_off, edge_tab):
    """1-SMCI, eq. (14)-(17) of the GSMCI paper, averaged over samples.

    Nodes with tables (see :func:`smci1_tables`) look up ``tanh(gamma_i)`` and
    ``tanh(gamma_{i:j})`` by the configuration of their neighbours; the others call
    tanh directly. Eq. (15) uses
    ``tanh(atanh(t_a t_b) + J) = (t_a t_b + tanh J) / (1 + t_a t_b tanh J)``.
    """
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
                for p in range(indptr[i], indptr[i + 1]):
                    if s[indices[p]] > 0:
                        c |= 1 << (p - indptr[i])
                cfg[i] = c
                mean[i] += node_tab[node_off[i] + c]
            else:
                g = bias[i]
                for p in range(indptr[i], indptr[i + 1]):
                    g += weights[p] * s[indices[p]]
                gam[i] = g
                mean[i] += np.tanh(g)
        for e in range(E):
            i = edges[e, 0]
            j = edges[e, 1]
            if edge_off[e, 0] >= 0:
                ta = edge_tab[edge_off[e, 0] + cfg[i]]
            else:
                ta = np.tanh(gam[i] - coupling[e] * s[j])
            if edge_off[e, 1] >= 0:
                tb = edge_tab[edge_off[e, 1] + cfg[j]]
            else:
                tb = np.tanh(gam[j] - coupling[e] * s[i])
            u = ta * tb
            t = tJ[e]
            pair[e] += (u + t) / (1.0 + u * t)
    return mean / M, pair / M


@njit(cache=True)
def s2_moments(samples, bias, indptr, indices, weights, edges, coupling,
               nptr, nk, nw, eptr, ek, ewi, ewj):
    """s2-SMCI, eq. (22)-(26) of the GSMCI paper, summed over samples.

    Node target ``i`` has independent set ``nk[nptr[i]:nptr[i+1]]`` with couplings
    ``nw`` (``w_{i,k}``); edge target ``e = (i, j)`` has ``ek[eptr[e]:eptr[e+1]]`` with
    couplings ``ewi`` (``w_{i,k}``) and ``ewj`` (``w_{j,k}``, zero if not adjacent).
    The fields ``beta`` of eq. (19) are the full local fields minus the couplings into
    the sum region.
    """
    M, n = samples.shape
    E = edges.shape[0]
    mean = np.zeros(n)
    pair = np.zeros(E)
    gam = np.empty(n)
    tnw = np.tanh(nw)
    tewi = np.tanh(ewi)
    tewj = np.tanh(ewj)
    tJ = np.tanh(coupling)
    for m in range(M):
        s = samples[m]
        local_fields_row(s, bias, indptr, indices, weights, gam)
        # eq. (22), (24)
        for i in range(n):
            beta_i = gam[i]
            xi = 0.0
            for p in range(nptr[i], nptr[i + 1]):
                k = nk[p]
                beta_i -= nw[p] * s[k]
                beta_k = gam[k] - nw[p] * s[i]
                xi += np.arctanh(np.tanh(beta_k) * tnw[p])
            mean[i] += np.tanh(beta_i + xi)
        # eq. (23), (25), (26)
        for e in range(E):
            i = edges[e, 0]
            j = edges[e, 1]
            J = coupling[e]
            si = s[i]
            sj = s[j]
            beta_i = gam[i] - J * sj
            beta_j = gam[j] - J * si
            xij = 0.0
            xji = 0.0
            om = J
            for p in range(eptr[e], eptr[e + 1]):
                k = ek[p]
                wi = ewi[p]
                wj = ewj[p]
                beta_i -= wi * s[k]
                beta_j -= wj * s[k]
                bk = gam[k] - wi * si - wj * sj
                tb = np.tanh(bk)
                ti = tewi[p]
                tj = tewj[p]
                # eq. (25) for xi_{i:j} and, with i <-> j, xi_{j:i}
                xij += np.arctanh(tb * ti) + 0.25 * np.log(
                    (1.0 - np.tanh(bk + wi) ** 2 * tj * tj)
                    / (1.0 - np.tanh(bk - wi) ** 2 * tj * tj))
                xji += np.arctanh(tb * tj) + 0.25 * np.log(
                    (1.0 - np.tanh(bk + wj) ** 2 * ti * ti)
                    / (1.0 - np.tanh(bk - wj) ** 2 * ti * ti))
                # eq. (26)
                om += np.arctanh(ti * tj) + 0.25 * np.log(
                    (1.0 - np.tanh(wi + wj) ** 2 * tb * tb)
                    / (1.0 - np.tanh(wi - wj) ** 2 * tb * tb))
            u = np.tanh(beta_i + xij) * np.tanh(beta_j + xji)
            if om == J:
                t = tJ[e]
            else:
                t = np.tanh(om)
            pair[e] += (u + t) / (1.0 + u * t)
    return mean / M, pair / M


@njit(cache=True)
def region_expectations(states, fixed, fvals, H):
    """``rho_u = sum_x f(x) exp(fixed(x) + H_u . x) / sum_x exp(fixed(x) + H_u . x)``.

    ``states`` (2^a, a) int8 enumerates the sum region, ``fixed`` its internal
    log-weight, ``fvals`` the target function, ``H`` (U, a) the fields on the region
    from each distinct boundary configuration (eq. 8-9 of the GSMCI paper).
    """
    S, a = states.shape
    U = H.shape[0]
    out = np.empty(U)
    lw = np.empty(S)
    for u in range(U):
        mx = -np.inf
        for r in range(S):
            v = fixed[r]
            for c in range(a):
                v += H[u, c] * states[r, c]
            lw[r] = v
            if v > mx:
                mx = v
        num = 0.0
        den = 0.0
        for r in range(S):
            w = np.exp(lw[r] - mx)
            den += w
            num += fvals[r] * w
        out[u] = num / den
    return out
