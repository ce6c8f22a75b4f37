"""Numba kernels of the exact conditioning search (:mod:`mrflib.inference.exact.conditioning`).

The model is packed as for the search of :mod:`mrflib.inference.approx._map_search_kernels`:
``tables[off[k]:off[k + 1]]`` is factor ``k``'s log table in C order, ``fvars[fptr[k]:fptr[k + 1]]``
its scope, ``vfac[vptr[v]:vptr[v + 1]]`` the factors holding ``v`` (increasing). The domains
are one flag per state (``alive``, variable ``v``'s at ``sptr[v]``) with their sizes
(``size``); a variable with one state left is *fixed*. A *component* is a set of variables
that are not fixed, connected through factors; its factors are those holding one of them
(their other variables are fixed, or in the component).

``mark`` (one per variable) and ``fmark`` (one per factor) are scratch stamps: a kernel
marks with a stamp no earlier call used (``stamp``, increased by the caller), so that no
call clears them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference.exact._domains_kernels import TOP, propagate


@njit(cache=True, inline="always")
def _state(v, card, sptr, alive):  # pragma: no cover - compiled
    """The one state left of a fixed variable ``v``."""
    for x in range(card[v]):
        if alive[sptr[v] + x]:
            return x
    return -1


@njit(cache=True)
def _entry(k, v, xv, tables, off, fptr, fvars, card, sptr, alive):  # pragma: no cover
    """Factor ``k``'s entry with ``v`` at state ``xv`` and its other variables at their one
    state (``v = -1``: every variable fixed)."""
    e = 0
    for a in range(fptr[k], fptr[k + 1]):
        u = fvars[a]
        x = xv if u == v else _state(u, card, sptr, alive)
        e = e * card[u] + x
    return tables[off[k] + e]


@njit(cache=True)
def split(comp, tables, off, fptr, fvars, vptr, vfac, card, sptr, alive, size, mark, fmark,
          stamp, out, starts):  # pragma: no cover - compiled
    """The components of the variables of ``comp`` that are not fixed, and the log-weight
    of the factors holding a variable of ``comp`` whose every variable is fixed.

    Writes the components' variables into ``out`` (each component's increasing, the
    components by their first variable found in ``comp`` order) with their bounds in
    ``starts``; returns ``(components, constant)``."""
    const = 0.0
    for v in comp:
        for i in range(vptr[v], vptr[v + 1]):
            k = vfac[i]
            if fmark[k] == stamp:
                continue
            fmark[k] = stamp
            fixed = True
            for a in range(fptr[k], fptr[k + 1]):
                if size[fvars[a]] > 1:
                    fixed = False
                    break
            if fixed:
                const += _entry(k, -1, 0, tables, off, fptr, fvars, card, sptr, alive)
    n_out = 0
    n_comp = 0
    starts[0] = 0
    for v in comp:
        if size[v] <= 1 or mark[v] == stamp:
            continue
        mark[v] = stamp
        first = n_out
        out[n_out] = v
        n_out += 1
        head = first
        while head < n_out:  # breadth first through the factors
            u = out[head]
            head += 1
            for i in range(vptr[u], vptr[u + 1]):
                k = vfac[i]
                for a in range(fptr[k], fptr[k + 1]):
                    w = fvars[a]
                    if size[w] > 1 and mark[w] != stamp:
                        mark[w] = stamp
                        out[n_out] = w
                        n_out += 1
        out[first:n_out] = np.sort(out[first:n_out])
        n_comp += 1
        starts[n_comp] = n_out
    return n_comp, const


@njit(cache=True)
def factors_of(comp, fptr, fvars, vptr, vfac, mark, fmark, stamp,
               out):  # pragma: no cover - compiled
    """The factors holding a variable of ``comp`` into ``out`` (in the order the sorted
    variables list them, each once), ``comp`` marked in ``mark``; returns their number."""
    for v in comp:
        mark[v] = stamp
    m = 0
    for v in comp:
        for i in range(vptr[v], vptr[v + 1]):
            k = vfac[i]
            if fmark[k] != stamp:
                fmark[k] = stamp
                out[m] = k
                m += 1
    return m


@njit(cache=True)
def key(comp, factors, fptr, fvars, card, sptr, alive, mark, stamp):  # pragma: no cover
    """What the log-weight of component ``comp`` (marked with ``stamp`` in ``mark``) and its
    ``factors`` depend on: its variables, their states left (a bit mask of at most 62
    states per word), and the states of the fixed variables of its factors, in the order
    ``factors`` lists them (the same for the same ``comp``)."""
    n = comp.shape[0]
    length = 1 + n
    for v in comp:
        length += (card[v] + 61) // 62
    for k in factors:
        for a in range(fptr[k], fptr[k + 1]):
            if mark[fvars[a]] != stamp:
                length += 1
    out = np.empty(length, dtype=np.int64)
    out[0] = n
    at = 1
    for v in comp:
        out[at] = v
        at += 1
    for v in comp:
        word = 0
        bit = 0
        for x in range(card[v]):
            if alive[sptr[v] + x]:
                word |= np.int64(1) << bit
            bit += 1
            if bit == 62:
                out[at] = word
                at += 1
                word = 0
                bit = 0
        if bit:
            out[at] = word
            at += 1
    for k in factors:
        for a in range(fptr[k], fptr[k + 1]):
            u = fvars[a]
            if mark[u] != stamp:
                out[at] = _state(u, card, sptr, alive)
                at += 1
    return out


@njit(cache=True)
def single(v, tables, off, fptr, fvars, vptr, vfac, card, sptr, alive):  # pragma: no cover
    """``log Σ_x Π_k ψ_k`` over the states ``x`` left of ``v``, the only variable not fixed
    in its factors' scopes (a component of one variable)."""
    best = -np.inf
    terms = np.empty(card[v])
    for x in range(card[v]):
        terms[x] = -np.inf
        if not alive[sptr[v] + x]:
            continue
        s = 0.0
        for i in range(vptr[v], vptr[v + 1]):
            s += _entry(vfac[i], v, x, tables, off, fptr, fvars, card, sptr, alive)
        terms[x] = s
        best = max(best, s)
    if best == -np.inf:
        return best
    total = 0.0
    for x in range(card[v]):
        if terms[x] > -np.inf:
            total += np.exp(terms[x] - best)
    return best + np.log(total)


@njit(cache=True)
def branch_variable(comp, fptr, fvars, vptr, vfac, size):  # pragma: no cover - compiled
    """The variable of ``comp`` with the most neighbours not fixed, counted through each of
    its factors (ties: the first in ``comp``): conditioning on it cuts the most edges."""
    best = comp[0]
    most = -1
    for v in comp:
        d = 0
        for i in range(vptr[v], vptr[v + 1]):
            k = vfac[i]
            for a in range(fptr[k], fptr[k + 1]):
                if size[fvars[a]] > 1:
                    d += 1
        if d > most:
            most = d
            best = v
    return best


@njit(cache=True)
def local_edges(comp, factors, fptr, fvars, size, local):  # pragma: no cover - compiled
    """The interaction graph of component ``comp`` as pairs of local indices (``local[v]``:
    ``v``'s position in ``comp``), both directions: each pair of its variables in a factor."""
    m = 0
    for k in factors:
        d = 0
        for a in range(fptr[k], fptr[k + 1]):
            if size[fvars[a]] > 1:
                d += 1
        m += d * (d - 1)
    rows = np.empty(m, dtype=np.int64)
    cols = np.empty(m, dtype=np.int64)
    at = 0
    for k in factors:
        for a in range(fptr[k], fptr[k + 1]):
            u = fvars[a]
            if size[u] <= 1:
                continue
            for b in range(fptr[k], fptr[k + 1]):
                w = fvars[b]
                if w != u and size[w] > 1:
                    rows[at] = local[u]
                    cols[at] = local[w]
                    at += 1
    return rows[:at], cols[:at]


@njit(cache=True)
def assign(v, x, alive, size, svar, sptr, card, trail, regs, top_at):  # pragma: no cover
    """Remove every state of ``v`` but ``x`` (recorded on the trail)."""
    for y in range(card[v]):
        s = sptr[v] + y
        if y != x and alive[s]:
            alive[s] = False
            size[v] -= 1
            trail[regs[top_at]] = s
            regs[top_at] += 1


@njit(cache=True)
def condition(v, x, pos, off, fptr, fvars, cvptr, cvfac, card, alive, size, sptr, svar,
              trail, regs, queue, queued, soff, sup, idx):  # pragma: no cover - compiled
    """Fix ``v`` at ``x`` and propagate the zeros from the constraints holding ``v``
    (:func:`~mrflib.inference.exact._domains_kernels.propagate`; ``pos`` ... ``cvfac`` are
    the constraints' arrays): false when some domain became empty."""
    assign(v, x, alive, size, svar, sptr, card, trail, regs, TOP)
    top = 0
    for i in range(cvptr[v], cvptr[v + 1]):
        g = cvfac[i]
        if not queued[g]:
            queued[g] = True
            queue[top] = g
            top += 1
    ok, _ = propagate(top, queue, queued, pos, off, fptr, fvars, cvptr, cvfac, card, alive,
                      size, sptr, svar, trail, regs, soff, sup, idx)
    return ok
