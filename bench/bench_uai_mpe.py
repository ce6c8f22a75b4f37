"""The MPE task at a time limit: ``solve --task MPE`` and toulbar2 on UAI 2014 MPE problems.

The problems: the UAI 2014 competition's MAP (MPE) track, as the public GitHub repository
``mroavi/uai`` keeps it (``uai2014/MAP``: ``NAME.uai``, its evidence ``NAME.uai.evid`` and a
reference answer ``NAME.uai.MAP``), in the folder named by ``$MRFLIB_UAI_2014_MPE``; without
it the module is skipped. ``MRFLIB_UAI_2014_MPE_SECONDS`` sets the limit (default
:data:`SECONDS`), ``MRFLIB_UAI_2014_MPE_PROBLEMS`` a comma-separated subset (default:
:data:`SUBSET`, three problems of each family; :mod:`bench.bench_uai_mpe_all` runs every
problem); ``--quick`` runs the first problem of each family.

The solvers, each in a subprocess of its own (start-up, reading and evidence included),
killed :data:`GRACE` seconds after the limit:

* ``mrflib``: ``python -m mrflib solve NAME.uai --evid NAME.uai.evid --task MPE
  --time-limit SECONDS``; the last complete answer of its file counts. Where ``pytoulbar2``
  is installed the solver runs toulbar2 itself, in a child beside its own search
  (:mod:`mrflib.inference.approx.map_toulbar2`), and keeps the better of their states: a
  row's ``last_method`` then starts with ``toulbar2 (state N of its branch and bound)``
  when toulbar2's state was the last answer;
* ``toulbar2`` (``pytoulbar2``, a branch and bound on weighted constraint networks; it reads
  ``.uai`` files but not evidence, so it gets the model conditioned on the evidence,
  written by :func:`mrflib.io.write_uai`, that writing counted in its time),
  ``Solve(timeLimit=...)`` with the whole seconds left after its start-up and reading
  (toulbar2's limit is whole seconds, at least 1, and it may overrun it); the last
  solution it printed before it ended or was killed counts.

Scoring. Every state is scored by its log-weight in the model with the evidence
(:meth:`~mrflib.models.factor_graph.FactorGraph.log_weight`, natural log; ``-inf`` for a
state of zero weight, a missing or malformed answer). The UAI 2022 competition scores PR
and MAR by an error normalized by a trivial solver's, ``score = max(0, 100 (1 - Err /
MaxErr))``; for MPE this module takes ``Err = M* - M`` (``M`` the answer's log-weight,
``M*`` the best of the reference answer's and every solver's in the run) and ``MaxErr``
the trivial answer's (:func:`mrflib.io.anytime.trivial_answer`: the evidence and state 0
elsewhere). Where the trivial answer has zero weight ``MaxErr`` is infinite and every state
of positive weight scores 100, so the rows also carry the UAI 2014 MAP criteria: the
relative gap from the leader ``(M* - M) / |M*|`` and the rank among the solvers (1: best,
ties share it). Rows: one per problem and solver, the score in ``rate``.

Results (the committed rows, 20 s, one-minute load average 1.2-1.5 on 2 cores, noted per
row): ours, with toulbar2 beside its own search, scores 99.92 on average over the 18
problems, toulbar2 alone 99.75; ours is at least toulbar2's score on every one of them
(above it on the three Grids, ProteinFolding_11 and the three wcsp, wcsp_11 and 12 by less
than 0.001) and ends within the limit. Ours proves 7 answers optimal (the three Promedas,
ProteinFolding_11, Segmentation_11, 12 and 15). toulbar2's state is ours' last answer on
the three Promedas (Promedas_11 scored 78 before toulbar2 ran inside the solver),
Segmentation_11 and 15; the solver's own steps found the better state on the Grids,
the wcsp, ProteinFolding_19 and 23 and the object detection problems.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bench import Skipped
from bench.bench_approx_uai import solve_in_child
from bench.bench_uai_2014 import family, uai_files
from mrflib import io
from mrflib.io import anytime

#: The environment variable naming the problems folder.
ENV = "MRFLIB_UAI_2014_MPE"
#: Seconds per problem and solver (the competition's shortest limit).
SECONDS = 20.0
#: Seconds past the limit before a solver is killed (start-up of a fresh interpreter).
GRACE = 5.0
#: The problems of the committed rows: three of each family, spread over it.
SUBSET = ("Promedas_11", "Promedas_40", "Promedas_70", "ObjectDetection_11",
          "ObjectDetection_14", "ObjectDetection_17", "ProteinFolding_11", "ProteinFolding_19",
          "ProteinFolding_23", "wcsp_11", "wcsp_12", "wcsp_15", "Grids_18", "Grids_22",
          "Grids_26", "Segmentation_11", "Segmentation_12", "Segmentation_15")
SOLVERS = ("mrflib", "toulbar2")
EXTRA_COLUMNS = ["family", "status", "log_weight", "best_log_weight", "reference_log_weight",
                 "trivial_log_weight", "relative_gap", "rank", "answers", "upper_bound",
                 "optimal", "last_method"]
HERE = Path(__file__).resolve().parent


class Problem(NamedTuple):
    """One problem: its name, family, model, evidence (``None``: none) and reference."""

    name: str
    family: str
    model: Path
    evidence: Path | None
    reference: Path | None


def problem_set(folder: str | os.PathLike, *, env: str = ENV, answer: str = ".MAP",
                what: str = "UAI MPE problems") -> list[Problem]:
    """The problems of ``folder`` (every ``NAME.uai``, its reference ``NAME.uai`` +
    ``answer``), sorted by family then number; a bad folder is refused naming ``env`` and
    ``what`` it should hold."""
    folder = Path(folder)
    out = []
    for p in uai_files(folder, env, what):
        ev, ref = p.with_name(p.name + ".evid"), p.with_name(p.name + answer)
        out.append(Problem(p.stem, family(p.stem), p, ev if ev.is_file() else None,
                           ref if ref.is_file() else None))
    return out


def read(problem: Problem) -> Any:
    """The model with its evidence applied."""
    model = io.read_uai(problem.model)
    if problem.evidence is None:
        return model
    evidence = io.read_evidence(problem.evidence, model)
    return model.condition(evidence) if evidence else model


def log_weight(model: Any, state: Any) -> float:
    """The state's log-weight; ``-inf`` for no state or one of the wrong shape or range."""
    if state is None:
        return -math.inf
    x = np.asarray(state)
    if x.shape != (model.n,) or np.any(x < 0) or np.any(x >= model.cardinalities):
        return -math.inf
    return float(model.log_weight(x.astype(np.int64)))


def reference_state(problem: Problem) -> np.ndarray | None:
    """The reference answer's state (the file says ``MAP`` or ``MPE``), ``None`` without
    one or when it does not read."""
    if problem.reference is None:
        return None
    text = problem.reference.read_text().split()
    if not text or text[0] not in ("MAP", "MPE"):
        return None
    try:
        n = int(text[1])
        return np.array(text[2:2 + n], dtype=np.int64)
    except (ValueError, IndexError):
        return None


def score(value: float, best: float, trivial: float) -> float:
    """The UAI 2022 form ``max(0, 100 (1 - Err / MaxErr))`` with ``Err = best - value``
    and ``MaxErr = best - trivial`` (see the module notes)."""
    if not value > -math.inf:
        return 0.0
    err, max_err = best - value, best - trivial
    if err <= 0:
        return 100.0
    if not max_err < math.inf:
        return 100.0
    return max(0.0, 100.0 * (1.0 - err / max_err)) if max_err > 0 else 0.0


def relative_gap(value: float, best: float) -> float:
    """The UAI 2014 relative gap from the leader ``(M* - M) / |M*|`` (``inf`` for no
    answer; ``0`` for the leader)."""
    if not value > -math.inf:
        return math.inf
    if value >= best:
        return 0.0
    return (best - value) / abs(best) if best != 0 else math.inf


def ranks(values: list[float]) -> list[int]:
    """1 for the best log-weight, ties sharing the rank (1 + the number of better ones)."""
    return [1 + sum(v > w for v in values) for w in values]


def ours(problem: Problem, seconds: float) -> dict:
    """``solve --task MPE --time-limit`` in a subprocess: its last answer and stderr's
    account of it."""
    state, status, err, took = solve_in_child(problem, "MPE", seconds, GRACE)
    lines = [ln for ln in err.splitlines() if re.search(r"\banswer \d+: ", ln)]
    last = lines[-1].split(": ", 1)[1].split("; wrote")[0] if lines else ""
    bounds = re.findall(r"upper bound (\S+?)[;,]", err)
    return {"state": state, "seconds": took, "status": status, "answers": len(lines),
            "last_method": last[:200], "upper_bound": float(bounds[-1]) if bounds else math.nan,
            "optimal": "optimal: the log-weight" in err}


#: The toulbar2 child: read the conditioned model, solve within the time left until the
#: wall-clock deadline (``time.time()``), printing each new solution as toulbar2 finds it
#: (``New solution: ...`` then its values; a kill leaves those printed), and the best one
#: at the end.
_TOULBAR2 = """
import sys, time
import pytoulbar2
cfn = pytoulbar2.CFN(verbose=0)
cfn.Read(sys.argv[1])
left = float(sys.argv[2]) - time.time()
res = cfn.Solve(showSolutions=1, timeLimit=max(1, int(left)))
sols = cfn.GetSolutions() if res is None else None
best = res[0] if res is not None else (sols[-1][1] if sols else None)
print("SOLUTION " + ("none" if best is None else " ".join(str(int(v)) for v in best)),
      flush=True)
"""


def toulbar2(problem: Problem, seconds: float) -> dict:
    """toulbar2 on the conditioned model in a subprocess (see the module notes)."""
    t0, wall = time.perf_counter(), time.time()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{problem.name}.uai"
        io.write_uai(read(problem), path)
        left = seconds - (time.perf_counter() - t0)
        try:
            res = subprocess.run([sys.executable, "-c", _TOULBAR2, str(path),
                                  repr(wall + seconds)],
                                 capture_output=True, text=True,
                                 timeout=max(left, 0.0) + GRACE)
            status, out = ("answered" if res.returncode == 0 else "failed"), res.stdout
            note = "" if res.returncode == 0 else res.stderr.strip().splitlines()[-1:]
        except subprocess.TimeoutExpired as exc:
            status, note = "killed", ""
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    took = time.perf_counter() - t0
    state = toulbar2_solution(out)
    return {"state": state, "seconds": took, "status": status, "answers": int(state is not None),
            "last_method": "toulbar2" + (f" ({note[0]})" if note else ""),
            "upper_bound": math.nan, "optimal": False}


def toulbar2_solution(out: str) -> np.ndarray | None:
    """The best solution in the toulbar2 child's output: its ``SOLUTION`` line at the end,
    else the values after the last complete ``New solution:`` line (a killed child)."""
    lines = out.split("\n")
    found = [ln for ln in lines if ln.startswith("SOLUTION ")]
    if found:
        return None if found[-1] == "SOLUTION none" else \
            np.array(found[-1].split()[1:], dtype=np.int64)
    # a value line is complete only when a newline follows it
    heads = [i for i, ln in enumerate(lines[:-2]) if ln.startswith("New solution:")]
    if not heads:
        return None
    return np.array(lines[heads[-1] + 1].split(), dtype=np.int64)


RUNNERS = {"mrflib": ours, "toulbar2": toulbar2}


def problem_rows(problem: Problem, seconds: float, solvers: tuple[str, ...] = SOLVERS
                 ) -> list[dict]:
    """One row per solver on ``problem``, scored against the best state known."""
    model = read(problem)
    got = {name: RUNNERS[name](problem, seconds) for name in solvers}
    values = {name: log_weight(model, g["state"]) for name, g in got.items()}
    ref = log_weight(model, reference_state(problem))
    trivial = log_weight(model, anytime.trivial_answer(model, "MPE"))
    best = max([ref, *values.values()])
    rank = dict(zip(values, ranks(list(values.values()))))
    load = load_average()
    rows = []
    for name, g in got.items():
        v = values[name]
        s = score(v, best, trivial)
        rows.append({"benchmark": f"MPE score at {seconds:g} s", "case": problem.name,
                     "method": name, "seconds": g["seconds"], "rate": s,
                     "rate_unit": "score", "family": problem.family, "status": g["status"],
                     "log_weight": v, "best_log_weight": best, "reference_log_weight": ref,
                     "trivial_log_weight": trivial, "relative_gap": relative_gap(v, best),
                     "rank": rank[name], "answers": g["answers"],
                     "upper_bound": g["upper_bound"], "optimal": g["optimal"],
                     "last_method": g["last_method"], "note": load})
        print(f"   {problem.name:20s} {name:9s} score {s:6.1f}  log-weight {v:12.6g}  "
              f"best {best:12.6g}  {g['seconds']:5.1f} s  {g['status']}", flush=True)
    return rows


def load_average() -> str:
    """The machine's load averages when the rows are made (``/proc/loadavg``; empty where
    it does not exist): other users' work slows both solvers alike, and this says how much
    there was."""
    try:
        return "loadavg " + " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def _available(solvers: tuple[str, ...]) -> tuple[str, ...]:
    """The solvers that can run here (toulbar2 only where ``pytoulbar2`` imports)."""
    import importlib.util

    return tuple(s for s in solvers
                 if s != "toulbar2" or importlib.util.find_spec("pytoulbar2") is not None)


def run(quick: bool = False, *, every_problem: bool = False) -> list[dict]:
    """The rows of the problems in ``$MRFLIB_UAI_2014_MPE`` (see the module notes): those of
    ``$MRFLIB_UAI_2014_MPE_PROBLEMS``, else every problem (``every_problem``) or those of
    :data:`SUBSET`; :class:`bench.Skipped` when the variable is not set."""
    folder = os.environ.get(ENV, "").strip()
    if not folder:
        raise Skipped(f"set {ENV} to the folder of the UAI 2014 MPE problems (the public "
                      "repository mroavi/uai, uai2014/MAP) to run it")
    seconds = float(os.environ.get(f"{ENV}_SECONDS", SECONDS))
    problems = problem_set(folder)
    chosen = os.environ.get(f"{ENV}_PROBLEMS", "").strip()
    if chosen:
        names = chosen.split(",")
        unknown = sorted(set(names) - {p.name for p in problems})
        if unknown:
            raise ValueError(f"{ENV}_PROBLEMS names problems not in the folder: {unknown}")
        problems = [p for p in problems if p.name in names]
    elif not every_problem:
        problems = [p for p in problems if p.name in SUBSET]
    if quick:
        first: dict[str, Problem] = {}
        problems = [first.setdefault(p.family, p) for p in problems if p.family not in first]
    solvers = _available(SOLVERS)
    if "toulbar2" not in solvers:
        print("   pytoulbar2 is not installed: mrflib runs alone", flush=True)
    rows = []
    for problem in problems:
        rows += problem_rows(problem, seconds, solvers)
    return rows
