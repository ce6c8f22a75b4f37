"""The UAI 2022 MAR score at a time limit: ``solve --time-limit`` and peers on UAI 2014.

The UAI 2022 competition re-ran the UAI 2014 MAR problems and scored each answer by the mean
over variables of the Hellinger distance ``H(p, q) = sqrt(1/2 Σ (√p - √q)^2)`` of its
marginals to the exact ones, normalized by a trivial solver's (uniform marginals):
``score = max(0, 100 (1 - HErr / HErr_trivial))``, averaged over problems. This module
computes it, in one run on this machine, for

* ``mrflib``: ``python -m mrflib solve NAME.uai --evid NAME.uai.evid --task MAR
  --time-limit SECONDS`` in a subprocess (start-up and reading included), killed
  :data:`GRACE` seconds after the limit; the last complete answer of its file counts (a
  missing answer scores 0);
* ``pygms-wmb``: pyGMs' weighted mini-bucket (``pygms.wmb.WMB``, ``msgForward(0.5, 0.1)``
  then ``msgBackward()`` while time remains), and ``pygms-lbp``: its loopy belief
  propagation (``pygms.messagepass.LBP``, :data:`LBP_ITERATIONS` iterations), each in a
  forked child stopped at the limit plus :data:`GRACE`. pyGMs gives NaN messages on tables
  with zeros, so both get the model with zero weights raised to ``exp(`` :data:`FLOOR` ``)``
  (evidence applied exactly by pyGMs' ``condition`` first); both use our mini-bucket
  elimination order (pyGMs' own min-fill order takes minutes on the linkage problems).

Problems: ``$MRFLIB_UAI_2014`` (the MAR-track folder, solutions in ``MAR_sol`` beside it),
those with a published solution except :data:`WRONG` (whose published files are wrong).
The published file of :data:`COUNTED` is wrong too (its leaves' marginals lie outside the
interval :func:`mrflib.repro.counting.leaf_bounds` proves for them); its exact marginals,
by counting (:mod:`mrflib.repro.counting`), are scored against instead: the row's
``reference`` says which answer scored it, its ``note`` the score against the published
file.
``MRFLIB_APPROX_SUBSET=hard`` keeps those exact inference cannot answer within the limit
(refused, or slower than the limit minus :data:`HEADROOM` in ``bench_uai_2014``'s results;
a problem missing there by the estimate of ``solve --time-limit``);
``MRFLIB_APPROX_SECONDS`` sets the limit (default :data:`SECONDS`);
``MRFLIB_APPROX_SOLVERS`` lists the solvers to run (default
``mrflib,pygms-wmb,pygms-lbp``); ``--quick`` runs the first hard problem.
Rows: one per problem and solver, the score in ``rate``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import Skipped
from bench.bench_uai_2014 import ENV, Problem, problem_set, read
from mrflib import io
from mrflib.inference.approx.wmb import elimination_order
from mrflib.io import anytime
from mrflib.repro import counting, peers
from mrflib.repro.forked import run_limited

#: Seconds per problem and solver (the competition's shortest limit).
SECONDS = 20.0
#: Seconds past the limit before a solver is killed (start-up of a fresh interpreter).
GRACE = 5.0
#: The published MAR files of these are wrong (this engine and pyGMs agree on others).
WRONG = ("relational_2", "relational_3", "relational_5")
#: A problem the exact engine answered in more than the limit minus this many seconds
#: (its own run, reading and planning included) counts as hard.
HEADROOM = 5.0
#: Iterations of pyGMs' loopy BP (it has no time limit of its own).
LBP_ITERATIONS = 15
#: Log-weight given to pyGMs in place of a zero weight.
FLOOR = -50.0
#: pyGMs' i-bound (variables per mini-bucket).
PYGMS_IBOUND = 10
#: Problems scored against their exact marginals by counting, not the published file.
COUNTED = ("relational_4",)
EXTRA_COLUMNS = ["family", "status", "herr", "herr_trivial", "answers", "last_method",
                 "valid", "reference"]


def hellinger_error(marginals: list, exact: list) -> float:
    """Mean over variables of the Hellinger distance between the two marginals."""
    return float(np.mean([math.sqrt(max(0.0, 0.5 * float(np.sum(
        (np.sqrt(np.clip(p, 0, None)) - np.sqrt(q)) ** 2)))) for p, q in zip(marginals, exact)]))


def valid(marginals: list | None, exact: list) -> bool:
    """Whether an answer is one: a marginal per variable, of its number of states, finite,
    nonnegative and summing to 1 (to 1e-6, the precision of the answer file)."""
    if marginals is None or [len(p) for p in marginals] != [len(q) for q in exact]:
        return False
    return all(np.all(np.isfinite(p)) and np.all(np.asarray(p) >= 0)
               and abs(float(np.sum(p)) - 1.0) <= 1e-6 for p in marginals)


def score(marginals: list | None, exact: list) -> tuple[float, float, float]:
    """``(score, HErr, HErr_trivial)``; no answer (or a wrong shape) scores 0."""
    trivial = hellinger_error([np.full(len(q), 1.0 / len(q)) for q in exact], exact)
    if marginals is None or [len(p) for p in marginals] != [len(q) for q in exact]:
        return 0.0, math.nan, trivial
    h = hellinger_error(marginals, exact)
    return (max(0.0, 100.0 * (1.0 - h / trivial)) if trivial > 0 else 100.0 * (h == 0)), h, \
        trivial


def reference(problem: Problem) -> tuple[list, list | None, str]:
    """The exact marginals a problem is scored against, the published ones where those
    are not it (else ``None``), and where the first come from: by counting for
    :data:`COUNTED` (the published file's distance from them in the text), else the
    published file."""
    published = io.read_answer(problem.solution).value
    if problem.name not in COUNTED:
        return published, None, "published"
    model, evidence, _ = read(problem)
    exact = counting.marginals(model, evidence)
    low, high = counting.leaf_bounds(model)
    off = max(float(np.max(np.abs(p - q))) for p, q in zip(published, exact))
    return exact, published, (f"counting (the published marginals differ by up to {off:.3f}; "
                              f"every leaf's P(1) must lie in [{low:.4f}, {high:.4f}])")


def solve_in_child(problem: Any, task: str, seconds: float, grace: float
                   ) -> tuple[Any, str, str, float]:
    """``python -m mrflib solve --task TASK --time-limit SECONDS`` on ``problem`` (its
    ``model`` and ``evidence`` files) in a subprocess killed ``grace`` seconds past the
    limit: ``(last answer or None, status, stderr, wall seconds)``, the status
    ``"answered"``, ``"failed"`` or ``"killed"``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"answer.{task}"
        cmd = [sys.executable, "-m", "mrflib", "solve", str(problem.model), "--task", task,
               "--time-limit", str(seconds), "--out", str(out)]
        if problem.evidence is not None:
            cmd[5:5] = ["--evid", str(problem.evidence)]
        t0 = time.perf_counter()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + grace)
            status, err = ("answered" if res.returncode == 0 else "failed"), res.stderr
        except subprocess.TimeoutExpired as exc:
            status = "killed"
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        took = time.perf_counter() - t0
        try:
            value = io.read_answer(out).value
        except (ValueError, OSError):
            value = None
    return value, status, err, took


def ours(problem: Problem, seconds: float) -> dict:
    """Run ``solve --time-limit`` in a subprocess; its last answer and what made it."""
    value, status, err, took = solve_in_child(problem, "MAR", seconds, GRACE)
    lines = [ln for ln in err.splitlines() if "answer " in ln]
    last = lines[-1].split(": ", 1)[1].split("; wrote")[0] if lines else ""
    return {"marginals": value, "seconds": took, "status": status, "answers": len(lines),
            "last_method": last}


def _pygms_model(problem: Problem) -> tuple[Any, list, int, dict, list]:
    """pyGMs' model (zeros floored), our mini-bucket order (pyGMs' own min-fill takes
    minutes on linkage), and what :func:`_fill` needs."""
    import pygms as gm

    model, evidence, _ = read(problem)
    gmodel = gm.GraphModel(peers.pygms_factors(model), isLog=True)
    order, _, _ = elimination_order(model.condition(evidence) if evidence else model)
    seen = set(order)
    order += [v for v in range(model.n) if v not in seen]
    if evidence:
        gmodel.condition(dict(evidence))
    for f in gmodel.factors:  # pyGMs' messages turn NaN on zero weights
        f.table[~np.isfinite(f.table)] = FLOOR
    return gmodel, order, model.n, evidence, model.cardinalities.tolist()


def _fill(beliefs: dict, n: int, evidence: dict, card: list) -> list:
    out = []
    for v in range(n):
        if v in evidence:
            p = np.zeros(card[v])
            p[evidence[v]] = 1.0
        elif v in beliefs:
            p = np.asarray(beliefs[v], dtype=np.float64).ravel()
            p = np.exp(p - p.max()) if p.min() < 0 else p
            p = p / p.sum()
        else:
            p = np.full(card[v], 1.0 / card[v])
        out.append(p)
    return out


def pygms_wmb(problem: Problem, seconds: float) -> list:
    import pygms as gm
    from pygms.wmb import WMB

    start = time.perf_counter()
    gmodel, order, n, evidence, card = _pygms_model(problem)
    wmb = WMB(gmodel, order, iBound=PYGMS_IBOUND, weights=1.0)
    held = sorted({v.label for f in gmodel.factors for v in f.vars})
    cliques = [gm.VarSet([gmodel.X[v]]) for v in held]
    beliefs: dict = {}
    while True:
        t0 = time.perf_counter()
        wmb.msgForward(0.5, 0.1)
        got = wmb.msgBackward(beliefs=cliques)
        beliefs = {v: np.asarray(got[c].table) for v, c in zip(held, cliques)}
        if time.perf_counter() + 2 * (time.perf_counter() - t0) > start + seconds:
            break
    return _fill(beliefs, n, evidence, card)


def pygms_lbp(problem: Problem, seconds: float) -> list:
    import pygms as gm

    gmodel, _, n, evidence, card = _pygms_model(problem)
    linear = gm.GraphModel([f.exp() for f in gmodel.factors])
    from pygms.messagepass import LBP

    _, bel = LBP(linear, maxIter=LBP_ITERATIONS)
    beliefs = {i: np.asarray(b.table) for i, b in enumerate(bel) if b.nvar == 1}
    return _fill(beliefs, n, evidence, card)


def _peer(fn: Any, problem: Problem, seconds: float) -> dict:
    out = run_limited(lambda: fn(problem, seconds), seconds=seconds + GRACE, warmup=False)
    value = getattr(out, "value", None)
    status = getattr(out, "status", "answered" if value is not None else "failed")
    took = getattr(out, "seconds", math.nan)
    return {"marginals": value, "seconds": took, "status": status, "answers": int(
        value is not None), "last_method": fn.__name__}


def hard(problem: Problem, seconds: float, measured: dict) -> bool:
    """Whether exact inference does not answer within ``seconds``: refused or slower in
    the exact engine's last run of ``bench_uai_2014`` (``measured``: its MAR seconds, NaN
    for a refusal); a problem it has not measured, by the estimate of ``solve
    --time-limit`` (the mini-bucket order's clique tables)."""
    if problem.name in measured:
        took = measured[problem.name]
        return not took <= seconds - HEADROOM
    model, evidence, _ = read(problem)
    cond = model.condition(evidence) if evidence else model
    _, est = anytime._plan(cond, lambda _: None)
    return est > anytime.QUICK_EXACT_SECONDS and est > 0.5 * seconds


def _measured() -> dict:
    path = Path(__file__).resolve().parent / "results" / "uai_2014.csv"
    if not path.is_file():
        return {}
    import pandas as pd

    df = pd.read_csv(path)
    df = df[df.benchmark == "MAR"]
    return dict(zip(df.case, df.seconds.where(df.status == "answered")))


def run(quick: bool = False, subset: str | None = None, solvers: str | None = None,
        every_problem: bool = False) -> list[dict]:
    """The rows; ``subset`` and ``solvers`` as ``MRFLIB_APPROX_SUBSET`` and
    ``MRFLIB_APPROX_SOLVERS`` (which they override); with ``every_problem`` the problems of
    :data:`WRONG` are run too, their answers checked for shape but not scored (``rate``
    NaN)."""
    folder = os.environ.get(ENV, "").strip()
    if not folder:
        raise Skipped(f"set {ENV} to the folder of the UAI 2014 MAR-track problems")
    seconds = float(os.environ.get("MRFLIB_APPROX_SECONDS", SECONDS))
    problems = [p for p in problem_set(folder)
                if p.solution is not None and (every_problem or p.name not in WRONG)]
    subset = os.environ.get("MRFLIB_APPROX_SUBSET", "") if subset is None else subset
    if quick or subset == "hard":
        measured = _measured()
        problems = [p for p in problems if hard(p, seconds, measured)]
        print("   hard problems: " + " ".join(p.name for p in problems), flush=True)
    if quick:
        problems = problems[:1]
    every = {"mrflib": ours, "pygms-wmb": lambda p, s: _peer(pygms_wmb, p, s),
             "pygms-lbp": lambda p, s: _peer(pygms_lbp, p, s)}
    if solvers is None:
        solvers = os.environ.get("MRFLIB_APPROX_SOLVERS", ",".join(every))
    chosen = solvers.split(",")
    unknown = set(chosen) - set(every)
    if unknown:
        raise ValueError(f"MRFLIB_APPROX_SOLVERS names unknown solvers {sorted(unknown)}; "
                         f"known: {sorted(every)}")
    run_with = [(name, every[name]) for name in chosen]
    rows = []
    for problem in problems:
        exact, published, source = reference(problem)
        scored = problem.name not in WRONG
        if not scored:
            source = "not scored: the published file is wrong"
        for name, fn in run_with:
            got = fn(problem, seconds)
            s, h, trivial = score(got["marginals"], exact)
            if not scored:
                s, h = math.nan, math.nan
            note = "" if published is None else \
                f"{score(got['marginals'], published)[0]:.1f} against the published file"
            rows.append({"benchmark": f"MAR score at {seconds:g} s", "case": problem.name,
                         "method": name, "seconds": got["seconds"], "rate": s,
                         "rate_unit": "score", "family": problem.family,
                         "status": got["status"], "herr": h, "herr_trivial": trivial,
                         "answers": got["answers"], "last_method": got["last_method"],
                         "valid": valid(got["marginals"], exact), "reference": source,
                         "note": note})
            print(f"   {problem.name:22s} {name:10s} score {s:6.1f}  {got['seconds']:6.1f} s"
                  f"  {got['status']}  {got['last_method']}", flush=True)
    return rows
