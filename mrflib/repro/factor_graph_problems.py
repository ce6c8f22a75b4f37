"""Generated factor graphs for the exact-inference benchmark and chapter.

Three families beside the shipped UAI problems (:func:`mrflib.datasets.uai_problem`):
``q``-state Potts lattices (treewidth the lattice's width), random networks of three- and
four-variable factors on a band (treewidth bounded by the band) and an expert Bayesian
network with evidence. Every draw takes an ``rng``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import graphs
from .._validation import as_rng, check_positive
from ..datasets import expert_network
from ..factor_graph import FactorGraph

__all__ = ["potts_lattice", "band_network", "expert_with_evidence"]


def potts_lattice(rows: int, cols: int, q: int, rng: Any, *, coupling: float = 0.5,
                  field: float = 0.2) -> FactorGraph:
    """A ``q``-state Potts model on a ``rows x cols`` lattice: unary log-tables
    ``U[-field, field]^q`` and pairwise ``J_ij [x_i = x_j]`` with ``J_ij ~ U[-coupling,
    coupling]``."""
    rows = int(check_positive(rows, "rows", integer=True))
    cols = int(check_positive(cols, "cols", integer=True))
    q = int(check_positive(q, "q", integer=True))
    rng = as_rng(rng)
    n = rows * cols
    edges = graphs.square_grid(rows, cols)
    scopes = [(i,) for i in range(n)] + [(int(i), int(j)) for i, j in edges]
    tables = [rng.uniform(-field, field, q) for _ in range(n)]
    tables += [J * np.eye(q) for J in rng.uniform(-coupling, coupling, len(edges))]
    return FactorGraph(np.full(n, q), scopes, tables)


def band_network(n: int, n_factors: int, rng: Any, *, band: int = 8, states: tuple = (2, 3),
                 scale: float = 1.0) -> FactorGraph:
    """``n`` variables with ``states`` each (drawn), ``n_factors`` random factors of three
    or four variables, each drawn from a window of ``band`` consecutive variables (so the
    treewidth stays below about ``band``), log-tables ``N(0, scale^2)``; every variable
    also gets a unary factor."""
    n = int(check_positive(n, "n", integer=True))
    band = int(check_positive(band, "band", integer=True))
    if band < 4 or band > n:
        raise ValueError(f"band must be between 4 and n = {n}, got {band}")
    rng = as_rng(rng)
    card = rng.choice(np.asarray(states), n)
    scopes = [(i,) for i in range(n)]
    for _ in range(int(n_factors)):
        start = int(rng.integers(0, n - band + 1))
        k = int(rng.integers(3, 5))
        scopes.append(tuple(int(v) for v in start + rng.choice(band, k, replace=False)))
    tables = [scale * rng.standard_normal(tuple(int(card[v]) for v in s)) for s in scopes]
    return FactorGraph(card, scopes, tables)


def expert_with_evidence(name: str, n_evidence: int, rng: Any
                         ) -> tuple[FactorGraph, dict[int, int]]:
    """An expert network's factor graph and evidence on ``n_evidence`` variables, their
    values drawn by ancestral sampling (so the evidence is possible)."""
    net = expert_network(name)
    rng = as_rng(rng)
    x = net.sample(1, rng)[0]
    which = np.sort(rng.choice(net.n, int(n_evidence), replace=False))
    return net.to_factor_graph(), {int(v): int(x[v]) for v in which}
