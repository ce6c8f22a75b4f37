"""Numba kernels of the search for states of positive weight
(:mod:`mrflib.inference.approx.map_search`).

The model is packed as for the Gibbs sampler (:func:`mrflib.inference.sampling.chains.pack`):
``tables[off[k]:off[k + 1]]`` is factor ``k``'s log table in C order, ``fvars[fptr[k]:fptr[k + 1]]``
its scope, ``vfac[vptr[v]:vptr[v + 1]]`` the factors holding ``v`` (increasing). ``pos`` flags
the positive entries; ``cvfac[cvptr[v]:cvptr[v + 1]]`` are the factors holding ``v`` that have
a zero (the constraints). The domains are one flag per state (``alive``, variable ``v``'s at
``sptr[v]``, ``svar`` the variable of each flag) with their sizes (``size``).

:func:`search` is a depth-first search over the variables held by a constraint, maintaining
generalized arc consistency on the constraints (each removal is recorded on ``trail`` and
undone on backtracking). It runs for a budget of work (table entries read) and keeps its
whole state in arrays, so that the caller can look at the clock between calls and call
again to resume. :func:`complete` then fixes the variables no constraint holds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._packed import advance
from mrflib.inference.exact._domains_kernels import TOP, propagate, remove, undo, workspace

#: ``regs`` of :func:`search`: levels on the stack, removals on the trail (``TOP``, as
#: :func:`~mrflib.inference.exact._domains_kernels.propagate` keeps it), phase.
DEPTH, PHASE = 0, 2
#: Phases: propagate at the root, choose a variable, try the next value, found, none.
ROOT, CHOOSE, TRY, FOUND, NONE = 0, 1, 2, 3, 4


@njit(cache=True)
def value_scores(v, tables, off, fptr, fvars, vptr, vfac, card, alive, sptr, idx, best,
                 score):  # pragma: no cover - compiled
    """``score[a] = Σ_{k ∋ v} max θ_k`` over the rows of ``k`` with ``x_v = a`` and every
    state alive (``-inf`` where there is none), factors added in the order ``vfac`` lists
    them. Returns the number of table entries read."""
    c = card[v]
    for a in range(c):
        score[a] = 0.0
    work = 0
    for i in range(vptr[v], vptr[v + 1]):
        k = vfac[i]
        start = fptr[k]
        d = fptr[k + 1] - start
        at = 0
        for a in range(d):
            idx[a] = 0
            if fvars[start + a] == v:
                at = a
        for a in range(c):
            best[a] = -np.inf
        for e in range(off[k], off[k + 1]):
            ok = True
            for a in range(d):
                if not alive[sptr[fvars[start + a]] + idx[a]]:
                    ok = False
                    break
            if ok and tables[e] > best[idx[at]]:
                best[idx[at]] = tables[e]
            advance(idx, d, fvars, start, card)
        for a in range(c):
            score[a] += best[a]
        work += off[k + 1] - off[k]
    return work


@njit(cache=True)
def _rank(v, prefer, score, alive, sptr, card, order):  # pragma: no cover - compiled
    """``order[sptr[v]:sptr[v] + card[v]]``: the values of ``v`` by decreasing score, ties
    in increasing value, ``prefer`` (when alive) first."""
    c = card[v]
    keys = np.empty(c)
    for a in range(c):
        keys[a] = -score[a]
    ranked = np.argsort(keys, kind="mergesort")
    j = sptr[v]
    first = -1
    if prefer >= 0 and alive[sptr[v] + prefer]:
        order[j] = prefer
        j += 1
        first = prefer
    for a in range(c):
        if ranked[a] != first:
            order[j] = ranked[a]
            j += 1


@njit(cache=True)
def _choose(searched, size, degree):  # pragma: no cover - compiled
    """The variable to branch on: smallest domain above one, then most constraints, then
    lowest index (``-1`` when every searched variable has one state left)."""
    v = -1
    for u in searched:
        if size[u] > 1 and (v < 0 or size[u] < size[v]
                            or (size[u] == size[v] and degree[u] > degree[v])):
            v = u
    return v


@njit(cache=True)
def search(tables, off, fptr, fvars, vptr, vfac, card, pos, cvptr, cvfac, constraints,
           searched, degree, prefer, alive, size, sptr, svar, trail, regs, lvl_var, lvl_pos,
           lvl_mark, order, queue, queued, budget):  # pragma: no cover - compiled
    """Depth-first search with arc consistency (see the module text) for about ``budget``
    table entries of work. Returns :data:`FOUND` (every searched variable has one state
    left, a state of positive weight of the constraints), :data:`NONE` (none exists) or
    :data:`TRY` / :data:`CHOOSE` / :data:`ROOT` when the budget ran out (call again)."""
    soff, sup, idx = workspace(fptr, fvars, card)
    top_card = 1
    for v in range(card.shape[0]):
        top_card = max(top_card, card[v])
    best = np.empty(top_card)
    score = np.empty(top_card)
    work = 0
    while work < budget:
        phase = regs[PHASE]
        if phase == ROOT:
            for i in range(constraints.shape[0]):
                queue[i] = constraints[i]
                queued[constraints[i]] = True
            ok, w = propagate(constraints.shape[0], queue, queued, pos, off, fptr, fvars,
                               cvptr, cvfac, card, alive, size, sptr, svar, trail, regs, soff,
                               sup, idx)
            work += w
            regs[PHASE] = CHOOSE if ok else NONE
        elif phase == CHOOSE:
            v = _choose(searched, size, degree)
            work += searched.shape[0]
            if v < 0:
                regs[PHASE] = FOUND
                continue
            d = regs[DEPTH]
            lvl_var[d], lvl_pos[d], lvl_mark[d] = v, 0, regs[TOP]
            regs[DEPTH] = d + 1
            work += value_scores(v, tables, off, fptr, fvars, vptr, vfac, card, alive, sptr,
                                 idx, best, score)
            _rank(v, prefer[v], score, alive, sptr, card, order)
            regs[PHASE] = TRY
        elif phase == TRY:
            d = regs[DEPTH] - 1
            if d < 0:
                regs[PHASE] = NONE
                continue
            v = lvl_var[d]
            undo(lvl_mark[d], alive, size, svar, trail, regs)
            p = lvl_pos[d]
            while p < card[v] and not alive[sptr[v] + order[sptr[v] + p]]:
                p += 1
            if p == card[v]:  # every value failed: the level above tries its next one
                regs[DEPTH] = d
                continue
            lvl_pos[d] = p + 1
            a = order[sptr[v] + p]
            for x in range(card[v]):
                if x != a and alive[sptr[v] + x]:
                    remove(sptr[v] + x, alive, size, svar, trail, regs)
            top = 0
            for i in range(cvptr[v], cvptr[v + 1]):
                queue[top] = cvfac[i]
                queued[cvfac[i]] = True
                top += 1
            ok, w = propagate(top, queue, queued, pos, off, fptr, fvars, cvptr, cvfac, card,
                               alive, size, sptr, svar, trail, regs, soff, sup, idx)
            work += w + card[v]
            if ok:
                regs[PHASE] = CHOOSE
        else:
            return phase
    return regs[PHASE]


@njit(cache=True)
def complete(tables, off, fptr, fvars, vptr, vfac, card, prefer, alive, size,
             sptr):  # pragma: no cover - compiled
    """Fix every variable with more than one state left, in increasing order: to its
    ``prefer`` value where given, else to the first value of highest score given the
    states left (:func:`value_scores`)."""
    width = 1
    for f in range(fptr.shape[0] - 1):
        width = max(width, fptr[f + 1] - fptr[f])
    idx = np.zeros(width, dtype=np.int64)
    top_card = 1
    for v in range(card.shape[0]):
        top_card = max(top_card, card[v])
    best = np.empty(top_card)
    score = np.empty(top_card)
    for v in range(card.shape[0]):
        if size[v] <= 1:
            continue
        a = prefer[v]
        if a < 0 or not alive[sptr[v] + a]:
            value_scores(v, tables, off, fptr, fvars, vptr, vfac, card, alive, sptr, idx,
                         best, score)
            a = 0
            for b in range(1, card[v]):
                if score[b] > score[a]:
                    a = b
        for x in range(card[v]):
            alive[sptr[v] + x] = x == a
        size[v] = 1


@njit(cache=True)
def states(alive, sptr, card):  # pragma: no cover - compiled
    """The state of each variable: its first state alive."""
    x = np.zeros(card.shape[0], dtype=np.int64)
    for v in range(card.shape[0]):
        for a in range(card[v]):
            if alive[sptr[v] + a]:
                x[v] = a
                break
    return x
