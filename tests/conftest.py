"""Shared fixtures: small models whose every quantity is checked by enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import BoltzmannMachine, graphs


@pytest.fixture
def grid_bm() -> BoltzmannMachine:
    """A 3x3 grid with non-trivial biases and couplings."""
    return BoltzmannMachine.random(graphs.square_grid(3, 3), 9, bias_scale=0.5,
                                   coupling_scale=0.6, rng=11)


@pytest.fixture
def dense_bm() -> BoltzmannMachine:
    """A complete graph on 7 spins (every pair coupled)."""
    return BoltzmannMachine.random(graphs.complete(7), 7, bias_scale=0.4, coupling_scale=0.5,
                                   rng=5)


def brute_force(bm: BoltzmannMachine):
    """Slow reference: the explicit table of states, probabilities, log Z, moments."""
    n = bm.n
    idx = np.arange(2**n)
    X = np.array([[1 if (k >> i) & 1 else -1 for i in range(n)] for k in idx], dtype=np.int8)
    lw = np.array([bm.log_weight(x) for x in X])
    logz = np.log(np.sum(np.exp(lw)))
    p = np.exp(lw - logz)
    C = np.einsum("s,si,sj->ij", p, X.astype(float), X.astype(float))
    return X, p, logz, X.T @ p, C
