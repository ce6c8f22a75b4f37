"""Numba kernels of the domain reduction (:mod:`mrflib.inference.exact.domains`) and of the
search's propagation (:mod:`mrflib.inference.approx.map_search`).

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

from mrflib._support.interpreted import interpret_small
from mrflib.inference._packed import advance

#: ``regs[TOP]``: the number of removals on the trail of :func:`propagate`.
TOP = 1


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
def remove(s, alive, size, svar, trail, regs):  # pragma: no cover - compiled
    """Clear state ``s``, shrink its variable's domain and record ``s`` on the trail."""
    alive[s] = False
    size[svar[s]] -= 1
    trail[regs[TOP]] = s
    regs[TOP] += 1


@njit(cache=True)
def undo(mark, alive, size, svar, trail, regs):  # pragma: no cover - compiled
    """Restore the states :func:`remove` cleared since the trail held ``mark`` removals."""
    while regs[TOP] > mark:
        regs[TOP] -= 1
        s = trail[regs[TOP]]
        alive[s] = True
        size[svar[s]] += 1


@njit(cache=True)
def propagate(top, queue, queued, pos, off, fptr, fvars, cvptr, cvfac, card, alive, size,
               sptr, svar, trail, regs, soff, sup, idx):  # pragma: no cover - compiled
    """Arc consistency from the ``top`` factors on ``queue`` (popped from the end, the
    factors holding a variable that lost a state pushed in ``cvfac`` order), each removal
    recorded on ``trail`` so that a search can undo it: returns ``(ok, work)``, ``ok``
    false when a domain became empty (the queue is then emptied), ``work`` the table
    entries read."""
    work = 0
    while top > 0:
        top -= 1
        f = queue[top]
        queued[f] = False
        d = fptr[f + 1] - fptr[f]
        for a in range(d):
            soff[a + 1] = soff[a] + card[fvars[fptr[f] + a]]
        _supports(f, pos, off, fptr, fvars, card, alive, sptr, soff, sup, idx)
        work += off[f + 1] - off[f]
        for a in range(d):
            v = fvars[fptr[f] + a]
            changed = False
            for x in range(card[v]):
                s = sptr[v] + x
                if alive[s] and not sup[soff[a] + x]:
                    remove(s, alive, size, svar, trail, regs)
                    changed = True
            if not changed:
                continue
            if size[v] == 0:
                for i in range(top):
                    queued[queue[i]] = False
                return False, work
            for i in range(cvptr[v], cvptr[v + 1]):
                g = cvfac[i]
                if g != f and not queued[g]:
                    queued[g] = True
                    queue[top] = g
                    top += 1
            # the removals may take away the supports of the scope's other variables
            _supports(f, pos, off, fptr, fvars, card, alive, sptr, soff, sup, idx)
            work += off[f + 1] - off[f]
    return True, work


@njit(cache=True)
def workspace(fptr, fvars, card):  # pragma: no cover - compiled
    """The scratch arrays :func:`propagate` needs for the widest factor: ``soff`` (offsets
    of the scope's variables in ``sup``), ``sup`` (one support flag per state of the scope)
    and ``idx`` (a row's index)."""
    width = 1
    most = 1
    for f in range(fptr.shape[0] - 1):
        d = fptr[f + 1] - fptr[f]
        width = max(width, d)
        total = 0
        for a in range(d):
            total += card[fvars[fptr[f] + a]]
        most = max(most, total)
    return (np.zeros(width + 1, dtype=np.int64), np.zeros(most, dtype=np.bool_),
            np.zeros(width, dtype=np.int64))


@njit(cache=True)
def arc_consistency(pos, off, fptr, fvars, vptr, vfac, card, alive,
                    sptr):  # pragma: no cover - compiled
    """Remove from ``alive`` every state without support, factor by factor, until nothing
    changes (see the module text): :func:`propagate` from every factor, the last on top.
    Returns ``-1`` at the fixed point, or the variable that lost its last state (the
    reduction stops there: ``Z = 0``)."""
    m = fptr.shape[0] - 1
    n = card.shape[0]
    soff, sup, idx = workspace(fptr, fvars, card)
    queue = np.arange(m)
    queued = np.ones(m, dtype=np.bool_)
    size = np.zeros(n, dtype=np.int64)
    svar = np.empty(sptr[n], dtype=np.int64)
    for v in range(n):
        for x in range(card[v]):
            svar[sptr[v] + x] = v
            size[v] += alive[sptr[v] + x]
    trail = np.empty(sptr[n], dtype=np.int64)
    regs = np.zeros(TOP + 1, dtype=np.int64)
    ok, _ = propagate(m, queue, queued, pos, off, fptr, fvars, vptr, vfac, card, alive, size,
                      sptr, svar, trail, regs, soff, sup, idx)
    if ok:
        return -1
    return svar[trail[regs[TOP] - 1]]  # the last state removed emptied its domain


interpret_small(globals())
