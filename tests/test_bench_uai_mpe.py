"""The UAI 2014 MPE benchmark (``bench/bench_uai_mpe.py``) on a fake folder of two problems.

The competition's problems are not in the repository: a folder laid out like ``uai2014/MAP``
of ``mroavi/uai`` is built from two tiny models (one with evidence and a reference answer,
one without either), and the module's reading, scoring, rows and skipping are checked.
"""

from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
import pytest

from bench import Skipped
from bench import __main__ as bench_main
from bench import bench_uai_mpe as bm
from mrflib import FactorGraph, io


def brute(model):
    states = list(itertools.product(*[range(int(c)) for c in model.cardinalities]))
    weights = [float(model.log_weight(np.array(x))) for x in states]
    return np.array(states[int(np.argmax(weights))]), max(weights)


@pytest.fixture
def folder(tmp_path):
    """``Chain_1`` (evidence on variable 0, its MAP state as the reference) and
    ``Loop_1`` (no evidence, no reference)."""
    rng = np.random.default_rng(0)
    chain = FactorGraph([2, 3, 2, 2], [(0, 1), (1, 2), (2, 3)],
                        [rng.normal(size=(2, 3)), rng.normal(size=(3, 2)),
                         rng.normal(size=(2, 2))])
    io.write_uai(chain, tmp_path / "Chain_1.uai")
    io.write_evidence(tmp_path / "Chain_1.uai.evid", {0: 1})
    x, _ = brute(chain.condition({0: 1}))
    (tmp_path / "Chain_1.uai.MAP").write_text("MAP\n4 " + " ".join(map(str, x)) + "\n")
    loop = FactorGraph([2] * 4, [(0, 1), (1, 2), (2, 3), (3, 0)],
                       [rng.normal(size=(2, 2)) for _ in range(4)])
    io.write_uai(loop, tmp_path / "Loop_1.uai")
    return tmp_path


def test_problem_set_and_reference(folder):
    chain, loop = bm.problem_set(folder)
    assert (chain.name, chain.family, loop.name, loop.family) == ("Chain_1", "Chain", "Loop_1",
                                                                  "Loop")
    assert chain.evidence is not None and chain.reference is not None
    assert loop.evidence is None and loop.reference is None
    model = bm.read(chain)
    _, best = brute(model)
    assert bm.log_weight(model, bm.reference_state(chain)) == pytest.approx(best)
    assert bm.reference_state(loop) is None
    with pytest.raises(ValueError, match=bm.ENV):
        bm.problem_set(folder / "missing")
    (folder / "empty").mkdir()
    with pytest.raises(ValueError, match="no .uai files"):
        bm.problem_set(folder / "empty")


def test_scores_gaps_and_ranks():
    assert bm.score(5.0, 5.0, 1.0) == 100.0
    assert bm.score(3.0, 5.0, 1.0) == pytest.approx(50.0)
    assert bm.score(0.0, 5.0, 1.0) == 0.0  # worse than trivial
    assert bm.score(-math.inf, 5.0, 1.0) == 0.0
    assert bm.score(3.0, 5.0, -math.inf) == 100.0  # a trivial answer of zero weight
    assert bm.relative_gap(4.0, 5.0) == pytest.approx(0.2)
    assert bm.relative_gap(-math.inf, 5.0) == math.inf and bm.relative_gap(5.0, 5.0) == 0.0
    assert bm.ranks([3.0, 5.0, 5.0, -math.inf]) == [3, 1, 1, 4]
    model = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))])
    assert bm.log_weight(model, None) == -math.inf
    assert bm.log_weight(model, np.array([0, 2])) == -math.inf
    assert bm.log_weight(model, np.array([0])) == -math.inf


def test_rows_of_a_problem(folder, monkeypatch):
    """Both solvers (toulbar2 where pytoulbar2 is installed) answer the chain optimally:
    score 100, rank 1, no gap; mrflib's row says it proved the answer optimal."""
    chain = bm.problem_set(folder)[0]
    solvers = bm._available(bm.SOLVERS)
    rows = bm.problem_rows(chain, 5.0, solvers)
    _, best = brute(bm.read(chain))
    assert [r["method"] for r in rows] == list(solvers)
    for r in rows:
        assert r["status"] == "answered", r
        assert r["log_weight"] == pytest.approx(best) and r["rate"] == 100.0
        assert r["rank"] == 1 and r["relative_gap"] == 0.0
    ours = rows[0]
    assert ours["optimal"] and ours["upper_bound"] == pytest.approx(best, rel=1e-8)
    known = set(bench_main.COLUMNS + bench_main.OPTIONAL + bm.EXTRA_COLUMNS)
    assert all(set(r) <= known for r in rows), "no column the CSV would drop"


@pytest.mark.skipif(importlib.util.find_spec("pytoulbar2") is not None,
                    reason="pytoulbar2 is installed")
def test_without_toulbar2_ours_runs_alone():
    assert bm._available(bm.SOLVERS) == ("mrflib",)


def test_bench_skips_the_module_without_the_folder(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(bm.ENV, raising=False)
    with pytest.raises(Skipped, match=bm.ENV):
        bm.run(quick=True)
    assert bench_main.main(["--out", str(tmp_path), "uai_mpe"]) == 0
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "uai_mpe.csv").exists()


def test_unknown_problems_are_named(folder, monkeypatch):
    monkeypatch.setenv(bm.ENV, str(folder))
    monkeypatch.setenv(f"{bm.ENV}_PROBLEMS", "Chain_1,Nope_3")
    with pytest.raises(ValueError, match="Nope_3"):
        bm.run()


def test_toulbar2_solution_of_a_finished_or_killed_child():
    done = "New solution: 9 energy\n 0 1 1\nSOLUTION 1 0 0\n"
    killed = "New solution: 9 energy\n 0 1 1\nOptimality gap\nNew solution: 8 energy\n 1 1"
    assert bm.toulbar2_solution(done).tolist() == [1, 0, 0]
    assert bm.toulbar2_solution(killed).tolist() == [0, 1, 1]  # the last value line is cut
    assert bm.toulbar2_solution("SOLUTION none\n") is None
    assert bm.toulbar2_solution("") is None


def test_the_committed_subset_by_default_and_every_problem_in_uai_mpe_all(folder, monkeypatch):
    """``uai_mpe`` runs the problems of ``SUBSET`` found in the folder, ``uai_mpe_all``
    every problem of it."""
    from bench import bench_uai_mpe_all

    monkeypatch.setenv(bm.ENV, str(folder))
    monkeypatch.delenv(f"{bm.ENV}_PROBLEMS", raising=False)
    monkeypatch.setattr(bm, "SUBSET", ("Chain_1", "Grids_18"))
    seen = []
    monkeypatch.setattr(bm, "problem_rows", lambda p, seconds, solvers: seen.append(p.name) or [])
    assert bm.run() == [] and seen == ["Chain_1"]
    seen.clear()
    assert bench_uai_mpe_all.run() == [] and sorted(seen) == ["Chain_1", "Loop_1"]
