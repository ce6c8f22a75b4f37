"""Sweeps: failure isolation, kill-and-resume, and the Dask path on a LocalCluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mrflib import sweep

TINY = Path(__file__).parent / "data" / "tiny_sweep.ipynb"
pytestmark = pytest.mark.slow


def _finished(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "runs").glob("*.ipynb") if not p.name.startswith("."))


def _table(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "results.csv", dtype=str, keep_default_na=False)


def test_points_names_are_stable():
    pts = sweep.points(TINY, {"a": [1, 2], "b": [0.5]})
    assert [p.name for p in pts] == ["tiny_sweep__a=1__b=0.5", "tiny_sweep__a=2__b=0.5"]
    assert sweep.parse_value("3") == 3 and sweep.parse_value("0.5") == 0.5
    assert sweep.parse_value("quick") == "quick" and sweep.parse_value("true") is True
    with pytest.raises(ValueError, match="grid"):
        sweep.points(TINY, {"a": []})


def test_failing_point_is_reported_not_fatal(tmp_path, capsys):
    code = sweep.main([str(TINY), "-p", "a", "1", "3", "-p", "b", "2", "--out", str(tmp_path),
                       "--workers", "2", "--no-progress"])
    assert code == 1
    df = _table(tmp_path)
    ok = df[df.status == "ok"]
    assert set(ok.quantity) == {"product", "sum"}
    assert ok.loc[ok.quantity == "product", "ours"].tolist() == ["2"]
    failed = df[df.status == "failed"]
    assert failed.run.tolist() == ["tiny_sweep__a=3__b=2"]
    assert "designated failing point" in failed.error.iloc[0]
    assert "FAILED tiny_sweep__a=3__b=2" in capsys.readouterr().err
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
    # every finished run is complete: notebook and results both in place
    for name in finished:
        assert (killed / "runs" / name.replace(".ipynb", ".results")).is_dir()
    mtimes = {n: (killed / "runs" / n).stat().st_mtime for n in finished}
    sweep.main([str(TINY), *args, "--out", str(killed)])
    for n, m in mtimes.items():  # resumed: finished runs were not run again
        assert (killed / "runs" / n).stat().st_mtime == m
    pd.testing.assert_frame_equal(_table(full), _table(killed))
    assert not list((killed / "runs").glob(".*"))


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


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="notebook must be an existing"):
        sweep.sweep(tmp_path / "nope.ipynb", {"a": [1]}, tmp_path)
    with pytest.raises(ValueError, match="workers must be a positive"):
        sweep.sweep(TINY, {"a": [1]}, tmp_path, workers=0)
