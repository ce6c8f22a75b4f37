"""The exact engine on the UAI 2014 inference competition's problem set (PR and MAR).

The problems: the UAI 2014 Probabilistic Inference Competition published its problems with
exact answers. The public GitHub repository ``akxlr/tbp`` keeps the MAR track's set:
142 problems (``tests/uai/MAR_prob/NAME.uai`` with evidence ``NAME.uai.evid``) of the
families Alchemy, CSP, DBN, Grids, ObjectDetection, Pedigree, Promedus, Segmentation,
linkage and relational, and the published marginals (``tests/uai/MAR_sol/NAME.uai.MAR``).
The Promedus problems also have ``NAME.uai.evid.2014``: the same evidence in the UAI 2014
form (the ``.evid`` files use the older form with a leading sample count); both are read and
a problem whose two files differ says so in its note. The competition's PR answers
(``log10 Z``) are not in that set, so ``log Z`` is compared with pyGMs only.

Run: ``MRFLIB_UAI_2014=/path/to/MAR_prob python -m bench uai_2014`` (the solutions are
read from ``MAR_sol`` beside that folder, or from the folder itself); without
``MRFLIB_UAI_2014`` the module is skipped (``make bench`` goes on with the others).
``MRFLIB_UAI_2014_SECONDS`` sets the wall-clock limit per task (default
:data:`SECONDS`), ``MRFLIB_UAI_2014_GIB`` the memory budget in GiB (default
:data:`MEMORY`); ``--quick`` runs the first problem of each family.

For each problem and task (``PR``: ``log Z`` with the evidence; ``MAR``: every
variable's marginal), in a forked child (:func:`mrflib.repro.forked.run_limited`) capped
at :data:`SECONDS` and :data:`MEMORY`: the reading of the files, the engine's plan
(:func:`mrflib.inference.exact.elimination.plan`: treewidth, largest clique table, all tables;
barren
CPTs pruned for ``PR`` as :func:`mrflib.inference.exact.log_partition` does) and the answer, timed
with its own planning included (one call each). A refusal is recorded with its one-line
reason and the treewidth it names; a problem cut by the time limit, out of memory, or
raising anything but the engine's refusal is recorded as such. ``MAR`` answers are
compared with the published file (largest absolute difference of a probability). Where
pyGMs is expected to finish within :data:`PYGMS_BUDGET` (the tree's table entries times
``PYGMS_SECONDS_PER_ENTRY``), it computes ``log Z`` in a child of its own (stopped at
twice the budget), and the marginals too where ours and the published differ by more than
:data:`PUBLISHED_TOLERANCE`, to tell which is right; the largest differences are recorded.
pyGMs' junction tree (``pygms.wmb.JTree``) is given our engine's elimination order: the
order sets the cost, not the answer, and pyGMs' own min-fill order is far worse on some of
these problems (on ``relational_2``, treewidth 2, it takes minutes to compute and gives a
tree of about 10^17 entries). Where every connected component of the model has at most
:data:`ENUMERATION_STATES` joint states, the components are also enumerated. Where
neither can arbitrate and our marginals came from an annealed order (the engine's last
resort where slices would be refused), they are computed again in a child of their own on
a second annealed order (seed :data:`CHECK_ANNEAL_SEED`): a different junction tree, the
same answer if the order is not what differs. An answer that went through slicing or
annealing says how in its note (the engine's progress lines, the slices' own left out).

Rows: one per problem and task, with the columns of ``bench/__main__.py`` and
:data:`EXTRA_COLUMNS`; ``seconds`` is empty when there is no answer, and ``status`` says why.
"""

from __future__ import annotations

import math
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bench import Skipped
from bench.bench_factor_graph import PYGMS_SECONDS_PER_ENTRY
from mrflib import FactorGraph, datasets, exact, io
from mrflib.inference.exact import elimination, sliced
from mrflib.inference.exact import elimination_order as eo
from mrflib.repro import peers
from mrflib.repro.forked import run_limited

#: The environment variable naming the problems folder.
ENV = "MRFLIB_UAI_2014"
#: Wall-clock seconds per task and problem (``MRFLIB_UAI_2014_SECONDS`` overrides).
SECONDS = 90.0
#: Bytes a task may allocate (the engine refuses, by name, what would not fit under it;
#: ``MRFLIB_UAI_2014_GIB`` overrides, in GiB): two thirds of this machine's 24 GiB.
MEMORY = 16 * 2**30
#: Seconds pyGMs may be expected to take (PR and MAR together) before it is skipped; it is
#: stopped at twice that.
PYGMS_BUDGET = 10.0
#: Seconds pyGMs may run when it is asked for the marginals to settle a disagreement
#: (its Python overhead per factor makes ``relational_2``, treewidth 2, take minutes).
PYGMS_ARBITER_SECONDS = 600.0
#: The published marginals have 6 significant digits: a larger difference from ours has
#: pyGMs' marginals, and the enumeration of each connected component where every one is
#: small enough, computed to tell which is right.
PUBLISHED_TOLERANCE = 1e-5
#: Joint states of the largest connected component :func:`enumerated_marginals` takes.
ENUMERATION_STATES = 2**20
#: Columns beyond ``bench/__main__.py``'s, in this order.
EXTRA_COLUMNS = ["family", "status", "variables", "observed", "max_states", "factors",
                 "treewidth", "max_table_bytes", "total_bytes", "log10_max_table",
                 "plan_seconds", "log_z", "published_max_diff", "pygms_seconds",
                 "pygms_max_diff", "enumeration_max_diff", "second_order_max_diff",
                 "limit_seconds"]
#: Seed of the second annealed order that checks marginals computed on an annealed order.
CHECK_ANNEAL_SEED = sliced.ANNEAL_SEED + 1
TASKS = ("PR", "MAR")


class Problem(NamedTuple):
    """One problem of the set: its name, family and files (``solution`` may be ``None``)."""

    name: str
    family: str
    model: Path
    evidence: Path | None
    solution: Path | None


def family(name: str) -> str:
    """``"Grids"`` for ``"Grids_11"``: the name without its trailing ``_<number>``."""
    return re.sub(r"_\d+$", "", name)


def uai_files(folder: Path, env: str, what: str) -> list[Path]:
    """Every ``NAME.uai`` of ``folder``, sorted by family then number; a missing or empty
    folder is refused naming the environment variable ``env`` that gave it (``what``: the
    kind of problems it should hold)."""
    if not folder.is_dir():
        raise ValueError(f"{env} must name a folder of {what}, got {str(folder)!r}")
    found = sorted(folder.glob("*.uai"))
    if not found:
        raise ValueError(f"{env}={str(folder)!r} has no .uai files")

    def key(p: Path) -> tuple:
        m = re.search(r"_(\d+)$", p.stem)
        return family(p.stem), int(m.group(1)) if m else 0, p.stem

    return sorted(found, key=key)


def problem_set(folder: str | os.PathLike) -> list[Problem]:
    """The problems of ``folder`` (every ``NAME.uai``), sorted by family then number; each
    solution ``NAME.uai.MAR`` is looked for in ``MAR_sol`` beside the folder, then in it."""
    folder = Path(folder)
    out = []
    for p in uai_files(folder, ENV, "UAI problems"):
        sol = next((s for s in (folder.parent / "MAR_sol" / f"{p.name}.MAR",
                                folder / f"{p.name}.MAR") if s.is_file()), None)
        ev = p.with_name(p.name + ".evid")
        out.append(Problem(p.stem, family(p.stem), p, ev if ev.is_file() else None, sol))
    return out


def read(problem: Problem) -> tuple[Any, dict, str]:
    """``(model, evidence, note)``: the model, its evidence (``{}`` without a file) and a
    note when ``NAME.uai.evid.2014`` exists and gives different evidence."""
    model = io.read_uai(problem.model)
    if problem.evidence is None:
        return model, {}, ""
    evidence = io.read_evidence(problem.evidence, model)
    other = problem.evidence.with_name(problem.evidence.name + ".2014")
    note = ""
    if other.is_file() and io.read_evidence(other, model) != evidence:
        note = f"{other.name} gives other evidence than {problem.evidence.name}"
    return model, evidence, note


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


_UNITS = {u: 1024.0**k for k, u in enumerate(("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"))}


def refusal(reason: str) -> tuple[int | None, float | None]:
    """``(treewidth, log10 of the largest clique table's entries)`` that a refusal names
    (``"... treewidth >= 31: every elimination order has a clique table of at least
    16.0 GiB ..."`` when no order fits, ``"the junction tree of treewidth 6 (largest clique
    table 2.0 GiB, ..."`` when the tree is built but needs more memory than there is),
    ``None`` for what it does not name."""
    m = re.search(r"treewidth (?:>= )?(\d+)", reason)
    width = int(m.group(1)) if m else None
    m = re.search(r"(?:clique table of at least|largest clique table) ([0-9.e+]+) "
                  r"(E?[KMGTP]?i?B)\b", reason)
    entries = None
    if m and m.group(2) in _UNITS:
        entries = math.log10(float(m.group(1)) * _UNITS[m.group(2)] / 8.0)
    return width, entries


def answer(problem: Problem, task: str, seconds: float = SECONDS) -> dict:
    """Read, plan and answer ``task`` on ``problem`` in this process: a dict of the
    :data:`EXTRA_COLUMNS` it knows, ``seconds`` (the answer, planning included), ``value``
    (``log Z``, or the marginals) and ``note``; a refusal gives ``status`` ``"refused"``
    and its reason as the note."""
    model, evidence, note = read(problem)
    cond = model.condition(evidence) if evidence else model
    out: dict[str, Any] = dict(variables=model.n, observed=len(evidence),
                               max_states=int(model.cardinalities.max()),
                               factors=len(model.scopes), note=note, value=None)
    t0 = time.perf_counter()
    plan = elimination.plan(cond, barren=task == "PR", check=False, upward_only=task == "PR")
    width = plan.treewidth if plan.treewidth is not None else plan.treewidth_lower_bound
    out.update(plan_seconds=time.perf_counter() - t0, treewidth=width,
               max_table_bytes=plan.max_table_bytes, total_bytes=plan.total_bytes,
               log10_max_table=math.log10(plan.max_table_bytes / 8))
    t0 = time.perf_counter()
    lines: list[str] = []
    try:  # beyond memory: reduced domains, then slices within the time limit
        value = (sliced.log_partition(cond, time_limit=seconds, progress=lines.append)
                 if task == "PR" else
                 sliced.marginals(cond, time_limit=seconds, progress=lines.append))
    except ValueError as exc:
        reason = _one_line(exc)
        width, entries = refusal(reason)
        return dict(out, status="refused", treewidth=width or plan.treewidth,
                    log10_max_table=entries or out["log10_max_table"],
                    note="; ".join(filter(None, [reason, note])))
    out.update(status="answered", seconds=time.perf_counter() - t0, value=value,
               note="; ".join(filter(None, [note] + [s for s in lines
                                                     if not s.startswith("slice ")])))
    if task == "PR":
        out["log_z"] = value
    elif problem.solution is not None:
        published = io.read_answer(problem.solution).value
        out["published_max_diff"] = max_difference(value, published)[0]
        if out["published_max_diff"] > PUBLISHED_TOLERANCE:
            out.update(_enumeration_check(cond, value, published, note))
    return out


def enumerated_marginals(model: FactorGraph) -> list[np.ndarray] | None:
    """Every variable's marginal by enumerating each connected component of ``model`` on
    its own (:mod:`mrflib.inference.exact.enumeration`), or ``None`` when a component has more than
    :data:`ENUMERATION_STATES` joint states: an answer independent of the junction tree."""
    card = model.cardinalities.tolist()
    comps = eo.components(eo.interaction_graph(model.n, model.scopes), range(model.n))
    if any(math.prod(card[v] for v in c) > ENUMERATION_STATES for c in comps):
        return None
    where = {v: i for i, c in enumerate(comps) for v in c}
    held: list[list[int]] = [[] for _ in comps]
    for k, s in enumerate(model.scopes):
        if s:
            held[where[s[0]]].append(k)
    out: list = [None] * model.n
    for c, ks in zip(comps, held):
        local = {v: i for i, v in enumerate(c)}
        sub = FactorGraph([card[v] for v in c],
                          [tuple(local[v] for v in model.scopes[k]) for k in ks],
                          [model.log_tables[k] for k in ks])
        for v, p in zip(c, exact.marginals(sub, method="enumerate")):
            out[v] = p
    return out


def _enumeration_check(model: FactorGraph, ours: list, published: list, note: str) -> dict:
    """``enumeration_max_diff`` (ours against :func:`enumerated_marginals`) and the note
    saying how far the published marginals are from the enumeration; ``{}`` when a
    component is too large to enumerate."""
    enum = enumerated_marginals(model)
    if enum is None:
        return {}
    d_ours, d_pub = max_difference(ours, enum)[0], max_difference(published, enum)[0]
    text = (f"enumeration of each connected component: max |diff| {d_ours:.1e} with ours, "
            f"{d_pub:.2g} with the published")
    return dict(enumeration_max_diff=d_ours, note="; ".join(filter(None, [note, text])))


def max_difference(ours: list[np.ndarray], theirs: list[np.ndarray]) -> tuple[float, int]:
    """``(largest absolute difference, count of skipped variables)`` between two lists of
    marginals: a variable whose ``theirs`` is not finite (pyGMs gives NaN where a zero
    weight meets ``-inf`` in log space) is skipped and counted; ``(inf, 0)`` when the lists
    do not have the same variables and states."""
    if len(ours) != len(theirs) or any(np.shape(a) != np.shape(b) for a, b in zip(ours, theirs)):
        return math.inf, 0
    finite = [(a, b) for a, b in zip(ours, theirs) if np.isfinite(b).all()]
    d = max((float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in finite),
            default=math.nan)
    return d, len(ours) - len(finite)


def _pygms(problem: Problem, tasks: list[str]) -> dict:
    """pyGMs' answers to ``tasks`` (``{task: (seconds, value)}``) on our engine's
    elimination order, or why it was skipped."""
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="pygms")
    model, evidence, _ = read(problem)
    fs = peers.pygms_factors(model)
    plan = elimination.plan(model.condition(evidence) if evidence else model)
    entries = plan.total_bytes / 8
    if entries * PYGMS_SECONDS_PER_ENTRY > PYGMS_BUDGET:
        return dict(skipped=f"pyGMs skipped: its junction tree has {entries:.2g} table "
                            f"entries (over {PYGMS_BUDGET:g} s)")
    calls = dict(PR=lambda: peers.pygms_log_partition(fs, evidence, plan.order),
                 MAR=lambda: peers.pygms_marginals(fs, model.n, evidence, plan.order))
    out = {}
    for task in tasks:
        t0 = time.perf_counter()
        value = calls[task]()
        out[task] = (time.perf_counter() - t0, value)
    return out


def _task_row(problem: Problem, task: str, seconds: float) -> dict:
    """The row of ``task`` on ``problem``, its answer in ``row["value"]``."""
    got = run_limited(lambda: answer(problem, task, seconds), seconds=seconds, warmup=False,
                      memory=memory_budget())
    row = dict(benchmark=task, case=problem.name, method="mrflib", family=problem.family,
               baseline="published MAR" if task == "MAR" and problem.solution else "",
               rate_unit="variables/s", limit_seconds=seconds)
    if got.status != "ok":  # time limit, out of memory, an exception, or the child died
        limit = f" ({seconds:g} s)" if got.status == "time limit" else ""
        return dict(row, status=got.status.split(":")[0].split(" (")[0],
                    note=got.status + limit, value=None)
    row.update(got.value)
    if row["status"] == "answered":
        row["rate"] = row["variables"] / row["seconds"]
    return row


def memory_budget() -> int:
    """Bytes a task may allocate: ``MRFLIB_UAI_2014_GIB`` GiB, else :data:`MEMORY`."""
    gib = os.environ.get(f"{ENV}_GIB", "").strip()
    return int(float(gib) * 2**30) if gib else MEMORY


def _compare_pygms(rows: dict[str, dict], problem: Problem) -> None:
    """Add pyGMs' times and differences to the answered rows of ``problem``: ``log Z``
    always, the marginals where ours and the published differ by over
    :data:`PUBLISHED_TOLERANCE` (or nothing is published)."""
    tasks = [t for t, r in rows.items() if r.get("status") == "answered" and (
        t == "PR" or not r.get("published_max_diff", math.inf) <= PUBLISHED_TOLERANCE)]
    if not tasks:
        return
    seconds = PYGMS_ARBITER_SECONDS if "MAR" in tasks else PYGMS_BUDGET * 2
    got = run_limited(lambda: _pygms(problem, tasks), seconds=seconds, warmup=False,
                      memory=MEMORY)
    for task in tasks:
        row = rows[task]
        if got.status != "ok":
            text = f"pyGMs: {got.status}"
        elif "skipped" in got.value:
            text = got.value["skipped"]
        else:
            t, v = got.value[task]
            d, bad = (abs(v - row["value"]), 0) if task == "PR" else \
                max_difference(row["value"], v)
            row.update(pygms_seconds=t, pygms_max_diff=d)
            text = f"pyGMs {t:.3g} s, max |diff| {d:.1e}" + \
                (f" ({bad} of its marginals NaN, skipped)" if bad else "")
        row["note"] = "; ".join(filter(None, [row.get("note", ""), text]))


def _second_order(row: dict | None, problem: Problem, seconds: float) -> None:
    """Add ``second_order_max_diff`` to a ``MAR`` row answered on an annealed order whose
    marginals differ from the published beyond :data:`PUBLISHED_TOLERANCE` and that
    enumeration could not arbitrate: the marginals on an order annealed with
    :data:`CHECK_ANNEAL_SEED`, in a child capped as the answer was."""
    if (row is None or row.get("status") != "answered"
            or sliced.ANNEALING not in row.get("note", "")
            or not row.get("published_max_diff", 0.0) > PUBLISHED_TOLERANCE
            or "enumeration_max_diff" in row):
        return

    def again() -> list[np.ndarray]:
        model, evidence, _ = read(problem)
        cond = model.condition(evidence) if evidence else model
        return sliced.marginals(cond, time_limit=seconds, anneal=CHECK_ANNEAL_SEED)

    got = run_limited(again, seconds=seconds, warmup=False, memory=memory_budget())
    what = f"marginals on a second annealed order (seed {CHECK_ANNEAL_SEED})"
    if got.status != "ok":
        text = f"{what}: {got.status}"
    else:
        d = max_difference(row["value"], got.value)[0]
        d_pub = max_difference(io.read_answer(problem.solution).value, got.value)[0]
        row["second_order_max_diff"] = d
        text = f"{what}: max |diff| {d:.1e} with ours, {d_pub:.2g} with the published"
    row["note"] = "; ".join(filter(None, [row["note"], text]))


def _summary(row: dict) -> str:
    if row.get("status") != "answered":
        return f"{row['status']}: {row.get('note', '')}"[:160]
    d = row.get("published_max_diff")
    extra = "" if d is None or (isinstance(d, float) and math.isnan(d)) else \
        f", published max |diff| {d:.1e}"
    return f"{row['seconds']:.3g} s, treewidth {row['treewidth']}{extra}"


def problem_rows(problem: Problem, seconds: float = SECONDS, pygms: bool = True) -> list[dict]:
    """The ``PR`` and ``MAR`` rows of ``problem`` (``MAR`` is not run when ``PR`` hit the
    time limit: it does more work on a tree at least as large)."""
    rows: dict[str, dict] = {}
    for task in TASKS:
        if task == "MAR" and rows["PR"]["status"] == "time limit":
            rows[task] = dict(rows["PR"], benchmark=task, status="not run",
                              note=f"not run: PR hit the time limit ({seconds:g} s)")
            continue
        rows[task] = _task_row(problem, task, seconds)
    if pygms and any(r.get("status") == "answered" for r in rows.values()):
        _compare_pygms(rows, problem)
    _second_order(rows.get("MAR"), problem, seconds)
    for row in rows.values():
        print(f"   {problem.name:22s} {row['benchmark']:3s} {_summary(row)}", flush=True)
        row.pop("value", None)
    return list(rows.values())


def _warm_up() -> None:
    """Load the numba kernels and imports in the parent, so that no child times them."""
    small = datasets.uai_problem("Grids_12").model
    exact.log_partition(small)
    exact.marginals(small)
    peers.pygms_marginals(peers.pygms_factors(small), small.n)


def run(quick: bool = False) -> list[dict]:
    """The rows of every problem in ``$MRFLIB_UAI_2014`` (``quick``: the first of each
    family); :class:`bench.Skipped` when the variable is not set."""
    folder = os.environ.get(ENV, "").strip()
    if not folder:
        raise Skipped(f"set {ENV} to the folder of the UAI 2014 MAR-track problems (the "
                      "public repository akxlr/tbp, tests/uai/MAR_prob) to run it")
    seconds = float(os.environ.get(f"{ENV}_SECONDS", SECONDS))
    problems = problem_set(folder)
    if quick:
        first: dict[str, Problem] = {}
        problems = [first.setdefault(p.family, p) for p in problems if p.family not in first]
    warnings.filterwarnings("ignore", category=FutureWarning)
    _warm_up()
    rows = []
    for problem in problems:
        rows += problem_rows(problem, seconds)
    return rows
