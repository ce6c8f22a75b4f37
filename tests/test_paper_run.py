"""Resumable paper-scale runs: per-trial seeds, stored trials, chunks merged.

The claim under test: a chapter run as chunks (sweep points) and merged gives the numbers of
one uninterrupted run with the same seed, and a run stopped half-way resumes to the same.
"""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import can_unshare, hidden_dask_worker

from mrflib import BoltzmannMachine, graphs
from mrflib.repro import Chapter, Trials, paper, sweep
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
    assert sum(map(len, shares)) == n  # no trial twice
    assert [bool(s) for s in shares] == [c < n for c in range(k)]  # past the end: nothing


def test_a_chunk_past_a_loops_end_computes_nothing(tmp_path):
    late = Trials("c", 7, chunk=5, n_chunks=8, cache=tmp_path)
    assert late.indices(5) == [] and late.map("loop", draw, 5) == []
    assert late.computed == 0 and not stored_trials(tmp_path, "c")
    assert late.map("loop", draw, 6) == [draw(5, trial_rng(7, "loop", 5))]


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
    good, t = victim.read_bytes(), int(victim.stem)
    victim.write_bytes(good[:20])  # truncated
    again = Trials("c", 0, cache=tmp_path)
    key_dir = victim.parent
    scale = 1.0 if again.key("loop", draw, {"scale": 1.0}) == key_dir.name else 3.0
    out = again.map("loop", draw, 3, scale=scale)
    assert again.computed == 1 and out[t] == draw(t, trial_rng(0, "loop", t), scale)
    assert "unusable stored trial" in capsys.readouterr().err
    assert victim.read_bytes() == good  # rewritten whole


class _Marker:
    """Unpickling this creates ``path``: a foreign pickle that runs code when loaded."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def _refuse():
    raise RuntimeError("this object cannot be rebuilt")


class _Unloadable:
    """Pickles, but does not unpickle."""

    def __reduce__(self):
        return _refuse, ()


def test_damaged_swapped_and_foreign_trial_files_are_never_read_as_good(tmp_path, capsys):
    """A bit flipped in a stored result, a truncated or empty file, another trial's file
    renamed into place, a foreign pickle (which would run code) and a first-format pickle of
    another key are reported and computed again, never unpickled; a genuine first-format
    file (written before the checksum header) is still read."""
    whole = Trials("c", 0).map("loop", draw, 4, scale=2.0)
    Trials("c", 0, cache=tmp_path).map("loop", draw, 4, scale=2.0)
    files = stored_trials(tmp_path, "c")
    key = files[0].parent.name
    good = files[1].read_bytes()
    marker = tmp_path / "unpickled"
    flipped = bytearray(good)
    flipped[-12] ^= 1  # inside the pickled float of the result
    first_format = pickle.dumps({"format": "mrflib-trial/1", "key": key, "t": 1,
                                 "result": whole[1]}, protocol=5)
    damage = {
        "bit flip": bytes(flipped), "truncated": good[:-5], "empty": b"",
        "swapped": files[2].read_bytes(), "foreign": pickle.dumps(_Marker(marker)),
        "foreign first format": pickle.dumps({"format": "mrflib-trial/1", "key": "x" * 20,
                                              "t": 1, "result": _Marker(marker)}, protocol=5),
    }
    for label, data in damage.items():
        files[1].write_bytes(data)
        run = Trials("c", 0, cache=tmp_path)
        assert run.map("loop", draw, 4, scale=2.0) == whole, label
        assert (run.loaded, run.computed) == (3, 1), label
        assert f"{files[1]}: unusable stored trial" in capsys.readouterr().err, label
        assert files[1].read_bytes() == good, label
    assert not marker.exists()  # no foreign pickle was unpickled
    files[1].write_bytes(first_format)
    run = Trials("c", 0, cache=tmp_path)
    assert run.map("loop", draw, 4, scale=2.0) == whole and run.computed == 0


def test_store_folders_that_are_files_and_files_that_are_folders(tmp_path):
    (tmp_path / "c").write_text("not a folder")
    with pytest.raises(ValueError, match="is a file"):
        Trials("c", 0, cache=tmp_path).map("loop", draw, 2)
    (tmp_path / "c").unlink()
    run = Trials("c", 0, cache=tmp_path)
    run.map("loop", draw, 2)
    trial = stored_trials(tmp_path, "c")[0]
    trial.unlink()
    trial.mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        Trials("c", 0, cache=tmp_path).map("loop", draw, 2)


def model_trial(t, rng, n=4):
    """A trial whose result holds a model (its Graph must survive the store)."""
    return {"t": t, "bm": BoltzmannMachine.random(graphs.square_grid(2, 2), n, rng=rng)}


def unloadable_trial(t, rng):
    return _Unloadable()


def test_models_round_trip_and_results_that_do_not_unpickle_are_refused(tmp_path):
    first = Trials("c", 0, cache=tmp_path).map("models", model_trial, 2)
    _ = first[0]["bm"].graph.structure  # cached structures do not travel
    again = Trials("c", 0, cache=tmp_path)
    back = again.map("models", model_trial, 2)
    assert (again.loaded, again.computed) == (2, 0)
    assert all(np.array_equal(a["bm"].coupling, b["bm"].coupling)
               and a["bm"].graph == b["bm"].graph for a, b in zip(first, back))
    with pytest.raises(TypeError, match="does not unpickle"):
        Trials("c", 0, cache=tmp_path).map("bad", unloadable_trial, 1)
    assert Trials("c", 0).map("bad", unloadable_trial, 1)  # no store: nothing to pickle


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
    # lose one stored trial (a chunk that never came back) and damage another: the merge
    # computes both again and counts both
    store = tmp_path / "smci_error_point" / "trials"
    lost, damaged = stored_trials(store, "smci_error_point")[:2]
    lost.unlink()
    damaged.write_bytes(damaged.read_bytes()[:-1])
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


def _run_cli(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "mrflib", "paper", *map(str, args)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kw)


def test_chunks_1_on_a_fresh_folder_and_a_killed_merge_leaves_nothing_finished(plain_point,
                                                                                tmp_path):
    """--chunks 1 into a new --out works; SIGKILL during a merge leaves neither the merged
    notebook nor the numbers of an earlier merge (nothing that looks finished), and the next
    run gives the uninterrupted result."""
    base = tmp_path / "smci_error_point"
    args = (POINT, "--chunks", 1, "--out", tmp_path, "--profile", "quick")
    first = _run_cli(*args)
    assert first.wait(timeout=300) == 0, first.communicate()[1]
    assert (base / "results" / "smci_error_point.csv").read_text() == plain_point
    killed = _run_cli(*args)
    started = base / "merge-partial" / "smci_error_point.ipynb"
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=60)
    assert not (base / "results" / "smci_error_point.csv").exists()
    assert not (base / "smci_error_point.ipynb").exists()
    again = _run_cli(*args)
    assert again.wait(timeout=300) == 0, again.communicate()[1]
    assert (base / "results" / "smci_error_point.csv").read_text() == plain_point
    assert not (base / "merge-partial").exists()


def test_a_second_paper_run_on_the_same_folder_is_refused(tmp_path):
    from mrflib._support.files import release, try_lock

    base = tmp_path / "smci_error_point"
    base.mkdir()
    fd = try_lock(base / ".paper.lock", "test")
    try:
        with pytest.raises(sweep.SweepBusy, match="another paper run"):
            paper.run_chapter(POINT, tmp_path, profile="quick", progress=False)
        cli = _run_cli(POINT, "--out", tmp_path, "--profile", "quick")
        assert cli.wait(timeout=120) == 2 and "another paper run" in cli.communicate()[1]
    finally:
        release(fd)
    assert not (base / "results").exists()  # nothing ran


def _without_chunk_parameters(folder: Path, keep_parameters: bool) -> Path:
    """smci_error_point whose Trials ignore the chunk (given one of their own) or, unless
    keep_parameters, whose parameters cell lacks the seed (set in the next cell)."""
    nb = json.loads(POINT.read_text())
    for cell in nb["cells"]:
        cell["source"] = "".join(cell["source"]).replace(
            "scorecard.trials(seed)", "scorecard.trials(seed, chunk=0, n_chunks=1)")
    if not keep_parameters:
        k, cell = next((k, c) for k, c in enumerate(nb["cells"])
                       if "parameters" in c["metadata"].get("tags", []))
        cell["source"] = "\n".join(ln for ln in cell["source"].splitlines()
                                   if not ln.startswith("seed"))
        nb["cells"].insert(k + 1, {"cell_type": "code", "source": "seed = 0", "metadata": {},
                                   "outputs": [], "execution_count": None})
    path = folder / ("ignores.ipynb" if keep_parameters else "nochunk.ipynb")
    path.write_text(json.dumps(nb))
    return path


@pytest.mark.parametrize("kw, match", [
    (dict(n_chunks=0), "n_chunks"), (dict(n_chunks=-1), "n_chunks"),
    (dict(n_chunks=paper.MAX_CHUNKS + 1), "at most"), (dict(n_chunks=10**6), "at most"),
    (dict(n_chunks=2.0), "n_chunks"), (dict(workers=0), "workers"), (dict(seed=-1), "seed"),
    (dict(profile="huge"), "profile"),
])
def test_bad_runs_are_refused_before_anything_runs(kw, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        paper.run_chapter(POINT, tmp_path / "out", progress=False, **{"profile": "quick", **kw})
    assert not (tmp_path / "out").exists()


def test_bad_folders_and_notebooks_are_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="out: .* is a file"):
        paper.run_chapter(POINT, tmp_path / "afile", profile="quick")
    (tmp_path / "o" / "smci_error_point").mkdir(parents=True)
    (tmp_path / "o" / "smci_error_point" / "trials").write_text("x")
    with pytest.raises(ValueError, match="trials' is a file"):
        paper.run_chapter(POINT, tmp_path / "o", profile="quick")
    with pytest.raises(ValueError, match="does not define seed"):
        paper.run_chapter(_without_chunk_parameters(tmp_path, False), tmp_path / "o",
                          profile="quick")
    with pytest.raises(ValueError, match="existing .ipynb"):
        paper.run_chapter(tmp_path / "afile", tmp_path / "o", profile="quick")


def test_a_notebook_that_ignores_its_chunk_parameters_fails_before_the_merge(tmp_path):
    nb = _without_chunk_parameters(tmp_path, True)
    rec = paper.run_chapter(nb, tmp_path / "out", n_chunks=2, profile="quick", progress=False)
    assert not rec["ok"] and "ignores its chunk" in rec["error"]
    assert rec["files"] == 0 and "stored no trial" in rec["error"]  # its records are merge-only
    assert not Path(rec["results"]).exists()


def _executed(folder: Path, names: list[str]) -> Path:
    """A minimal executed notebook with one captioned figure per name."""
    png = base64.b64encode(b"\x89PNG fake").decode()
    cells = [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "display_data", "data": {"image/png": png}}],
        "metadata": {"mystnb": {"figure": {"name": n, "caption": "c"}}}} for n in names]
    path = folder / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    return path


def test_publish_checks_its_folder_first_and_keeps_provenance_whole(tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("chapter\nc\n")
    rec = dict(chapter="c", ok=True, profile="paper", commit="abc", n_chunks=2, seed=0,
               chunk_wall_s=1.0, chunk_sum_s=2.0, merge_s=3.0, merge_computed=0,
               results=str(csv), notebook=str(_executed(tmp_path, ["c-a", "c-b"])))
    (tmp_path / "afile").write_text("x")
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for text, match in (('{"smci": ', "unreadable"), ("[1]", "JSON object"),
                        ('{"smci": {"commit": "x"}}', "lacks or has a wrong date_utc"),
                        ('{"smci": 3}', "lacks or has a wrong all fields")):
        (damaged / "provenance.json").write_text(text)
        with pytest.raises(ValueError, match=match):
            paper.publish(rec, damaged, "cmd")
        assert sorted(f.name for f in damaged.iterdir()) == ["provenance.json"]  # untouched
    for dest in (tmp_path / "afile", tmp_path / "afile" / "sub"):
        with pytest.raises(ValueError, match="is a file"):
            paper.publish(rec, dest, "cmd")
    pub = tmp_path / "pub"
    paper.publish(rec, pub, "cmd")
    assert sorted(f.name for f in (pub / "figures").iterdir()) == ["c-a.png", "c-b.png"]
    paper.publish({**rec, "notebook": str(_executed(tmp_path, ["c-a"]))}, pub, "cmd2")
    assert sorted(f.name for f in (pub / "figures").iterdir()) == ["c-a.png"]  # no stale b
    assert paper.read_provenance(pub)["c"]["figures"] == ["c-a"]
    bad = {**rec, "notebook": str(_executed(tmp_path, ["../escape"]))}
    with pytest.raises(ValueError, match="figure names"):
        paper.publish(bad, pub, "cmd")


def test_files_a_stopped_publish_leaves_are_refused_when_read(tmp_path):
    """Numbers or a figure that are not the bytes provenance.json records (a publish killed
    between its files, or an edit) are refused by the scorecard and the chapters."""
    from mrflib.repro import report

    csv = tmp_path / "smci.csv"
    csv.write_text("chapter,paper,item,quantity,paper_value,ours,verdict,note,profile\n"
                   "smci,p,i,q,1,1,new,,paper\n")
    rec = dict(chapter="smci", ok=True, profile="paper", commit="abc", n_chunks=2, seed=0,
               chunk_wall_s=1.0, chunk_sum_s=2.0, merge_s=3.0, merge_computed=0,
               results=str(csv), notebook=str(_executed(tmp_path, ["smci-fig5"])))
    pub = tmp_path / "pub"
    paper.publish(rec, pub, "cmd")
    assert len(report.load_records(pub, published=True)) == 1
    report.paper_figure("smci", "smci-fig5", "quick", folder=pub)
    (pub / "smci.csv").write_text(csv.read_text().replace(",1,new", ",2,new"))
    with pytest.raises(ValueError, match="smci.csv does not match the digest"):
        report.load_records(pub, published=True)
    assert len(report.load_records(pub)) == 1  # a build's own results carry no digests
    (pub / "learning.csv").write_text(csv.read_text())  # a first publish, stopped early
    with pytest.raises(ValueError, match="learning.csv has no entry"):
        report.load_records(pub, published=True)
    (pub / "learning.csv").unlink()
    (pub / "figures" / "smci-fig5.png").write_bytes(b"another figure")
    with pytest.raises(ValueError, match="smci-fig5.png does not match the digest"):
        report.paper_figure("smci", "smci-fig5", "quick", folder=pub)


def test_the_command_refuses_bad_publish_targets_before_running(tmp_path, capsys):
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "provenance.json").write_text("{")
    for extra, match in ((["--profile", "quick"], "only paper-profile"),
                         (["--profile", "paper"], "unreadable")):
        with pytest.raises(SystemExit) as exit_:
            paper.main([str(POINT), "--out", str(tmp_path / "out"), "--publish",
                        str(tmp_path / "damaged"), *extra])
        assert exit_.value.code == 2 and match in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_paper_figure_names_damaged_provenance(tmp_path):
    from mrflib.repro import report

    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "smci-fig5.png").write_bytes(b"png")
    report.paper_figure("smci", "smci-fig5", "quick", folder=tmp_path)  # no provenance: note
    for text in ('{"smci": ', "[]", '{"smci": {"commit": "abc"}}', '{"smci": null}'):
        (tmp_path / "provenance.json").write_text(text)
        with pytest.raises(ValueError, match="provenance.json"):
            report.paper_figure("smci", "smci-fig5", "quick", folder=tmp_path)


@pytest.mark.skipif(not can_unshare(), reason="needs `unshare -rm` (user mount namespaces)")
def test_dask_chunks_without_a_shared_filesystem_merge_to_the_local_run(plain_point, tmp_path):
    """The chunks run on a Dask worker that cannot see --out (an empty read-only tmpfs over
    the client's folder): their trials come back through the sweep and the merge equals the
    plain run, computing nothing."""
    hidden = tmp_path / "client-only"
    hidden.mkdir()
    nb = hidden / POINT.name
    shutil.copy(POINT, nb)
    with hidden_dask_worker(hidden) as client:
        rec = paper.run_chapter(nb, hidden / "out", n_chunks=2, scheduler=client,
                                profile="quick", progress=False)
    assert rec["ok"] and rec["points"] == 2 and rec["files"] >= 3
    assert rec["merge_computed"] == 0
    assert Path(rec["results"]).read_text() == plain_point


def test_scorecard_shows_paper_values_and_flags_changed_verdicts():
    from mrflib.repro import report

    row = dict(chapter="c", paper="p", item="Figure 1", quantity="q", paper_value="1",
               ours="0.9", verdict="reproduced", note="", profile="book")
    build = pd.DataFrame([row, {**row, "quantity": "r"}, {**row, "quantity": "s"}])
    at_paper = pd.DataFrame([{**row, "ours": "0.95", "profile": "paper"},
                             {**row, "quantity": "r", "verdict": "not reproduced",
                              "ours": "0.2", "profile": "paper"}])
    text = report.scorecard_markdown(build, at_paper)
    assert "2 of 3 items measured" in text and "differs from this build's for 1: c: Figure 1, r" \
        in text
    details = text.split("**p** (chapter", 1)[1].split(":::{dropdown}", 1)[1]
    lines = [ln for ln in details.splitlines() if ln.startswith("| ") and "quantity" not in ln]
    assert len({ln.count("|") for ln in lines}) == 1  # every row has every column
    assert "0.95" in lines[0] and "differs</span> verdict" in lines[1]
    assert "not run at paper scale" in lines[2]
    with pytest.raises(ValueError, match="paper must have the recorded columns"):
        report.scorecard_markdown(build, at_paper.drop(columns="verdict"))
    with pytest.raises(TypeError, match="paper"):
        report.scorecard_markdown(build, "book/results/paper")


def test_drop_tagged_cells():
    nb = {"cells": [{"cell_type": "code", "source": "a = 1", "metadata": {}},
                    {"cell_type": "code", "source": "b = 2",
                     "metadata": {"tags": ["hide-input", "merge-only"]}}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    source = json.dumps(nb).encode()
    assert sweep.drop_tagged_cells(source, ()) is source
    assert sweep.drop_tagged_cells(source, ["other"]) is source
    once = (tag for tag in ["merge-only"])  # any iterable of names, read once
    assert json.loads(sweep.drop_tagged_cells(source, once))["cells"] == nb["cells"][:1]
    kept = json.loads(sweep.drop_tagged_cells(source, ["merge-only"]))["cells"]
    assert [c["source"] for c in kept] == ["a = 1"]
    with pytest.raises(ValueError, match="parameters"):
        sweep.drop_tagged_cells(source, ["parameters"])


def test_merge_only_cells_are_left_out_of_chunks_and_run_in_the_merge(plain_point, tmp_path):
    """A cell tagged merge-only that fails in a chunk: the chunked run still succeeds (the
    chunks never ran it), the merge runs it, and the numbers equal the plain run's."""
    nb = json.loads(POINT.read_text())
    guard = {"cell_type": "code", "execution_count": None, "id": "mergeonly", "outputs": [],
             "metadata": {"tags": [paper.MERGE_ONLY]},
             "source": "assert not trials.partial, 'a merge-only cell ran in a chunk'\n"
                       "open('merge-only-ran.txt', 'w').write('yes')"}
    nb["cells"].insert(len(nb["cells"]) - 1, guard)
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / POINT.name).write_text(json.dumps(nb))
    rec = paper.run_chapter(folder / POINT.name, tmp_path / "out", n_chunks=2, workers=2,
                            profile="quick", progress=False)
    assert rec["ok"], rec.get("error")
    assert rec["points"] == 2 and rec["chunks_failed"] == 0
    assert (folder / "merge-only-ran.txt").read_text() == "yes"
    assert Path(rec["results"]).read_text() == plain_point


def _names(src: str, ctx: type) -> set[str]:
    import ast

    return {n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ctx)}


@pytest.mark.parametrize("nb_path", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda p: p.stem)
def test_no_chunk_cell_needs_a_merge_only_cell(nb_path):
    """What a chunk runs (every cell not tagged merge-only) never reads a name that only a
    merge-only cell defines: a chunk would fail with a NameError at paper scale."""
    import ast

    defined: set[str] = set()
    merge_only: set[str] = set()
    for cell in json.loads(nb_path.read_text())["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] != "code" or src.lstrip().startswith(("%", "!")):
            continue
        stores = _names(src, ast.Store) | {
            a.asname or a.name.split(".")[0] for node in ast.walk(ast.parse(src))
            if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
        if paper.MERGE_ONLY in cell["metadata"].get("tags", []):
            merge_only |= stores - defined
            continue
        missing = (_names(src, ast.Load) - stores - defined) & merge_only
        assert not missing, f"{nb_path.name}: a chunk cell reads {missing}, defined only in " \
                            f"merge-only cells"
        defined |= stores


def test_chunk_wall_time_is_the_union_of_the_chunks_run_times(tmp_path):
    """A run resumed over sessions: the wall time counts each session's running chunks once
    (overlaps merged) and not the idle time between sessions."""
    from datetime import UTC, datetime

    pts = sweep.points(POINT, {"chunk": [0, 1, 2, 3], "n_chunks": [4]})
    (tmp_path / "runs").mkdir()
    t0 = 1_700_000_000.0
    for p, (start, end) in zip(pts[:3], [(0, 10), (5, 15), (100, 110)]):
        finished = datetime.fromtimestamp(t0 + end, UTC).isoformat(timespec="seconds")
        (tmp_path / "runs" / f"{p.name}.manifest.json").write_text(
            json.dumps({"seconds": end - start, "finished_utc": finished}))
    (tmp_path / "runs" / f"{pts[3].name}.manifest.json").write_text("{")  # damaged: skipped
    wall, total = paper._chunk_seconds(tmp_path, pts)
    assert (wall, total) == (25.0, 30.0)
    assert paper._add_chunk_commit(tmp_path, "a") == ["a"]
    (tmp_path / "wall.json").write_text(json.dumps({"seconds": 1.0, "commits": ["old"]}))
    assert paper._add_chunk_commit(tmp_path, "b") == ["old", "a", "b"]
    assert paper._add_chunk_commit(tmp_path, None) == ["old", "a", "b"]


CHAPTERS = [nb for nb in sorted((ROOT / "notebooks").glob("*.ipynb"))
            if ".trials(seed)" in nb.read_text()]


def test_no_chapter_declares_the_runners_chunk_parameters():
    """The chunk and the trial store reach a chapter through the environment (the paper
    runner sets them), so no parameters cell shows them."""
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        declared = set(sweep.notebook_parameters(nb))
        assert not declared & {"chunk", "n_chunks", "trial_cache"}, nb.name
        assert "trial_cache" not in nb.read_text(), nb.name


def test_every_recording_chapter_runs_in_chunks():
    assert len(CHAPTERS) == 9, [nb.stem for nb in CHAPTERS]


@pytest.mark.parametrize("nb_path", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_runs_in_its_first_and_a_late_chunk(nb_path, tmp_path):
    """The chunks a paper run gives a chapter include one that holds only the first trial of
    each loop and, with more chunks than a loop has trials, ones numbered past them, which
    compute nothing (Trials.indices is empty): both must run (merge-only cells left out, as
    the paper runner does), not fail on a partial or an empty table, and the late one must
    truly be empty (store no trial)."""
    last = paper.MAX_CHUNKS - 1
    grid = {**paper._chunk_grid(paper.MAX_CHUNKS, 0, "quick"), "chunk": [0, last]}
    table = sweep.sweep(nb_path, grid, tmp_path, workers=2, progress=False,
                        skip_tags=(paper.MERGE_ONLY,), env_parameters=paper.CHUNK_ENV)
    bad = table[table["status"] != "ok"]
    assert bad.empty, bad[["run", "error"]].drop_duplicates().to_string()
    first, late = ([f for f in sweep.check_point(tmp_path, p)[2] if "/trials/" in f]
                   for p in sweep.points(nb_path, grid))
    assert first, f"chunk 0 of {nb_path.stem} stored no trial"
    assert not late, f"chunk {last} stored trials {late[:3]}: it is not empty"
