"""Parameter sweeps of a notebook with papermill, locally or on a Dask cluster.

``python -m mrflib sweep NOTEBOOK -p NAME V1 V2 ... [-p ...] --out DIR [--workers N]
[--scheduler ADDR]`` runs the notebook once for each point of the Cartesian product of the
given values:

* each run is written to ``DIR/runs/<stem>__<name>=<value>__....ipynb`` (a stable name from
  its parameters) and its recorded numbers (:func:`mrflib.experiments.record`) to
  ``DIR/runs/<same>.results/``; both are written under temporary names and renamed when the
  run succeeds, so a killed sweep leaves no half-written result;
* a sweep started again runs only the points without a finished result (resume);
* a failing point is recorded with its error in ``DIR/runs/<same>.error.txt`` and in the
  table, and the other points go on; the exit status is the number of failed points;
* ``DIR/results.csv`` gathers every run's numbers into one tidy table (one row per run and
  recorded quantity, the parameters as columns), and ``DIR/figure.png`` plots it when the
  notebook's metadata defines a sweep figure (``metadata["mrflib"]["sweep_figure"] =
  {"x": param, "quantity": text, "hue": param}``);
* points run in local processes (``--workers``, default 2) or, with ``--scheduler ADDR``,
  as tasks on a ``dask.distributed`` cluster; a progress bar shows points done and time left.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["Point", "execute", "parse_value", "points", "run_point", "sweep", "gather", "main"]

_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def execute(
    notebook: str | Path,
    output: str | Path,
    parameters: dict[str, Any] | None = None,
    *,
    results_dir: str | Path | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Execute a notebook with papermill in a subprocess (kernel ``python3``).

    The subprocess gets ``MRFLIB_RESULTS_DIR=results_dir`` so the numbers the notebook
    records land there; running in its own process keeps concurrent runs (threads of a
    Dask worker, say) from sharing that setting.

    Returns a dict ``{"ok", "seconds", "error"}``; ``error`` is the tail of papermill's
    report when the notebook failed.
    """
    import subprocess
    import time

    cmd = [sys.executable, "-m", "papermill", str(notebook), str(output), "-k", "python3",
           "--no-progress-bar", "--cwd", str(cwd or Path(notebook).resolve().parent)]
    for key, value in (parameters or {}).items():
        cmd += ["-p", str(key), str(value)]
    env = dict(os.environ)
    if results_dir is not None:
        env["MRFLIB_RESULTS_DIR"] = str(results_dir)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "seconds": time.perf_counter() - t0,
                "error": f"timed out after {timeout} s"}
    seconds = time.perf_counter() - t0
    error = "" if proc.returncode == 0 else _papermill_error(proc.stderr or proc.stdout)
    return {"ok": proc.returncode == 0, "seconds": seconds, "error": error}


def _papermill_error(text: str) -> str:
    """The useful tail of papermill's stderr (the exception lines), at most 4000 chars."""
    return text[-4000:].strip()


def parse_value(text: str) -> Any:
    """Parse a command-line value: int, then float, then true/false/none, else the string."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    return text


@dataclass(frozen=True)
class Point:
    """One point of a sweep: the notebook and its parameter values."""

    notebook: str
    params: tuple[tuple[str, Any], ...]

    @property
    def name(self) -> str:
        """Stable file name stem derived from the notebook and the parameters."""
        parts = [Path(self.notebook).stem] + [
            f"{k}={_SAFE.sub('_', str(v))}" for k, v in self.params]
        return "__".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)


def points(notebook: str | Path, grid: dict[str, Sequence[Any]]) -> list[Point]:
    """The Cartesian product of ``grid`` as points, in a fixed order."""
    if not grid:
        raise ValueError("grid must name at least one parameter with values")
    for k, values in grid.items():
        if not isinstance(values, Iterable) or isinstance(values, (str, bytes)) or not values:
            raise ValueError(f"grid[{k!r}] must be a non-empty list of values")
    keys = list(grid)
    return [Point(str(notebook), tuple(zip(keys, combo)))
            for combo in itertools.product(*(grid[k] for k in keys))]


def _paths(out: Path, p: Point) -> dict[str, Path]:
    runs = out / "runs"
    return {"nb": runs / f"{p.name}.ipynb", "results": runs / f"{p.name}.results",
            "error": runs / f"{p.name}.error.txt"}


def _done(out: Path, p: Point) -> bool:
    paths = _paths(out, p)
    return paths["nb"].exists() and paths["results"].exists()


def run_point(p: Point, out: str | Path, cwd: str | Path | None = None) -> dict[str, Any]:
    """Execute one point with papermill; atomic on success, error file on failure.

    Runs in whatever process calls it (a local worker process or a Dask worker).
    """
    out = Path(out)
    paths = _paths(out, p)
    paths["nb"].parent.mkdir(parents=True, exist_ok=True)
    tag = f".tmp-{os.getpid()}-{threading.get_ident()}"
    tmp_nb = paths["nb"].with_name(f".{p.name}{tag}.ipynb")
    tmp_res = paths["results"].with_name(f".{p.name}{tag}.results")
    shutil.rmtree(tmp_res, ignore_errors=True)
    tmp_res.mkdir(parents=True)
    rec = execute(p.notebook, tmp_nb, p.as_dict(), results_dir=tmp_res, cwd=cwd)
    if not rec["ok"]:  # recorded, not raised: the other points go on
        paths["error"].write_text(rec["error"])
        tmp_nb.unlink(missing_ok=True)
        shutil.rmtree(tmp_res, ignore_errors=True)
        return {"name": p.name, "ok": False, "error": _last_error_line(rec["error"])}
    shutil.rmtree(paths["results"], ignore_errors=True)
    os.replace(tmp_res, paths["results"])
    os.replace(tmp_nb, paths["nb"])  # the notebook last: it marks the run finished
    paths["error"].unlink(missing_ok=True)
    return {"name": p.name, "ok": True, "error": ""}


def _last_error_line(text: str) -> str:
    """The exception line of a papermill failure (e.g. ``RuntimeError: ...``)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", ln):
            return ln[:500]
    return (lines[-1] if lines else "failed")[:500]


def _clean_stale(out: Path) -> None:
    runs = out / "runs"
    if not runs.exists():
        return
    for stale in runs.glob(".*.tmp-*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def gather(out: str | Path, pts: Sequence[Point]) -> pd.DataFrame:
    """One tidy table: a row per run and recorded quantity, parameters as columns.

    A failed point gives one row with ``status = "failed"`` and its error.
    """
    out = Path(out)
    rows = []
    keys = [k for k, _ in pts[0].params] if pts else []
    for p in pts:
        paths = _paths(out, p)
        base = {"run": p.name, **p.as_dict()}
        if _done(out, p):
            files = sorted(paths["results"].glob("*.csv"))
            frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
            recs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            for r in recs.to_dict("records"):
                rows.append({**base, **r, "status": "ok", "error": ""})
            if recs.empty:
                rows.append({**base, "status": "ok", "error": "no recorded numbers"})
        elif paths["error"].exists():
            err = _last_error_line(paths["error"].read_text())
            rows.append({**base, "status": "failed", "error": err})
        else:
            rows.append({**base, "status": "missing", "error": ""})
    df = pd.DataFrame(rows)
    lead = ["run", *keys]
    rest = [c for c in df.columns if c not in lead]
    return df[lead + rest] if len(df) else df


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


def _figure(notebook: str, df: pd.DataFrame, out: Path) -> Path | None:
    meta = json.loads(Path(notebook).read_text()).get("metadata", {}).get("mrflib", {})
    spec = meta.get("sweep_figure")
    if not spec or df.empty or "quantity" not in df:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = df[(df["status"] == "ok") & (df["quantity"] == spec["quantity"])].copy()
    if d.empty or spec["x"] not in d:
        return None
    d["ours"] = pd.to_numeric(d["ours"], errors="coerce")
    fig, ax = plt.subplots(figsize=(6, 4))
    hue = spec.get("hue")
    groups = d.groupby(hue) if hue and hue in d else [("", d)]
    for label, g in groups:
        g = g.groupby(spec["x"])["ours"].mean().sort_index()
        ax.plot(g.index, g.values, "-o", label=f"{hue} = {label}" if hue else None)
    if spec.get("logx"):
        ax.set_xscale("log")
    if spec.get("logy"):
        ax.set_yscale("log")
    ax.set(xlabel=spec["x"], ylabel=spec["quantity"], title=Path(notebook).stem)
    if hue:
        ax.legend()
    fig.tight_layout()
    path = out / "figure.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep(
    notebook: str | Path,
    grid: dict[str, Sequence[Any]],
    out: str | Path,
    *,
    workers: int = 2,
    scheduler: Any = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run the sweep (resuming), write ``results.csv`` (and ``figure.png``); return the table.

    Parameters
    ----------
    notebook : path
        The notebook; it must have a cell tagged ``parameters``.
    grid : dict
        Parameter name -> list of values; every combination is one point.
    out : path
        Output folder (``runs/``, ``results.csv``, ``figure.png``).
    workers : int
        Local worker processes (ignored with a scheduler).
    scheduler : str or distributed.Client, optional
        A Dask scheduler address (``"tcp://127.0.0.1:8786"``) or a Client.
    progress : bool
        Show a tqdm progress bar (points done, time left).
    """
    from tqdm import tqdm

    notebook = str(Path(notebook).resolve())
    if not Path(notebook).is_file():
        raise ValueError(f"notebook must be an existing .ipynb file, got {notebook!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    out = Path(out).resolve()
    (out / "runs").mkdir(parents=True, exist_ok=True)
    _clean_stale(out)
    pts = points(notebook, grid)
    todo = [p for p in pts if not _done(out, p)]
    bar = tqdm(total=len(pts), initial=len(pts) - len(todo), unit="point",
               disable=not progress, desc=Path(notebook).stem)
    if todo:
        if scheduler is not None:
            from distributed import Client
            from distributed import as_completed as dask_completed

            client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
            try:
                futures = [client.submit(run_point, p, str(out), pure=False) for p in todo]
                for fut in dask_completed(futures):
                    fut.result()
                    bar.update()
            finally:
                if client is not scheduler:
                    client.close()
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(run_point, p, str(out)) for p in todo]
                for fut in as_completed(futures):
                    fut.result()
                    bar.update()
    bar.close()
    df = gather(out, pts)
    _write_csv(df, out / "results.csv")
    _figure(notebook, df, out)
    return df


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m mrflib sweep ...``; returns the number of failed points."""
    ap = argparse.ArgumentParser(prog="python -m mrflib sweep",
                                 description="Run a notebook over a parameter grid.")
    ap.add_argument("notebook")
    ap.add_argument("-p", "--param", nargs="+", action="append", metavar=("NAME", "VALUE"),
                    required=True, help="a parameter and its values; repeat for more")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    grid: dict[str, list[Any]] = {}
    for spec in args.param:
        if len(spec) < 2:
            ap.error(f"-p {spec[0]} needs at least one value")
        grid[spec[0]] = [parse_value(v) for v in spec[1:]]
    try:
        df = sweep(args.notebook, grid, args.out, workers=args.workers,
                   scheduler=args.scheduler, progress=not args.no_progress)
    except ValueError as err:
        ap.error(str(err))
    failed = df.loc[df["status"] == "failed", "run"].unique()
    n_points = df["run"].nunique()
    print(f"{n_points - len(failed)} of {n_points} points succeeded; table: "
          f"{args.out / 'results.csv'}")
    for name in failed:
        err = df.loc[df["run"] == name, "error"].iloc[0]
        print(f"  FAILED {name}: {err}", file=sys.stderr)
    return min(len(failed), 255)
