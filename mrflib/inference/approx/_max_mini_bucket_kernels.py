"""Numba kernel of the depth-first branch and bound of
:func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound`.

The variables are assigned in the levels ``t = T - 1, ..., 0`` (``order[t]`` at level
``t``). Level ``t``'s mini-bucket tables are ``r = bptr[t], ..., bptr[t + 1] - 1``: table
``r`` is ``tabs[moff[r]:]`` over its clique in C order, the level's variable first (stride
``vstride[r]``), then the variables ``mvars[mptr[r]:mptr[r + 1]]`` (strides ``mstride``).
The search keeps its whole state in arrays (the level in ``regs[LEVEL]``, each level's
candidates, sorted by decreasing bound, in ``cand_v`` and ``cand_b``, their count in
``ncand`` and the next one in ``icand``), so that the caller looks at the clock between
calls and calls again to resume.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: ``regs``: the level, whether the search started, whether it ended.
LEVEL, STARTED, ENDED = 0, 1, 2


@njit(cache=True)
def _above(best):  # pragma: no cover - compiled
    if best > -np.inf:
        return best + 1e-12 * max(1.0, abs(best))
    return -np.inf


@njit(cache=True)
def _expand(t, acc, best, order, card, bptr, moff, vstride, mptr, mvars, mstride, tabs, x,
            cand_v, cand_b, ncand, icand, score):  # pragma: no cover - compiled
    """Level ``t``'s values above ``best`` with their bounds ``acc`` plus the level's
    tables, by decreasing bound (ties: larger value first)."""
    v = order[t]
    c = card[v]
    for a in range(c):
        score[a] = 0.0
    for r in range(bptr[t], bptr[t + 1]):
        base = moff[r]
        for j in range(mptr[r], mptr[r + 1]):
            base += x[mvars[j]] * mstride[j]
        for a in range(c):
            score[a] = score[a] + tabs[base + a * vstride[r]]
    floor = _above(best)
    n = 0
    for a in range(c):
        s = acc + score[a]
        if s > floor:
            # insertion by decreasing (bound, value)
            i = n
            while i > 0 and (cand_b[t, i - 1] < s or (cand_b[t, i - 1] == s
                                                       and cand_v[t, i - 1] < a)):
                cand_b[t, i] = cand_b[t, i - 1]
                cand_v[t, i] = cand_v[t, i - 1]
                i -= 1
            cand_b[t, i] = s
            cand_v[t, i] = a
            n += 1
    ncand[t] = n
    icand[t] = 0


@njit(cache=True)
def search(order, card, bptr, moff, vstride, mptr, mvars, mstride, tabs, top, x, best_x,
           best, regs, cand_v, cand_b, ncand, icand, score, budget):  # pragma: no cover
    """Run the search for at most ``budget`` nodes from where it stopped; returns the
    nodes done and the best bound reached (``best[0]`` too; ``best_x`` its state, where
    ``regs[ENDED]`` tells whether the search is over)."""
    levels = len(order)
    if regs[STARTED] == 0:
        regs[STARTED] = 1
        regs[LEVEL] = levels - 1
        _expand(levels - 1, top, best[0], order, card, bptr, moff, vstride, mptr, mvars,
                mstride, tabs, x, cand_v, cand_b, ncand, icand, score)
    t = regs[LEVEL]
    done = 0
    while done < budget:
        done += 1
        k = icand[t]
        if k < ncand[t] and not cand_b[t, k] > _above(best[0]):
            icand[t] = ncand[t]  # sorted: none of the others is above either
            k = ncand[t]
        if k >= ncand[t]:
            t += 1
            if t >= levels:
                regs[ENDED] = 1
                break
            continue
        bound = cand_b[t, k]
        a = cand_v[t, k]
        icand[t] = k + 1
        x[order[t]] = a
        if t == 0:
            best[0] = bound
            best_x[:] = x
            continue
        t -= 1
        _expand(t, bound, best[0], order, card, bptr, moff, vstride, mptr, mvars, mstride,
                tabs, x, cand_v, cand_b, ncand, icand, score)
    regs[LEVEL] = t
    return done
