"""The PR task at a time limit: ``solve --task PR`` on UAI 2014 PR problems.

The problems: the UAI 2014 competition's PR track, as the public GitHub repository
``mroavi/uai`` keeps it (``uai2014/PR``: ``NAME.uai``, its evidence ``NAME.uai.evid`` and
the published ``log10 Z``, ``NAME.uai.PR``), in the folder named by ``$MRFLIB_UAI_2014_PR``;
without it the module is skipped. ``MRFLIB_UAI_2014_PR_SECONDS`` sets the limit (default
:data:`SECONDS`), ``MRFLIB_UAI_2014_PR_PROBLEMS`` a comma-separated subset (default:
:data:`SUBSET`, a spread of the families, the SAT-derived ``.cnf`` problems counted as one
family; :mod:`bench.bench_uai_pr_all` runs every problem); ``--quick`` runs the first problem
of each family of it.

The solver: ``python -m mrflib solve NAME.uai --evid NAME.uai.evid --task PR --time-limit
SECONDS`` in a subprocess of its own (start-up, reading and evidence included), killed
:data:`bench.bench_uai_mpe.GRACE` seconds after the limit; the last complete answer of its
file counts. Its answer is exact where the exact plan fits the limit, else an importance
sampling estimate (:mod:`mrflib.inference.approx.importance`; on a constraint model,
SampleSearch's, :mod:`mrflib.inference.approx.sample_search`); on a constraint model (the
SAT-derived ``.cnf`` problems) the exact model count (d4 and Ganak, raced,
:mod:`mrflib.inference.exact.model_counting`) and the approximate one (ApproxMC,
:mod:`mrflib.inference.approx.approx_counting`: within a factor ``1 + ε`` with probability
``1 - δ``) run beside it, alone for the first quarter of the time, and their answers
replace the sampling's (:mod:`mrflib.io.anytime_pr`). The rows carry the last answer's
method and the probabilistic bounds it printed (an approximate count's have no certified
bound: ``certified_upper`` is empty; SampleSearch prints only a lower bound).

The committed rows: ``bench/results/uai_pr.csv`` holds the default subset,
``bench/results/uai_pr_cnf.csv`` the 24 ``.cnf`` problems of the set
(``MRFLIB_UAI_2014_PR_PROBLEMS`` set to them, the file renamed). On those, with the exact
counts racing (d4 at the solver's priority, Ganak and the approximate count below it), an
exact count answers all but two, ``2bitadd_11`` and ``rc``, which no counter finishes in
20 s on two cores and whose answer is SampleSearch's estimate, its samples' completions
counted; ``sat-grid-pbl-0010`` is ``Z = 0`` by the file (below). d4, after the formula's
backbone is fixed and its equivalent literals merged, counts ``log-5`` and its copy
``prob005.pddl`` in 9 s, ``prob012.pddl`` in 8 s and ``logistics.c`` in 17.7 s within the
solver, which Ganak alone does in about 100, 25 and 19.6 s. ApproxMC's estimates come
first on a few of the easier ones, and the exact count replaces them. Without an exact
counter (the conditioning search in its place) a run here scored 71.9 on average, the
last answer ApproxMC's on five problems (``2bitmax_6``, ``c1908.isc``, ``log-2``,
``log-3``, ``prob002.pddl``), each within 0.04 ``log10`` units.

Published values that are wrong. The trivial answer below is also an upper bound on every
model's ``log10 Z`` (``Z <= Π_v |X_v| · Π_k max ψ_k``), so a published value above it is
wrong by arithmetic alone; so are those that two unrelated exact engines contradict:

* :data:`COUNTED`: ``relational_1`` is a complete bipartite pairwise model of one shared
  table (250 + 250 binary variables), whose exact ``log Z`` counting gives
  (:func:`mrflib.repro.counting.bipartite_log_partition`): 314.0302 against the published
  316.023 (and 319.2955 without the evidence), below the certified weighted mini-bucket
  bound of 315.2 that the published value lies above. Its row is scored against the
  count.
* :data:`PEER_EXACT`: ``relational_2``, ``3`` and ``5`` have small treewidth with their
  evidence (2, 7 and 10), and pyGMs' junction tree (:func:`peer_log10_z`; it shares
  nothing with ours but the elimination order, which changes the cost and not the answer)
  gives their exact ``log10 Z`` at bench time: 6242.66, 376.717 and 4371.59, the answers
  of our own elimination to twelve digits, against published values of 6397.05, 758.326
  and 4968.06 (the last two above the trivial bound). Their rows are scored against
  pyGMs' values.
* any other published value above the trivial bound (``relational_4``: 4685.25 against a
  bound of 3614.38) is not scored (``rate`` NaN), as the MAR benchmark leaves out the
  problems whose published files are wrong; the row keeps our answer and the note says
  why.
* :data:`DISPUTED`: ``linkage_15``. Our exact engine (domain reduction by the zeros, then
  elimination in slices: treewidth 33 and 3 TB of tables as one junction tree) gives
  ``log10 Z = -73.8729`` in about 90 s, 2.73 above the published -76.6058; importance
  sampling, which shares nothing with it, puts the published value below its lower bound
  (probability 0.95) in every run we made, with three proposals (i-bound 12, 16 and 21:
  estimates -73.92 to -73.96). No second exact engine fits here, so the row is not scored,
  and its note gives our exact value (:func:`own_log10_z`, at bench time) and the run's
  lower bound. ``linkage_25``, by the same engine in 22 s, matches its published value
  (-87.8848) and is scored against it.

Every such row keeps the published value in ``published_log10_z``.

A problem whose file holds a factor of no variable and value 0 has ``Z = 0`` by the UAI
format (``sat-grid-pbl-0010.cnf`` holds 118): its trivial bound is ``-inf``, so a finite
published value lies above it and the row is not scored; the note says so and adds the
exact count of the formula without those factors
(:mod:`mrflib.inference.exact.model_counting`), the other reading of the file, which the
published value does not match either.

Scoring: the UAI 2022 form ``max(0, 100 (1 - Err / MaxErr))``
(:func:`bench.bench_uai_mpe.score`) with ``Err = |log10 Z - log10 Z*|`` (``Z*`` the
published value) and ``MaxErr`` the trivial answer's error
(:func:`mrflib.io.anytime.trivial_answer`: ``Σ_k max θ_k + Σ_v log |X_v|``, in log10). Rows:
one per problem, the score in ``rate``.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import numpy as np

from bench import Skipped
from bench.bench_approx_uai import solve_in_child
from bench.bench_uai_mpe import GRACE, Problem, problem_set, read, score
from mrflib import io
from mrflib.io import anytime

#: The environment variable naming the problems folder.
ENV = "MRFLIB_UAI_2014_PR"
#: Seconds per problem (the competition's shortest limit).
SECONDS = 20.0
#: The problems of the committed rows: spread over the families (every problem whose exact
#: answer the MPE-era run could not give is among them).
SUBSET = ("Alchemy_11", "BN_69", "BN_75", "CSP_11", "DBN_11", "Grids_11", "Grids_15",
          "ObjectDetection_11", "ObjectDetection_20", "Pedigree_11", "Promedus_11",
          "Promedus_20", "Segmentation_11", "linkage_11", "linkage_20", "relational_1",
          "log-5.cnf", "prob012.pddl.cnf")
#: Problems scored against their exact ``log Z`` by counting, not the published value.
COUNTED = ("relational_1",)
#: Problems scored against pyGMs' exact ``log Z`` (:func:`peer_log10_z`), not the published
#: value, which that and our own elimination contradict (see the module notes).
PEER_EXACT = ("relational_2", "relational_3", "relational_5")
#: Seconds pyGMs' exact ``log Z`` may take (relational_2: about 3.5 min on 2 cores).
PEER_SECONDS = 900.0
#: Problems whose published value our exact engine contradicts where no second exact engine
#: can run (pyGMs' junction tree would need terabytes): not scored, our exact ``log10 Z``
#: (:func:`own_log10_z`) and the run's own probabilistic lower bound in the note.
DISPUTED = ("linkage_15",)
EXTRA_COLUMNS = ["family", "status", "log10_z", "reference_log10_z", "published_log10_z",
                 "error",
                 "trivial_log10_z", "lower_log10_z", "upper_log10_z", "certified_upper",
                 "answers", "last_method"]


def pr_family(name: str) -> str:
    """The family of a PR problem: ``"cnf"`` for the SAT-derived ``*.cnf`` problems, else
    the name without its trailing number."""
    from bench.bench_uai_2014 import family

    return "cnf" if name.endswith(".cnf") else family(name)


def pr_score(value: float | None, reference: float, trivial: float) -> float:
    """The UAI 2022 score of ``log10 Z`` answer ``value`` (see the module notes)."""
    if value is None or math.isnan(value):
        return 0.0
    return score(-abs(value - reference), 0.0, -abs(trivial - reference))


def printed_bounds(err: str) -> tuple[float, float, float]:
    """The last bounds the solver printed on stderr ``err``: ``log10 Z in [low, high] with
    probability p`` and the certified upper bound after it, or SampleSearch's ``log10 Z >=
    low with probability p`` (``nan`` for each bound not printed: an approximate model
    count prints no certified one, SampleSearch only its lower bound)."""
    found = re.findall(r"log10 Z (?:in \[(\S+), (\S+)\]|>= (\S+)) with probability "
                       r"[^,;\s]+(?:, certified log10 Z <= (\S+?))?;", err)
    if not found:
        return math.nan, math.nan, math.nan
    low, high, lower, cert = found[-1]
    return float(low or lower), float(high or "nan"), float(cert or "nan")


def ours(problem: Problem, seconds: float) -> dict:
    """``solve --task PR --time-limit`` in a subprocess: its last answer and stderr's
    account of it (the last bounds printed)."""
    value, status, err, took = solve_in_child(problem, "PR", seconds, GRACE)
    lines = [ln for ln in err.splitlines() if re.search(r"\banswer \d+: ", ln)]
    last = lines[-1].split(": ", 1)[1].split("; wrote")[0] if lines else ""
    low, high, cert = printed_bounds(err)
    if lines and "exact" in last:
        low = high = cert = math.nan  # the exact answer needs no bounds
    return {"value": None if value is None else float(value), "seconds": took,
            "status": status, "answers": len(lines), "last_method": last[:200],
            "lower": low, "upper": high, "certified": cert}


def problem_row(problem: Problem, seconds: float) -> dict:
    """The row of ``problem``: our answer scored against the published one, or against
    the exact one where the published one is wrong (see the module notes)."""
    published = float(io.read_answer(problem.reference).value)
    model = read(problem)
    trivial = float(anytime.trivial_answer(model, "PR"))
    reference, note = reference_log10_z(problem, published, trivial)
    zero_constants = sum(1 for sc, t in zip(model.scopes, model.log_tables)
                         if len(sc) == 0 and bool(np.isneginf(t)))
    if zero_constants:
        note = ("not scored: " if math.isnan(reference) else "") + (
            f"the file holds {zero_constants} factors of no variable and value 0, so "
            f"Z = 0 by the UAI format; the published {published:g} disagrees with it"
            + _without_zero_constants(model))
    g = ours(problem, seconds)
    if problem.name in DISPUTED and g["lower"] > published:
        note += (f"; it lies below this run's lower bound {g['lower']:.6g}, which holds with "
                 "probability 0.95")
    s = math.nan if math.isnan(reference) else pr_score(g["value"], reference, trivial)
    v = math.nan if g["value"] is None else g["value"]
    print(f"   {problem.name:20s} score {s:6.1f}  log10 Z {v:12.6g}  reference "
          f"{reference:12.6g}  {g['seconds']:5.1f} s  {g['status']}  {g['last_method'][:60]}",
          flush=True)
    return {"benchmark": f"PR score at {seconds:g} s", "case": problem.name,
            "method": "mrflib", "seconds": g["seconds"], "rate": s, "rate_unit": "score",
            "family": problem.family, "status": g["status"], "log10_z": v,
            "reference_log10_z": reference, "published_log10_z": published,
            "error": abs(v - reference),
            "trivial_log10_z": trivial, "lower_log10_z": g["lower"],
            "upper_log10_z": g["upper"], "certified_upper": g["certified"],
            "answers": g["answers"], "last_method": g["last_method"], "note": note}


def reference_log10_z(problem: Problem, published: float, trivial: float
                      ) -> tuple[float, str]:
    """The ``log10 Z`` a row is scored against and the note that says why where it is not
    the published one: the count (:data:`COUNTED`), pyGMs' exact value
    (:data:`PEER_EXACT`), or NaN (not scored) where the published value lies above
    ``trivial``, an upper bound on every answer."""
    above = (f"; it lies above the upper bound Σ max θ + Σ log|X| = {trivial:.6g}"
             if published > trivial else "")
    if problem.name in COUNTED:
        from mrflib.repro import counting

        model = io.read_uai(problem.model)
        evidence = io.read_evidence(problem.evidence, model) if problem.evidence else {}
        reference = counting.bipartite_log_partition(model, evidence) / math.log(10.0)
        return reference, (f"exact log10 Z by counting {reference:.6f}; the published "
                           f"{published:g} is wrong{above}")
    if problem.name in DISPUTED:
        own = own_log10_z(problem)
        return math.nan, (f"not scored: our exact engine gives log10 Z = {own:.6f}, "
                          f"{own - published:+.4g} from the published {published:g}, which "
                          "no second exact engine can check here")
    if problem.name in PEER_EXACT:
        reference = peer_log10_z(problem)
        if math.isnan(reference):
            return math.nan, (f"not scored: pyGMs gave no exact log10 Z in {PEER_SECONDS:g} "
                              f"s, and the published {published:g} is wrong{above}")
        return reference, (f"exact log10 Z by pyGMs' junction tree {reference:.6f}; the "
                           f"published {published:g} is wrong{above}")
    if above:
        return math.nan, f"not scored: the published {published:g} is wrong{above}"
    return published, ""


def own_log10_z(problem: Problem) -> float:
    """Our exact ``log10 Z`` of ``problem`` with its evidence (:func:`mrflib.inference.exact.
    log_partition`: domain reduction by the zeros, then elimination in slices; linkage_15
    in about 90 s), in a forked child stopped after :data:`PEER_SECONDS`; NaN when it gives
    none."""
    from mrflib.inference import exact
    from mrflib.repro.forked import run_limited

    model = io.read_uai(problem.model)
    evidence = io.read_evidence(problem.evidence, model) if problem.evidence else {}
    got = run_limited(lambda: exact.log_partition(model, evidence=evidence or None),
                      seconds=PEER_SECONDS, warmup=False)
    return math.nan if got.value is None else float(got.value) / math.log(10.0)


def peer_log10_z(problem: Problem) -> float:
    """pyGMs' exact ``log10 Z`` of ``problem`` with its evidence: its conditioning and
    junction tree (:func:`mrflib.repro.peers.pygms_log_partition`) over our elimination
    order (the order changes the cost, not the answer; pyGMs' own min-fill order takes
    minutes on these models), in a forked child stopped after :data:`PEER_SECONDS`; NaN
    when it gives none."""
    from mrflib.inference import exact
    from mrflib.repro import peers
    from mrflib.repro.forked import run_limited

    model = io.read_uai(problem.model)
    evidence = io.read_evidence(problem.evidence, model) if problem.evidence else {}
    order = exact.plan(model.condition(evidence)).order
    constants = sum(float(t) for sc, t in zip(model.scopes, model.log_tables) if not sc)

    def log_z() -> float:  # pyGMs' factors leave out the tables of no variable
        return peers.pygms_log_partition(peers.pygms_factors(model), evidence, order) + constants

    got = run_limited(log_z, seconds=PEER_SECONDS, warmup=False)
    return math.nan if got.value is None else float(got.value) / math.log(10.0)


def _without_zero_constants(model: Any) -> str:
    """The log10 Z of ``model`` without its zero constants, where a constraint model is
    counted within a minute: whether the published value is that of the other reading."""
    from mrflib import FactorGraph
    from mrflib.inference.exact import model_counting

    keep = [k for k, sc in enumerate(model.scopes)
            if len(sc) or not bool(np.isneginf(model.log_tables[k]))]
    rest = FactorGraph(model.cardinalities, [model.scopes[k] for k in keep],
                       [model.log_tables[k] for k in keep])
    if model_counting.constraint_scale(rest) is None or not model_counting.available():
        return ""
    try:
        value = model_counting.counted_log_partition(rest, time_limit=60.0)
    except TimeoutError:
        return ""
    return f", and the count without those factors gives log10 Z = {value / math.log(10):.6g}"


def problems(folder: str) -> list[Problem]:
    """The problems of ``folder`` with a published ``log10 Z`` (``NAME.uai.PR``)."""
    out = []
    for p in problem_set(folder, env=ENV, answer=".PR", what="UAI PR problems"):
        if p.reference is not None:
            out.append(p._replace(family=pr_family(p.name)))
    return out


def run(quick: bool = False, *, every_problem: bool = False) -> list[dict]:
    """The rows of the problems in ``$MRFLIB_UAI_2014_PR`` (see the module notes): those of
    ``$MRFLIB_UAI_2014_PR_PROBLEMS``, else every problem (``every_problem``) or those of
    :data:`SUBSET`; :class:`bench.Skipped` when the variable is not set."""
    folder = os.environ.get(ENV, "").strip()
    if not folder:
        raise Skipped(f"set {ENV} to the folder of the UAI 2014 PR problems (the public "
                      "repository mroavi/uai, uai2014/PR) to run it")
    seconds = float(os.environ.get(f"{ENV}_SECONDS", SECONDS))
    found = problems(folder)
    chosen = os.environ.get(f"{ENV}_PROBLEMS", "").strip()
    names: Any = (chosen.split(",") if chosen else
                  [p.name for p in found] if every_problem else SUBSET)
    unknown = sorted(set(names) - {p.name for p in found})
    if unknown:
        raise ValueError(f"{ENV}_PROBLEMS (or the default subset) names problems not in the "
                         f"folder: {unknown}")
    chosen_problems = [p for p in found if p.name in names]
    if quick:
        first: dict[str, Problem] = {}
        chosen_problems = [first.setdefault(p.family, p) for p in chosen_problems
                           if p.family not in first]
    return [problem_row(p, seconds) for p in chosen_problems]
