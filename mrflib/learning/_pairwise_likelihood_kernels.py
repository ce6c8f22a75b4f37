"""Numba kernel of the pseudo-likelihood of pairwise factor graphs
(:mod:`mrflib.learning._pairwise_likelihood`).

The model is the flat array ``w`` of :class:`mrflib.inference.sampling._pairwise.Pairwise`:
variable ``i``'s unary row at ``uoff[i]`` and, for the ``k``-th entry of its neighbour list,
a table oriented for ``i`` whose row of the neighbour's state ``s`` starts at
``noff[k] + s * card[i]``. ``w`` holds exponentiated rows (``logs`` false: a conditional is
the product of its rows) or log-weights (``logs`` true: their sum, then one exponential per
state). Every entry of ``w`` belongs to exactly one variable's rows, so the gradient of a
variable's conditionals lands in slots no other variable writes: the variables run in
parallel with no reduction, and each variable's rows are summed in row order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad, sc
              ):  # pragma: no cover - numba
    """``Σ_r log P(x_i = xt[i, r] | the rest of row r)``, its gradient added to ``grad``
    (the rows of ``i``), ``sc`` a scratch of ``card[i]`` entries."""
    c = card[i]
    u0 = uoff[i]
    lo, hi = nptr[i], nptr[i + 1]
    value = 0.0
    for r in range(xt.shape[1]):
        for v in range(c):
            sc[v] = w[u0 + v]
        for k in range(lo, hi):
            b = noff[k] + xt[nbr[k], r] * c
            if logs:
                for v in range(c):
                    sc[v] += w[b + v]
            else:
                for v in range(c):
                    sc[v] *= w[b + v]
        o = xt[i, r]
        if logs:
            mx = sc[0]
            for v in range(1, c):
                mx = max(mx, sc[v])
            if mx == -np.inf:  # no state of positive weight: a zero-probability row
                value = -np.inf
                continue
            tot = 0.0
            obs = sc[o] - mx
            for v in range(c):
                sc[v] = np.exp(sc[v] - mx)
                tot += sc[v]
            value += obs - np.log(tot)
        else:
            tot = 0.0
            for v in range(c):
                tot += sc[v]
            if tot == 0.0:
                value = -np.inf
                continue
            value += np.log(sc[o] / tot)
        if want_grad:
            inv = 1.0 / tot
            for v in range(c):
                sc[v] = -sc[v] * inv
            sc[o] += 1.0
            for v in range(c):
                grad[u0 + v] += sc[v]
            for k in range(lo, hi):
                b = noff[k] + xt[nbr[k], r] * c
                for v in range(c):
                    grad[b + v] += sc[v]
    return value


@njit(cache=True, parallel=True)
def pl_parallel(xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad, values
                ):  # pragma: no cover - numba
    """Every variable's summed log-conditionals into ``values`` and their gradient with
    respect to ``w``'s log-weights into ``grad`` (zeros on entry), the variables on all
    threads; ``xt`` the rows transposed, ``(n, N)``."""
    cmax = 1
    for i in range(card.shape[0]):
        cmax = max(cmax, card[i])
    for i in prange(card.shape[0]):
        sc = np.empty(cmax)
        values[i] = _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad,
                              sc)


@njit(cache=True)
def pl_serial(xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad, values
              ):  # pragma: no cover - numba
    """:func:`pl_parallel` on one thread (the same operations, the same results)."""
    cmax = 1
    for i in range(card.shape[0]):
        cmax = max(cmax, card[i])
    sc = np.empty(cmax)
    for i in range(card.shape[0]):
        values[i] = _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad,
                              sc)
