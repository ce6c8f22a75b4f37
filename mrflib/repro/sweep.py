"""Parameter sweeps of a notebook with papermill, locally or on a Dask cluster.

``python -m mrflib sweep NOTEBOOK -p NAME V1 V2 ... [-p ...] --out DIR [--workers N]
[--scheduler ADDR]`` runs the notebook once for each point of the Cartesian product of the
given values.

Points
    A point's id is a readable slug of its values plus a hash of their exact types and
    values (``tiny__a=1__b=0.5__3f9c0e1a2b``), so values that print alike (``"a/b"`` and
    ``"a_b"``, ``1`` and ``"1"``) never share files. A parameter given twice (``-p a 1 -p a
    2``), a value listed twice, or a name the notebook's ``parameters`` cell does not define is
    refused before anything runs.

Workers compute, the client writes
    :func:`compute_point` executes the notebook in a temporary folder of whichever process runs
    it and returns the executed notebook and every file the notebook recorded (see
    :func:`mrflib.repro.experiments.record`) as bytes. Only the client writes ``--out``, so the Dask
    path works on a cluster without a shared filesystem (on Dask the notebook runs in the
    worker's temporary folder; locally in its own folder, so relative data files work).

Verifiable completion
    Per point the client writes ``runs/<id>.results/<file>`` and ``runs/<id>.ipynb``, each
    atomically (temporary file, fsync, rename), and then, last, ``runs/<id>.manifest.json``
    with the parameter values and the size and SHA-256 of every file. A point is done only if
    its manifest verifies; a truncated, empty, corrupt or swapped file, a missing or unreadable
    manifest, or one recording other parameters is reported on stderr, naming the file, and
    the point is computed again. A failed point leaves ``runs/<id>.error.txt`` (and is retried
    by the next sweep); the others go on. ``results.csv`` (one tidy row per point and recorded
    quantity) and ``figure.png`` are written atomically too.

One sweep per folder
    The sweep holds an exclusive ``fcntl`` lock on ``DIR/.sweep.lock`` for its lifetime. A
    second sweep on the same folder is refused at once (:class:`SweepBusy`, naming the folder
    and the holder's pid) rather than made to wait: two sweeps never run a point twice or
    overwrite each other's table. The lock dies with its process, so a killed sweep never
    leaves a stale lock; start the sweep again to resume it.

No orphans
    Each notebook runs in a papermill process that dies with the thread that started it
    (``prctl(PR_SET_PDEATHSIG)`` plus a watchdog on the parent pid), and its kernel exits when
    papermill does (ipykernel's parent poller), so killing the sweep, even with SIGKILL, leaves
    no process behind.
"""

from __future__ import annotations

import argparse
import ast
import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from mrflib._support.cli import Parser, check_folder, connect, fail
from mrflib._support.executor import Executor
from mrflib._support.files import atomic_write, holder, release, sha256, try_lock
from mrflib._support.optional import optional_import
from mrflib._support.validation import check_instance, check_path, check_real

__all__ = ["Point", "SweepBusy", "execute", "parse_value", "points", "notebook_parameters",
           "compute_point", "check_point", "point_files", "sweep", "gather", "main",
           "drop_tagged_cells"]

_SAFE = re.compile(r"[^A-Za-z0-9._+-]")
_MANIFEST_FORMAT = "mrflib-sweep-point/1"
_LOCK = ".sweep.lock"

# Runs papermill in a child that dies with its parent: PR_SET_PDEATHSIG (Linux) and a
# watchdog on the parent pid (everywhere). argv: -c CODE PARENT_PID papermill-args...
_GUARD = """\
import ctypes, os, runpy, signal, sys, threading, time
parent = int(sys.argv.pop(1))
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
except (OSError, AttributeError):
    pass
def _watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(137)
threading.Thread(target=_watch, daemon=True).start()
sys.argv[0] = "papermill"
runpy.run_module("papermill", run_name="__main__", alter_sys=True)
"""


# Kernels that do not start. Started in parallel, a kernel sometimes never answers (a race
# on its ports, a known problem of Jupyter kernels launched together) or answers late on a
# loaded two-core machine; papermill then fails the run before any cell has executed, so the
# run is started again, up to KERNEL_START_ATTEMPTS times, each start given
# KERNEL_START_SECONDS (papermill's default is 60 s).
KERNEL_START_SECONDS = 120
KERNEL_START_ATTEMPTS = 3
_KERNEL_START_FAILURES = ("Kernel didn't respond in", "Kernel died before replying to kernel_info")

#: Longest timeout of a point, in seconds (about 24.8 days): ``subprocess.run`` waits for
#: papermill with ``poll(2)``, whose timeout is milliseconds in a C ``int`` (a longer one is
#: an ``OverflowError`` in the middle of the sweep), and a thread waits at most
#: ``threading.TIMEOUT_MAX``.
MAX_TIMEOUT = float(min((2**31 - 1) // 1000, threading.TIMEOUT_MAX))


class SweepBusy(RuntimeError):
    """Another sweep holds the output folder's lock."""


def _check_timeout(timeout: Any, name: str = "timeout") -> float | None:
    """``None`` (no limit) or seconds in ``(0, MAX_TIMEOUT]`` as a ``float``, else a
    ``ValueError`` naming ``name``: zero or less would fail every point, and NaN, inf or
    a longer time would fail inside the wait, after the output folder was made."""
    if timeout is None:
        return None
    if isinstance(timeout, bool):
        raise ValueError(f"{name} must be a number of seconds, got {timeout!r}")
    seconds = check_real(timeout, name)
    if not 0.0 < seconds <= MAX_TIMEOUT:
        raise ValueError(f"{name} must be a positive number of seconds, at most "
                         f"{MAX_TIMEOUT:.0f} (about 24 days: the longest wait for a "
                         f"subprocess), got {seconds:.10g}")
    return seconds


def execute(
    notebook: str | Path,
    output: str | Path,
    parameters: dict[str, Any] | None = None,
    *,
    results_dir: str | Path | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Execute a notebook with papermill in a subprocess (kernel ``python3``).

    The subprocess gets ``MRFLIB_RESULTS_DIR=results_dir`` so the numbers the notebook
    records land there, and the variables of ``env`` (settings of the run a notebook does
    not declare as parameters, such as a paper run's chunk); running in its own process
    keeps concurrent runs (threads of a Dask worker, say) from sharing that setting. The
    subprocess dies with the thread that started it (and its kernel with it), so killing the
    caller leaves no orphan.

    A run whose kernel did not start (no cell executed) is started again, up to
    ``KERNEL_START_ATTEMPTS`` times. Returns a dict ``{"ok", "seconds", "error"}``;
    ``error`` is the tail of papermill's report when the notebook failed. ``timeout``
    (seconds, at most ``MAX_TIMEOUT``) bounds the whole run, restarts included.
    """
    timeout = _check_timeout(timeout)
    optional_import("papermill", "running a notebook (python -m mrflib sweep, paper)", "book")
    cmd = [sys.executable, "-c", _GUARD, str(os.getpid()), str(notebook), str(output),
           "-k", "python3", "--no-progress-bar", "--start-timeout", str(KERNEL_START_SECONDS),
           "--cwd", str(cwd or Path(notebook).resolve().parent)]
    for key, value in (parameters or {}).items():
        cmd += ["-p", str(key), str(value)]
    run_env = {**os.environ, **{str(k): str(v) for k, v in (env or {}).items()}}
    if results_dir is not None:
        run_env["MRFLIB_RESULTS_DIR"] = str(results_dir)
    t0 = time.perf_counter()
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        left = None if timeout is None else timeout - (time.perf_counter() - t0)
        try:
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(cmd, timeout)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env,
                                  timeout=left)
        except subprocess.TimeoutExpired:
            return {"ok": False, "seconds": time.perf_counter() - t0,
                    "error": f"timed out after {timeout} s"}
        error = "" if proc.returncode == 0 else _papermill_error(proc.stderr or proc.stdout)
        if not any(f in error for f in _KERNEL_START_FAILURES):
            break
        error = f"the kernel did not start in {attempt} attempt(s): {error}"
    return {"ok": proc.returncode == 0, "seconds": time.perf_counter() - t0, "error": error}


def _papermill_error(text: str) -> str:
    """The useful tail of papermill's stderr (the exception lines), at most 4000 chars."""
    return text[-4000:].strip()


def parse_value(text: str) -> Any:
    """Parse a command-line value: int, then float, then true/false/none, else the string."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
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


def _canonical(params: Iterable[tuple[str, Any]]) -> str:
    """Exact, order-free text of parameter values (type and repr): equal iff the point is."""
    return json.dumps(sorted([k, type(v).__name__, repr(v)] for k, v in params))


def _slug(value: Any) -> str:
    text = _SAFE.sub("_", str(value))
    return text if len(text) <= 32 else text[:29] + "..."


@dataclass(frozen=True)
class Point:
    """One point of a sweep: the notebook and its parameter values."""

    notebook: str
    params: tuple[tuple[str, Any], ...]

    @property
    def name(self) -> str:
        """The point's id and file stem: a readable slug plus a hash of the exact values.

        Injective: two points with different values (or types) have different names even
        when their values print alike.
        """
        slug = "__".join([Path(self.notebook).stem[:40]] + [
            f"{k[:24]}={_slug(v)}" for k, v in sorted(self.params, key=lambda kv: kv[0])])
        return f"{slug}__{sha256(_canonical(self.params).encode())[:10]}"

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)


def _plain(value: Any) -> Any:
    """numpy scalars to Python ones, so equal values give one point."""
    return value.item() if hasattr(value, "item") and not isinstance(value, str) else value


def points(notebook: str | Path, grid: dict[str, Sequence[Any]]) -> list[Point]:
    """The Cartesian product of ``grid`` as points, in a fixed order.

    Raises ``ValueError`` for an empty grid, an empty or non-list value list, or a value
    listed twice for one parameter (it would run the same point twice).
    """
    if not grid:
        raise ValueError("grid must name at least one parameter with values")
    clean: dict[str, list[Any]] = {}
    for k, values in grid.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise ValueError(f"grid keys must be parameter names (identifiers), got {k!r}")
        if not isinstance(values, Iterable) or isinstance(values, (str, bytes)) or not values:
            raise ValueError(f"grid[{k!r}] must be a non-empty list of values")
        clean[k] = [_plain(v) for v in values]
        seen: dict[str, Any] = {}
        for v in clean[k]:
            key = _canonical([(k, v)])
            if key in seen:
                raise ValueError(f"parameter {k!r} lists the value {v!r} twice; each point "
                                 "runs once, so give each value once")
            seen[key] = v
    keys = list(clean)
    return [Point(str(notebook), tuple(zip(keys, combo)))
            for combo in itertools.product(*(clean[k] for k in keys))]


def read_notebook(notebook: str | Path) -> dict[str, Any]:
    """The notebook's JSON: an object with a list ``cells`` of objects whose ``source`` is
    text (a string or a list of strings); else a ``ValueError`` naming the file."""
    path = check_path(notebook, "notebook", exists=True)
    try:
        nb = json.loads(path.read_bytes())
    except (OSError, ValueError) as err:
        raise ValueError(f"notebook {str(path)!r} is not readable notebook JSON ({err})"
                         ) from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("metadata", {}), dict)
            and isinstance(c.get("source", ""), (str, list)) for c in cells):
        raise ValueError(f"notebook {str(path)!r} is not a notebook: expected a JSON object "
                         f"with a list of cells, got {type(nb).__name__}")
    return nb


def _cell_source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(map(str, src)) if isinstance(src, list) else src


def notebook_parameters(notebook: str | Path) -> list[str]:
    """Names assigned in the notebook's cell tagged ``parameters`` (its sweepable names).

    The cell must compile (after IPython's ``%`` and ``!`` lines are set aside): a syntax
    error is a ``ValueError`` naming the notebook and the line, before any run starts.
    """
    nb = read_notebook(notebook)
    cells = [c for c in nb["cells"]
             if "parameters" in (c.get("metadata", {}).get("tags") or [])]
    if not cells:
        raise ValueError(f"notebook {notebook} has no cell tagged 'parameters', so it takes "
                         "no parameters")
    names: list[str] = []
    for cell in cells:
        src = "\n".join(ln for ln in _cell_source(cell).splitlines()
                        if not ln.lstrip().startswith(("%", "!")))
        try:
            compile(src, f"{notebook} (parameters cell)", "exec")
        except (SyntaxError, ValueError) as err:
            where = f" at line {err.lineno}" if getattr(err, "lineno", None) else ""
            raise ValueError(f"notebook {notebook}: its parameters cell does not compile"
                             f"{where}: {getattr(err, 'msg', err)}") from None
        for node in ast.parse(src).body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id not in names:
                        names.append(n.id)
    return names


# ----------------------------------------------------------------------- worker side


def compute_point(source: bytes, filename: str, params: dict[str, Any], *,
                  cwd: str | None = None, timeout: float | None = None,
                  env_parameters: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one point where this function is called; return everything as bytes.

    This is the only code that runs on a worker. It touches nothing but its own temporary
    folder (and ``cwd``, the kernel's working folder, which defaults to that temporary
    folder): the notebook arrives as ``source`` bytes and the executed notebook and the
    recorded files go back in the returned dict ``{"ok", "seconds", "error", "notebook":
    bytes, "files": {relative path: bytes}}``. The parameters named in ``env_parameters``
    (parameter -> environment variable) reach the notebook as environment variables, not
    as papermill parameters.
    """
    timeout = _check_timeout(timeout)
    hidden = env_parameters or {}
    env = {var: str(params[name]) for name, var in hidden.items() if name in params}
    params = {k: v for k, v in params.items() if k not in hidden}
    with tempfile.TemporaryDirectory(prefix="mrflib-point-") as tmp:
        work = Path(tmp)
        src, done, results = work / Path(filename).name, work / "executed.ipynb", work / "out"
        src.write_bytes(source)
        results.mkdir()
        rec = execute(src, done, params, results_dir=results, cwd=cwd or work, timeout=timeout,
                      env=env)
        files = {f.relative_to(results).as_posix(): f.read_bytes()
                 for f in sorted(results.rglob("*")) if f.is_file()
                 and not any(part.startswith(".") for part in f.relative_to(results).parts)}
        notebook = done.read_bytes() if rec["ok"] and done.exists() else b""
    return {**rec, "notebook": notebook, "files": files}


# ----------------------------------------------------------------------- client side


def _paths(out: Path, p: Point) -> dict[str, Path]:
    runs = out / "runs"
    return {"nb": runs / f"{p.name}.ipynb", "results": runs / f"{p.name}.results",
            "manifest": runs / f"{p.name}.manifest.json", "error": runs / f"{p.name}.error.txt"}


def _rel(out: Path, path: Path) -> str:
    return path.relative_to(out).as_posix()


def _damaged_output(result: dict[str, Any]) -> str:
    """Why a worker's successful result cannot be stored ('' if it can)."""
    try:
        if not isinstance(json.loads(result["notebook"]).get("cells"), list):
            return "the executed notebook has no cells"
    except (ValueError, AttributeError) as err:
        return f"the executed notebook is not valid JSON ({err})"
    for rel, data in result["files"].items():
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or not parts:
            return f"recorded file {rel!r} would escape the results folder"
        if rel.endswith(".csv") and not data.strip():
            return f"recorded file {rel} is empty"
    return ""


def _store(out: Path, p: Point, result: dict[str, Any], source_sha: str) -> None:
    """Write one point's outputs atomically, the manifest last (the client's only writer)."""
    paths = _paths(out, p)
    paths["manifest"].unlink(missing_ok=True)  # from now on the point is not done
    problem = "" if not result["ok"] else _damaged_output(result)
    if problem or not result["ok"]:
        atomic_write(paths["error"], (result["error"] or problem).encode())
        return
    shutil.rmtree(paths["results"], ignore_errors=True)
    listed: dict[str, dict[str, Any]] = {}
    for rel, data in sorted(result["files"].items()):
        target = paths["results"] / rel
        atomic_write(target, data)
        listed[_rel(out / "runs", target)] = {"bytes": len(data), "sha256": sha256(data)}
    atomic_write(paths["nb"], result["notebook"])
    listed[_rel(out / "runs", paths["nb"])] = {"bytes": len(result["notebook"]),
                                               "sha256": sha256(result["notebook"])}
    manifest = {
        "format": _MANIFEST_FORMAT, "point": p.name, "notebook": Path(p.notebook).name,
        "notebook_sha256": source_sha, "parameters": p.as_dict(),
        "exact_parameters": _canonical(p.params), "seconds": round(result["seconds"], 3),
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": listed,
    }
    atomic_write(paths["manifest"], json.dumps(manifest, indent=1).encode())
    paths["error"].unlink(missing_ok=True)


def check_point(out: str | Path, p: Point) -> tuple[str, str, dict[str, bytes]]:
    """The state of one point in ``out``: ``(state, message, files)``.

    ``state`` is ``"done"`` (the manifest verifies; ``files`` maps each stored file, relative
    to ``runs/``, to its verified bytes), ``"failed"`` (an error file and no manifest),
    ``"damaged"`` (``message`` names the file and what is wrong) or ``"absent"``.
    """
    out = check_path(out, "out")
    check_instance(p, Point, "p")
    out = Path(out)
    paths = _paths(out, p)
    mpath = paths["manifest"]
    if not mpath.exists():
        if paths["error"].exists():
            return "failed", _last_error_line(paths["error"].read_text()), {}
        leftovers = [x for x in (paths["nb"], paths["results"]) if x.exists()]
        if leftovers:
            return ("damaged", f"{_rel(out, leftovers[0])}: written but no manifest "
                    "(the sweep was stopped while storing it)", {})
        return "absent", "", {}
    try:
        manifest = json.loads(mpath.read_bytes())
        listed = manifest["files"]
        same = manifest["exact_parameters"] == _canonical(p.params)
    except (ValueError, KeyError, TypeError) as err:
        return "damaged", f"{_rel(out, mpath)}: unreadable manifest ({err!r})", {}
    if manifest.get("format") != _MANIFEST_FORMAT or not same:
        return ("damaged", f"{_rel(out, mpath)}: records parameters "
                f"{manifest.get('parameters')}, expected {p.as_dict()}", {})
    files: dict[str, bytes] = {}
    for rel, meta in listed.items():
        path = out / "runs" / rel
        try:
            data = path.read_bytes()
        except OSError as err:
            return "damaged", f"{_rel(out, path)}: {err.strerror or err}", {}
        if len(data) != meta["bytes"] or sha256(data) != meta["sha256"]:
            return ("damaged", f"{_rel(out, path)}: {len(data)} bytes with another checksum "
                    f"than the manifest's ({meta['bytes']} bytes); truncated or changed", {})
        files[rel] = data
    return "done", "", files


def point_files(out: str | Path, p: Point) -> dict[str, bytes]:
    """The verified files of a finished point (relative to ``runs/``); ``ValueError`` if the
    point is not done. The building block for merging chunked runs."""
    state, message, files = check_point(out, p)
    if state != "done":
        raise ValueError(f"point {p.name} in {out} is {state}{': ' + message if message else ''}")
    return files


def _last_error_line(text: str) -> str:
    """The exception line of a papermill failure (e.g. ``RuntimeError: ...``)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", ln):
            return ln[:500]
    return (lines[-1] if lines else "failed")[:500]


def _clean_stale(out: Path) -> None:
    """Remove temporary files of killed writers (safe: we hold the folder's lock)."""
    for stale in (out / "runs").rglob(".*.tmp"):
        stale.unlink(missing_ok=True)


def _point_rows(p: Point, state: str, message: str, files: dict[str, bytes]) -> list[dict]:
    import io

    base = {"run": p.name, **p.as_dict()}
    if state != "done":
        status = {"absent": "missing"}.get(state, state)
        return [{**base, "status": status, "error": message}]
    tables = [pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
              for rel, data in sorted(files.items())
              if PurePosixPath(rel).parent.name == f"{p.name}.results" and rel.endswith(".csv")]
    rows = [{**base, **r, "status": "ok", "error": ""}
            for t in tables for r in t.to_dict("records")]
    return rows or [{**base, "status": "ok", "error": "no recorded numbers"}]


def gather(out: str | Path, pts: Sequence[Point]) -> pd.DataFrame:
    """One tidy table: a row per run and recorded quantity, parameters as columns.

    Only verified points contribute numbers; a failed, damaged or missing point gives one
    row with its ``status`` and ``error``.
    """
    out = check_path(out, "out")
    if isinstance(pts, (str, bytes)) or not isinstance(pts, Iterable):
        raise TypeError(f"pts must be a sequence of Point, got {type(pts).__name__}")
    pts = [check_instance(p, Point, "pts (each entry)") for p in pts]
    rows = [r for p in pts for r in _point_rows(p, *check_point(out, p))]
    df = pd.DataFrame(rows)
    lead = ["run", *([k for k, _ in pts[0].params] if pts else [])]
    rest = [c for c in df.columns if c not in lead]
    return df[lead + rest] if len(df) else df


def _figure(notebook: str, df: pd.DataFrame, out: Path) -> Path | None:
    meta = json.loads(Path(notebook).read_text()).get("metadata", {}).get("mrflib", {})
    spec = meta.get("sweep_figure")
    if not spec or df.empty or "quantity" not in df:
        return None
    import io

    # A bare Figure (no pyplot): choosing a backend here would switch off the inline
    # figures of a notebook that calls sweep().
    from matplotlib.figure import Figure

    d = df[(df["status"] == "ok") & (df["quantity"] == spec["quantity"])].copy()
    if d.empty or spec["x"] not in d:
        return None
    d["ours"] = pd.to_numeric(d["ours"], errors="coerce")
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
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
    buf = io.BytesIO()
    fig.savefig(buf, dpi=110, format="png")
    atomic_write(out / "figure.png", buf.getvalue())
    return out / "figure.png"


def _say(message: str) -> None:
    from tqdm import tqdm

    tqdm.write(f"mrflib sweep: {message}", file=sys.stderr)


def _run(todo: list[Point], job: dict[str, Any], workers: int, scheduler: Any
         ) -> Iterator[tuple[Point, dict[str, Any]]]:
    """Compute the points as they finish, ``(point, result)``: locally ``workers`` at a time
    (threads, each waiting on its own papermill process) or as Dask tasks. Results (bytes)
    come back here; the notebook runs in its own folder locally, in the worker's temporary
    folder on Dask."""
    cwd = str(Path(todo[0].notebook).parent) if scheduler is None else None
    fn = functools.partial(compute_point, job["source"], job["filename"], cwd=cwd,
                           timeout=job["timeout"], env_parameters=job["env_parameters"])
    with Executor(workers, scheduler, threads=True) as ex:
        for i, result in ex.imap(fn, [(p.as_dict(),) for p in todo],
                                 names=[p.name for p in todo]):
            yield todo[i], result


def _lock_out(out: Path) -> int:
    note = f"on {os.uname().nodename} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC"
    fd = try_lock(out / _LOCK, note)
    if fd is None:
        raise SweepBusy(f"output folder {out} is in use by another sweep (pid "
                        f"{holder(out / _LOCK)}); wait for it to finish or choose another --out")
    return fd


def _check_arguments(notebook: str, grid: dict[str, Sequence[Any]], workers: int,
                     hidden: Sequence[str] = ()) -> list[Point]:
    if not Path(notebook).is_file():
        raise ValueError(f"notebook must be an existing .ipynb file, got {notebook!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    pts = points(notebook, grid)
    known = notebook_parameters(notebook)
    unknown = [k for k in grid if k not in known and k not in hidden]
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))} for "
                         f"{Path(notebook).name}; its parameters cell defines: "
                         f"{', '.join(known)}")
    if len({p.name for p in pts}) != len(pts):  # a 40-bit hash collision: never seen
        raise ValueError("two points of the grid share an id; rename a value")
    return pts


def sweep(
    notebook: str | Path,
    grid: dict[str, Sequence[Any]],
    out: str | Path,
    *,
    workers: int = 2,
    scheduler: Any = None,
    progress: bool = True,
    timeout: float | None = None,
    skip_tags: Sequence[str] = (),
    env_parameters: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Run the sweep (resuming), write ``results.csv`` (and ``figure.png``); return the table.

    Parameters
    ----------
    notebook : path
        The notebook; it must have a cell tagged ``parameters`` defining every name of grid.
    grid : dict
        Parameter name -> list of values; every combination is one point.
    out : path
        Output folder (``runs/``, ``results.csv``, ``figure.png``), written only here, by the
        client, and locked for the sweep's lifetime.
    workers : int
        Notebooks run at once locally (ignored with a scheduler).
    scheduler : str or distributed.Client, optional
        A Dask scheduler address (``"tcp://127.0.0.1:8786"``) or a Client.
    progress : bool
        Show a tqdm progress bar (points done, time left).
    timeout : float, optional
        Seconds one point may run before it counts as failed: positive, at most
        ``MAX_TIMEOUT``.
    skip_tags : sequence of str, optional
        Cells carrying any of these tags are left out of every point's run
        (:func:`drop_tagged_cells`); the paper runner skips ``merge-only`` cells in chunks.
    env_parameters : dict, optional
        Grid parameters passed to the notebook as environment variables (parameter ->
        variable name) instead of papermill parameters, so the notebook need not declare
        them; they still name the points. The paper runner passes a chunk this way.

    Raises
    ------
    SweepBusy
        Another sweep holds ``out``.
    ValueError
        Bad arguments, all checked before anything runs: unknown or repeated parameters, no
        notebook, a notebook that is not notebook JSON or whose parameters cell does not
        compile, ``workers < 1``, a ``timeout`` that is not a positive finite number of
        seconds up to ``MAX_TIMEOUT``, an ``out`` that is empty, a file or not
        writable, a scheduler address where no scheduler answers.
    """
    notebook = str(Path(notebook).resolve())
    env_parameters = dict(env_parameters or {})
    pts = _check_arguments(notebook, grid, workers, tuple(env_parameters))
    timeout = _check_timeout(timeout)
    out = check_folder(out, "out").resolve()
    check_folder(out / "runs", "out")
    if (out / "results.csv").is_dir():
        raise ValueError(f"out: {str(out / 'results.csv')!r} is a folder where the sweep "
                         "writes its table; move it away")
    client = connect(scheduler) if isinstance(scheduler, str) else None
    try:
        return _sweep_checked(notebook, pts, out, workers, client or scheduler, progress,
                              timeout, skip_tags, env_parameters)
    finally:
        if client is not None:
            client.close()


def _sweep_checked(notebook: str, pts: list[Point], out: Path, workers: int, scheduler: Any,
                   progress: bool, timeout: float | None, skip_tags: Sequence[str],
                   env_parameters: dict[str, str]) -> pd.DataFrame:
    """:func:`sweep` once its arguments are checked and the scheduler answered."""
    from tqdm import tqdm

    (out / "runs").mkdir(parents=True, exist_ok=True)
    fd = _lock_out(out)
    try:
        _clean_stale(out)
        todo = []
        for p in pts:
            state, message, _ = check_point(out, p)
            if state == "damaged":
                _say(f"{p.name} is damaged, computing it again: {message}")
            if state != "done":
                todo.append(p)
        source = drop_tagged_cells(Path(notebook).read_bytes(), skip_tags)
        job = {"source": source, "filename": Path(notebook).name, "timeout": timeout,
               "env_parameters": env_parameters}
        bar = tqdm(total=len(pts), initial=len(pts) - len(todo), unit="point",
                   disable=not progress, desc=Path(notebook).stem)
        if todo:
            for p, result in _run(todo, job, workers, scheduler):
                _store(out, p, result, sha256(source))
                bar.update()
        bar.close()
        df = gather(out, pts)
        atomic_write(out / "results.csv", df.to_csv(index=False).encode())
        _figure(notebook, df, out)
    finally:
        release(fd)
    return df


def drop_tagged_cells(source: bytes, skip_tags: Sequence[str]) -> bytes:
    """The notebook ``source`` without the cells tagged with any of ``skip_tags``.

    ``source`` is returned unchanged (same bytes) when ``skip_tags`` is empty or no cell
    carries one of them. The parameters cell cannot be dropped.

    Raises
    ------
    ValueError
        ``skip_tags`` is not a list of tag names or names ``"parameters"``; ``source`` is not
        notebook JSON.
    """
    listed = (list(skip_tags) if isinstance(skip_tags, Iterable)
              and not isinstance(skip_tags, (str, bytes)) else None)
    if listed is None or not all(isinstance(t, str) and t for t in listed):
        raise ValueError(f"skip_tags must be a list of cell tag names, got {skip_tags!r}")
    tags = set(listed)
    if "parameters" in tags:
        raise ValueError("skip_tags must not name 'parameters': the parameters cell always runs")
    if not isinstance(source, bytes):
        raise ValueError(f"source must be the notebook's bytes, got {type(source).__name__}")
    if not tags:
        return source
    try:
        nb = json.loads(source)
        cells = nb["cells"]
        kept = [c for c in cells if not set(c.get("metadata", {}).get("tags", [])) & tags]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"source must be notebook JSON with a list of cells ({err})") from None
    if len(kept) == len(cells):
        return source
    nb["cells"] = kept
    return json.dumps(nb, indent=1, ensure_ascii=False).encode()


def _grid_from_args(ap: argparse.ArgumentParser, specs: list[list[str]]) -> dict[str, list]:
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        if len(spec) < 2:
            ap.error(f"-p {spec[0]} needs at least one value")
        if spec[0] in grid:
            ap.error(f"parameter {spec[0]!r} is given twice (-p {spec[0]} ...); list all its "
                     f"values after one -p: -p {spec[0]} V1 V2 ...")
        grid[spec[0]] = [parse_value(v) for v in spec[1:]]
    return grid


def _timeout_option(text: str) -> float:
    """``--timeout``'s value, checked as it is parsed (a usage error names the option)."""
    try:
        return _check_timeout(float(text), "--timeout")  # type: ignore[return-value]
    except ValueError as err:
        detail = str(err).removeprefix("--timeout ")
        raise argparse.ArgumentTypeError(
            detail if detail != str(err) else f"must be a number of seconds, got {text!r}"
        ) from None


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m mrflib sweep ...``; returns the number of failed points.

    Usage errors, bad arguments, a folder held by another sweep and any other failure exit
    with status 2 and one line on stderr naming the file or the option (the traceback with
    ``--debug``).
    """
    ap = Parser(prog="python -m mrflib sweep",
                description="Run a notebook over a parameter grid.")
    ap.add_argument("notebook")
    ap.add_argument("-p", "--param", nargs="+", action="append", metavar=("NAME", "VALUE"),
                    required=True, help="a parameter and its values; give each name once")
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address")
    ap.add_argument("--timeout", type=_timeout_option, default=None,
                    help=f"seconds per point (positive, at most {MAX_TIMEOUT:.0f})")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    grid = _grid_from_args(ap, args.param)
    try:
        df = sweep(args.notebook, grid, args.out, workers=args.workers,
                   scheduler=args.scheduler, progress=not args.no_progress,
                   timeout=args.timeout)
    except Exception as err:  # noqa: BLE001 - one line (the traceback with --debug)
        fail(ap, err, args.debug)
    bad = df.loc[df["status"] != "ok", "run"].unique()
    n_points = df["run"].nunique()
    print(f"{n_points - len(bad)} of {n_points} points succeeded; table: "
          f"{Path(args.out) / 'results.csv'}")
    for name in bad:
        err = df.loc[df["run"] == name, "error"].iloc[0]
        print(f"  FAILED {name}: {err}", file=sys.stderr)
    return min(len(bad), 255)

