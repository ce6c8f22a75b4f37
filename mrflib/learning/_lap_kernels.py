"""Numba kernels of :mod:`mrflib.learning.lap` (LAP, Mizrahi, de Freitas & Tenorio).

Every kernel sits behind a public function of :mod:`mrflib.learning.lap` that validates its
input; the plain-numpy reference paths live there too. Node labels are 0-based.
The graph comes as one record ``g`` (:class:`mrflib.models.graphs.Structure`). The kernels are
``nogil`` so that a threaded Dask worker runs them in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib._support._newton_kernels import newton_direction
from mrflib._support._sort_kernels import sort_int64


@njit(cache=True, inline="always")
def _contains(Q, k, m):
    """Whether ``m`` is one of ``Q[:k]``."""
    for a in range(k):
        if Q[a] == m:
            return True
    return False


@njit(cache=True, nogil=True)
def _find(arr, lo, hi, v):
    """Position of ``v`` in the sorted slice ``arr[lo:hi]``, or -1."""
    a, b = lo, hi
    while a < b:
        mid = (a + b) // 2
        if arr[mid] < v:
            a = mid + 1
        else:
            b = mid
    if a < hi and arr[a] == v:
        return a
    return -1


@njit(cache=True, nogil=True)
def fit_conditional(data_t, g, q_ptr, q_nodes, l2, tol, max_iter, ridge):
    """Batched LAP fits of the Ising auxiliary MRFs (one per clique).

    For a clique Q with 1-neighbourhood A_Q, the auxiliary MRF is
    ``log f(x_A) = sum_{i in Q} b_i x_i + sum_{e touching Q} J_e x_i x_j + g(x_{A \\ Q})``
    with ``g`` an arbitrary function. Because ``g`` is free, the marginal of
    ``x_{A \\ Q}`` is fitted exactly and the likelihood of the Q-parameters is the
    conditional likelihood of ``x_Q`` given ``x_{A \\ Q}``; it is maximized here by
    damped Newton over the ``2^|Q|`` states of ``x_Q`` for each distinct data
    pattern of ``x_A`` (at most ``2^|A_Q|`` of them).

    data_t : (n, N) int8 spins, one row per node.
    Returns (bias (len(q_nodes),), inner couplings, inner edge ids (-1: not an edge),
    iterations (C,), converged (C,) bool).
    """
    C = len(q_ptr) - 1
    i_ptr = np.zeros(C + 1, np.int64)
    for c in range(C):
        k = q_ptr[c + 1] - q_ptr[c]
        i_ptr[c + 1] = i_ptr[c] + k * (k - 1) // 2
    out_bias = np.zeros(len(q_nodes))
    out_inner = np.zeros(i_ptr[C])
    out_eid = np.full(i_ptr[C], -1, np.int64)
    n_iter = np.zeros(C, np.int64)
    converged = np.zeros(C, np.bool_)
    for c in range(C):
        q0 = q_ptr[c]
        k = q_ptr[c + 1] - q0
        Q = q_nodes[q0:q0 + k]
        in_a, in_b = _inner_pairs(Q, g, out_eid, i_ptr[c])
        b_a, U, b_u = _boundary_pairs(Q, g)
        sig, tj = _state_features(k, in_a, in_b, b_a)
        pq, pu, w = _data_patterns(data_t, Q, U)
        clique = (sig, tj, b_a, b_u, pq, pu, w)
        theta, n_iter[c], converged[c] = _newton(clique, l2, tol, max_iter, ridge)
        for a in range(k):
            out_bias[q0 + a] = theta[a]
        for t in range(len(in_a)):
            out_inner[i_ptr[c] + t] = theta[k + t]
    return out_bias, out_inner, out_eid, n_iter, converged


@njit(cache=True, nogil=True)
def _inner_pairs(Q, g, out_eid, off):
    """Pairs ``(a, b)``, ``a < b``, of clique positions (lexicographic); edge ids to ``out_eid``."""
    indptr, indices, edge_ids = g.indptr, g.indices, g.edge_ids
    k = len(Q)
    n_in = k * (k - 1) // 2
    in_a = np.empty(n_in, np.int64)
    in_b = np.empty(n_in, np.int64)
    t = 0
    for a in range(k):
        for b in range(a + 1, k):
            in_a[t] = a
            in_b[t] = b
            u = Q[a]
            pos = _find(indices, indptr[u], indptr[u + 1], Q[b])
            if pos >= 0:
                out_eid[off + t] = edge_ids[pos]
            t += 1
    return in_a, in_b


@njit(cache=True, nogil=True)
def _boundary_pairs(Q, g):
    """Boundary pairs ``(a, m)``: ``m`` a neighbour of ``Q[a]`` outside ``Q``.

    Returns the clique positions ``b_a``, the sorted distinct boundary nodes ``U`` and the
    position ``b_u`` of each pair's ``m`` in ``U``.
    """
    indptr, indices = g.indptr, g.indices
    k = len(Q)
    nb = 0
    for a in range(k):
        u = Q[a]
        for p in range(indptr[u], indptr[u + 1]):
            if not _contains(Q, k, indices[p]):
                nb += 1
    b_a = np.empty(nb, np.int64)
    b_m = np.empty(nb, np.int64)
    j = 0
    for a in range(k):
        u = Q[a]
        for p in range(indptr[u], indptr[u + 1]):
            m = indices[p]
            if not _contains(Q, k, m):
                b_a[j] = a
                b_m[j] = m
                j += 1
    # np.unique, without compiling numba's generic sort: sorted codes, runs collapsed
    srt = sort_int64(b_m)
    n_u = 0
    for j in range(nb):
        if j == 0 or srt[j] != srt[j - 1]:
            srt[n_u] = srt[j]
            n_u += 1
    U = np.empty(n_u, np.int64)
    for j in range(n_u):
        U[j] = srt[j]
    b_u = np.empty(nb, np.int64)
    for j in range(nb):
        b_u[j] = np.searchsorted(U, b_m[j])
    return b_a, U, b_u


@njit(cache=True, nogil=True)
def _state_features(k, in_a, in_b, b_a):
    """``sig[s, t]``: ``s_a`` (``t < k``) and ``s_a s_b`` (inner pairs) for each state of
    ``x_Q``; ``tj``: the feature each parameter multiplies (boundary pairs: their ``s_a``)."""
    S = 1 << k
    n_in = len(in_a)
    T = k + n_in
    nb = len(b_a)
    sig = np.empty((S, T))
    for s in range(S):
        for a in range(k):
            sig[s, a] = 1.0 if (s >> a) & 1 else -1.0
        for t in range(n_in):
            sig[s, k + t] = sig[s, in_a[t]] * sig[s, in_b[t]]
    tj = np.empty(T + nb, np.int64)
    for jj in range(T):
        tj[jj] = jj
    for jj in range(nb):
        tj[T + jj] = b_a[jj]
    return sig, tj


@njit(cache=True, nogil=True)
def _data_patterns(data_t, Q, U):
    """Data patterns of ``x_A`` (observed state of ``Q``, boundary spins) with counts.

    Distinct patterns by a histogram when they are few; otherwise one row per sample.
    """
    k = len(Q)
    nu = len(U)
    N = data_t.shape[1]
    bits = k + nu
    if bits <= 20 and (1 << bits) <= 4 * N:
        return _pattern_histogram(data_t, Q, U)
    pq = np.zeros(N, np.int64)
    pu = np.empty((N, nu))
    w = np.ones(N)
    for a in range(k):
        row = data_t[Q[a]]
        for r in range(N):
            if row[r] > 0:
                pq[r] |= 1 << a
    for l in range(nu):
        row = data_t[U[l]]
        for r in range(N):
            pu[r, l] = row[r]
    return pq, pu, w


@njit(cache=True, nogil=True)
def _pattern_histogram(data_t, Q, U):
    """The distinct data patterns of ``x_A`` and their counts (``2^(|Q| + |U|)`` bins)."""
    k = len(Q)
    nu = len(U)
    N = data_t.shape[1]
    S = 1 << k
    bits = k + nu
    hist = np.zeros(1 << bits, np.int64)
    for r in range(N):
        code = 0
        for a in range(k):
            if data_t[Q[a], r] > 0:
                code |= 1 << a
        for l in range(nu):
            if data_t[U[l], r] > 0:
                code |= 1 << (k + l)
        hist[code] += 1
    P = 0
    for code in range(1 << bits):
        if hist[code] > 0:
            P += 1
    pq = np.empty(P, np.int64)
    pu = np.empty((P, nu))
    w = np.empty(P)
    r = 0
    for code in range(1 << bits):
        if hist[code] > 0:
            pq[r] = code & (S - 1)
            for l in range(nu):
                pu[r, l] = 1.0 if (code >> (k + l)) & 1 else -1.0
            w[r] = hist[code]
            r += 1
    return pq, pu, w


@njit(cache=True, nogil=True)
def _newton(clique, l2, tol, max_iter, ridge):
    """Damped Newton on the averaged conditional log-likelihood of one clique.

    ``clique = (sig, tj, b_a, b_u, pq, pu, w)``: the state features
    (:func:`_state_features`), the boundary pairs (:func:`_boundary_pairs`) and the data
    patterns (:func:`_data_patterns`). Returns ``(theta, iterations, converged)``; stops
    when half the squared Newton decrement is below ``tol`` (after that last, tiny step)
    or when no ascent is possible.
    """
    sig, _, b_a, _, pq, _, w = clique
    S, T = sig.shape
    d = T + len(b_a)
    W = 0.0
    for r in range(len(pq)):
        W += w[r]
    theta = np.zeros(d)
    new = np.zeros(d)
    g = np.zeros(d)
    H = np.zeros((d, d))
    g2 = np.zeros(d)
    H2 = np.zeros((d, d))
    work = (np.empty(T), np.empty(S), np.empty(S), np.empty(T), np.empty((T, T)),
            np.empty(d))
    A = np.empty((d, d))
    ll = _cond_eval(theta, clique, W, l2, g, H, work)
    it = 0
    ok = False
    while it < max_iter:
        delta, dec = newton_direction(H, g, ridge, A)  # _cond_eval mirrors H's triangle
        if dec < 2.0 * tol:
            # converged: take the (tiny) last Newton step, whose error is O(dec^2)
            for x in range(d):
                theta[x] += delta[x]
            ok = True
            break
        step = 1.0
        ll_new = ll
        for _ in range(40):
            for x in range(d):
                new[x] = theta[x] + step * delta[x]
            ll_new = _cond_eval(new, clique, W, l2, g2, H2, work)
            if ll_new >= ll + 1e-4 * step * dec:
                break
            step *= 0.5
        it += 1
        if ll_new < ll:  # no ascent possible at machine precision
            ok = dec < 1e-8
            break
        for x in range(d):
            theta[x] = new[x]
            g[x] = g2[x]
            for y in range(d):
                H[x, y] = H2[x, y]
        ll = ll_new
    return theta, it, ok


# inlined into _newton: the records then cost nothing per call (passed to a separate
# function, twelve arrays in tuples made the maximal-clique fits 7% slower)
@njit(cache=True, nogil=True, inline="always")
def _cond_eval(theta, clique, W, l2, g, H, work):
    """Average conditional log-likelihood, its gradient ``g`` and Hessian ``H`` (in place),
    at ``theta`` for the ``clique`` of :func:`_newton` (``W``: the total data weight;
    ``work``: scratch arrays ``(phi, e, prob, mean, cov, fj)``)."""
    sig, tj, b_a, b_u, pq, pu, w = clique
    phi, e, prob, mean, cov, fj = work
    S, T = sig.shape
    nb = len(b_a)
    d = len(theta)
    ll = 0.0
    g[:] = 0.0
    H[:, :] = 0.0
    for r in range(len(pq)):
        for t in range(T):
            phi[t] = theta[t]
        for jj in range(nb):
            phi[b_a[jj]] += theta[T + jj] * pu[r, b_u[jj]]
        mx = -np.inf
        for s in range(S):
            acc = 0.0
            for t in range(T):
                acc += sig[s, t] * phi[t]
            e[s] = acc
            if acc > mx:
                mx = acc
        z = 0.0
        for s in range(S):
            prob[s] = np.exp(e[s] - mx)
            z += prob[s]
        logz = mx + np.log(z)
        for s in range(S):
            prob[s] /= z
        wr = w[r] / W
        o = pq[r]
        ll += wr * (e[o] - logz)
        for t in range(T):
            acc = 0.0
            for s in range(S):
                acc += prob[s] * sig[s, t]
            mean[t] = acc
        for t in range(T):
            for t2 in range(t, T):
                acc = 0.0
                for s in range(S):
                    acc += prob[s] * sig[s, t] * sig[s, t2]
                acc -= mean[t] * mean[t2]
                cov[t, t2] = acc
                cov[t2, t] = acc
        for x in range(T):
            fj[x] = 1.0
        for jj in range(nb):
            fj[T + jj] = pu[r, b_u[jj]]
        for x in range(d):
            tx = tj[x]
            g[x] += wr * fj[x] * (sig[o, tx] - mean[tx])
            fx = wr * fj[x]
            for y in range(x, d):
                H[x, y] -= fx * fj[y] * cov[tx, tj[y]]
    for x in range(d):
        for y in range(x + 1, d):
            H[y, x] = H[x, y]
    if l2 > 0.0:
        for x in range(d):
            ll -= 0.5 * l2 * theta[x] * theta[x]
            g[x] -= l2 * theta[x]
            H[x, x] -= l2
    return ll


@njit(cache=True, nogil=True)
def pattern_gram(x_t, rows, cols):
    """``D[u, v] = mean_n x[n, u] x[n, v]`` for each listed pair (rows[p], cols[p]).

    x_t : (n, N) float64, one row per variable (contiguous dot products).
    """
    N = x_t.shape[1]
    out = np.empty(len(rows))
    for p in range(len(rows)):
        u = rows[p]
        v = cols[p]
        acc = 0.0
        for r in range(N):
            acc += x_t[u, r] * x_t[v, r]
        out[p] = acc / N
    return out


@njit(cache=True, nogil=True)
def gaussian_entries(d_ptr, d_cols, d_vals, a_ptr, a_nodes, ii, jj):
    """LAP entry ``(D_AA^{-1})_{ij}`` for each clique (eq. 13-14).

    ``(d_ptr, d_cols, d_vals)``: the sample second moments on (at least) every pair
    inside some A_Q, CSR with sorted columns. ``ii[c], jj[c]``: the entry of clique c
    (``ii == jj`` for a node).
    """
    C = len(a_ptr) - 1
    out = np.empty(C)
    for c in range(C):
        A = a_nodes[a_ptr[c]:a_ptr[c + 1]]
        a = len(A)
        M = np.empty((a, a))
        for x in range(a):
            u = A[x]
            for y in range(a):
                p = _find(d_cols, d_ptr[u], d_ptr[u + 1], A[y])
                M[x, y] = d_vals[p] if p >= 0 else np.nan
        px = np.searchsorted(A, ii[c])
        py = np.searchsorted(A, jj[c])
        rhs = np.zeros(a)
        rhs[py] = 1.0
        sol = np.linalg.solve(M, rhs)
        out[c] = sol[px]
    return out
