"""Numba kernel of the factor-graph pseudo-likelihood (:mod:`mrflib.learning.table_learners`).

The data enter through their distinct contexts ``(i, x_blanket(i))``, each with the counts
of the states of ``x_i`` seen with it; a context is stored as the flat position, in the
concatenated log-tables, of each factor holding ``i`` at ``x_i = 0`` (``base``) and the
stride of ``x_i`` in that table, so the factor's entry at ``x_i = v`` is
``base + v * stride``. The plain numpy reference is
:func:`mrflib.learning.table_learners._pseudo_log_likelihood_numpy`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def pl_objective(tables, wptr, w, fptr, base, stride, want_grad):  # pragma: no cover - numba
    """``(Σ_c Σ_v w_cv log P(x_i = v | blanket_c), d/d tables)`` over the contexts ``c``.

    Context ``c`` (a variable ``i`` and one state of its Markov blanket) holds the
    weights ``w[wptr[c]:wptr[c+1]]`` of the states ``v`` of ``x_i`` seen with it and
    its factors ``fptr[c]:fptr[c+1]``; the conditional's scores, their log-sum-exp and
    its softmax are computed once per context (one ``exp`` per state), whatever the
    number of states seen with it. Deterministic: contexts are visited in order and
    every sum is sequential.
    """
    grad = np.zeros(tables.shape[0])
    value = 0.0
    qmax = 1
    for c in range(wptr.shape[0] - 1):
        qmax = max(qmax, wptr[c + 1] - wptr[c])
    score = np.empty(qmax)
    ex = np.empty(qmax)
    for c in range(wptr.shape[0] - 1):
        w0, q = wptr[c], wptr[c + 1] - wptr[c]
        lo, hi = fptr[c], fptr[c + 1]
        mx = -np.inf
        for v in range(q):
            s = 0.0
            for f in range(lo, hi):
                s += tables[base[f] + v * stride[f]]
            score[v] = s
            if s > mx:
                mx = s
        if mx == -np.inf:  # every state has zero weight: a zero-probability context
            for v in range(q):
                if w[w0 + v] > 0.0:
                    value = -np.inf
            continue
        tot = 0.0
        seen = 0.0
        for v in range(q):
            ex[v] = np.exp(score[v] - mx)
            tot += ex[v]
            if w[w0 + v] > 0.0:  # an unseen state adds nothing, even at score -inf
                value += w[w0 + v] * score[v]
                seen += w[w0 + v]
        value -= seen * (mx + np.log(tot))
        if want_grad:
            scale = seen / tot
            for v in range(q):
                g = w[w0 + v] - scale * ex[v]
                for f in range(lo, hi):
                    grad[base[f] + v * stride[f]] += g
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
