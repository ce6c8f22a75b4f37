"""Numba kernels of naive mean field (:mod:`mrflib.inference.approx.mean_field`) on packed factor
graphs.

``q`` holds the product distribution's marginals, variable ``i`` at ``voff[i]``; the other
arrays are those of :class:`mrflib.inference._packed.Packed`. Expectations follow the convention
``0 · (-inf) = 0``: a table entry ``q`` gives no mass contributes nothing. The plain numpy
reference is :func:`mrflib.inference.approx.mean_field.mean_field_numpy`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._packed import advance


@njit(cache=True)
def expected_rows(k, a_target, tables, offsets, sizes, fptr, fvars, card, voff, q, out,
                  xs):  # pragma: no cover - numba
    """``out[x] += E_{q}[θ_k(x_S) | x_{S_a} = x]`` for the variable at position
    ``a_target`` of factor ``k`` (the other variables of the scope drawn from ``q``)."""
    e0 = fptr[k]
    S = fptr[k + 1] - e0
    for a in range(S):
        xs[a] = 0
    off = offsets[k]
    for idx in range(sizes[k]):
        w = 1.0
        for b in range(S):
            if b != a_target:
                w *= q[voff[fvars[e0 + b]] + xs[b]]
        if w > 0.0:
            out[xs[a_target]] += w * tables[off + idx]
        advance(xs, S, fvars, e0, card)


@njit(cache=True)
def sweep(tables, offsets, sizes, fptr, fvars, efac, vptr, vedge, card, voff, q,
          score):  # pragma: no cover - numba
    """One coordinate-ascent pass, variables ``0..n-1``: ``q_i ∝ exp Σ_{k ∋ i}
    E_{q_{-i}}[θ_k]``, in place. A variable whose every state has expectation ``-inf``
    keeps its ``q_i`` (no choice of ``q_i`` alone gives a finite bound). ``efac[e]`` is
    the factor of edge ``e``. Returns the
    largest change of a probability."""
    S = 1
    for k in range(len(sizes)):
        S = max(S, fptr[k + 1] - fptr[k])
    xs = np.zeros(S, dtype=np.int64)
    change = 0.0
    for i in range(len(card)):
        c = card[i]
        if c == 1:
            continue
        for x in range(c):
            score[x] = 0.0
        for j in range(vptr[i], vptr[i + 1]):
            e = vedge[j]
            k = efac[e]
            expected_rows(k, e - fptr[k], tables, offsets, sizes, fptr, fvars, card, voff,
                          q, score, xs)
        mx = -np.inf
        for x in range(c):
            if score[x] > mx:
                mx = score[x]
        if mx == -np.inf:
            continue
        tot = 0.0
        for x in range(c):
            score[x] = np.exp(score[x] - mx)
            tot += score[x]
        for x in range(c):
            p = score[x] / tot
            d = abs(p - q[voff[i] + x])
            if d > change:
                change = d
            q[voff[i] + x] = p
    return change


@njit(cache=True)
def bound(tables, offsets, sizes, fptr, fvars, card, voff, q):  # pragma: no cover - numba
    """``Σ_k E_q[θ_k] + Σ_i H(q_i)``, the mean-field lower bound on ``log Z`` (``-inf``
    when ``q`` gives mass to a zero-weight state)."""
    S = 1
    for k in range(len(sizes)):
        S = max(S, fptr[k + 1] - fptr[k])
    xs = np.zeros(S, dtype=np.int64)
    total = 0.0
    for k in range(len(sizes)):
        e0 = fptr[k]
        n_s = fptr[k + 1] - e0
        for a in range(n_s):
            xs[a] = 0
        off = offsets[k]
        for idx in range(sizes[k]):
            w = 1.0
            for b in range(n_s):
                w *= q[voff[fvars[e0 + b]] + xs[b]]
            if w > 0.0:
                total += w * tables[off + idx]
            advance(xs, n_s, fvars, e0, card)
    for i in range(len(card)):
        for x in range(card[i]):
            p = q[voff[i] + x]
            if p > 0.0:
                total -= p * np.log(p)
    return total
