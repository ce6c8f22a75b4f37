"""Numba kernel of the stochastic factor-graph learners
(:mod:`mrflib.learning.stochastic_learning`).

The factor marginals of a set of states (a chain set of PCD or CD) as one pass over the
rows: for every row and factor, the flat position of its entry in the concatenated tables
(``offsets[k] + Σ_a x_{S_k[a]} fstride[a]``, the layout of
:func:`mrflib.inference.sampling.chains.pack`) is counted. The plain numpy reference is
:func:`mrflib.learning.factor_layout._data_marginals` (one ``bincount`` per factor).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def factor_counts(x, fptr, fvars, fstride, offsets, total):  # pragma: no cover - numba
    """Counts ``(total,)`` of every factor's states over the rows of ``x (M, n)``."""
    counts = np.zeros(total, dtype=np.int64)
    for r in range(x.shape[0]):
        for k in range(offsets.shape[0]):
            pos = offsets[k]
            for a in range(fptr[k], fptr[k + 1]):
                pos += x[r, fvars[a]] * fstride[a]
            counts[pos] += 1
    return counts
