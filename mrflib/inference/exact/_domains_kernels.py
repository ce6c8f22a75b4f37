"""Numba kernel of the domain reduction (:mod:`mrflib.inference.exact.domains`).

``arc_consistency`` runs generalized arc consistency on the factors that hold a zero, given
as flat arrays: their positive-weight masks concatenated in C order (``pos``, factor ``f``'s
at ``off[f]``), their scopes in CSR form (``fptr``, ``fvars``), the factors holding each
variable (``vptr``, ``vfac``, increasing) and one flag per state of every variable
(``alive``, variable ``v``'s at ``sptr[v]``), which it clears in place. It visits the
factors in the order of the reference loop (a stack, refilled in increasing factor order),
so even a model whose ``Z`` is zero stops at the same state lists.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._packed import advance


@njit(cache=True)
def _supports(f, pos, off, fptr, fvars, card, alive, sptr, soff, sup,
              idx):  # pragma: no cover - compiled
    """``sup[soff[a] + x]``: state ``x`` of factor ``f``'s ``a``-th variable has a
    positive-weight row of ``f`` whose every state is alive."""
    d = fptr[f + 1] - fptr[f]
    sup[:soff[d]] = False
    idx[:d] = 0
    start = fptr[f]
    for e in range(off[f], off[f + 1]):
        if pos[e]:
            ok = True
            for a in range(d):
                if not alive[sptr[fvars[start + a]] + idx[a]]:
                    ok = False
                    break
            if ok:
                for a in range(d):
                    sup[soff[a] + idx[a]] = True
        advance(idx, d, fvars, start, card)  # the next row in C order


@njit(cache=True)
def arc_consistency(pos, off, fptr, fvars, vptr, vfac, card, alive,
                    sptr):  # pragma: no cover - compiled
    """Remove from ``alive`` every state without support, factor by factor, until nothing
    changes (see the module text). Returns ``-1`` at the fixed point, or the variable that
    lost its last state (the reduction stops there: ``Z = 0``)."""
    m = fptr.shape[0] - 1
    width = 0
    most = 1
    for f in range(m):
        d = fptr[f + 1] - fptr[f]
        width = max(width, d)
        total = 0
        for a in range(d):
            total += card[fvars[fptr[f] + a]]
        most = max(most, total)
    soff = np.zeros(width + 1, dtype=np.int64)
    sup = np.zeros(most, dtype=np.bool_)
    idx = np.zeros(max(width, 1), dtype=np.int64)
    stack = np.empty(m, dtype=np.int64)
    queued = np.ones(m, dtype=np.bool_)
    for f in range(m):
        stack[f] = f
    top = m
    while top > 0:
        top -= 1
        f = stack[top]
        queued[f] = False
        d = fptr[f + 1] - fptr[f]
        for a in range(d):
            soff[a + 1] = soff[a] + card[fvars[fptr[f] + a]]
        _supports(f, pos, off, fptr, fvars, card, alive, sptr, soff, sup, idx)
        for a in range(d):
            v = fvars[fptr[f] + a]
            changed = False
            left = 0
            for x in range(card[v]):
                if alive[sptr[v] + x]:
                    if sup[soff[a] + x]:
                        left += 1
                    else:
                        alive[sptr[v] + x] = False
                        changed = True
            if not changed:
                continue
            if left == 0:
                return v
            for i in range(vptr[v], vptr[v + 1]):
                g = vfac[i]
                if g != f and not queued[g]:
                    queued[g] = True
                    stack[top] = g
                    top += 1
            _supports(f, pos, off, fptr, fvars, card, alive, sptr, soff, sup, idx)
    return -1
