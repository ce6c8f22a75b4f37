"""Experiments of the chapter on exact inference on factor graphs (tables for the notebook).

Each function runs the engine (:mod:`mrflib.inference.exact` on a
:class:`~mrflib.models.factor_graph.FactorGraph`) and, where asked, the peers of
:mod:`mrflib.repro.peers`, and returns a :class:`pandas.DataFrame` the chapter shows and
asserts on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats

from mrflib._support.validation import as_rng
from mrflib.inference import exact
from mrflib.inference.exact import elimination
from mrflib.inference.exact import elimination_order as eo
from mrflib.io import datasets
from mrflib.io import uai as io
from mrflib.models import lattices as factor_models
from mrflib.models.factor_graph import FactorGraph

from . import factor_graph_problems as fgp
from . import peers

__all__ = ["timed", "uai_table", "order_memory", "expert_queries", "sample_chi_square"]

#: The orders compared in :func:`order_memory` (``"engine"``: the best of every candidate,
#: sweeps included, as :func:`mrflib.inference.exact.plan` chooses).
HEURISTICS = ("min-degree", "min-fill", "weighted-min-fill", "engine")


def timed(fn: Any, repeats: int = 1) -> tuple[float, Any]:
    """``(best seconds, value)`` of ``fn()`` over ``repeats`` calls."""
    best, out = math.inf, None
    for _ in range(max(1, int(repeats))):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def uai_table(names: Sequence[str], peer_names: Sequence[str] = (), repeats: int = 1
              ) -> pd.DataFrame:
    """The shipped UAI problems ``names``: published ``log10 Z``, ours, their difference, the
    largest marginal error against the published MAR, our times (PR and MAR, planning
    included), and pyGMs' and pgmpy's PR times for the problems in ``peer_names``."""
    rows = []
    for name in names:
        p = datasets.uai_problem(name)
        t_pr, lz = timed(lambda p=p: exact.log_partition(p.model), repeats)
        t_mar, mar = timed(lambda p=p: exact.marginals(p.model), repeats)
        err = max(float(np.abs(a - b).max()) for a, b in zip(mar, p.marginals))
        row = {"problem": name, "variables": p.model.n,
               "max states": int(p.model.cardinalities.max()),
               "observed": len(p.evidence), "published log10 Z": p.log10_partition,
               "ours log10 Z": lz / math.log(10),
               "difference": lz / math.log(10) - p.log10_partition,
               "max marginal error": err, "ours PR s": t_pr, "ours MAR s": t_mar,
               "pyGMs PR s": np.nan, "pgmpy PR s": np.nan}
        if name in peer_names:
            base, ev = io.read_uai(p.path), dict(p.evidence)
            fs = peers.pygms_factors(base)
            row["pyGMs PR s"] = timed(lambda fs=fs, ev=ev: peers.pygms_log_partition(fs, ev),
                                      repeats)[0]
            row["pgmpy PR s"] = timed(lambda b=base, ev=ev: peers.pgmpy_log_partition(b, ev), 1)[0]
        rows.append(row)
    return pd.DataFrame(rows)


def _order_cost(model: FactorGraph, heuristic: str) -> tuple[int, float]:
    """Width and largest clique-table bytes of ``heuristic``'s order on ``model``."""
    adj = eo.interaction_graph(model.n, model.scopes)
    logc = np.log(model.cardinalities.astype(np.float64)).tolist()
    if heuristic == "engine":
        order = eo.best_order(adj, logc, range(model.n)).order
    else:
        order = eo.greedy_order(adj, logc, range(model.n), heuristic)
    cliques, log_max, _ = eo.order_cliques(adj, order, logc)
    return max(len(c) for c in cliques) - 1, 8.0 * math.exp(log_max)


def order_memory(sizes: Sequence[int], states: Sequence[int] = (2, 3),
                 band_sizes: Sequence[int] = ()) -> pd.DataFrame:
    """Width and largest table of each heuristic of :data:`HEURISTICS` on ``J x J``
    lattices with ``q`` states (``states``; ``q = 2`` is the Ising lattice, more a Potts
    lattice) and on band networks of mixed cardinalities (``band_sizes`` variables)."""
    rows = []
    models = [(f"lattice q={q}", J * J,
               factor_models.potts_lattice(J, J, q, rng=0, couplings="mixed"))
              for q in states for J in sizes]
    models += [("band network", n, fgp.band_network(n, n, 0, band=10)) for n in band_sizes]
    for family, size, model in models:
        for h in HEURISTICS:
            width, table = _order_cost(model, h)
            rows.append({"family": family, "variables": size, "heuristic": h,
                         "treewidth": width, "largest table bytes": table})
    return pd.DataFrame(rows)


def expert_queries(names: Sequence[str], n_evidence: int, rng: Any) -> pd.DataFrame:
    """``log P(evidence)`` and the posterior marginals of each expert network with
    ``n_evidence`` observed variables (values drawn by ancestral sampling): the plan's
    size before and after barren-variable pruning, and the times."""
    rng = as_rng(rng)
    rows = []
    for name in names:
        model, ev = fgp.expert_with_evidence(name, n_evidence, rng)
        cond = model.condition(ev)
        pruned = elimination.plan(cond, barren=True)
        t_pr, lz = timed(lambda c=cond: exact.log_partition(c))
        t_mar, _ = timed(lambda c=cond: exact.marginals(c))
        rows.append({"network": name, "variables": model.n, "observed": len(ev),
                     "pruned CPTs": pruned.n_pruned, "eliminated": len(pruned.order),
                     "eliminated without pruning": len(exact.plan(cond).order),
                     "log10 P(evidence)": lz / math.log(10), "PR s": t_pr, "MAR s": t_mar})
    return pd.DataFrame(rows)


def sample_chi_square(model: FactorGraph, n_samples: int, rng: Any) -> pd.DataFrame:
    """Pearson's chi-square test of each variable's sample counts (``exact.sample``)
    against its exact marginal (``exact.marginals``): statistic, degrees of freedom and
    p-value per variable (states of zero probability are left out)."""
    x = exact.sample(model, n_samples, rng=rng)
    rows = []
    for i, p in enumerate(exact.marginals(model)):
        counts = np.bincount(x[:, i], minlength=len(p))
        keep = p > 0
        expected = n_samples * p[keep]
        stat = float(np.sum((counts[keep] - expected) ** 2 / expected))
        dof = int(keep.sum()) - 1
        pval = float(scipy.stats.chi2.sf(stat, dof)) if dof > 0 else 1.0
        rows.append({"variable": i, "chi2": stat, "dof": dof, "p": pval,
                     "impossible drawn": int(counts[~keep].sum())})
    return pd.DataFrame(rows)
