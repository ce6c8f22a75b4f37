"""Approximate log Z of constraint models by ApproxMC
(:mod:`mrflib.inference.approx.approx_counting`): within its tolerance of enumeration on
random constraint models with variables of 2 and 3 states, with and without evidence;
exact below its threshold, Z = 0; the same seed, the same answer; bad arguments refused by
name; the deadline; a clean refusal without ``pyapproxmc``; and ``solve --task PR``
writing the counter's estimates with their guarantee."""

from __future__ import annotations

import math
import os
import re
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
from _random_factor_graphs import constraint_model, formula, zeroed_model

from mrflib import FactorGraph, io
from mrflib._support import forked
from mrflib._support.forked import Forked
from mrflib.inference.approx import approx_counting
from mrflib.inference.exact import enumeration
from mrflib.io import anytime, anytime_pr
from mrflib.io.solve import main as solve_main

needs_counter = pytest.mark.skipif(not approx_counting.available(),
                                   reason="pyapproxmc is not installed")


def sparse_constraints(seed: int, n: int, card: int) -> FactorGraph:
    """``n`` variables of ``card`` states and ``n`` tables of two or three variables, each
    forbidding one or two of its rows and one random constant elsewhere: hundreds to
    thousands of models, past the counter's threshold, so that it hashes."""
    rng = np.random.default_rng(seed)
    scopes, tables = [], []
    for _ in range(n):
        scope = tuple(rng.choice(n, size=int(rng.integers(2, 4)), replace=False).tolist())
        t = np.full((card,) * len(scope), rng.normal())
        for _ in range(int(rng.integers(1, 3))):
            t[tuple(rng.integers(0, card, len(scope)).tolist())] = -np.inf
        scopes.append(scope)
        tables.append(t)
    return FactorGraph(np.full(n, card), scopes, tables)


CASES = [(seed, n, card) for seed in range(4) for n, card in ((14, 2), (9, 3))]


@needs_counter
@pytest.mark.parametrize("seed, n, card", CASES)
def test_the_estimate_is_within_its_tolerance_of_enumeration(seed, n, card):
    model = sparse_constraints(seed, n, card)
    want = enumeration.log_partition(model)
    res = approx_counting.approx_counted_log_partition(model, rng=seed)
    assert not res.exact and res.details["hashes"] > 0  # the hashes were used
    assert abs(res.log_partition - want) <= math.log1p(res.epsilon)
    assert res.lower <= want <= res.upper
    assert res.upper - res.lower == pytest.approx(2 * math.log1p(approx_counting.EPSILON))
    assert (res.epsilon, res.delta) == (approx_counting.EPSILON, approx_counting.DELTA)


@needs_counter
@pytest.mark.parametrize("seed, n, card", CASES[:4])
def test_evidence_conditions_the_estimate(seed, n, card):
    model = sparse_constraints(seed, n, card)
    evidence = {0: 1, n - 1: card - 1}
    want = enumeration.log_partition(model.condition(evidence))
    res = approx_counting.approx_counted_log_partition(model, evidence=evidence, rng=seed,
                                                       epsilon=1.5, delta=0.3)
    assert abs(res.log_partition - want) <= math.log1p(1.5)


@needs_counter
@pytest.mark.parametrize("seed", range(30))
def test_few_models_are_counted_exactly(seed):
    """Below the threshold the counter enumerates the models: ``log Z`` itself, ``-inf``
    for ``Z = 0`` (variables of 1 to 3 states, constants, evidence on every third seed),
    said exact where it used no hash (a variable its preprocessing freed is reported as
    one)."""
    model = constraint_model(zeroed_model(seed), np.random.default_rng(seed))
    res = approx_counting.approx_counted_log_partition(model, rng=0)
    want = enumeration.log_partition(model)
    assert res.exact == (res.details["hashes"] == 0 or want == -math.inf)
    assert (res.lower == res.log_partition == res.upper) == res.exact
    assert (res.log_partition == want == -math.inf
            or math.isclose(res.log_partition, want, rel_tol=1e-12, abs_tol=1e-12))


@needs_counter
def test_free_booleans_double_the_count():
    """A binary variable in no table with a zero is outside the formula's clauses: each
    doubles the count."""
    model = sparse_constraints(1, 14, 2)
    wider = FactorGraph(np.full(20, 2), model.scopes, model.log_tables)
    res = approx_counting.approx_counted_log_partition(wider, rng=3)
    assert res.details["free"] >= 6
    assert abs(res.log_partition - enumeration.log_partition(model) - 6 * math.log(2)) \
        <= math.log1p(res.epsilon)


@needs_counter
def test_the_same_seed_gives_the_same_estimate():
    model = sparse_constraints(2, 14, 2)
    runs = [approx_counting.approx_counted_log_partition(model, rng=rng, epsilon=1.5,
                                                        delta=0.3)
            for rng in (11, 11, np.random.default_rng(11), np.random.default_rng(11))]
    assert len({(r.log_partition, r.details["seed"]) for r in runs}) == 1
    limited = approx_counting.approx_counted_log_partition(model, rng=11, epsilon=1.5,
                                                           delta=0.3, time_limit=60.0)
    assert limited.log_partition == runs[0].log_partition  # the child computes the same


@needs_counter
@pytest.mark.parametrize("name, values", [
    ("epsilon", [0.0, -1.0, math.nan, math.inf, "0.8", None]),
    ("delta", [0.0, 1.0, 1.5, -0.1, math.nan, "0.2"]),
    ("rng", [-1, "seed", 1.5, None]),
    ("time_limit", [0.0, -1.0, math.nan])])
def test_bad_arguments_are_refused_by_name(name, values):
    model = sparse_constraints(0, 14, 2)
    for value in values:
        with pytest.raises(ValueError, match=name):
            approx_counting.approx_counted_log_partition(model, **{"rng": 0, name: value})


def test_a_model_that_is_not_a_constraint_model_is_refused():
    model = formula(graded=True)
    with pytest.raises(ValueError, match="model must be a constraint model"):
        approx_counting.approx_counted_log_partition(model, rng=0)
    with pytest.raises(TypeError, match="model"):
        approx_counting.approx_counted_log_partition("model", rng=0)


@needs_counter
def test_a_count_past_its_limit_is_a_timeout():
    # the limit is far below the fork's own start-up
    with pytest.raises(TimeoutError, match="did not finish within"):
        approx_counting.approx_counted_log_partition(formula(40), rng=0, time_limit=1e-9)


@pytest.fixture
def fresh_check():
    """The counter's check (:func:`approx_counting._counter`) made again within the test,
    and again after it."""
    approx_counting._counter.cache_clear()
    yield
    approx_counting._counter.cache_clear()


def test_without_the_counter_it_is_an_import_error_and_the_solver_runs_none(monkeypatch,
                                                                           fresh_check):
    monkeypatch.setitem(sys.modules, "pyapproxmc", None)  # import pyapproxmc fails
    assert not approx_counting.available()
    with pytest.raises(ImportError, match=r"mrflib\[counting\]"):
        approx_counting.approx_counted_log_partition(formula(), rng=0)
    assert not anytime_pr.ApproxCounts.wanted(formula())


def test_a_counter_that_drops_freed_variables_is_refused(monkeypatch, fresh_check):
    """pyapproxmc 4.3 and 4.4 count 3 models of the 6 of a formula whose preprocessing
    frees a variable: such a counter is refused as if it were absent."""
    from types import SimpleNamespace

    class Halving:
        def __init__(self, **kwargs):
            pass

        def add_clauses(self, clauses):
            pass

        def count(self, projection):
            return 3, 0

    monkeypatch.setitem(sys.modules, "pyapproxmc", SimpleNamespace(Counter=Halving))
    assert not approx_counting.available()
    with pytest.raises(ImportError, match="pyapproxmc below 4.3"):
        approx_counting.approx_counted_log_partition(formula(), rng=0)


@needs_counter
def test_the_installed_counter_counts_a_freed_variable():
    amc = approx_counting._counter()
    counter = amc.Counter(seed=5)
    counter.add_clauses(approx_counting.FREED + [[4, 5]])
    cells, hashes = counter.count([1, 2, 3, 4, 5])
    assert cells * 2**hashes == 18


@needs_counter
def test_only_constraint_models_with_zeros_are_counted():
    assert anytime_pr.ApproxCounts.wanted(formula())
    assert not anytime_pr.ApproxCounts.wanted(formula(graded=True))
    assert not anytime_pr.ApproxCounts.wanted(formula(zero=-1.0))


@needs_counter
def test_solve_pr_writes_the_counter_estimates(tmp_path, monkeypatch, capsys):
    """With the junction tree and the exact searches ruled out, ``solve --task PR`` on a
    constraint model writes the approximate counts' estimates, loosest first, each with
    its guarantee on stderr, and samples nothing after the first."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    monkeypatch.setattr(anytime, "EXACT_NS_PER_ENTRY", 1e15)
    monkeypatch.setattr(anytime, "start_exact_search", lambda *a, **k: (None, ""))
    monkeypatch.setattr(anytime_pr, "start_exact_search", lambda *a, **k: (None, ""))
    model = sparse_constraints(3, 14, 2)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.PR"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "PR", "--time-limit", "60",
                       "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines()
             if re.search(r"\banswer \d+: approximate model counting \(ApproxMC", ln)]
    assert len(lines) == len(anytime_pr.COUNT_TOLERANCES)
    for line, (epsilon, delta) in zip(lines, anytime_pr.COUNT_TOLERANCES):
        assert f"epsilon {epsilon:g}, delta {delta:g}" in line
        assert f"with probability {1 - delta:g}" in line
    last = err[err.index(lines[0]):]
    assert "importance sampling (" not in last
    want = enumeration.log_partition(model) / math.log(10)
    assert abs(io.read_answer(out).value - want) <= math.log10(1 + approx_counting.EPSILON)


@needs_counter
def test_the_counts_start_one_run_at_a_time_and_stop(tmp_path):
    """:class:`ApproxCounts` runs one tolerance after the other, and its stop kills the
    run under way and starts no other."""
    lines: list[str] = []
    counts = anytime_pr.ApproxCounts(sparse_constraints(0, 14, 2), lines.append,
                                     time.perf_counter() + 60.0, 0)
    assert counts.child is not None and len(lines) == 1 and "started in process" in lines[0]
    answers = anytime.AnswerFile(tmp_path / "a.PR", "PR", sparse_constraints(0, 14, 2))
    while not counts.poll(answers, "a.PR"):
        time.sleep(0.05)
    assert counts.written == 1 and len(answers.values) == 1 and counts.child is not None
    counts.stop()
    assert counts.child is None
    counts.poll(answers, "a.PR")
    assert counts.written == 1 and len(answers.values) == 1


def test_the_first_count_wait_takes_only_the_counts():
    with pytest.raises(TypeError, match="counts must be a ApproxCounts"):
        anytime_pr.first_count(None, None, None, "a.PR", time.perf_counter())


def _fails(reason: str) -> float:
    raise ValueError(reason)


@needs_counter
@pytest.mark.parametrize("reason, answers", [
    ("the model count needs 40 GiB, and 8 are free", False),
    ("the model has Z = 0 (the formula has no model, by Ganak)", True)])
def test_a_failed_exact_count_does_not_end_the_wait_a_proof_does(tmp_path, reason, answers):
    """The counters-first wait ends at the exact count's answer or its proof that Z = 0,
    not at its failure (then the approximate count's answer ends it)."""
    from mrflib._support.forked import Forked

    model = sparse_constraints(1, 14, 2)
    cond = Forked(_fails, (reason,))
    counts = anytime_pr.ApproxCounts(model, lambda line: None, time.perf_counter() + 60.0, 0)
    try:
        cond.result(wait=30.0)  # ended
        got = anytime_pr.first_count(counts, cond, anytime.AnswerFile(
            tmp_path / "a.PR", "PR", model), "a.PR", time.perf_counter() + 30.0)
        assert got and counts.written == (0 if answers else 1)
    finally:
        cond.stop()
        counts.stop()



def test_the_exact_count_keeps_the_parents_priority_the_others_yield(monkeypatch):
    """The children that yield the processor (the approximate counts, the conditioning
    search) run :data:`~mrflib._support.forked.LOW_NICENESS` below the parent; the exact
    model count runs at the parent's priority (see the module notes)."""
    niceness = lambda *a, **k: os.nice(0)  # noqa: E731 - the child's own niceness
    monkeypatch.setattr(approx_counting, "approx_counted_log_partition", niceness)
    monkeypatch.setattr(anytime_pr, "conditioned_log_partition",
                        lambda *a, **k: SimpleNamespace(log_partition=os.nice(0)))
    monkeypatch.setattr(anytime_pr.model_counting, "counted_log_partition",
                        lambda *a, **k: float(os.nice(0)))
    model = sparse_constraints(0, 6, 2)
    runs = {"approximate": (anytime_pr._approx_counted, (model, 0, 1.5, 0.3)),
            "conditioning": (anytime_pr._conditioned_pr, (model, 10.0)),
            "exact": (anytime_pr._counted_pr, (model,))}
    got = {}
    for name, (target, argv) in runs.items():
        child = Forked(target, argv)
        kind, value = child.result(wait=60.0)
        child.stop()
        assert kind == "ok", value
        got[name] = value
    parent = os.nice(0)
    low = min(parent + forked.LOW_NICENESS, 19)
    assert got["approximate"] == low
    assert got["conditioning"] == pytest.approx(low / math.log(10.0))
    assert got["exact"] == pytest.approx(parent / math.log(10.0))
