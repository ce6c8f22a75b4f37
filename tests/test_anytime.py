"""``solve --time-limit``: answer files of several answers, and the anytime solver."""

from __future__ import annotations

import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _random_factor_graphs import colouring
from _random_factor_graphs import formula as _formula

from mrflib import FactorGraph, io
from mrflib.inference.exact import enumeration as fe
from mrflib.inference.exact import model_counting
from mrflib.io import anytime, anytime_mpe, anytime_pr
from mrflib.io.solve import main as solve_main

ROOT = Path(__file__).resolve().parents[1]

ANSWERS = {
    "PR": [-12.375, -12.25],
    "MPE": [np.array([0, 1, 2]), np.array([1, 12, 0])],
    "MAR": [[np.array([0.25, 0.75]), np.array([1.0])], [np.array([0.5, 0.5]), np.array([1.0])]],
}


def same(a, b) -> bool:
    if isinstance(a, list):
        return all(np.array_equal(x, y) for x, y in zip(a, b))
    return bool(np.all(np.asarray(a) == np.asarray(b)))


@pytest.mark.parametrize("task", sorted(ANSWERS))
def test_read_answer_takes_the_last_block(tmp_path, task):
    first, second = ANSWERS[task]
    path = tmp_path / "a"
    io.write_answers(path, task, [first, second])
    text = path.read_text()
    assert text.startswith(f"{task}\n{io.BEGIN}\n") and text.count(io.BEGIN) == 2
    assert same(io.read_answer(path).value, second)
    io.write_answers(path, task, [first])
    assert same(io.read_answer(path).value, first)


@pytest.mark.parametrize("task", sorted(ANSWERS))
def test_an_answer_cut_short_is_never_read_as_good(tmp_path, task):
    """A file killed while its second answer was being appended: at every cut, the reader
    gives the first answer or the complete second one, nothing else."""
    first, second = ANSWERS[task]
    full = io.format_answers(task, [first, second])
    keep = len(io.format_answers(task, [first]))
    path = tmp_path / "a"
    for cut in range(keep, len(full) + 1):
        path.write_text(full[:cut])
        got = io.read_answer(path).value
        want = second if cut == len(full) else first
        assert same(got, want), (cut, full[:cut])


def test_a_malformed_earlier_block_is_refused(tmp_path):
    path = tmp_path / "a"
    path.write_text(f"PR\n{io.BEGIN}\nxyz\n{io.BEGIN}\n-1.5\n")
    with pytest.raises(ValueError, match="log10 Z"):
        io.read_answer(path)


def grid_model(rows=4, cols=4, card=3, seed=0) -> FactorGraph:
    rng = np.random.default_rng(seed)
    n = rows * cols
    scopes = [(v,) for v in range(n)]
    scopes += [(r * cols + c, r * cols + c + 1) for r in range(rows) for c in range(cols - 1)]
    scopes += [(r * cols + c, (r + 1) * cols + c) for r in range(rows - 1) for c in range(cols)]
    tables = [rng.normal(size=(card,) * len(s)) for s in scopes]
    tables[0][1] = -np.inf
    return FactorGraph(np.full(n, card), scopes, tables)


@pytest.mark.parametrize("task", ["PR", "MAR", "MPE"])
def test_time_limit_exact_when_cheap(tmp_path, task):
    model = grid_model(3, 3, 2)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.out"
    assert solve_main([str(tmp_path / "m.uai"), "--task", task, "--time-limit", "5",
                       "--out", str(out), "-q"]) == 0
    got = io.read_answer(out).value
    if task == "PR":
        assert got == pytest.approx(fe.log_partition(model) / math.log(10), rel=1e-9)
    elif task == "MAR":
        for p, q in zip(got, fe.marginals(model)):
            np.testing.assert_allclose(p, q, atol=1e-9)
    else:
        assert model.log_weight(got) == pytest.approx(fe.map_assignment(model)[1])


@pytest.mark.parametrize("task", ["PR", "MAR", "MPE"])
def test_time_limit_approximate_answers_are_valid(tmp_path, monkeypatch, capsys, task):
    """With exact inference ruled out, a tiny limit still gives a valid answer (the trivial
    one; for MPE a state of positive weight found by search), a larger one mini-bucket
    answers, each named on stderr; a PR answer is an upper bound or exact (the grid is small
    enough for one mini-bucket per bucket, so importance sampling has the exact answer)."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    model = grid_model()
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.out"
    first = "search from" if task == "MPE" else "trivial"
    # an MPE answer that meets its upper bound ends the run before any mini-bucket
    later = r"max mini-bucket|optimal: the log-weight" if task == "MPE" else \
        "weighted mini-bucket"  # PR: the importance sampling proposal's
    for limit, method in (("0.01", first), ("120", later)):
        assert solve_main([str(tmp_path / "m.uai"), "--task", task, "--time-limit", limit,
                           "--out", str(out)]) == 0
        assert re.search(method, capsys.readouterr().err)
        check_answer(model, task, io.read_answer(out).value)


def check_answer(model, task, got):
    if task == "PR":
        assert got >= fe.log_partition(model) / math.log(10) - 1e-9
    elif task == "MAR":
        assert [len(p) for p in got] == model.cardinalities.tolist()
    else:
        assert got.shape == (model.n,) and np.all(got < model.cardinalities)
        assert model.log_weight(got) > -np.inf


def test_time_limit_several_answers_exact_last(tmp_path, monkeypatch):
    """Exact inference in the child while mini-bucket answers are written: the exact
    answer, when it arrives in time, is the last."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    model = grid_model(4, 4, 2)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MAR"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "MAR", "--time-limit", "60",
                       "--out", str(out), "-q"]) == 0
    assert out.read_text().count(io.BEGIN) >= 2
    for p, q in zip(io.read_answer(out).value, fe.marginals(model)):
        np.testing.assert_allclose(p, q, atol=1e-9)


def test_a_kill_between_answers_leaves_a_valid_answer(tmp_path):
    """SIGKILL once the first answer is there: the file still reads as a valid answer."""
    model = grid_model(12, 12, 3)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MAR"
    proc = subprocess.Popen([sys.executable, "-m", "mrflib", "solve", str(tmp_path / "m.uai"),
                             "--task", "MAR", "--time-limit", "600", "--out", str(out), "-q"],
                            cwd=ROOT)
    try:
        for _ in range(1200):
            if out.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    got = io.read_answer(out).value
    assert [len(p) for p in got] == model.cardinalities.tolist()


@pytest.mark.parametrize("extra", [["--time-limit", "-1"], ["--time-limit", "inf"],
                                   ["--time-limit", "nan"], ["--method", "nope"],
                                   ["--method", "lbp"]])  # lbp answers MAR, not PR
def test_bad_option_values_are_usage_errors(extra, capsys):
    """A bad value of an option is a usage error like a bad option: one line naming it,
    status 2, before the model is read (x.uai does not exist)."""
    with pytest.raises(SystemExit) as stop:
        solve_main(["x.uai", "--task", "PR", *extra, "-q"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {extra[0]}" in err, err


def test_exact_estimate_takes_the_engines_order_where_cheaper(monkeypatch):
    """A mini-bucket order far worse than the exact engine's (as min-fill is on pedigrees)
    does not make exact inference look hopeless: the estimate is the cheaper plan's."""
    model = grid_model(4, 4, 2)
    order, _, _ = anytime.elimination_order(model)
    monkeypatch.setattr(anytime, "elimination_order", lambda m: (order, 40.0, 1e18))
    lines = []
    got_order, est = anytime._plan(model, lines.append)
    engine = anytime.plan(model, check=False, search=False)
    assert got_order == order
    assert est == pytest.approx(anytime.EXACT_NS_PER_ENTRY * 1e-9 * engine.total_bytes / 8)
    assert "estimated at" in lines[0]


def test_a_pass_that_does_not_lower_the_bound_is_not_written(tmp_path, monkeypatch, capsys):
    """Mini-bucket answers replace the last one only when their pass lowered the bound on
    log Z (the first pass of a larger budget can fit the model worse than many passes of a
    smaller one); the others are named on stderr as not written."""
    from mrflib.inference.approx.wmb import WMBResult

    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    model = grid_model(card=2)
    # bounds as growing_passes reports them: the lowest so far
    passes = [(5.0, 0.125, 1), (4.0, 0.25, 2), (4.0, 0.375, 1), (3.5, 0.5, 2)]

    def fake(model, left, order=None, strict=False):
        for bound, a, it in passes:
            yield WMBResult(bound, [np.array([a, 1 - a])] * model.n, 3, 0.0, it)

    monkeypatch.setattr(anytime, "growing_passes", fake)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MAR"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "MAR", "--time-limit", "60",
                       "--out", str(out)]) == 0
    assert capsys.readouterr().err.count("not written") == 1
    blocks = out.read_text().split(io.BEGIN)[1:]
    # the trivial answer, then the passes that lowered the bound
    assert [float(b.split()[2]) for b in blocks[1:]] == [0.125, 0.25, 0.5]


# --------------------------------------------------------------------------- MPE answers
def potts(rows, cols, seed, q=3, coupling=0.4) -> FactorGraph:
    """A Potts lattice with a random field on each pixel (no zeros)."""
    rng = np.random.default_rng(seed)
    n = rows * cols
    scopes = [(r * cols + c, r * cols + c + 1) for r in range(rows) for c in range(cols - 1)]
    scopes += [(r * cols + c, (r + 1) * cols + c) for r in range(rows - 1) for c in range(cols)]
    tables = [coupling * np.eye(q)] * len(scopes)
    return FactorGraph(np.full(n, q), scopes + [(v,) for v in range(n)],
                       tables + [rng.normal(scale=0.3, size=q) for _ in range(n)])


def written_states(path) -> list[np.ndarray]:
    """Every MPE answer of an answer file, in the order written."""
    return [np.array(b.split()[1:], dtype=np.int64)
            for b in Path(path).read_text().split(io.BEGIN)[1:]]


def solve_mpe(tmp_path, model, limit, exact=False) -> tuple[list[np.ndarray], str]:
    """``solve --task MPE --time-limit`` in this process: the states written and stderr."""
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MPE"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "MPE", "--time-limit", str(limit),
                       "--out", str(out)]) == 0
    return written_states(out), out


def assert_improving(model, states) -> np.ndarray:
    """Every answer has positive probability and each beats the one before; the weights."""
    lw = np.array([model.log_weight(x) for x in states])
    assert np.all(lw > -np.inf), lw
    assert np.all(np.diff(lw) > 0), lw
    return lw


@pytest.mark.parametrize("seed", range(6))
def test_wmb_mpe_answer_has_positive_probability(seed):
    """approximate_answer's MPE state on 3-colouring grids (its decoding of the mini-bucket
    beliefs of a small i-bound, repaired and improved) has positive probability and is a
    local maximum."""
    model = colouring(8 + seed % 3, 10, seed)
    got = anytime.approximate_answer(model, "MPE", max_iter=3, memory=8 * 81)
    value = model.log_weight(got.value)
    assert value > -np.inf
    for v in range(model.n):
        for a in range(3):
            y = got.value.copy()
            y[v] = a
            assert model.log_weight(y) <= value
    assert "log Z <=" in got.how


@pytest.mark.parametrize("seed", range(4))
def test_mpe_answers_written_only_improve(tmp_path, monkeypatch, capsys, seed):
    """solve --time-limit on small 3-colouring grids with exact inference ruled out: the
    first answer is a state of positive weight (not the trivial all-zero state), and each
    answer written has positive probability and a log-weight above the one before, which
    stderr names."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    model = colouring(6, 6, seed)
    states, _ = solve_mpe(tmp_path, model, 30)
    lw = assert_improving(model, states)
    err = capsys.readouterr().err
    assert "answer 1: search from" in err and f"log-weight {lw[-1]:.10g}" in err
    assert "max mini-bucket decoding" in err and ", upper bound " in err


def test_mpe_answers_improve_on_a_30x30_colouring_grid(tmp_path):
    states, _ = solve_mpe(tmp_path, colouring(30, 30, 0), 3)
    assert_improving(colouring(30, 30, 0), states)


def test_mpe_on_a_30x30_potts_lattice_ends_at_or_above_icm(tmp_path):
    """Without zeros too, the answers only improve, and the last is at least what
    iterated conditional modes reaches from the trivial state."""
    from mrflib.inference.approx.point_estimates import icm

    model = potts(30, 30, 0)
    states, _ = solve_mpe(tmp_path, model, 3)
    lw = assert_improving(model, states)
    assert lw[-1] >= icm(model, anytime.trivial_answer(model, "MPE")).log_weight


def test_an_exact_answer_no_better_than_the_last_is_not_written(tmp_path, capsys):
    """On a model solved at once, the exact answer follows the first; it is written only
    when it beats it (here the first is already a MAP state)."""
    model = colouring(2, 2, 0)
    states, _ = solve_mpe(tmp_path, model, 30)
    assert_improving(model, states)
    assert model.log_weight(states[-1]) == pytest.approx(fe.map_assignment(model)[1])
    err = capsys.readouterr().err
    assert "exact" in err


#: What the solver says when it starts each exact search over the zeros.
STARTED = {"model counting": "exact inference by model counting ("
                             + " and ".join(model_counting.COUNTERS[c][1]
                                            for c in model_counting.installed())
                             + ") started in process",
           "conditioning": "exact inference by conditioning (zeros propagated, components "
                           "cached) started in process"}


@pytest.mark.parametrize("kind, conditioning, late, want", [
    ("constraints", True, False, "model counting"),
    ("constraints", False, False, "model counting"),
    ("graded", True, False, "conditioning"),
    ("graded", False, False, ""),
    ("no zeros", True, False, ""),
    ("graded", True, True, "")])
def test_one_starter_picks_the_exact_search_over_the_zeros(kind, conditioning, late, want):
    """The ``PR`` starter counts a constraint model, runs the conditioning search on another
    model with zeros (only where asked: the count alone starts before the plan), and starts
    nothing on a model without zeros or past the deadline; its line names the search and
    the child's process."""
    if kind == "constraints":
        pytest.importorskip("pyganak")
    model = _formula(zero=-1.0 if kind == "no zeros" else -np.inf, graded=kind == "graded")
    lines: list[str] = []
    deadline = time.perf_counter() + (-1.0 if late else 60.0)
    child, name = anytime_pr.start_exact_search(model, lines.append, deadline,
                                                 conditioning=conditioning)
    try:
        assert name == want and (child is None) == (not want)
        assert lines == ([f"{STARTED[want]} {child.pid}"] if want else [])
    finally:
        if child is not None:
            child.stop()


@pytest.mark.parametrize("kind", ["constraints", "graded", "no zeros"])
def test_pr_beyond_the_junction_tree_searches_the_zeros(tmp_path, monkeypatch, capsys,
                                                        kind):
    """With the junction tree ruled out, a constraint model (every table one value where
    not zero) is counted exactly by the model counter, another model with zeros by the
    conditioning search (the answer the last); a model without zeros starts neither."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    monkeypatch.setattr(anytime, "EXACT_NS_PER_ENTRY", 1e15)
    if kind == "constraints":
        pytest.importorskip("pyganak")
    model = _formula(zero=-1.0 if kind == "no zeros" else -np.inf, graded=kind == "graded")
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.PR"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "PR", "--time-limit", "60",
                       "--out", str(out)]) == 0
    err = capsys.readouterr().err
    want = fe.log_partition(model) / math.log(10)
    if kind == "no zeros":
        assert "conditioning" not in err and "model counting" not in err
        return
    how = "model counting" if kind == "constraints" else "conditioning"
    # the exact count, or the approximate counter's when it found fewer models than its
    # threshold: "exact (model counting, ApproxMC: ...)"
    assert f"exact ({how}" in err
    assert io.read_answer(out).value == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("bound_log10, written", [(1e3, False), (-5.0, True)])
def test_a_proposal_bound_looser_than_the_trivial_one_is_not_written(tmp_path, monkeypatch,
                                                                      bound_log10, written):
    """Before any sample of positive weight, ``PR`` writes the proposal's certified bound
    only where it is below the trivial answer, itself a certified bound on ``log Z``."""
    from types import SimpleNamespace

    model = grid_model(3, 3, 2)
    res = SimpleNamespace(log_partition=-np.inf, log_upper_bound=bound_log10 * np.log(10.0),
                          n_samples=64, proposal="wmb", details={})
    monkeypatch.setattr(anytime_pr, "importance_estimates", lambda *a, **k: iter([res]))
    out = tmp_path / "m.PR"
    answers = anytime.AnswerFile(out, "PR", model)
    answers.add(anytime.trivial_answer(model, "PR"))
    lines: list[str] = []
    anytime_pr.estimate_pr(model, SimpleNamespace(seed=0, out=out), answers, lines.append,
                            time.perf_counter() + 60.0, anytime.trivial_answer(model, "PR"),
                            None)
    assert len(answers.values) == (2 if written else 1)
    assert ("not written" in lines[-1]) != written


@pytest.mark.parametrize("seed", range(3))
def test_mpe_with_evidence_proven_on_the_reduced_parts(tmp_path, monkeypatch, capsys, seed):
    """With evidence, exact inference and max-product on the parts ruled out, the reduced
    parts' propagated moves and their branch and bound over the dual bound answer: every
    answer of positive probability and better than the one before, the last a most
    probable state, proven so. toulbar2 is left out: its proof would end these steps
    first (tests/test_map_toulbar2.py runs the solver with it)."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    monkeypatch.setattr(anytime_mpe, "exact_parts", lambda red, seconds=None: None)
    monkeypatch.setattr(anytime_mpe, "toulbar2_available", lambda: False)
    model = colouring(3, 4, seed)
    evidence = {0: 0, 5: 1}
    io.write_uai(model, tmp_path / "m.uai")
    (tmp_path / "m.evid").write_text(f"{len(evidence)} "
                                     + " ".join(f"{v} {a}" for v, a in evidence.items()))
    out = tmp_path / "m.MPE"
    assert solve_main([str(tmp_path / "m.uai"), "--evid", str(tmp_path / "m.evid"),
                       "--task", "MPE", "--time-limit", "30", "--out", str(out)]) == 0
    conditioned = model.condition(evidence)
    lw = assert_improving(conditioned, written_states(out))
    assert lw[-1] == pytest.approx(fe.map_assignment(conditioned)[1], abs=1e-9)
    err = capsys.readouterr().err
    assert "reduced for MAP" in err and "optimal:" in err
    assert "reparameterized by the dual bound" in err


def test_a_plan_out_of_reach_is_reported_with_its_proved_bound():
    """Where no elimination order is of use the solver says so with the lower bound it
    proved, not a table of 10^inf entries."""
    from mrflib.models import lattices

    lines: list[str] = []
    order, est = anytime._plan(lattices.potts_lattice(40, 40, q=3, rng=0), lines.append,
                               mini_bucket=False)
    assert order is None and est == math.inf
    (line,) = lines
    assert not re.search(r"\binf\b", line) and "none of use" in line
    assert re.search(r"at least 10\^\d+\.\d entries, the treewidth is at least \d+", line)


def test_a_plan_not_found_says_how_far_the_search_looked():
    """Where the proved bound is small but no order was found within the search's reach
    (a random 3-regular graph: treewidth in the tens, minor-min-width about 14), the line says
    both, so a reader does not take the small bound for the plan's size."""
    import networkx as nx

    g = nx.random_regular_graph(3, 600, seed=0)
    scopes = [tuple(e) for e in g.edges()]
    model = FactorGraph([2] * 600, scopes, [np.zeros((2, 2)) for _ in scopes])
    lines: list[str] = []
    order, est = anytime._plan(model, lines.append, mini_bucket=False)
    assert order is None and est == math.inf
    (line,) = lines
    assert "none found with a largest clique table below 10^14.4 entries" in line
    bound = re.search(r"every order holds at least 10\^(\d+\.\d) entries, the treewidth is "
                      r"at least (\d+)\)", line)
    assert bound and float(bound[1]) < 14.4 and int(bound[2]) >= 2
