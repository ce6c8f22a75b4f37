"""The UAI 2014 problem-set benchmark (``bench/bench_uai_2014.py``) on shipped problems.

The 142 competition problems are not in the repository: a folder laid out like the public
set (``MAR_prob`` with models and evidence, ``MAR_sol`` with the published marginals) is
built from one shipped problem and one model no junction tree fits, and the module's
reading, answering, refusing, rows and summaries are checked on it; also the forked runner
(:func:`mrflib.repro.forked.run_limited`) and ``python -m bench`` skipping the module.
"""

from __future__ import annotations

import itertools
import math
import shutil
import time

import numpy as np
import pytest

from bench import Skipped
from bench import __main__ as bench_main
from bench import bench_uai_2014 as bu
from mrflib import FactorGraph, datasets, exact, io
from mrflib.inference.exact import sliced
from mrflib.repro import uai_track
from mrflib.repro.forked import run_limited


@pytest.fixture
def folder(tmp_path):
    """``MAR_prob`` with Promedus_24 (its evidence in both forms) and Dense_1 (34 binary
    variables, every pair coupled: treewidth 33), ``MAR_sol`` with Promedus_24's answer."""
    prob, sol = tmp_path / "MAR_prob", tmp_path / "MAR_sol"
    prob.mkdir()
    sol.mkdir()
    p = datasets.uai_problem("Promedus_24")
    shutil.copy(p.path, prob)
    shutil.copy(p.evidence_path, prob)
    io.write_evidence(prob / "Promedus_24.uai.evid.2014", dict(p.evidence))
    shutil.copy(p.path.with_name("Promedus_24.uai.MAR"), sol)
    n = 34
    pairs = list(itertools.combinations(range(n), 2))
    dense = FactorGraph([2] * n, pairs, [np.array([[0.3, -0.3], [-0.3, 0.3]])] * len(pairs))
    io.write_uai(dense, prob / "Dense_1.uai")
    return prob


def test_problem_set_reads_the_folder_and_the_solutions_beside_it(folder):
    problems = bu.problem_set(folder)
    assert [p.name for p in problems] == ["Dense_1", "Promedus_24"]
    dense, prom = problems
    assert (dense.family, dense.evidence, dense.solution) == ("Dense", None, None)
    assert prom.family == "Promedus"
    assert prom.solution == folder.parent / "MAR_sol" / "Promedus_24.uai.MAR"
    assert bu.family("linkage_27") == "linkage" and bu.family("relational_3") == "relational"
    with pytest.raises(ValueError, match="MRFLIB_UAI_2014"):
        bu.problem_set(folder / "missing")
    with pytest.raises(ValueError, match="no .uai files"):
        bu.problem_set(folder.parent / "MAR_sol")


def test_both_evidence_files_are_read_and_a_difference_is_noted(folder):
    prom = bu.problem_set(folder)[1]
    model, evidence, note = bu.read(prom)
    assert evidence == dict(datasets.uai_problem("Promedus_24").evidence) and note == ""
    io.write_evidence(folder / "Promedus_24.uai.evid.2014", {0: 0})
    assert "Promedus_24.uai.evid.2014 gives other evidence" in bu.read(prom)[2]


def test_answers_agree_with_the_published_and_the_plan(folder):
    prom = bu.problem_set(folder)[1]
    p = datasets.uai_problem("Promedus_24")
    mar = bu.answer(prom, "MAR")
    assert mar["status"] == "answered" and mar["observed"] == len(p.evidence)
    assert mar["treewidth"] == exact.plan(p.model).treewidth
    assert mar["published_max_diff"] < 1e-6
    assert mar["log10_max_table"] == pytest.approx(math.log10(mar["max_table_bytes"] / 8))
    pr = bu.answer(prom, "PR")
    assert pr["log_z"] / math.log(10) == pytest.approx(p.log10_partition, rel=2e-6)
    assert pr["treewidth"] <= mar["treewidth"]  # barren CPTs pruned for PR


def test_a_refusal_is_recorded_with_its_treewidth_and_size(folder):
    dense = bu.problem_set(folder)[0]
    got = bu.answer(dense, "PR")
    assert got["status"] == "refused" and got["value"] is None
    assert got["treewidth"] >= 33 and got["log10_max_table"] >= math.log10(2.0**33)
    assert "treewidth" in got["note"] and "\n" not in got["note"]
    assert bu.refusal("no numbers here") == (None, None)
    assert bu.refusal("treewidth 26 or more: a clique table of at least 5.0 GiB, twice") == \
        (26, pytest.approx(math.log10(5 * 2**30 / 8)))
    assert bu.refusal("the junction tree of treewidth 6 (largest clique table 2.0 GiB, all "
                      "tables 9.0 GiB) would need 9.1 GiB") == (6, pytest.approx(math.log10(2**28)))
    assert bu.refusal("treewidth 241 or more: a clique table of at least 4.9e+55 EiB,") == \
        (241, pytest.approx(math.log10(4.9e55 * 2**60 / 8)))


def test_max_difference_skips_a_peers_nan_marginals():
    a = [np.array([0.5, 0.5]), np.array([0.2, 0.8])]
    assert bu.max_difference(a, [np.array([0.4, 0.6]), np.array([np.nan, np.nan])]) == \
        (pytest.approx(0.1), 1)
    assert bu.max_difference(a, a[:1]) == (math.inf, 0)


def test_rows_and_summaries(folder):
    rows = []
    for problem in bu.problem_set(folder):
        rows += bu.problem_rows(problem, seconds=120, pygms=False)
    assert [(r["case"], r["benchmark"], r["status"]) for r in rows] == [
        ("Dense_1", "PR", "refused"), ("Dense_1", "MAR", "refused"),
        ("Promedus_24", "PR", "answered"), ("Promedus_24", "MAR", "answered")]
    known = set(bench_main.COLUMNS + bench_main.OPTIONAL + bu.EXTRA_COLUMNS)
    assert all(set(r) <= known for r in rows), "no column the CSV would drop"
    df = bench_main.table(rows, bu.EXTRA_COLUMNS)
    out = uai_track.problem_outcomes(df).set_index("problem")
    assert out.loc["Dense_1", "outcome"] == "refused" and out.loc["Dense_1", "treewidth"] >= 33
    assert out.loc["Promedus_24", "outcome"] == "answered"
    assert out.loc["Promedus_24", "published max diff"] < 1e-6
    fam = uai_track.family_summary(df).set_index("family")
    assert fam.loc["Dense", ["problems", "answered", "refused"]].tolist() == [1, 0, 1]
    assert fam.loc["Dense", "refused treewidths"] == str(int(out.loc["Dense_1", "treewidth"]))
    assert fam.loc["Promedus", ["answered", "time limit", "failed"]].tolist() == [1, 0, 0]
    text = uai_track.answered_paragraph(df, budget_gib=16)
    assert "1 of the 2 problems are answered" in text and "every problem of Promedus (1)" in text
    assert "1 refused by the engine" in text and "1 Dense (treewidth" in text
    with pytest.raises(TypeError, match="df"):
        uai_track.family_summary(None)
    with pytest.raises(ValueError, match="lacks"):
        uai_track.family_summary(df.drop(columns="status"))


def test_bench_skips_the_module_without_the_folder(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(bu.ENV, raising=False)
    with pytest.raises(Skipped, match=bu.ENV):
        bu.run(quick=True)
    assert bench_main.main(["--out", str(tmp_path), "uai_2014"]) == 0
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "uai_2014.csv").exists()


def _raise():
    raise ValueError("bad\n input")


def test_run_limited_reports_values_limits_and_errors():
    ok = run_limited(lambda: 7, seconds=30, warmup=False)
    assert ok.status == "ok" and ok.value == 7 and ok.seconds >= 0
    t0 = time.perf_counter()
    slow = run_limited(lambda: time.sleep(30), seconds=0.5, warmup=False)
    assert slow.status == "time limit" and slow.value is None and math.isnan(slow.seconds)
    assert time.perf_counter() - t0 < 10
    assert run_limited(_raise, seconds=30).status == "error: ValueError: bad input"
    big = run_limited(lambda: np.ones(2**28), seconds=30, memory=2**26)
    assert big.status == "out of memory"


def test_enumerated_marginals_solve_each_component_on_its_own():
    small = datasets.uai_problem("Grids_12").model
    pairs = [(0, 1), (1, 2), (3, 4)]
    rng = np.random.default_rng(0)
    model = FactorGraph([2, 3, 2, 2, 4, 2], pairs, [rng.normal(size=(a, b)) for a, b in
                                                   [(2, 3), (3, 2), (2, 4)]])
    got = bu.enumerated_marginals(model.condition({1: 2}))
    want = exact.marginals(model.condition({1: 2}), method="enumerate")
    assert all(np.allclose(a, b, atol=1e-12) for a, b in zip(got, want))
    assert bu.enumerated_marginals(small) is None  # one component of 2^100 states


def test_marginals_from_an_annealed_order_are_checked_on_a_second_one(folder):
    """The check runs only on a MAR row answered through annealing whose marginals differ
    from the published and that enumeration did not settle; here a row is made so (the
    engine answers Promedus_24 whole: the second order is the same, the difference 0)."""
    prom = bu.problem_set(folder)[1]
    row = bu.answer(prom, "MAR")
    plain = dict(row)
    bu._second_order(plain, prom, 60.0)
    assert plain == row  # not annealed: no check
    row.update(note=f"...; {sliced.ANNEALING}; ...", published_max_diff=0.5)
    bu._second_order(row, prom, 60.0)
    assert row["second_order_max_diff"] == 0.0
    assert "marginals on a second annealed order (seed 1): max |diff| 0.0e+00" in row["note"]
    df = bench_main.table([dict(row, benchmark="MAR", case=prom.name, method="mrflib"),
                           dict(row, benchmark="PR", case=prom.name, method="mrflib")],
                          bu.EXTRA_COLUMNS)
    out = uai_track.problem_outcomes(df)
    assert out["second order diff"].tolist() == [0.0]
    assert uai_track.problem_outcomes(df.drop(columns="second_order_max_diff"))[
        "second order diff"].isna().all()  # a CSV from before the check
