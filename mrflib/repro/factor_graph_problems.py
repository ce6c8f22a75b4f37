"""Generated factor graphs for the exact-inference benchmark and chapter.

Beside the shipped UAI problems (:func:`mrflib.io.datasets.uai_problem`) and the ``q``-state
Potts lattices of :func:`mrflib.models.lattices.potts_lattice` (``couplings="mixed"``):
random networks of three- and four-variable factors on a band (treewidth bounded by the
band) and an expert Bayesian network with evidence. Every draw takes an ``rng``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive, require_memory
from mrflib.io.datasets import expert_network
from mrflib.models.factor_graph import FactorGraph

__all__ = ["band_network", "expert_with_evidence"]


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
    n_factors = check_positive(n_factors, "n_factors", integer=True, allow_zero=True)
    largest = float(max(states)) if len(states) else 1.0
    require_memory(8.0 * (n * largest + n_factors * (largest**4 + 16)),
                   f"the tables of a band network of n = {n} variables and n_factors = "
                   f"{n_factors} factors")
    rng = as_rng(rng)
    card = rng.choice(np.asarray(states), n)
    scopes = [(i,) for i in range(n)]
    for _ in range(n_factors):
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
    n_evidence = check_positive(n_evidence, "n_evidence", integer=True, allow_zero=True)
    if n_evidence > net.n:
        raise ValueError(f"n_evidence must be at most the {net.n} variables of {name!r}, "
                         f"got {n_evidence}")
    rng = as_rng(rng)
    x = net.sample(1, rng=rng)[0]
    which = np.sort(rng.choice(net.n, n_evidence, replace=False))
    return net.to_factor_graph(), {int(v): int(x[v]) for v in which}
