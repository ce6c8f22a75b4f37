"""Peer implementations the book compares mrflib with (not part of the algorithms).

:func:`junction_tree_moments` is the exact-inference baseline of the LAP chapter's
Figure 5, computed with pgmpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._optional import optional_import
from ..model import BoltzmannMachine, check_model

__all__ = ["junction_tree_moments"]


def junction_tree_moments(bm: BoltzmannMachine) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``<x_i>`` and ``<x_i x_j>`` (each edge) by junction-tree belief propagation.

    The exact-inference baseline of Figure 5: pgmpy's ``BeliefPropagation``
    (triangulation, junction tree, message passing) on the model's factors; one call
    is one gradient evaluation of maximum-likelihood learning (eq. 5). Its cost grows
    like ``2^treewidth`` (treewidth ``J`` for a ``J x J`` lattice).
    """
    bm = check_model(bm)
    import logging

    what = "junction_tree_moments (the pgmpy peer)"
    DiscreteFactor = optional_import("pgmpy.factors.discrete", what, "book").DiscreteFactor
    BeliefPropagation = optional_import("pgmpy.inference", what, "book").BeliefPropagation
    DiscreteMarkovNetwork = optional_import("pgmpy.models", what, "book").DiscreteMarkovNetwork
    logging.getLogger("pgmpy").setLevel(logging.ERROR)

    n = bm.n
    names = list(range(n))  # ints hash to themselves: pgmpy's triangulation (ties broken by
    # set order) is then the same in every process; with strings it follows PYTHONHASHSEED
    net = DiscreteMarkovNetwork()
    net.add_nodes_from(names)
    net.add_edges_from([(names[i], names[j]) for i, j in bm.edges])
    factors = [DiscreteFactor([names[i]], [2], np.exp([-bm.bias[i], bm.bias[i]]))
               for i in range(n)]
    for (i, j), J in zip(bm.edges, bm.coupling):
        factors.append(DiscreteFactor([names[i], names[j]], [2, 2],
                                      np.exp(J * np.array([1.0, -1.0, -1.0, 1.0]))))
    net.add_factors(*factors)
    bp = BeliefPropagation(net)
    bp.calibrate()
    beliefs = bp.get_clique_beliefs()
    home: dict[str, Any] = {}
    for clique in beliefs:
        for v in clique:
            home.setdefault(v, clique)
    spin = np.array([-1.0, 1.0])
    mean = np.empty(n)
    for i in range(n):
        f = beliefs[home[names[i]]].marginalize(
            [v for v in home[names[i]] if v != names[i]], inplace=False)
        f.normalize()
        mean[i] = f.values @ spin
    pair = np.empty(len(bm.edges))
    for e, (i, j) in enumerate(bm.edges):
        a, b = names[i], names[j]
        clique = next(c for c in beliefs if a in c and b in c)
        f = beliefs[clique].marginalize([v for v in clique if v not in (a, b)], inplace=False)
        f.normalize()
        vals = f.values if f.variables == [a, b] else f.values.T
        pair[e] = float(np.sum(vals * np.outer(spin, spin)))
    return mean, pair
