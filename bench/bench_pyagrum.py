"""The exact engine against pyAgrum (aGrUM's C++ engine) on all single-variable marginals.

The task: every variable's marginal with the problem's evidence. Ours:
:func:`mrflib.inference.exact.marginals` on the model read by :func:`mrflib.io.read_uai`
(or generated), the evidence applied (``FactorGraph.condition``) and the engine's planning
inside the timed call. pyAgrum's: ``ShaferShenoyMRFInference`` on the
``MarkovRandomField`` of :func:`mrflib.repro.pyagrum_peer.pyagrum_model`, its junction tree,
evidence and messages inside the timed call (building the model from the tables, like
reading the file, is not timed). pyAgrum runs with its default threads; ours on one.

Problems: the shipped UAI 2014 problems (:data:`mrflib.io.datasets.UAI_PROBLEMS`), 3-state
Potts lattices and binary triangle lattices (:mod:`mrflib.models.lattices`) and random
networks of three- and four-variable factors on a band
(:func:`mrflib.repro.factor_graph_problems.band_network`). When ``MRFLIB_UAI_2014`` names
the folder of the UAI 2014 MAR problems (as for ``bench/bench_uai_2014.py``), also
:data:`UAI_2014`: the first problems of every family and the ones where pyAgrum was seen to
be faster or to fail.

Each side runs in a forked child (:func:`mrflib.repro.forked.run_limited`) capped at
:data:`SECONDS` and :data:`MEMORY`; its time is the best of up to :data:`REPEATS` calls
(one call when a call takes over :data:`REPEAT_BELOW` seconds). Rows: ours against pyAgrum
(``ratio`` = pyAgrum's time over ours) and pyAgrum's own row, with ``max_diff`` (largest
absolute difference of a marginal probability where both answer) and each side's failure
(``std::bad_alloc``, NaN marginals, a refusal, the time limit).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.bench_factor_graph import shipped_uai
from mrflib import datasets, exact
from mrflib.models import lattices
from mrflib.repro import factor_graph_problems as fgp
from mrflib.repro import pyagrum_peer as pp
from mrflib.repro.forked import run_limited

#: The environment variable naming the UAI 2014 MAR problems folder (``bench_uai_2014``'s).
ENV = "MRFLIB_UAI_2014"
#: The UAI 2014 problems run when :data:`ENV` is set: the first of each family, and those
#: where pyAgrum was faster than us or failed in an earlier measurement.
UAI_2014 = ("Alchemy_11", "CSP_11", "CSP_12", "CSP_13", "DBN_11", "DBN_12", "Grids_11",
            "Grids_12", "Grids_13", "ObjectDetection_11", "ObjectDetection_12",
            "ObjectDetection_32", "Pedigree_11", "Pedigree_12", "Pedigree_13", "Promedus_11",
            "Promedus_13", "Promedus_24", "Promedus_30", "Segmentation_11",
            "Segmentation_12", "linkage_24", "relational_2", "relational_3", "relational_5")
#: Wall-clock seconds one call of either side may take.
SECONDS = 120.0
#: Bytes either side may allocate beyond what its process holds (the engine refuses, by
#: name, what would not fit; pyAgrum raises ``std::bad_alloc``).
MEMORY = 6 * 2**30
#: Timed calls at most, and the time of one call above which it is not repeated.
REPEATS = 5
REPEAT_BELOW = 2.0
PEER = "pyAgrum ShaferShenoyMRFInference"
EXTRA_COLUMNS = ["variables", "observed", "pyagrum_seconds", "max_diff", "mrflib_failure",
                 "pyagrum_failure"]


def problems(quick: bool) -> list[tuple[str, Any, dict]]:
    """``(case, model without evidence, evidence)`` of every benchmark problem."""
    out = shipped_uai(("Grids_12", "Promedus_24") if quick else datasets.UAI_PROBLEMS)
    for J in ((5,) if quick else (5, 8, 10)):
        potts = lattices.potts_lattice(J, J, 3, rng=J, couplings="mixed")
        out.append((f"Potts, 3 states, {J}x{J}", potts, {}))
    for J in ((4,) if quick else (4, 8)):
        out.append((f"triangles, 2 states, {J}x{J}", lattices.triangle_lattice(J, J, rng=J), {}))
    for n in ((30,) if quick else (30, 60, 120)):
        band = fgp.band_network(n, n, n, band=10)
        out.append((f"band, {n} variables, 3-4 per factor", band, {0: 1}))
    folder = os.environ.get(ENV)
    if folder and not quick:
        from bench.bench_uai_2014 import problem_set, read

        shipped = set(datasets.UAI_PROBLEMS)
        for problem in problem_set(folder):
            if problem.name in UAI_2014 and problem.name not in shipped:
                model, evidence, _ = read(problem)
                out.append((f"UAI 2014 {problem.name}", model, evidence))
    return out


def best_time(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(best seconds, value)`` of ``fn()``: up to :data:`REPEATS` calls while each takes
    under :data:`REPEAT_BELOW` seconds (the first call of a forked child also copies the
    pages it writes, which the repeats leave out)."""
    best, value = math.inf, None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
        if best > REPEAT_BELOW:
            break
    return best, value


def _limited(fn: Callable[[Any], Any], setup: Callable[[], Any] = lambda: None
             ) -> tuple[float, Any, str | None]:
    """``(seconds, value, failure)`` of ``best_time(lambda: fn(setup()))`` in a capped
    child, ``setup`` called once there and not timed (so its time and memory are capped
    too)."""
    def child() -> tuple[float, Any]:
        made = setup()
        return best_time(lambda: fn(made))

    out = run_limited(child, seconds=SECONDS * REPEATS, warmup=False, memory=MEMORY)
    if out.status != "ok":
        return math.nan, None, out.status
    return out.value[0], out.value[1], None


def _ours(model, evidence) -> list[np.ndarray]:
    return exact.marginals(model.condition(evidence) if evidence else model)


def _peer(mrf, n, evidence) -> list[np.ndarray]:
    got = pp.pyagrum_marginals(mrf, n, evidence)
    if got.failure:  # a failure is the peer's answer, not a crash of the child
        return got.failure
    return got.marginals


def max_diff(ours: list[np.ndarray], theirs: list[np.ndarray]) -> float:
    """The largest absolute difference of a marginal probability."""
    return max(float(np.abs(a - b).max()) for a, b in zip(ours, theirs))


def rows_for(case: str, model, evidence: dict) -> list[dict]:
    """Our row against pyAgrum and pyAgrum's own row on one problem."""
    t, ours, ours_fail = _limited(lambda _: _ours(model, evidence))
    if ours_fail and ours_fail.startswith("error: ValueError"):
        ours_fail = "refused: " + ours_fail.removeprefix("error: ValueError: ")
    # the model is built in the child: on relational_2 (25,750 factors) pyAgrum's
    # construction alone ran for minutes
    tp, theirs, peer_fail = _limited(lambda mrf: _peer(mrf, model.n, evidence),
                                     lambda: pp.pyagrum_model(model))
    if isinstance(theirs, str):
        tp, theirs, peer_fail = math.nan, None, theirs
    diff = max_diff(ours, theirs) if ours is not None and theirs is not None else math.nan
    ratio = tp / t if np.isfinite(t) and np.isfinite(tp) else None
    note = "; ".join(filter(None, [
        f"pyAgrum {tp:.3g} s" if np.isfinite(tp) else None,
        f"max |diff| {diff:.1e}" if np.isfinite(diff) else None,
        f"ours failed: {ours_fail}" if ours_fail else None,
        f"pyAgrum failed: {peer_fail}" if peer_fail else None]))
    common = dict(benchmark="MAR", case=case, variables=model.n, observed=len(evidence),
                  pyagrum_seconds=tp, max_diff=diff, mrflib_failure=ours_fail or "",
                  pyagrum_failure=peer_fail or "", note=note)
    return [dict(common, method="mrflib", seconds=t, baseline=PEER, ratio=ratio,
                 rate=model.n / t if np.isfinite(t) else None, rate_unit="variables/s"),
            dict(common, method=PEER, seconds=tp, baseline="", ratio=None, rate=None,
                 rate_unit="")]


def run(quick: bool = False) -> list[dict]:
    small = lattices.potts_lattice(3, 3, 3, rng=0, couplings="mixed")
    exact.marginals(small)  # warm-up: numba cache load and imports excluded
    pp.pyagrum_marginals(pp.pyagrum_model(small), small.n)
    rows = []
    for case, model, evidence in problems(quick):
        print(f"   {case}", flush=True)
        rows += rows_for(case, model, evidence)
    return rows
