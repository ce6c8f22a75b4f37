"""Peer implementations the book compares mrflib with (not part of the algorithms).

:func:`junction_tree_moments` is the exact-inference baseline of the LAP chapter's
Figure 5, computed with pgmpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mrflib._support.optional import optional_import
from mrflib.models.boltzmann import BoltzmannMachine, check_model
from mrflib.models.factor_graph import FactorGraph

__all__ = ["junction_tree_moments", "pygms_factors", "pygms_log_partition", "pygms_marginals",
           "pgmpy_elimination", "pgmpy_log_partition", "pgmpy_marginals"]


def junction_tree_moments(bm: BoltzmannMachine) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``<x_i>`` and ``<x_i x_j>`` (each edge) by junction-tree belief propagation.

    The exact-inference baseline of Figure 5: pgmpy's ``BeliefPropagation``
    (triangulation, junction tree, message passing) on the model's factors; one call
    is one gradient evaluation of maximum-likelihood learning (eq. 5). Its cost grows
    like ``2^treewidth`` (treewidth ``J`` for a ``J x J`` lattice).
    """
    bm = check_model(bm, "bm")
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


# ----------------------------------------------------------------- factor-graph peers
def _quiet_pgmpy() -> None:
    import logging
    import warnings

    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning)


def pygms_factors(model: Any) -> list:
    """The factors of a :class:`~mrflib.models.factor_graph.FactorGraph` as pyGMs log-factors
    (``pygms.Factor`` over ``pygms.Var(i, |X_i|)``, tables ``θ_k``); a conversion, kept
    out of the timed calls as reading a file is."""
    import pygms as gm

    X = [gm.Var(i, int(c)) for i, c in enumerate(model.cardinalities.tolist())]
    return [gm.Factor([X[v] for v in s], np.asarray(t, dtype=np.float64))
            for s, t in zip(model.scopes, model.log_tables) if s]


def _pygms_tree(factors: list, evidence: dict, order: Sequence[int] | None = None
                ) -> tuple[Any, Any]:
    import pygms as gm
    from pygms.wmb import JTree

    gmodel = gm.GraphModel(factors, isLog=True)  # copies: conditioning leaves ours intact
    if evidence:
        gmodel.condition(dict(evidence))
    if order is None:
        order, _ = gm.eliminationOrder(gmodel, "minfill")
    else:  # the given order first, then every variable it leaves out
        given = [int(v) for v in order]
        seen = set(given)
        order = given + [v for v in range(len(gmodel.X)) if v not in seen]
    return gmodel, JTree(gmodel, order)


def pygms_log_partition(factors: list, evidence: dict | None = None,
                        order: Sequence[int] | None = None) -> float:
    """``log Z`` (natural log) of the model with ``evidence`` by pyGMs: its conditioning,
    a min-fill elimination order (or ``order``, then the variables it leaves out: the
    order changes the cost, not the answer), its junction tree (``pygms.wmb.JTree``) and
    one forward pass, all in the call."""
    _, jt = _pygms_tree(factors, evidence or {}, order)
    return float(jt.msgForward())


def pygms_marginals(factors: list, n: int, evidence: dict | None = None,
                    order: Sequence[int] | None = None) -> list[np.ndarray]:
    """Every variable's marginal by pyGMs' junction tree (forward and backward passes; its
    min-fill order, or ``order`` as in :func:`pygms_log_partition`); an observed variable
    gets a point mass."""
    import pygms as gm

    evidence = dict(evidence or {})
    gmodel, jt = _pygms_tree(factors, evidence, order)
    jt.msgForward()
    keys = {i: gm.VarSet([gmodel.X[i]]) for i in range(n) if i not in evidence}
    beliefs = jt.beliefs(list(keys.values()))
    out = []
    for i in range(n):
        if i in evidence:
            m = np.zeros(gmodel.X[i].states)
            m[evidence[i]] = 1.0
        else:
            m = np.asarray(beliefs[keys[i]].table, dtype=np.float64)
        out.append(m)
    return out


def pgmpy_elimination(model: Any) -> Any:
    """pgmpy's ``VariableElimination`` on :func:`mrflib.io.pgmpy_models.to_pgmpy` of ``model``."""
    _quiet_pgmpy()
    VariableElimination = optional_import("pgmpy.inference", "pgmpy_elimination",
                                          "book").VariableElimination

    from mrflib.io.pgmpy_models import to_pgmpy

    # the peers query variables and states by index: nodes 0..n-1 (integer nodes also keep
    # pgmpy's elimination order, and so its rounding, the same in every process) and
    # states without names
    bare = model if model.names is None and model.state_names is None else FactorGraph(
        model.cardinalities, model.scopes, model.log_tables)
    return VariableElimination(to_pgmpy(bare))


def pgmpy_log_partition(model: Any, evidence: dict | None = None) -> float:
    """``log Z`` of ``model`` with ``evidence`` by pgmpy's ``VariableElimination`` (its
    greedy tensor contraction, in linear space: ``inf`` when ``Z`` overflows a float)."""
    ve = pgmpy_elimination(model)
    evidence = dict(evidence or {})
    free = next(v for v in range(model.n) if v not in evidence)
    f = ve.query([free], evidence=evidence or None, show_progress=False)
    with np.errstate(divide="ignore"):
        return float(np.log(np.sum(f.values)))


def pgmpy_marginals(model: Any, evidence: dict | None = None, budget: float = np.inf
                    ) -> list[np.ndarray] | None:
    """Every variable's marginal by pgmpy's ``VariableElimination``, one query per
    unobserved variable (``None`` when the first query says the rest would take longer
    than ``budget`` seconds)."""
    import time

    ve = pgmpy_elimination(model)
    evidence = dict(evidence or {})
    out: list = []
    t0, first = time.perf_counter(), True
    for i, c in enumerate(model.cardinalities.tolist()):
        if i in evidence:
            m = np.zeros(c)
            m[evidence[i]] = 1.0
        else:
            f = ve.query([i], evidence=evidence or None, show_progress=False)
            m = np.asarray(f.values, dtype=np.float64)
            m = m / m.sum()
            if first and (time.perf_counter() - t0) * (model.n - len(evidence)) > budget:
                return None
            first = False
        out.append(m)
    return out
