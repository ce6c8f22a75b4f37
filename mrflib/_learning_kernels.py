"""Numba kernels of :mod:`mrflib.learning` (private; validated callers only).

The local objectives (pseudo-likelihood, ratio matching, minimum probability flow)
all have the form ``(1/N) sum_mu sum_i phi(x_i h_i)`` with the local field
``h_i = b_i + sum_j J_ij x_j``. One fused pass over the data computes the
objective and its gradient without temporaries; :func:`local_terms_numpy` in
:mod:`mrflib.learning` is the plain-numpy reference the tests compare against.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

MPLE, RM, MPF = 0, 1, 2


@njit(cache=True, inline="always")
def _phi(u, kind):
    """Objective term phi(u) and d phi / d u at u = x_i h_i (maximised)."""
    if kind == MPLE:
        # log P(x_i | rest) = u - log(2 cosh h) = -log(1 + exp(-2u))
        if u > 0.0:
            t = math.exp(-2.0 * u)
            return -math.log1p(t), 2.0 * t / (1.0 + t)
        t = math.exp(2.0 * u)
        return 2.0 * u - math.log1p(t), 2.0 / (1.0 + t)
    if kind == RM:
        # -g(P(x)/P(x^-i))^2 with g(r) = 1/(1 + r), P(x)/P(x^-i) = exp(2u)
        if u > 0.0:
            t = math.exp(-2.0 * u)
            s = t / (1.0 + t)
        else:
            s = 1.0 / (1.0 + math.exp(2.0 * u))
        return -s * s, 4.0 * s * s * (1.0 - s)
    # MPF, single-spin-flip connectivity: -exp((E(x) - E(x^-i)) / 2) = -exp(-u)
    t = math.exp(-u)
    return -t, t


@njit(cache=True)
def local_objective_gradient(x, bias, coupling, ei, ej, indptr, indices, eids, kind, want_value):
    """Average objective and raw gradient (d/db (n,), d/dJ (E,)) of a local objective.

    ``x`` int8 (N, n); CSR ``(indptr, indices, eids)`` from :func:`mrflib.graphs.adjacency`.
    """
    N, n = x.shape
    E = ei.shape[0]
    gb = np.zeros(n)
    gj = np.zeros(E)
    g = np.empty(n)
    xs = np.empty(n)
    value = 0.0
    for mu in range(N):
        for i in range(n):
            xs[i] = x[mu, i]
        for i in range(n):
            h = bias[i]
            for p in range(indptr[i], indptr[i + 1]):
                h += coupling[eids[p]] * xs[indices[p]]
            val, dphi = _phi(xs[i] * h, kind)
            if want_value:
                value += val
            # d phi(x_i h_i) / d h_i = x_i phi'(u)
            g[i] = xs[i] * dphi
            gb[i] += g[i]
        for e in range(E):
            gj[e] += g[ei[e]] * xs[ej[e]] + g[ej[e]] * xs[ei[e]]
    inv = 1.0 / N
    for i in range(n):
        gb[i] *= inv
    for e in range(E):
        gj[e] *= inv
    return value * inv, gb, gj
