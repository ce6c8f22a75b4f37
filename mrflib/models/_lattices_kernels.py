"""Numba kernel of the factor-graph Gibbs sampler (:func:`mrflib.models.lattices.gibbs`).

Its plain numpy reference is :func:`mrflib.models.lattices.gibbs_numpy` (the same uniforms,
the same order of operations).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def gibbs_sweep(x, u, tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets,
                card):  # pragma: no cover - numba
    """One sequential sweep (variables ``0..n-1``) of every chain, in place.

    ``vfac[vptr[i]:vptr[i+1]]`` are the factors holding ``i`` and ``vstride`` the stride
    of ``x_i`` in each; ``fvars[fptr[k]:fptr[k+1]]`` is factor ``k``'s scope, ``fstride``
    its strides and ``offsets[k]`` its place in the flat ``tables``; ``u (n, chains)``
    the uniforms.
    """
    chains, n = x.shape
    score = np.empty(int(card.max()))
    for r in range(chains):
        for i in range(n):
            c = card[i]
            for v in range(c):
                score[v] = 0.0
            for f in range(vptr[i], vptr[i + 1]):
                k = vfac[f]
                base = offsets[k]
                for a in range(fptr[k], fptr[k + 1]):
                    base += x[r, fvars[a]] * fstride[a]
                base -= x[r, i] * vstride[f]
                for v in range(c):
                    score[v] += tables[base + v * vstride[f]]
            mx = score[0]
            for v in range(1, c):
                if score[v] > mx:
                    mx = score[v]
            tot = 0.0
            for v in range(c):
                tot += np.exp(score[v] - mx)
                score[v] = tot
            target = u[i, r] * tot
            pick = 0
            while pick < c - 1 and score[pick] < target:
                pick += 1
            x[r, i] = pick
