"""Numba kernel of the factor-graph pseudo-likelihood (:mod:`mrflib.factor_learning`).

The data enter through their distinct local patterns ``(i, x_i, x_blanket)`` with counts;
a pattern is stored as the flat position, in the concatenated log-tables, of each factor
holding ``i`` at ``x_i = 0`` (``base``) and the stride of ``x_i`` in that table, so the
factor's entry at ``x_i = v`` is ``base + v * stride``. The plain numpy reference is
:func:`mrflib.factor_learning.pseudo_log_likelihood_numpy`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def pl_objective(tables, pat_var, pat_x, pat_w, fptr, base, stride, card,
                 want_grad):  # pragma: no cover - numba
    """``(Σ_p w_p log P(x_i = x_p | blanket_p), d/d tables)`` over the patterns ``p``.

    Deterministic: patterns are visited in order and every sum is sequential.
    """
    grad = np.zeros(tables.shape[0])
    value = 0.0
    score = np.empty(int(card.max()))
    for p in range(pat_var.shape[0]):
        c = card[pat_var[p]]
        lo, hi = fptr[p], fptr[p + 1]
        mx = -np.inf
        for v in range(c):
            s = 0.0
            for f in range(lo, hi):
                s += tables[base[f] + v * stride[f]]
            score[v] = s
            if s > mx:
                mx = s
        tot = 0.0
        for v in range(c):
            tot += np.exp(score[v] - mx)
        lse = mx + np.log(tot)
        w = pat_w[p]
        xp = pat_x[p]
        value += w * (score[xp] - lse)
        if want_grad:
            for v in range(c):
                pv = np.exp(score[v] - lse)
                for f in range(lo, hi):
                    grad[base[f] + v * stride[f]] -= w * pv
            for f in range(lo, hi):
                grad[base[f] + xp * stride[f]] += w
    return value, grad


@njit(cache=True)
def pattern_counts(x, cptr, cols, radix, count_off):  # pragma: no cover - numba
    """Counts of every variable's local-pattern codes in one pass over the rows.

    Variable ``t``'s code of a row is ``Σ_a x[row, cols[a]] * radix[a]`` over
    ``a in cptr[t]:cptr[t+1]``; its counts live in ``out[count_off[t]:count_off[t+1]]``.
    """
    out = np.zeros(count_off[-1], dtype=np.int64)
    for r in range(x.shape[0]):
        for t in range(cptr.shape[0] - 1):
            code = 0
            for a in range(cptr[t], cptr[t + 1]):
                code += x[r, cols[a]] * radix[a]
            out[count_off[t] + code] += 1
    return out
