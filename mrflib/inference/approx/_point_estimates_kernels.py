"""Numba kernel of iterated conditional modes (:mod:`mrflib.inference.approx.point_estimates`).

The model is packed as for the Gibbs sampler (:func:`mrflib.inference.sampling.chains.pack`) and
each variable's conditional scores come from the sampler's own
:func:`~mrflib.inference.sampling._chains_kernels.conditional_scores`; the plain numpy reference
is :func:`mrflib.inference.approx.point_estimates._icm_numpy`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference.sampling._chains_kernels import conditional_scores


@njit(cache=True)
def icm_sweep(x, tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets,
              card):  # pragma: no cover - numba
    """One sweep over the variables in order, in place on ``x (1, n)``: each takes the
    state of highest conditional score, keeping its own unless another is strictly
    higher (so the log-weight never falls and a sweep without a change is a fixed
    point). Returns the number of variables changed."""
    score = np.empty((1, int(card.max())))
    base = np.empty(1, dtype=np.int64)
    changed = 0
    for i in range(x.shape[1]):
        conditional_scores(x, 0, 1, i, score, base, tables, vptr, vfac, vstride, fptr, fvars,
                           fstride, offsets, card)
        best = x[0, i]
        for v in range(card[i]):
            if score[0, v] > score[0, best]:
                best = v
        if best != x[0, i]:
            x[0, i] = best
            changed += 1
    return changed
