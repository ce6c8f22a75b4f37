"""Numba kernels of the factor-graph LAP (:func:`mrflib.learning.learners.fit` with ``"lap"``).

For a factor ``Q`` with 1-neighbourhood ``A_Q`` (Definition 7 of Mizrahi, de Freitas &
Tenorio), the auxiliary ML of the potentials meeting ``Q`` is the conditional ML of
``x_Q`` given the rest ``R = A_Q \\ Q`` (see :mod:`mrflib.learning.table_learners`). Its
sufficient statistics are, for each distinct data pattern ``u`` of ``x_R``, the counts
``n_us`` of the states ``s`` of ``x_Q`` seen with it; the conditional log-likelihood is

    ``ℓ(θ) = (1/N) Σ_u Σ_s n_us (F_us·θ - log Σ_s' exp F_us'·θ) - (l2/2) |θ|²``

with ``F_us`` the 0/1 indicator of the normalized-potential entries (Definition 5) that
``(x_R = u, x_Q = s)`` selects, at most one per potential meeting ``Q`` (none where the
entry is a reference zero, some variable in state 0): ``idx[u, s, :nnz[u, s]]``. The
log-partition of the small model over ``x_Q`` is enumerated, and damped Newton maximizes
``ℓ`` (concave), its Hessian ``-Σ_u W_u Cov_u(F)`` summed sparsely.

A factor is described by its variables in local order ``Q + R`` (``l_vars``, the first
``q_len`` of them its scope) and its potentials: the local positions of each clique's
variables in the clique's order (``b_pos``) and the clique's offset in ``θ`` (``t_off``,
-1 for a clique with a one-state variable: no free entry). A joint state of the local
variables is coded mixed-radix with the first variable the fastest digit, so the code is
``s + S u``: ``s`` the index of ``x_Q`` in :func:`mrflib.models.factor_graph.all_states` order
and ``u`` the code of ``x_R``. The kernels are ``nogil`` and deterministic (every sum
sequential); the plain numpy reference is ``_lap_factor_numpy`` in
:mod:`mrflib.learning.table_learners`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib._support._newton_kernels import newton_direction
from mrflib._support._sort_kernels import sort_int64

_BLOCK = 32  # patterns whose outer products are added to the Hessian together


@njit(cache=True, nogil=True)
def _codes(x_t, vars_, card):  # pragma: no cover - numba
    """Mixed-radix code of every data row over ``vars_`` (first variable fastest)."""
    N = x_t.shape[1]
    codes = np.zeros(N, np.int64)
    rad = 1
    for v in vars_:
        col = x_t[v]
        for r in range(N):
            codes[r] += col[r] * rad
        rad *= card[v]
    return codes, rad


@njit(cache=True, nogil=True)
def _histogram_or_sorted(x_t, vars_, card):  # pragma: no cover - numba
    """``(counts over the code space, True)`` when it is at most ``4 N`` codes, else
    ``(the sorted codes, False)``."""
    codes, space = _codes(x_t, vars_, card)
    N = codes.shape[0]
    if space <= 4 * N:
        hist = np.zeros(space, np.int64)
        for r in range(N):
            hist[codes[r]] += 1
        return hist, True
    return sort_int64(codes), False


@njit(cache=True, nogil=True)
def _n_patterns(data, dense, S):  # pragma: no cover - numba
    """Distinct codes ``// S`` (patterns of ``x_R``) in a histogram or sorted codes."""
    P = 0
    last = -1
    for c in range(data.shape[0]):
        if dense:
            if data[c] == 0:
                continue
            u = c // S
        else:
            u = data[c] // S
        if u != last:
            P += 1
            last = u
    return P


@njit(cache=True, nogil=True)
def _n_states(vars_, card, q):  # pragma: no cover - numba
    """Joint states of the first ``q`` variables of ``vars_`` (the factor's scope)."""
    S = 1
    for a in range(q):
        S *= card[vars_[a]]
    return S


@njit(cache=True, nogil=True)
def count_patterns(x_t, card, l_ptr, l_vars, q_len):  # pragma: no cover - numba
    """Number of distinct data patterns of ``x_R`` of every factor ``(K,)``."""
    K = l_ptr.shape[0] - 1
    out = np.zeros(K, np.int64)
    for k in range(K):
        vars_ = l_vars[l_ptr[k]:l_ptr[k + 1]]
        S = _n_states(vars_, card, q_len[k])
        data, dense = _histogram_or_sorted(x_t, vars_, card)
        out[k] = _n_patterns(data, dense, S)
    return out


@njit(cache=True, nogil=True)
def pattern_statistics(x_t, vars_, card, S):  # pragma: no cover - numba
    """The distinct patterns ``u`` of ``x_R`` (increasing codes) and the weights
    ``n_us / N`` ``(P, S)``: the sufficient statistics of a factor's auxiliary fit, for the
    general fits here and the pairwise ones of
    :mod:`mrflib.learning._pairwise_lap_kernels`."""
    N = x_t.shape[1]
    data, dense = _histogram_or_sorted(x_t, vars_, card)
    P = _n_patterns(data, dense, S)
    ext = np.empty(P, np.int64)
    w = np.zeros((P, S))
    p = -1
    last = -1
    for c in range(data.shape[0]):
        if dense:
            if data[c] == 0:
                continue
            code, n = c, data[c]
        else:
            code, n = data[c], 1
        u = code // S
        if u != last:
            p += 1
            ext[p] = u
            last = u
        w[p, code - u * S] += n
    for p in range(P):  # a loop, not ``w / N``: no broadcasting to compile
        for s in range(S):
            w[p, s] /= N
    return ext, w


@njit(cache=True, nogil=True)
def decode_rest(code, vars_, card, nq, row):  # pragma: no cover - numba
    """``row[nq:]``: the states of the rest ``vars_[nq:]`` in a pattern's ``code`` (mixed
    radix, the first variable the fastest digit). The pairwise kernels share it."""
    for j in range(nq, vars_.shape[0]):
        row[j] = code % card[vars_[j]]
        code //= card[vars_[j]]


@njit(cache=True, nogil=True)
def _indices(ext, vars_, nq, card, S, b_ptr, b_pos, t_lo, t_hi, t_off):  # pragma: no cover
    """``(idx (P, S, m), nnz (P, S))``: at ``(x_R = u, x_Q = s)``, the parameter indices
    of the potentials' entries that are not a reference zero (no variable in state 0),
    ``idx[u, s, :nnz[u, s]]``, increasing (the potentials are in offset order)."""
    P = ext.shape[0]
    nl = vars_.shape[0]
    m = t_hi - t_lo
    # every nnz[p, s] is set and idx[p, s, n] is read only for n < nnz[p, s]: np.empty,
    # not np.zeros (two generic allocations less to compile)
    idx = np.empty((P, S, m), np.int64)
    nnz = np.empty((P, S), np.int64)
    row = np.zeros(nl, np.int64)
    for p in range(P):
        decode_rest(ext[p], vars_, card, nq, row)
        for s in range(S):
            e = s
            for j in range(nq):
                row[j] = e % card[vars_[j]]
                e //= card[vars_[j]]
            n = 0
            for t in range(t_lo, t_hi):
                if t_off[t] < 0:
                    continue
                flat = 0
                for b in range(b_ptr[t], b_ptr[t + 1]):
                    d = row[b_pos[b]]
                    if d == 0:
                        flat = -1
                        break
                    flat = flat * (card[vars_[b_pos[b]]] - 1) + d - 1
                if flat >= 0:
                    idx[p, s, n] = t_off[t] + flat
                    n += 1
            nnz[p, s] = n
    return idx, nnz


@njit(cache=True, nogil=True)
def _scores(th, idx, nnz, p, sc, pr):  # pragma: no cover - numba
    """``sc[s] = F_ps·θ`` and ``pr[s] = P(x_Q = s | x_R = p)``; returns the log-partition
    ``log Σ_s exp sc[s]`` (shifted by the max: finite for every finite ``θ``)."""
    S = idx.shape[1]
    mx = -np.inf
    for s in range(S):
        v = 0.0
        for t in range(nnz[p, s]):
            v += th[idx[p, s, t]]
        sc[s] = v
        if v > mx:
            mx = v
    return normalize_scores(sc, pr, mx)


@njit(cache=True, nogil=True)
def normalize_scores(sc, pr, mx):  # pragma: no cover - numba
    """``pr[s] = exp(sc[s] - mx) / Σ_s' exp(sc[s'] - mx)`` over the first ``len(pr)``
    scores, ``mx`` their maximum; returns ``log Σ_s exp sc[s]`` (finite for every finite
    score). The pairwise kernels of :mod:`._pairwise_lap_kernels` share it."""
    z = 0.0
    for s in range(pr.shape[0]):
        pr[s] = np.exp(sc[s] - mx)
        z += pr[s]
    for s in range(pr.shape[0]):
        pr[s] /= z
    return mx + np.log(z)


@njit(cache=True, nogil=True)
def _add_outer_products(H, M, WM, B, nz):  # pragma: no cover - numba
    """``H += Σ_{q < B} WM[q] M[q] M[q]^T`` in the upper triangle, then zero ``M[:B]``;
    each entry of ``H`` receives the patterns in order. Only the non-zero entries of
    ``M[q]`` (listed in ``nz``, a work array of length ``D``) are visited: a zero adds
    nothing, and a row of ``M`` is about half zeros (a neighbour in its reference state
    selects no entry)."""
    D = H.shape[0]
    for q in range(B):
        if WM[q] == 0.0:
            continue
        n = 0
        for a in range(D):
            if M[q, a] != 0.0:
                nz[n] = a
                n += 1
        for i in range(n):
            a = nz[i]
            f = WM[q] * M[q, a]
            if f == 0.0:
                continue
            for j in range(i, n):
                b = nz[j]
                H[a, b] += f * M[q, b]
    M[:B] = 0.0


@njit(cache=True, nogil=True)
def penalized_gradient(ll, th, target, mean, l2):  # pragma: no cover - numba
    """The ridge ``-l2/2 |θ|^2`` applied: ``(ll - l2/2 |θ|^2, target - mean - l2 θ)``, the
    penalized objective and its gradient, shared by both LAP kernels."""
    D = th.shape[0]
    g = np.empty(D)
    sq = 0.0
    for a in range(D):
        g[a] = target[a] - mean[a] - l2 * th[a]
        sq += th[a] * th[a]
    return ll - 0.5 * l2 * sq, g


@njit(cache=True, nogil=True)
def _evaluate(th, idx, nnz, w, W, target, l2):  # pragma: no cover - numba
    """``(ℓ, ∇ℓ, ∇²ℓ)`` at ``th`` (length ``D``). Per pattern ``u``:
    ``∇ = Σ_s n_us F_us / N - W_u E_u[F]`` and
    ``∇² = -W_u Cov_u(F) = W_u (E_u[F] E_u[F]^T - E_u[F F^T])``, ``E_u`` over ``x_Q``.
    The Hessian is summed in its upper triangle (the indices of an entry are increasing)."""
    P, S, m = idx.shape
    D = th.shape[0]
    sc = np.empty(S)
    pr = np.empty(S)
    mean = np.zeros(D)
    H = np.zeros((D, D))
    M = np.zeros((_BLOCK, D))  # E_u[F] of a block of patterns (H read once per block)
    WM = np.zeros(_BLOCK)
    nz = np.empty(D, np.int64)
    ll = 0.0
    for p in range(P):
        lse = _scores(th, idx, nnz, p, sc, pr)
        for s in range(S):
            ll += w[p, s] * (sc[s] - lse)
        q = p % _BLOCK
        WM[q] = W[p]
        for s in range(S):
            r = W[p] * pr[s]
            for t1 in range(nnz[p, s]):
                a = idx[p, s, t1]
                mean[a] += r
                M[q, a] += pr[s]
                for t2 in range(t1, nnz[p, s]):
                    H[a, idx[p, s, t2]] -= r
        if q == _BLOCK - 1 or p == P - 1:
            _add_outer_products(H, M, WM, q + 1, nz)
    ll, g = penalized_gradient(ll, th, target, mean, l2)
    for a in range(D):
        H[a, a] -= l2
        for b in range(a + 1, D):
            H[b, a] = H[a, b]
    return ll, g, H


@njit(cache=True, nogil=True)
def _newton(idx, nnz, w, D, l2, tol, max_iter, ridge):  # pragma: no cover - numba
    """Damped Newton on ``ℓ`` from ``θ = 0``: ``(θ, iterations, converged)``; stops when
    half the squared Newton decrement is below ``tol`` (the step is then taken)."""
    P, S, m = idx.shape
    W = np.zeros(P)
    target = np.zeros(D)
    for p in range(P):
        for s in range(S):
            W[p] += w[p, s]
            for t in range(nnz[p, s]):
                target[idx[p, s, t]] += w[p, s]
    th = np.zeros(D)
    if D == 0:
        return th, 0, True
    ll, g, H = _evaluate(th, idx, nnz, w, W, target, l2)
    new = np.zeros(D)
    A = np.empty((D, D))
    for it in range(max_iter):
        delta, dec = newton_direction(H, g, ridge, A)  # _evaluate mirrors H's triangle
        if dec < 2.0 * tol:
            for a in range(D):
                th[a] += delta[a]
            return th, it, True
        step = 1.0
        ll_new, g_new, H_new = ll, g, H
        for _ in range(40):  # the full step is almost always taken: its Hessian at once
            for a in range(D):
                new[a] = th[a] + step * delta[a]
            ll_new, g_new, H_new = _evaluate(new, idx, nnz, w, W, target, l2)
            if ll_new >= ll + 1e-4 * step * dec:
                break
            step *= 0.5
        if ll_new < ll:  # no ascent possible at machine precision
            return th, it + 1, dec < 1e-8
        for a in range(D):  # loops, not slice assignments: no shape checks to compile
            th[a] = new[a]
        ll, g, H = ll_new, g_new, H_new
    return th, max_iter, False


@njit(cache=True, nogil=True)
def fit_factors(x_t, card, l_ptr, l_vars, q_len, t_ptr, b_ptr, b_pos, t_off, d_ptr,
                l2, tol, max_iter, ridge):  # pragma: no cover - numba
    """The LAP auxiliary fits of ``K`` factors, one after the other: the statistics of
    each from the data ``x_t (n, N)``, then damped Newton. Returns ``(θ (d_ptr[-1],),
    iterations (K,), converged (K,))``, factor ``k``'s ``θ`` at ``d_ptr[k]:d_ptr[k+1]``
    (its potentials in order, each clique's free entries C-ordered)."""
    K = l_ptr.shape[0] - 1
    theta = np.zeros(d_ptr[K])
    iters = np.zeros(K, np.int64)
    conv = np.zeros(K, np.bool_)
    for k in range(K):
        vars_ = l_vars[l_ptr[k]:l_ptr[k + 1]]
        S = _n_states(vars_, card, q_len[k])
        D = d_ptr[k + 1] - d_ptr[k]
        ext, w = pattern_statistics(x_t, vars_, card, S)
        idx, nnz = _indices(ext, vars_, q_len[k], card, S, b_ptr, b_pos, t_ptr[k],
                            t_ptr[k + 1], t_off)
        th, iters[k], conv[k] = _newton(idx, nnz, w, D, l2, tol, max_iter, ridge)
        for a in range(D):
            theta[d_ptr[k] + a] = th[a]
    return theta, iters, conv
