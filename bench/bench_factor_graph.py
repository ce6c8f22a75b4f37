"""The factor-graph exact engine (:mod:`mrflib.inference.exact.elimination`) against pyGMs and
pgmpy.

Problems: the four shipped UAI 2014 PR problems (:func:`mrflib.io.datasets.uai_problem`, with
their evidence), 3-state Potts lattices (8x8 to 12x12), random networks of three- and
four-variable factors on a band, and the alarm network with evidence
(:mod:`mrflib.repro.factor_graph_problems`).

Tasks: ``PR`` (``log Z`` of the model with its evidence) and ``MAR`` (every variable's
marginal). Each call includes its planning: our elimination order and junction tree are
built inside :func:`mrflib.inference.exact.log_partition` /
:func:`mrflib.inference.exact.marginals`; pyGMs'
conditioning, min-fill order (``pygms.eliminationOrder``) and ``pygms.wmb.JTree`` inside
its call; pgmpy's ``VariableElimination`` query (one per variable for MAR) inside its call.
Times are the best of a few repeats. Each of our rows has ``ratio`` = the baseline's time
over ours (one row against pyGMs, one against pgmpy); the peers' own rows (``method`` = the
peer, no ratio) give their times, for the per-problem time figure. ``note`` has the largest
difference between the answers (``log Z``, or marginal probabilities), and says when a peer
was skipped: pyGMs when its junction tree (from its own min-fill order) has so many table
entries that it would take over a minute; either peer when it runs longer than a minute or
allocates more than 6 GiB (each peer call runs in a forked child that is then stopped).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np

from mrflib import datasets, exact, io
from mrflib.inference.exact import elimination_order as eo
from mrflib.models import lattices as factor_models
from mrflib.repro import factor_graph_problems as fgp
from mrflib.repro import peers
from mrflib.repro.factor_graph_experiments import timed as _best
from mrflib.repro.forked import run_limited

#: Seconds a peer may be expected to take before it is skipped.
PEER_BUDGET = 60.0
#: Bytes a peer may allocate beyond what the process holds when it starts.
PEER_MEMORY = 6 * 2**30
#: pyGMs' seconds per clique-table entry (measured here on the UAI problems, generous).
PYGMS_SECONDS_PER_ENTRY = 1e-7


def shipped_uai(names: Iterable[str]) -> list[tuple[str, object, dict]]:
    """``(case, model without evidence, evidence)`` of UAI problems the package ships
    (:data:`mrflib.io.datasets.UAI_PROBLEMS`)."""
    out = []
    for name in names:
        p = datasets.uai_problem(name)
        out.append((f"UAI {name}", io.read_uai(p.path), dict(p.evidence)))
    return out


def problems(quick: bool) -> list[tuple[str, object, dict]]:
    """``(case, model without evidence, evidence)`` of every benchmark problem."""
    out = shipped_uai(("Grids_12",) if quick else datasets.UAI_PROBLEMS)
    for J in ((6,) if quick else (8, 10, 12)):
        potts = factor_models.potts_lattice(J, J, 3, rng=J, couplings="mixed")
        out.append((f"Potts, 3 states, {J}x{J}", potts, {}))
    for n in ((40,) if quick else (60, 120)):
        out.append((f"band, {n} variables, 3-4 per factor", fgp.band_network(n, n, n, band=10), {}))
    model, ev = fgp.expert_with_evidence("alarm", 6, 0)
    out.append(("alarm, 6 observed", model, ev))
    return out


def _pygms_entries(model, evidence) -> float:
    """Clique-table entries of pyGMs' junction tree, from its min-fill order, as an
    estimate of its time and memory (pyGMs' order is computed again inside its call)."""
    import pygms as gm

    g = gm.GraphModel(peers.pygms_factors(model), isLog=True)
    g.condition(dict(evidence))
    order, _ = gm.eliminationOrder(g, "minfill")
    card = model.cardinalities.astype(np.float64).copy()
    card[list(evidence)] = 1.0
    adj = eo.interaction_graph(model.n, [s for s in model.scopes if s])
    _, _, total = eo.order_cliques(adj, [int(v) for v in order], np.log(card).tolist())
    return total


def _diff(task, a, b) -> str:
    """The largest difference, and how many of the peer's marginals are not finite."""
    if task == "PR":
        return f"max |diff| {abs(a - b):.1e}"
    bad = sum(not np.all(np.isfinite(y)) for y in b)
    d = max((float(np.abs(x - y).max()) for x, y in zip(a, b) if np.all(np.isfinite(y))),
            default=np.nan)
    return f"max |diff| {d:.1e}" + (f" ({bad} of its marginals NaN)" if bad else "")


def _peer(name, task, t, fn, repeats, value, skip=None) -> tuple[dict, dict]:
    """Our row against peer ``name`` and the peer's own row (its time, no ratio)."""
    tp, vp = ((np.nan, None) if skip else
              run_limited(fn, seconds=PEER_BUDGET, repeats=repeats, memory=PEER_MEMORY)[:2])
    if vp is not None and task == "PR" and not np.isfinite(vp):
        skip = "its log Z overflows a float (it works in linear space)"
    if skip or vp is None:
        note = f"{name} skipped: {skip or 'over a minute (or over 6 GiB)'}"
        return dict(ratio=None, note=note), dict(seconds=np.nan, note=note)
    note = f"{name} {tp:.3g} s; {_diff(task, value, vp)}"
    return dict(ratio=tp / t, note=note), dict(seconds=tp, note=note)


def _rows(case, model, evidence, quick) -> list[dict]:
    cond = model.condition(evidence) if evidence else model
    repeats = 1 if quick else 3
    fs = peers.pygms_factors(model)
    entries = _pygms_entries(model, evidence)
    too_big = (f"its junction tree has {entries:.2g} table entries (over a minute)"
               if entries * PYGMS_SECONDS_PER_ENTRY > PEER_BUDGET else None)
    calls = {
        "PR": (lambda: exact.log_partition(cond),
               lambda: peers.pygms_log_partition(fs, evidence),
               lambda: peers.pgmpy_log_partition(model, evidence)),
        "MAR": (lambda: exact.marginals(cond),
                lambda: peers.pygms_marginals(fs, model.n, evidence),
                lambda: peers.pgmpy_marginals(model, evidence, PEER_BUDGET)),
    }
    rows = []
    for task, (ours, pyg, pgm) in calls.items():
        t, value = _best(ours, repeats)
        base = dict(benchmark=task, case=case, method="mrflib", seconds=t,
                    rate=model.n / t, rate_unit="variables/s")
        for name, peer, fn, reps, skip in (
                ("pyGMs", "pyGMs JTree", pyg, repeats, too_big),
                ("pgmpy", "pgmpy VariableElimination", pgm, 1, None)):
            ours_row, peer_row = _peer(name, task, t, fn, reps, value, skip)
            rows.append(dict(base, baseline=peer, **ours_row))
            rows.append(dict(base, method=peer, baseline="", ratio=None, rate=None,
                             rate_unit="", **peer_row))
    return rows


def run(quick: bool = False) -> list[dict]:
    warnings.filterwarnings("ignore", category=FutureWarning)
    small = factor_models.potts_lattice(3, 3, 3, rng=0, couplings="mixed")
    exact.marginals(small)  # warm-up: numba cache load and imports excluded
    peers.pygms_marginals(peers.pygms_factors(small), small.n)
    peers.pgmpy_marginals(small)
    rows = []
    for case, model, evidence in problems(quick):
        print(f"   {case}", flush=True)
        rows += _rows(case, model, evidence, quick)
    return rows
