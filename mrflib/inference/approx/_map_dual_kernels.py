"""Numba kernels of the max-product dual bound (:mod:`mrflib.inference.approx.map_dual`).

The factors of more than one variable are packed as for the Gibbs sampler
(:func:`mrflib.inference.sampling.chains.pack`): ``tables[off[k]:off[k + 1]]`` is factor
``k``'s log table in C order (its zeros replaced by a finite floor) and
``fvars[fptr[k]:fptr[k + 1]]`` its scope. ``lam[loff[j]:loff[j] + card[v]]`` is the message of
scope entry ``j`` (factor ``k``, variable ``v = fvars[j]``), and ``tot[sptr[v]:sptr[v] +
card[v]]`` the unary table of ``v`` plus the messages it receives, kept equal to that sum.
A table's entries are visited in C order with an odometer of its variables' values
(``digit``, stepped by :func:`mrflib.inference._packed.advance`), the last variable moving
fastest.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._packed import advance


@njit(cache=True)
def sweep(tables, off, fptr, fvars, card, sptr, loff, lam, tot, belief, mu,
          best, digit):  # pragma: no cover - compiled
    """One pass of MPLP's factor updates (Globerson and Jaakkola 2008, star form), in
    factor order: each factor's messages set to its max-marginals shared equally among its
    variables, less what the rest of the model sends them. ``belief`` (the largest
    table), ``mu`` and ``best`` (the largest sum of a scope's domains) and ``digit`` (the
    largest scope) are workspaces."""
    for k in range(len(off) - 1):
        lo, hi = fptr[k], fptr[k + 1]
        arity = hi - lo
        size = off[k + 1] - off[k]
        # mu: what the rest of the model sends each variable of the scope
        pos = 0
        for j in range(lo, hi):
            v = fvars[j]
            for x in range(card[v]):
                mu[pos + x] = tot[sptr[v] + x] - lam[loff[j] + x]
                best[pos + x] = -np.inf
            pos += card[v]
        for i in range(arity):
            digit[i] = 0
        for e in range(size):
            s = tables[off[k] + e]
            pos = 0
            for i in range(arity):
                s += mu[pos + digit[i]]
                pos += card[fvars[lo + i]]
            belief[e] = s
            pos = 0
            for i in range(arity):
                if s > best[pos + digit[i]]:
                    best[pos + digit[i]] = s
                pos += card[fvars[lo + i]]
            advance(digit, hi - lo, fvars, lo, card)
        pos = 0
        for j in range(lo, hi):
            v = fvars[j]
            for x in range(card[v]):
                new = best[pos + x] / arity - mu[pos + x]
                tot[sptr[v] + x] = mu[pos + x] + new
                lam[loff[j] + x] = new
            pos += card[v]


@njit(cache=True)
def bound(tables, off, fptr, fvars, card, sptr, loff, lam, tot,
          digit):  # pragma: no cover - compiled
    """``Σ_v max tot_v + Σ_k max (θ_k - Σ_{j ∈ k} λ_j)``: an upper bound on every state's
    log-weight, whatever the messages."""
    total = 0.0
    for v in range(len(card)):
        m = -np.inf
        for x in range(card[v]):
            if tot[sptr[v] + x] > m:
                m = tot[sptr[v] + x]
        total += m
    for k in range(len(off) - 1):
        lo, hi = fptr[k], fptr[k + 1]
        for i in range(hi - lo):
            digit[i] = 0
        m = -np.inf
        for e in range(off[k + 1] - off[k]):
            s = tables[off[k] + e]
            for i in range(hi - lo):
                s -= lam[loff[lo + i] + digit[i]]
            if s > m:
                m = s
            advance(digit, hi - lo, fvars, lo, card)
        total += m
    return total
