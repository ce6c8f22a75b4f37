"""Sweeps: point ids, parameter checks, failure isolation, kill-and-resume, damaged points,
the folder lock, no orphans after SIGKILL, and the Dask path without a shared filesystem."""

from __future__ import annotations

import inspect
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import can_unshare, hidden_dask_worker

from mrflib.repro import sweep

TINY = Path(__file__).parent / "data" / "tiny_sweep.ipynb"
pytestmark = pytest.mark.slow


def _finished(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "runs").glob("*.manifest.json"))


def _table(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "results.csv", dtype=str, keep_default_na=False)


def _napping_notebook(folder: Path) -> Path:
    """TINY with a parameter ``nap``: the kernel sleeps ``nap`` seconds before recording."""
    nb = json.loads(TINY.read_text())
    nb["cells"][1]["source"].append("\nnap = 0")
    nb["cells"][2]["source"] = ["import time\n", "time.sleep(nap)\n"] + nb["cells"][2]["source"]
    path = folder / "napping.ipynb"
    path.write_text(json.dumps(nb))
    return path


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def _descendants(pid: int) -> list[int]:
    kids, found, todo = _children(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_point_ids_are_injective_and_readable():
    pts = sweep.points(TINY, {"a": [1, 2], "b": [0.5]})
    assert [p.name.rsplit("__", 1)[0] for p in pts] == ["tiny_sweep__a=1__b=0.5",
                                                        "tiny_sweep__a=2__b=0.5"]
    assert [p.name for p in pts] == [p.name for p in sweep.points(TINY, {"a": [1, 2],
                                                                         "b": [0.5]})]
    # values that print alike, or alike once made file-safe, get distinct ids and files
    alike = sweep.points(TINY, {"s": ["a/b", "a_b", "a b", "a\\b", 1, "1", 1.0, True, "x" * 300]})
    names = [p.name for p in alike]
    assert len(set(names)) == len(names) and all(len(n) < 200 for n in names)
    assert len({sweep._paths(Path("/o"), p)["nb"] for p in alike}) == len(alike)
    # the order the parameters are given in does not change a point
    assert (sweep.points(TINY, {"a": [1], "b": [2]})[0].name
            == sweep.points(TINY, {"b": [2], "a": [1]})[0].name)
    assert sweep.parse_value("3") == 3 and sweep.parse_value("0.5") == 0.5
    assert sweep.parse_value("quick") == "quick" and sweep.parse_value("true") is True
    with pytest.raises(ValueError, match="grid"):
        sweep.points(TINY, {"a": []})
    with pytest.raises(ValueError, match="parameter 'b' lists the value 0.001 twice"):
        sweep.points(TINY, {"b": [sweep.parse_value("0.001"), sweep.parse_value("1e-3")]})


def test_parameters_are_checked_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        sweep.main([str(TINY), "-p", "a", "1", "-p", "a", "2", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert "parameter 'a' is given twice" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) 'c'.*defines: profile, "
                                         r"seed, a, b"):
        sweep.sweep(TINY, {"a": [1], "c": [1]}, tmp_path / "o", progress=False)
    with pytest.raises(SystemExit):
        sweep.main([str(TINY), "-p", "A", "1", "--out", str(tmp_path / "o")])
    assert "unknown parameter(s) 'A'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before the folder was made


def test_compute_point_returns_bytes_and_sees_no_output_folder(tmp_path):
    assert "out" not in inspect.signature(sweep.compute_point).parameters
    res = sweep.compute_point(TINY.read_bytes(), "tiny_sweep.ipynb", {"a": 2, "b": 0.5})
    assert res["ok"] and set(res["files"]) == {"tiny.csv"}
    assert b"product" in res["files"]["tiny.csv"]
    assert isinstance(json.loads(res["notebook"])["cells"], list)


@pytest.mark.parametrize("stderr,runs,ok", [
    ("RuntimeError: Kernel didn't respond in 120 seconds", 2, True),  # second start works
    ("RuntimeError: Kernel died before replying to kernel_info", 3, False),  # never starts
    ("ValueError: a cell failed", 1, False),  # a notebook's own error is not retried
])
def test_a_kernel_that_does_not_start_is_started_again(stderr, runs, ok, monkeypatch,
                                                       tmp_path):
    """Kernels started together sometimes never answer (before any cell runs): such a run
    is started again, up to KERNEL_START_ATTEMPTS times; a failing cell is not retried."""
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        fails = len(calls) < runs or not ok
        return subprocess.CompletedProcess(cmd, 1 if fails else 0, "", stderr if fails else "")

    monkeypatch.setattr(sweep.subprocess, "run", fake_run)
    rec = sweep.execute(TINY, tmp_path / "out.ipynb")
    assert len(calls) == runs and rec["ok"] is ok
    assert ("--start-timeout" in calls[0]) and str(sweep.KERNEL_START_SECONDS) in calls[0]
    if not ok and runs > 1:
        assert rec["error"].startswith(f"the kernel did not start in {runs} attempt(s)")


def test_failing_point_is_reported_not_fatal(tmp_path, capsys):
    code = sweep.main([str(TINY), "-p", "a", "1", "3", "-p", "b", "2", "--out", str(tmp_path),
                       "--workers", "2", "--no-progress"])
    assert code == 1
    df = _table(tmp_path)
    ok = df[df.status == "ok"]
    assert set(ok.quantity) == {"product", "sum"}
    assert ok.loc[ok.quantity == "product", "ours"].tolist() == ["2"]
    failed = df[df.status == "failed"]
    assert len(failed) == 1 and failed.run.iloc[0].startswith("tiny_sweep__a=3__b=2__")
    assert "designated failing point" in failed.error.iloc[0]
    assert f"FAILED {failed.run.iloc[0]}" in capsys.readouterr().err
    assert (tmp_path / "figure.png").exists()
    assert not list((tmp_path / "runs").glob(".*"))  # no temporary leftovers


def test_killed_sweep_resumes_to_the_same_table(tmp_path):
    args = ["-p", "a", "1", "2", "4", "5", "-p", "b", "0.5", "2", "--workers", "1",
            "--no-progress"]
    full, killed = tmp_path / "full", tmp_path / "killed"
    sweep.main([str(TINY), *args, "--out", str(full)])
    cmd = [sys.executable, "-m", "mrflib", "sweep", str(TINY), *args, "--out", str(killed)]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and (not (killed / "runs").exists()
                                      or len(_finished(killed)) < 2):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = _finished(killed)
    assert 2 <= len(finished) < 8, "the sweep should have been killed halfway"
    assert not (killed / "results.csv").exists()
    pts = sweep.points(TINY.resolve(), {"a": [1, 2, 4, 5], "b": [0.5, 2]})
    states = [sweep.check_point(killed, p)[0] for p in pts]
    assert states.count("done") == len(finished) and "damaged" not in states
    mtimes = {n: (killed / "runs" / n).stat().st_mtime for n in finished}
    sweep.main([str(TINY), *args, "--out", str(killed)])
    for n, m in mtimes.items():  # resumed: finished runs were not run again
        assert (killed / "runs" / n).stat().st_mtime == m
    pd.testing.assert_frame_equal(_table(full), _table(killed))
    assert not list((killed / "runs").glob(".*"))


def _damage(out: Path, pts: list[sweep.Point]) -> dict[str, str]:
    """Damage points 0-5 of ``pts`` in six ways; the file each message must name."""
    paths = [sweep._paths(out, p) for p in pts]
    csv0 = paths[0]["results"] / "tiny.csv"
    csv0.write_bytes(csv0.read_bytes()[: csv0.stat().st_size // 2])  # truncated
    (paths[1]["results"] / "tiny.csv").write_bytes(b"")  # empty
    nb2 = paths[2]["nb"]
    nb2.write_bytes(b"\0" * nb2.stat().st_size)  # corrupt, same size
    paths[3]["manifest"].unlink()  # stopped before the manifest
    paths[4]["manifest"].write_text("{")  # unreadable manifest
    shutil.copy(paths[6]["manifest"], paths[5]["manifest"])  # another point's manifest
    return {
        pts[0].name: f"runs/{pts[0].name}.results/tiny.csv",
        pts[1].name: f"runs/{pts[1].name}.results/tiny.csv",
        pts[2].name: f"runs/{pts[2].name}.ipynb",
        pts[3].name: f"runs/{pts[3].name}.",
        pts[4].name: f"runs/{pts[4].name}.manifest.json",
        pts[5].name: f"runs/{pts[5].name}.manifest.json",
    }


def test_damaged_points_are_named_and_recomputed(tmp_path, capsys):
    grid = {"a": [1, 2, 4, 5, 6, 7, 8], "b": [2.0]}
    args = [str(TINY), "-p", "a", "1", "2", "4", "5", "6", "7", "8", "-p", "b", "2.0",
            "--out", str(tmp_path), "--no-progress"]
    assert sweep.main(args) == 0
    before = _table(tmp_path)
    pts = sweep.points(TINY.resolve(), grid)
    named = _damage(tmp_path, pts)
    states = {p.name: sweep.check_point(tmp_path, p) for p in pts}
    for name, file in named.items():
        assert states[name][0] == "damaged" and file in states[name][1], states[name]
    assert states[pts[6].name][0] == "done"
    keep = sweep._paths(tmp_path, pts[6])["manifest"].stat().st_mtime_ns
    capsys.readouterr()
    (tmp_path / "results.csv").write_bytes(b"run,a\n")  # a damaged table is simply rebuilt
    assert sweep.main(args) == 0
    err = capsys.readouterr().err
    for name, file in named.items():
        assert f"{name} is damaged" in err and file in err
    assert sweep._paths(tmp_path, pts[6])["manifest"].stat().st_mtime_ns == keep
    assert all(sweep.check_point(tmp_path, p)[0] == "done" for p in pts)
    pd.testing.assert_frame_equal(before, _table(tmp_path))


def test_second_sweep_refused_and_killed_parent_leaves_no_process(tmp_path, capsys):
    nb = _napping_notebook(tmp_path)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mrflib", "sweep", str(nb), "-p", "nap", "60", "-p", "a",
           "1", "2", "--workers", "2", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    family: list[int] = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            family = _descendants(proc.pid)
            if sum("ipykernel" in _cmdline(p) for p in family) >= 2:
                break
            time.sleep(0.3)
        assert sum("ipykernel" in _cmdline(p) for p in family) >= 2, "kernels never started"
        # a second sweep on the same folder is refused, naming the folder and the holder
        with pytest.raises(sweep.SweepBusy, match=f"{out}.*pid {proc.pid}"):
            sweep.sweep(nb, {"nap": [0], "a": [1]}, out, progress=False)
        with pytest.raises(SystemExit) as exc:
            sweep.main([str(nb), "-p", "a", "1", "--out", str(out), "--no-progress"])
        assert exc.value.code == 2 and "in use by another sweep" in capsys.readouterr().err
        # SIGKILL to the parent alone: papermill and the kernels follow it
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 15
        while time.time() < deadline and any(_alive(p) for p in family):
            time.sleep(0.2)
        survivors = [f"{p}: {_cmdline(p)}" for p in family if _alive(p)]
        assert not survivors, survivors
    finally:
        for pid in [proc.pid, *family]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    # the lock died with its holder: the folder is usable at once
    df = sweep.sweep(nb, {"nap": [0], "a": [1]}, out, progress=False)
    assert (df.status == "ok").all()


def test_dask_local_cluster_gives_the_same_table(tmp_path):
    from distributed import LocalCluster

    grid = {"a": [1, 2], "b": [0.5, 2]}
    local = sweep.sweep(TINY, grid, tmp_path / "local", workers=2, progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=None, processes=True) as cluster:
        dist = sweep.sweep(TINY, grid, tmp_path / "dask", scheduler=cluster.scheduler_address,
                           progress=False)
    assert len(local) == 8
    pd.testing.assert_frame_equal(local, dist)
    pd.testing.assert_frame_equal(_table(tmp_path / "local"), _table(tmp_path / "dask"))


@pytest.mark.skipif(not can_unshare(), reason="needs `unshare -rm` (user mount namespaces)")
def test_dask_worker_without_shared_filesystem(tmp_path):
    """The worker runs in a mount namespace where the client's folder (notebook and --out)
    is an empty read-only tmpfs: it can neither read the notebook nor write --out."""
    hidden = tmp_path / "client-only"
    hidden.mkdir()
    nb = hidden / "tiny_sweep.ipynb"
    shutil.copy(TINY, nb)
    out = hidden / "out"
    with hidden_dask_worker(hidden) as client:
        with pytest.raises(OSError):  # read-only: the worker cannot write --out
            client.submit(os.makedirs, str(out), pure=False).result()
        df = sweep.sweep(nb, {"a": [1, 2], "b": [0.5]}, out, scheduler=client, progress=False)
    assert (df.status == "ok").all() and len(df) == 4
    assert df.loc[df.quantity == "product", "ours"].tolist() == ["0.5", "1"]
    assert len(_finished(out)) == 2


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="notebook must be an existing"):
        sweep.sweep(tmp_path / "nope.ipynb", {"a": [1]}, tmp_path)
    with pytest.raises(ValueError, match="workers must be a positive"):
        sweep.sweep(TINY, {"a": [1]}, tmp_path, workers=0)
    with pytest.raises(ValueError, match="no cell tagged 'parameters'"):
        nb = json.loads(TINY.read_text())
        nb["cells"][1]["metadata"]["tags"] = []
        (tmp_path / "x.ipynb").write_text(json.dumps(nb))
        sweep.sweep(tmp_path / "x.ipynb", {"a": [1]}, tmp_path)


@pytest.mark.parametrize("value", ["-1", "0", "-0", "nan", "inf", "-inf", "1e300", "1e400",
                                   "2147484", "5s"])
def test_bad_timeout_is_a_usage_error_that_leaves_the_folder_untouched(value, tmp_path,
                                                                       capsys):
    """``--timeout`` is checked as it is parsed: one line naming it, status 2, and neither
    a lock nor ``runs/`` in the output folder (nor the folder itself)."""
    out, fresh = tmp_path / "o", tmp_path / "fresh"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    for folder in (out, fresh):
        with pytest.raises(SystemExit) as exc:
            sweep.main([str(TINY), "-p", "a", "1", "--out", str(folder), f"--timeout={value}",
                        "--no-progress"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--timeout" in err and len(err.strip().splitlines()) == 1
    assert os.listdir(out) == ["keep.txt"] and not fresh.exists()


@pytest.mark.parametrize("value", [-1, 0, -0.0, math.nan, math.inf, 1e300,
                                   2 * sweep.MAX_TIMEOUT, "5", True])
def test_bad_timeout_is_refused_by_the_python_api_before_anything_runs(value, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(ValueError, match="timeout"):
        sweep.sweep(TINY, {"a": [1]}, out, progress=False, timeout=value)
    assert os.listdir(out) == ["keep.txt"]
    with pytest.raises(ValueError, match="timeout"):
        sweep.compute_point(TINY.read_bytes(), TINY.name, {"a": 1}, timeout=value)
    with pytest.raises(ValueError, match="timeout"):
        sweep.execute(TINY, tmp_path / "done.ipynb", {"a": 1}, timeout=value)
    assert not (tmp_path / "done.ipynb").exists()


def test_the_longest_timeout_is_one_a_subprocess_wait_takes():
    """``MAX_TIMEOUT`` is accepted by the check and by ``subprocess.run``'s wait (on
    Linux a ``poll(2)`` of milliseconds in a C ``int``)."""
    assert sweep._check_timeout(sweep.MAX_TIMEOUT) == sweep.MAX_TIMEOUT
    done = subprocess.run([sys.executable, "-c", "pass"], capture_output=True,
                          timeout=sweep.MAX_TIMEOUT)
    assert done.returncode == 0
