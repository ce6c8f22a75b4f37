"""Numba kernels of loopy belief propagation (:mod:`mrflib.inference.approx.lbp`) on packed factor
graphs.

Messages are natural-log vectors normalized to ``logsumexp = 0`` (``-inf`` a zero); the
arrays are those of :class:`mrflib.inference._packed.Packed`. ``r`` holds the factor-to-variable
messages, one slot per edge; ``q`` the variable-to-factor messages, recomputed from ``r``
when a factor is visited. The plain numpy reference is
:func:`mrflib.inference.approx.lbp.loopy_bp_numpy`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._packed import advance


@njit(cache=True)
def _normalize(m, start, c):  # pragma: no cover - numba
    """Shift ``m[start:start+c]`` (log weights) so that its ``logsumexp`` is 0; an all
    ``-inf`` slot is left as is."""
    mx = -np.inf
    for x in range(c):
        if m[start + x] > mx:
            mx = m[start + x]
    if mx == -np.inf:
        return
    s = 0.0
    for x in range(c):
        s += np.exp(m[start + x] - mx)
    shift = mx + np.log(s)
    for x in range(c):
        m[start + x] -= shift


@njit(cache=True)
def cavity(k, fptr, fvars, vptr, vedge, moff, card, r, q):  # pragma: no cover - numba
    """The variable-to-factor messages ``q_{i→k}(x_i) = Σ_{k' ∋ i, k' ≠ k} r_{k'→i}(x_i)``
    of every edge of factor ``k``, normalized, into ``q``."""
    for e in range(fptr[k], fptr[k + 1]):
        i = fvars[e]
        c = card[i]
        base = moff[e]
        for x in range(c):
            s = 0.0
            for j in range(vptr[i], vptr[i + 1]):
                e2 = vedge[j]
                if e2 != e:
                    s += r[moff[e2] + x]
            q[base + x] = s
        _normalize(q, base, c)


@njit(cache=True)
def factor_messages(k, tables, offsets, sizes, fptr, fvars, moff, card, q, mx, sm,
                    xs):  # pragma: no cover - numba
    """``log Σ_{x_{S\\i}} exp(θ_k(x_S) + Σ_{j ≠ i} q_{j→k}(x_j))`` for every edge ``i`` of
    factor ``k``, into ``mx`` (slots of ``moff``; ``sm`` and ``xs`` are scratch): one walk
    of the table in C order, an online log-sum-exp per output entry."""
    e0, e1 = fptr[k], fptr[k + 1]
    S = e1 - e0
    for e in range(e0, e1):
        for x in range(card[fvars[e]]):
            mx[moff[e] + x] = -np.inf
            sm[moff[e] + x] = 0.0
    for a in range(S):
        xs[a] = 0
    off = offsets[k]
    for idx in range(sizes[k]):
        th = tables[off + idx]
        if th != -np.inf:
            for a in range(S):
                val = th
                for b in range(S):
                    if b != a:
                        val += q[moff[e0 + b] + xs[b]]
                if val != -np.inf:
                    slot = moff[e0 + a] + xs[a]
                    if val > mx[slot]:
                        sm[slot] = sm[slot] * np.exp(mx[slot] - val) + 1.0
                        mx[slot] = val
                    else:
                        sm[slot] += np.exp(val - mx[slot])
        advance(xs, S, fvars, e0, card)
    for e in range(e0, e1):
        for x in range(card[fvars[e]]):
            slot = moff[e] + x
            if mx[slot] != -np.inf:
                mx[slot] += np.log(sm[slot])


@njit(cache=True)
def sweep(tables, offsets, sizes, fptr, fvars, vptr, vedge, moff, card, r, q, new, sm,
          damping):  # pragma: no cover - numba
    """One sequential pass over the factors ``0..K-1``: each factor gets its cavity
    messages from the current ``r``, then sends new messages, damped geometrically
    (``(1 - damping) new + damping old`` in log space, renormalized), into ``r`` in place."""
    S = 0
    for k in range(len(sizes)):
        S = max(S, fptr[k + 1] - fptr[k])
    xs = np.zeros(max(S, 1), dtype=np.int64)
    for k in range(len(sizes)):
        cavity(k, fptr, fvars, vptr, vedge, moff, card, r, q)
        factor_messages(k, tables, offsets, sizes, fptr, fvars, moff, card, q, new, sm, xs)
        for e in range(fptr[k], fptr[k + 1]):
            c = card[fvars[e]]
            base = moff[e]
            _normalize(new, base, c)
            for x in range(c):
                old = r[base + x]
                val = new[base + x]
                if damping > 0.0:
                    if val == -np.inf or old == -np.inf:
                        val = -np.inf
                    else:
                        val = (1.0 - damping) * val + damping * old
                r[base + x] = val
            if damping > 0.0:
                _normalize(r, base, c)


@njit(cache=True)
def beliefs(vptr, vedge, moff, card, voff, r, out):  # pragma: no cover - numba
    """Variable beliefs ``b_i ∝ exp Σ_{k ∋ i} r_{k→i}``, probabilities, into ``out``
    (variable ``i`` at ``voff[i]``); a variable whose messages allow no state gets
    zeros."""
    for i in range(len(card)):
        c = card[i]
        base = voff[i]
        for x in range(c):
            s = 0.0
            for j in range(vptr[i], vptr[i + 1]):
                s += r[moff[vedge[j]] + x]
            out[base + x] = s
        _normalize(out, base, c)
        for x in range(c):
            out[base + x] = np.exp(out[base + x])


@njit(cache=True)
def bethe(tables, offsets, sizes, fptr, fvars, vptr, vedge, moff, card, voff, r, q,
          b):  # pragma: no cover - numba
    """The Bethe approximation of ``log Z`` (minus the Bethe free energy, Yedidia, Freeman
    and Weiss): ``Σ_k Σ_x b_k (θ_k - log b_k) + Σ_i (d_i - 1) Σ_x b_i log b_i``, with the
    factor beliefs ``b_k ∝ exp(θ_k + Σ_i q_{i→k})`` and the variable beliefs ``b`` (as
    :func:`beliefs` gives them). ``θ_k - log b_k = log Z_k - Σ_i q_{i→k}`` on the support
    of ``b_k``, so no ``-inf`` enters a product. Returns ``-inf`` when a factor has no
    state of positive belief."""
    S = 0
    for k in range(len(sizes)):
        S = max(S, fptr[k + 1] - fptr[k])
    xs = np.zeros(max(S, 1), dtype=np.int64)
    total = 0.0
    for k in range(len(sizes)):
        cavity(k, fptr, fvars, vptr, vedge, moff, card, r, q)
        e0 = fptr[k]
        n_s = fptr[k + 1] - e0
        off = offsets[k]
        mxv = -np.inf
        for pass_ in range(2):
            for a in range(n_s):
                xs[a] = 0
            s = 0.0
            avg = 0.0
            for idx in range(sizes[k]):
                th = tables[off + idx]
                if th != -np.inf:
                    qs = 0.0
                    for a in range(n_s):
                        qs += q[moff[e0 + a] + xs[a]]
                    lw = th + qs
                    if lw != -np.inf:
                        if pass_ == 0:
                            mxv = max(mxv, lw)
                        else:
                            w = np.exp(lw - mxv)
                            s += w
                            avg += w * qs
                advance(xs, n_s, fvars, e0, card)
            if pass_ == 0 and mxv == -np.inf:
                return -np.inf
        total += mxv + np.log(s) - avg / s
    for i in range(len(card)):
        d = vptr[i + 1] - vptr[i]
        if d == 1:
            continue
        neg_h = 0.0
        for x in range(card[i]):
            p = b[voff[i] + x]
            if p > 0.0:
                neg_h += p * np.log(p)
        total += (d - 1) * neg_h
    return total
