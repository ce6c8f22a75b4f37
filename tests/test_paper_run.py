"""Resumable paper-scale runs: per-trial seeds, stored trials, chunks merged (issue 16).

The claim under test: a chapter run as chunks (sweep points) and merged gives the numbers of
one uninterrupted run with the same seed, and a run stopped half-way resumes to the same.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mrflib import BoltzmannMachine, graphs, sweep
from mrflib.repro import Chapter, Trials, paper
from mrflib.repro.trials import digest, stored_trials, trial_rng

ROOT = Path(__file__).resolve().parents[1]
POINT = ROOT / "notebooks" / "smci_error_point.ipynb"


def draw(t, rng, scale=1.0):
    """A trial: one normal draw (and its index) from the trial's own generator."""
    return (t, scale * rng.normal())


def test_trial_rng_depends_on_seed_loop_and_index_only():
    a = trial_rng(0, "loop", 3).random(4)
    assert np.array_equal(a, trial_rng(0, "loop", 3).random(4))
    for other in (trial_rng(1, "loop", 3), trial_rng(0, "loop2", 3), trial_rng(0, "loop", 4)):
        assert not np.array_equal(a, other.random(4))


@pytest.mark.parametrize("n, k", [(10, 3), (3, 3), (7, 1), (2, 5)])
def test_chunks_partition_the_trials(n, k, tmp_path):
    shares = [Trials("c", 0, chunk=c, n_chunks=k, cache=tmp_path).indices(n) for c in range(k)]
    assert sorted(set().union(*shares)) == list(range(n))
    assert all(shares)  # every chunk has at least one trial of every loop
    if n >= k:
        assert sum(map(len, shares)) == n  # and then no trial twice


def test_chunks_merged_equal_one_run(tmp_path):
    whole = Trials("c", 7).map("loop", draw, 11, scale=2.0)
    for c in range(4):
        part = Trials("c", 7, chunk=c, n_chunks=4, cache=tmp_path).map("loop", draw, 11,
                                                                       scale=2.0)
        assert [r[0] for r in part] == list(range(c, 11, 4))
    merge = Trials("c", 7, cache=tmp_path)
    assert merge.map("loop", draw, 11, scale=2.0) == whole
    assert (merge.loaded, merge.computed) == (11, 0)


def test_store_is_keyed_by_parameters_and_damage_is_recomputed(tmp_path, capsys):
    Trials("c", 0, cache=tmp_path).map("loop", draw, 3, scale=1.0)
    other = Trials("c", 0, cache=tmp_path)
    other.map("loop", draw, 3, scale=3.0)  # other parameters: computed, not read
    assert other.computed == 3 and len(stored_trials(tmp_path, "c")) == 6
    victim = stored_trials(tmp_path, "c")[0]
    good = pickle.loads(victim.read_bytes())
    victim.write_bytes(victim.read_bytes()[:20])  # truncated
    again = Trials("c", 0, cache=tmp_path)
    key_dir = victim.parent
    scale = 1.0 if again.key("loop", draw, {"scale": 1.0}) == key_dir.name else 3.0
    out = again.map("loop", draw, 3, scale=scale)
    assert again.computed == 1 and out[good["t"]] == good["result"]
    assert "unreadable stored trial" in capsys.readouterr().err
    assert pickle.loads(victim.read_bytes()) == good  # rewritten whole


def test_digest_is_by_content():
    edges = graphs.square_grid(2, 2)
    a = BoltzmannMachine.random(edges, 4, rng=0)
    b = BoltzmannMachine.random(edges, 4, rng=0)
    _ = a.graph  # a cached structure must not change the key
    assert digest({"m": a, "x": [1, 2.5]}) == digest({"x": [1, 2.5], "m": b})
    assert digest(np.arange(3)) != digest(np.arange(3.0))
    with pytest.raises(TypeError, match="params"):
        digest({"x": object()})


@pytest.mark.parametrize("kw, match", [
    (dict(chunk=3, n_chunks=3), "chunk"), (dict(chunk=-1, n_chunks=2), "chunk"),
    (dict(n_chunks=0), "n_chunks"), (dict(chunk=True, n_chunks=2), "chunk"),
])
def test_bad_chunks_are_refused(kw, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        Trials("c", 0, cache=tmp_path, **kw)


def test_a_chunk_needs_a_store(monkeypatch):
    monkeypatch.delenv("MRFLIB_RESULTS_DIR", raising=False)
    with pytest.raises(ValueError, match="cache"):
        Trials("c", 0, chunk=0, n_chunks=2)
    with pytest.raises(ValueError, match="seed"):
        Trials("c", -1)


def test_a_chunk_records_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("MRFLIB_RESULTS_DIR", raising=False)
    ch = Chapter("paper_run_test", "x", "quick")
    ch.trials(0, chunk=1, n_chunks=2, cache=tmp_path)
    ch.record("Figure 1", "q", 1, 2, "new")
    assert ch.partial and ch.records().empty
    whole = Chapter("paper_run_test2", "x", "quick")
    whole.trials(0, cache=tmp_path)
    whole.record("Figure 1", "q", 1, 2, "new")
    assert len(whole.records()) == 1


@pytest.fixture(scope="module")
def plain_point(tmp_path_factory):
    """smci_error_point at profile quick, run once without chunks or store."""
    out = tmp_path_factory.mktemp("plain")
    rec = sweep.execute(POINT, out / "nb.ipynb", {"profile": "quick"},
                        results_dir=out / "results", cwd=POINT.parent)
    assert rec["ok"], rec["error"]
    return (out / "results" / "smci_error_point.csv").read_text()


def test_chunked_run_merges_to_the_plain_run_and_resumes(plain_point, tmp_path):
    rec = paper.run_chapter(POINT, tmp_path, n_chunks=3, workers=2, profile="quick",
                            progress=False)
    assert rec["ok"] and rec["points"] == 3 and rec["merge_computed"] == 0
    assert Path(rec["results"]).read_text() == plain_point
    # lose two stored trials (a chunk that never came back): the merge computes them
    store = tmp_path / "smci_error_point" / "trials"
    for f in stored_trials(store, "smci_error_point")[:2]:
        f.unlink()
    again = paper.run_chapter(POINT, tmp_path, n_chunks=1, profile="quick", progress=False)
    assert again["ok"] and again["merge_computed"] == 2
    assert Path(again["results"]).read_text() == plain_point
    # publishing: numbers, figures and provenance (only paper-profile runs are published)
    with pytest.raises(ValueError, match="paper-profile"):
        paper.publish(again, tmp_path / "pub", "cmd")
    paper.publish({**again, "profile": "paper"}, tmp_path / "pub", "python -m mrflib paper x")
    prov = json.loads((tmp_path / "pub" / "provenance.json").read_text())
    assert prov["smci_error_point"]["command"] == "python -m mrflib paper x"
    assert "smci_error_point" in (tmp_path / "pub" / "PROVENANCE.md").read_text()
    assert (tmp_path / "pub" / "smci_error_point.csv").read_text() == plain_point


def test_scorecard_shows_paper_values_and_flags_changed_verdicts():
    from mrflib import report

    row = dict(chapter="c", paper="p", item="Figure 1", quantity="q", paper_value="1",
               ours="0.9", verdict="reproduced", note="", profile="book")
    build = pd.DataFrame([row, {**row, "quantity": "r"}, {**row, "quantity": "s"}])
    at_paper = pd.DataFrame([{**row, "ours": "0.95", "profile": "paper"},
                             {**row, "quantity": "r", "verdict": "not reproduced",
                              "ours": "0.2", "profile": "paper"}])
    text = report.scorecard_markdown(build, at_paper)
    assert "2 of 3 items measured" in text and "differs from this build's for 1: c: Figure 1, r" \
        in text
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    assert len({ln.count("|") for ln in lines}) == 1  # every row has every column
    assert "0.95" in lines[1] and "⚠️" in lines[2] and "not run at paper scale" in lines[3]
