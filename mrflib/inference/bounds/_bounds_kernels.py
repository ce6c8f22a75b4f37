"""Numba kernels of :mod:`mrflib.inference.bounds`.

Only the sequential mean-field sweeps live here;
:func:`mrflib.inference.bounds.mean_field_solution` calls them behind input validation and
the tests compare them with a plain-numpy loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def mean_field_sweeps(theta, W, m, max_sweeps, tol):  # pragma: no cover - numba
    """Sequential updates ``m_i <- tanh(theta_i + sum_j W_ij m_j)``, ``i = 0..n-1``, in place.

    Each update is a coordinate ascent step on the mean-field free energy, so the sweeps
    converge to a fixed point of eq. (17). Returns ``(sweeps done, last max |change|)``.
    """
    n = m.shape[0]
    change = np.inf
    for sweep in range(max_sweeps):
        change = 0.0
        for i in range(n):
            h = theta[i]
            for j in range(n):
                h += W[i, j] * m[j]
            new = np.tanh(h)
            d = abs(new - m[i])
            if d > change:
                change = d
            m[i] = new
        if change < tol:
            return sweep + 1, change
    return max_sweeps, change
