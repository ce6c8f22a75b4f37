"""The random draws and acceptance thresholds of the checkerboard Gibbs kernels.

Both :mod:`mrflib.inference.sampling._checkerboard` (any bipartite graph) and
:mod:`mrflib.inference.sampling._grid_gibbs`
(square grids) draw 32-bit random integers from a SplitMix64 stream per chain (Steele, Lea
& Flood 2014) and accept ``x_i = +1`` when the integer is below
``round(2^32 P(x_i = +1 | rest))``; they share these definitions so that both give the same
bits. The pairwise kernels (:mod:`mrflib.inference.sampling._pairwise_kernels`) use the
stream's constants :data:`GAMMA`, :data:`MIX1` and :data:`MIX2` for their counter-based
streams.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["GAMMA", "MIX1", "MIX2", "LOW32", "TWO32", "splitmix64", "acceptance_threshold"]

#: SplitMix64's increment of the state per draw (``2^64`` divided by the golden ratio).
GAMMA = np.uint64(0x9E3779B97F4A7C15)
#: The multipliers of SplitMix64's two mixing steps.
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
#: The mask of a draw's low 32 bits.
LOW32 = np.uint64(0xFFFFFFFF)
#: ``2^32``: a 32-bit draw is below ``round(2^32 p)`` with probability ``p``.
TWO32 = 4294967296.0


@njit(cache=True, inline="always")
def splitmix64(z):  # pragma: no cover - numba
    """``(new state, 64 random bits)`` of SplitMix64 (Steele, Lea & Flood 2014)."""
    z = z + GAMMA
    r = (z ^ (z >> np.uint64(30))) * MIX1
    r = (r ^ (r >> np.uint64(27))) * MIX2
    return z, r ^ (r >> np.uint64(31))


@njit(cache=True, inline="always")
def acceptance_threshold(h):  # pragma: no cover - numba
    """``round(2^32 P(x = +1 | h))``: a 32-bit random integer below it draws ``+1``."""
    if h >= 0.0:
        p = 1.0 / (1.0 + math.exp(-2.0 * h))
    else:
        e = math.exp(2.0 * h)
        p = e / (1.0 + e)
    return np.int64(math.floor(p * TWO32 + 0.5))
