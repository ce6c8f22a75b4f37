"""Numba kernels of LAP's auxiliary fits on pairwise factor graphs (every scope of at most
two variables).

The objective, the parameters ``θ`` and their layout are those of
:mod:`mrflib.learning._factor_lap_kernels` (the general kernels, whose packed description
of the factors these kernels read): for a factor with scope ``Q`` (one or two variables) and
rest ``R = A_Q \\ Q``, damped Newton on the conditional log-likelihood of ``x_Q`` given
``x_R``, with the same line search and the same stopping rule, from the start the caller
gives (zero, or the one-variable factors' estimates of the same potentials: the maximiser
is the same, Newton's steps fewer). What the pairwise structure allows is a cheaper
evaluation.

Every potential meeting ``Q`` is a unary or pair potential of ``Q`` itself, or a pair
``(a, r)`` of a variable ``a`` of ``Q`` and a variable ``r`` of ``R``. Each entry of the
first kind is the indicator of one of the ``S - 1`` *base functions* of ``x_Q``
(``[x_0 = α]``, ``[x_1 = β]``, ``[x_0 = α, x_1 = β]``, states ``≥ 1``); an entry of the
second kind is ``[x_a = α]`` times ``[u_r = β]``, a base function times a 0/1 function of
the data pattern ``u``. So the covariance under ``P(x_Q | u)`` of any two features is
``C_u[b, b']`` of their base functions, ``C_u`` being the ``(S - 1) x (S - 1)`` covariance of
the base functions (from the ``S`` probabilities, closed form), and the Hessian
``-Σ_u W_u Cov_u(F)`` is a scatter of ``W_u C_u`` over the pairs of features a pattern
selects: the base functions themselves and, for each neighbour ``r`` not in its state 0,
the row ``[x_a = ·] [u_r = u_r]``. The cross features of every pattern are listed once per
fit (``θ``-free); an evaluation reads them. Scores are the entries of ``Q``'s own
potentials (once per evaluation) plus, per pattern, the neighbours' rows summed into one
vector per variable of ``Q``.

The kernels are ``nogil`` and deterministic (every sum sequential, each factor fitted on
its own): the fitted ``θ`` of a factor does not depend on which call or thread fits it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib._support._newton_kernels import newton_direction
from mrflib.learning._factor_lap_kernels import (
    decode_rest,
    normalize_scores,
    pattern_statistics,
    penalized_gradient,
)

#: Newton decrement above which the Hessian is recomputed after every step.
_FRESH = 1e-3
#: The Hessian is also recomputed when a step cut the decrement by less than this factor.
_SLOW = 1e-2


@njit(cache=True, nogil=True)
def _layout(vars_, nq, card, t_lo, t_hi, b_ptr, b_pos, t_off):  # pragma: no cover - numba
    """The base functions' parameter indices ``qpar (S - 1,)`` and the cross potentials
    ``(a, r, offset, a first in the clique)`` ``(n_cross, 4)`` of one factor."""
    c0 = card[vars_[0]]
    c1 = card[vars_[1]] if nq == 2 else 1
    n0, n1 = c0 - 1, c1 - 1
    nb = n0 + n1 + n0 * n1
    qpar = np.full(nb, -1, np.int64)
    cross = np.empty((t_hi - t_lo, 4), np.int64)
    nc = 0
    for t in range(t_lo, t_hi):
        if t_off[t] < 0:  # a clique with a one-state variable: no free entry
            continue
        lo, hi = b_ptr[t], b_ptr[t + 1]
        p0 = b_pos[lo]
        if hi - lo == 1:  # the unary potential of a variable of Q
            for a in range(c0 - 1 if p0 == 0 else c1 - 1):
                qpar[a + (0 if p0 == 0 else n0)] = t_off[t] + a
            continue
        p1 = b_pos[lo + 1]
        if p0 < nq and p1 < nq:  # the pair potential of Q: entries (x_p0, x_p1) C-ordered
            for a in range(n0):
                for b in range(n1):
                    flat = a * n1 + b if p0 == 0 else b * n0 + a
                    qpar[n0 + n1 + a * n1 + b] = t_off[t] + flat
            continue
        first = p0 < nq
        cross[nc, 0] = p0 if first else p1
        cross[nc, 1] = p1 if first else p0
        cross[nc, 2] = t_off[t]
        cross[nc, 3] = 1 if first else 0
        nc += 1
    return qpar, cross[:nc]


@njit(cache=True, nogil=True)
def _cross_features(ext, vars_, nq, card, cross, n0):  # pragma: no cover - numba
    """Per pattern ``p`` the parameter index and base function of each cross feature it
    selects, ``par[p, :cnt[p]]`` and ``base[p, :cnt[p]]``."""
    P = ext.shape[0]
    nl = vars_.shape[0]
    width = 0
    for c in range(cross.shape[0]):
        width += card[vars_[cross[c, 0]]] - 1
    par = np.empty((P, max(width, 1)), np.int64)
    base = np.empty((P, max(width, 1)), np.int64)
    cnt = np.zeros(P, np.int64)
    row = np.zeros(nl, np.int64)
    for p in range(P):
        decode_rest(ext[p], vars_, card, nq, row)
        n = 0
        for c in range(cross.shape[0]):
            a, r, off, first = cross[c, 0], cross[c, 1], cross[c, 2], cross[c, 3]
            ur = row[r]
            if ur == 0:
                continue
            ca, cr = card[vars_[a]], card[vars_[r]]
            for al in range(ca - 1):
                par[p, n] = off + (al * (cr - 1) + ur - 1 if first else (ur - 1) * (ca - 1) + al)
                base[p, n] = al + (0 if a == 0 else n0)
                n += 1
        cnt[p] = n
    return par, base, cnt


@njit(cache=True, nogil=True)
def _state_bases(c0, c1):  # pragma: no cover - numba
    """The base functions that hold at each state ``s = x_0 + c0 x_1`` of ``x_Q``:
    ``sb[s, :sn[s]]`` (at most three)."""
    n0, n1 = c0 - 1, c1 - 1
    S = c0 * c1
    sb = np.zeros((S, 3), np.int64)
    sn = np.zeros(S, np.int64)
    for s in range(S):
        x0, x1 = s % c0, s // c0
        n = 0
        if x0 > 0:
            sb[s, n] = x0 - 1
            n += 1
        if x1 > 0:
            sb[s, n] = n0 + x1 - 1
            n += 1
        if x0 > 0 and x1 > 0:
            sb[s, n] = n0 + n1 + (x0 - 1) * n1 + x1 - 1
            n += 1
        sn[s] = n
    return sb, sn


@njit(cache=True, nogil=True)
def _evaluate(th, prob, l2, hessian):  # pragma: no cover - numba
    """``(ℓ, ∇ℓ, ∇²ℓ)`` at ``th``, the same quantities as the general kernels' evaluation,
    by base functions (module docstring); without ``hessian`` the last is left empty
    ``(0, 0)``. The Hessian's ``Q``-by-``Q`` block is summed over the patterns in the small
    base-function space and its cross-by-``Q`` block in a dense ``(D, S - 1)`` array, both
    mapped to the parameters once; the cross-by-cross pairs are added per pattern."""
    w, W, target, qpar, par, base, cnt, sb, sn, nu = prob
    P, S = w.shape
    nb = qpar.shape[0]
    D = th.shape[0]
    qsc = np.zeros(S)  # the entries of Q's own potentials at each state
    for s in range(S):
        for i in range(sn[s]):
            qsc[s] += th[qpar[sb[s, i]]]
    sc = np.empty(S)
    pr = np.empty(S)
    phi = np.empty(nu)
    E = np.empty(nb)
    mean = np.zeros(D)
    n = D if hessian else 0
    H = np.zeros((n, n))
    C = np.empty((nb, nb))
    CQ = np.zeros((nb, nb))  # Σ_u W_u C_u, upper triangle
    X = np.zeros((n, nb))  # Σ_u W_u C_u[base, :] at each cross feature's parameter
    ll = 0.0
    for p in range(P):
        for b in range(nu):
            phi[b] = 0.0
        for j in range(cnt[p]):
            phi[base[p, j]] += th[par[p, j]]
        mx = -np.inf
        for s in range(S):
            v = qsc[s]
            for i in range(sn[s]):
                if sb[s, i] < nu:
                    v += phi[sb[s, i]]
            sc[s] = v
            if v > mx:
                mx = v
        lse = normalize_scores(sc, pr, mx)
        for s in range(S):
            ll += w[p, s] * (sc[s] - lse)
        for b in range(nb):
            E[b] = 0.0
        for s in range(S):
            for i in range(sn[s]):
                E[sb[s, i]] += pr[s]
        Wp = W[p]
        for j in range(cnt[p]):
            mean[par[p, j]] += Wp * E[base[p, j]]
        for a in range(nb):
            mean[qpar[a]] += Wp * E[a]
        if not hessian:
            continue
        for a in range(nb):
            for b in range(nb):
                C[a, b] = -E[a] * E[b]
        for s in range(S):
            for i in range(sn[s]):
                for j in range(sn[s]):
                    C[sb[s, i], sb[s, j]] += pr[s]
        for a in range(nb):
            for b in range(a, nb):
                CQ[a, b] += Wp * C[a, b]
        for i in range(cnt[p]):
            f, bi = par[p, i], base[p, i]
            for b in range(nb):
                X[f, b] += Wp * C[bi, b]
            for j in range(i, cnt[p]):
                H[f, par[p, j]] -= Wp * C[bi, base[p, j]]
    ll, g = penalized_gradient(ll, th, target, mean, l2)
    if not hessian:
        return ll, g, H
    for a in range(nb):
        for b in range(a, nb):
            H[qpar[a], qpar[b]] -= CQ[a, b]
    for f in range(D):
        for b in range(nb):
            if X[f, b] != 0.0:
                H[f, qpar[b]] -= X[f, b]
    for a in range(D):
        H[a, a] -= l2
        for b in range(a + 1, D):  # each off-diagonal pair was added in one triangle
            H[a, b] += H[b, a]
            H[b, a] = H[a, b]
    return ll, g, H


@njit(cache=True, nogil=True)
def _problem(x_t, vars_, nq, card, t_lo, t_hi, b_ptr, b_pos, t_off, D):  # pragma: no cover
    """The statistics of one factor's auxiliary fit (``D`` parameters): the weights
    ``n_us / N``, their sum per pattern, the data's feature means (``target``) and the
    feature lists."""
    c0 = card[vars_[0]]
    c1 = card[vars_[1]] if nq == 2 else 1
    S = c0 * c1
    ext, w = pattern_statistics(x_t, vars_, card, S)
    qpar, cross = _layout(vars_, nq, card, t_lo, t_hi, b_ptr, b_pos, t_off)
    par, base, cnt = _cross_features(ext, vars_, nq, card, cross, c0 - 1)
    sb, sn = _state_bases(c0, c1)
    P = ext.shape[0]
    W = np.zeros(P)
    target = np.zeros(D)
    held = np.zeros(qpar.shape[0])  # Σ_p w[p, s] over the states s where a base holds
    for p in range(P):
        for b in range(qpar.shape[0]):
            held[b] = 0.0
        for s in range(S):
            W[p] += w[p, s]
            for i in range(sn[s]):
                held[sb[s, i]] += w[p, s]
                target[qpar[sb[s, i]]] += w[p, s]
        for j in range(cnt[p]):
            target[par[p, j]] += held[base[p, j]]
    return (w, W, target, qpar, par, base, cnt, sb, sn, (c0 - 1) + (c1 - 1))


@njit(cache=True, nogil=True)
def _newton(prob, th0, l2, tol, max_iter, ridge):  # pragma: no cover - numba
    """Damped Newton on ``ℓ`` from ``θ = th0``: ``(θ, iterations, converged)``, with the
    general kernels' line search and stopping rule (half the squared Newton decrement
    below ``tol``, the step then taken). Near the optimum the Hessian is kept from the
    last point where it was computed (a chord step: the gradient is always current, so
    the fixed point is the same): it is recomputed while the decrement exceeds
    :data:`_FRESH`, after a shortened step, and when the decrement fell by less than a
    factor :data:`_SLOW`. A chord step converges linearly, at a rate of at most about
    ``√_SLOW`` in ``θ``: under a kept Hessian the rule asks for a decrement ``_SLOW²``
    smaller, so that the last step leaves ``θ`` as close to the optimum as Newton's."""
    D = th0.shape[0]
    th = th0.copy()
    if D == 0:
        return th, 0, True
    ll, g, H = _evaluate(th, prob, l2, True)
    new = np.zeros(D)
    A = np.empty((D, D))
    last = np.inf
    fresh = True  # H is the Hessian at th
    for it in range(max_iter):
        delta, dec = newton_direction(H, g, ridge, A)
        # a chord step's error is its length times the stale Hessian's relative error, not
        # its square: it stops only once its decrement is _SLOW^2 below the Newton rule's
        if dec < (2.0 * tol if fresh else 2.0 * tol * _SLOW * _SLOW):
            for a in range(D):
                th[a] += delta[a]
            return th, it, True
        # the full step is almost always taken: its Hessian at once when it will be wanted
        fresh = dec > _FRESH or dec > _SLOW * last
        step = 1.0
        ll_new, g_new, H_new = ll, g, H
        for _ in range(40):
            for a in range(D):
                new[a] = th[a] + step * delta[a]
            ll_new, g_new, H_new = _evaluate(new, prob, l2, fresh and step == 1.0)
            if ll_new >= ll + 1e-4 * step * dec:
                break
            step *= 0.5
        if ll_new < ll:  # no ascent possible at machine precision
            return th, it + 1, dec < 1e-8
        for a in range(D):
            th[a] = new[a]
        ll, g = ll_new, g_new
        if step < 1.0:
            fresh = True
            ll, g, H = _evaluate(th, prob, l2, True)
        elif fresh:
            H = H_new
        last = dec
    return th, max_iter, False


@njit(cache=True, nogil=True)
def fit_factors(x_t, card, l_ptr, l_vars, q_len, t_ptr, b_ptr, b_pos, t_off, d_ptr, todo,
                l2, tol, max_iter, ridge, init, theta, iters, conv):  # pragma: no cover - numba
    """The auxiliary fits of the factors ``todo`` (indices into the packed description of
    :func:`mrflib.learning._factor_lap_kernels.fit_factors`), one after the other, each
    started at its slot of ``init`` (the objective is concave: the start changes the
    iterations, not the maximiser; a fit without a ridge whose data miss a feature starts
    at zero), written into ``theta`` (at ``d_ptr[k]:d_ptr[k+1]``),
    ``iters`` and ``conv`` at their slots: calls on disjoint ``todo`` may run at once on
    threads."""
    for k in todo:
        vars_ = l_vars[l_ptr[k]:l_ptr[k + 1]]
        D = d_ptr[k + 1] - d_ptr[k]
        prob = _problem(x_t, vars_, q_len[k], card, t_ptr[k], t_ptr[k + 1], b_ptr, b_pos,
                        t_off, D)
        start = init[d_ptr[k]:d_ptr[k + 1]]
        # a feature the data never show has its supremum at -inf (without a ridge): where
        # Newton stops along that ray depends on the path, so such a fit keeps the path
        # from zero
        if l2 <= 0.0 and D > 0 and np.min(prob[2]) <= 0.0:
            start = np.zeros(D)
        th, iters[k], conv[k] = _newton(prob, start, l2, tol, max_iter, ridge)
        for a in range(D):
            theta[d_ptr[k] + a] = th[a]
