"""Run a chapter at the papers' scale: chunks as sweep points, then one merging run.

``python -m mrflib paper NOTEBOOK [NOTEBOOK ...] --chunks K --out DIR [--workers W]
[--scheduler ADDR] [--publish book/results/paper]``

For each notebook:

1. **Chunks.** :func:`mrflib.sweep.sweep` runs the notebook with ``profile="paper"`` and
   ``n_chunks=K``, ``chunk=0..K-1`` as K points in ``DIR/<chapter>/chunks`` (locally, ``W`` at
   a time, or on a Dask cluster). Each chunk computes its share of every trial loop
   (:class:`mrflib.repro.trials.Trials`) and sends the trials back as files the sweep stores
   with checksums. A stopped sweep resumes where it stopped; a failed chunk is retried.
2. **Collect.** The trial files of every verified point are copied into the trial store
   ``DIR/<chapter>/trials``.
3. **Merge.** The notebook runs once more with ``n_chunks=1`` and ``trial_cache`` set to the
   store: it reads every stored trial (computing, and storing, any that no chunk delivered),
   draws the figures and records the numbers into ``DIR/<chapter>/results/<chapter>.csv``.
   Each trial's generator depends only on the seed, the loop and the trial index, so the
   result is the one an uninterrupted run with the same seed gives. Stopped, it resumes.

With ``--chunks 1`` step 1 is skipped and the merge run is the whole run (resumable through
the store). ``--publish FOLDER`` copies the recorded numbers to ``FOLDER/<chapter>.csv``, the
merged run's captioned figures to ``FOLDER/figures/<name>.png`` and adds the run's commit,
date, machine, command and wall times to ``FOLDER/provenance.json`` and ``PROVENANCE.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import experiments, sweep
from .._files import atomic_write

__all__ = ["run_chapter", "collect", "figures", "publish", "main"]

PROFILE = "paper"
_REPO = Path(__file__).resolve().parents[2]


def _chunk_grid(n_chunks: int, seed: int, profile: str) -> dict[str, list[Any]]:
    return {"profile": [profile], "seed": [seed], "n_chunks": [n_chunks],
            "chunk": list(range(n_chunks))}


def collect(chunks: Path, pts: list[sweep.Point], store: Path) -> dict[str, int]:
    """Copy the trial files of every finished point of ``chunks`` into ``store``.

    Only files of points whose manifest verifies are read (:func:`mrflib.sweep.point_files`).
    Returns ``{"points": finished points, "files": trial files copied or already there}``.
    """
    done = files = 0
    for p in pts:
        state, message, stored = sweep.check_point(chunks, p)
        if state != "done":
            print(f"chunk {p.name}: {state} {message}".rstrip(), file=sys.stderr)
            continue
        done += 1
        prefix = f"{p.name}.results/trials/"
        for rel, data in stored.items():
            if not rel.startswith(prefix):
                continue
            target = store / rel[len(prefix):]
            if not (target.exists() and target.read_bytes() == data):
                atomic_write(target, data)
            files += 1
    return {"points": done, "files": files}


def run_chapter(notebook: str | Path, out: str | Path, *, n_chunks: int = 1, workers: int = 2,
                scheduler: Any = None, seed: int = 0, progress: bool = True,
                profile: str = PROFILE) -> dict[str, Any]:
    """Run one chapter at the paper profile in chunks and merge them (see the module).

    ``profile`` exists for tests (``"quick"`` checks the merge in seconds).

    Returns a record of the run: chapter, chunks, seconds of the chunk sweep (wall) and the
    sum of the chunks' own seconds, seconds of the merge, trials computed in the merge, the
    merged notebook and results paths, and ``ok``.
    """
    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise ValueError(f"notebook must be an existing .ipynb file, got {str(notebook)!r}")
    if isinstance(n_chunks, bool) or not isinstance(n_chunks, int) or n_chunks < 1:
        raise ValueError(f"n_chunks must be an int >= 1, got {n_chunks!r}")
    chapter = notebook.stem
    base = Path(out).resolve() / chapter
    store, results = base / "trials", base / "results"
    if profile not in experiments.PROFILES:
        raise ValueError(f"profile must be one of {experiments.PROFILES}, got {profile!r}")
    rec: dict[str, Any] = {"chapter": chapter, "n_chunks": n_chunks, "seed": seed,
                           "profile": profile, "commit": _commit(_REPO),
                           "chunk_wall_s": 0.0, "chunk_sum_s": 0.0}
    if n_chunks > 1:
        pts = sweep.points(notebook, _chunk_grid(n_chunks, seed, profile))
        done_before = _chunk_seconds(base / "chunks", pts)
        t0 = time.perf_counter()
        table = sweep.sweep(notebook, _chunk_grid(n_chunks, seed, profile), base / "chunks",
                            workers=workers, scheduler=scheduler, progress=progress)
        rec["chunk_sum_s"] = _chunk_seconds(base / "chunks", pts)
        ran = rec["chunk_sum_s"] != done_before
        rec.update(_add_chunk_time(base / "chunks", time.perf_counter() - t0 if ran else 0.0,
                                   rec["commit"] if ran else None))
        rec["chunks_failed"] = int((table.groupby("run")["status"].first() != "ok").sum())
        rec.update(collect(base / "chunks", pts, store))
    (results / f"{chapter}.csv").unlink(missing_ok=True)  # rows of this merge only
    before = _count(store)
    t0 = time.perf_counter()
    merged = base / f"{chapter}.ipynb"
    run = sweep.execute(notebook, merged, {"profile": profile, "seed": seed,
                                           "trial_cache": str(store)},
                        results_dir=results, cwd=notebook.parent)
    rec.update(merge_s=time.perf_counter() - t0, merge_computed=_count(store) - before,
               ok=run["ok"], error=run["error"], notebook=str(merged),
               results=str(results / f"{chapter}.csv"))
    return rec


def _add_chunk_time(chunks: Path, seconds: float, commit: str | None) -> dict[str, Any]:
    """Add one sweep's wall time to the chunk folder's tally (``wall.json``), so a run resumed
    over several sessions reports the wall time of all of them and every commit that ran
    chunks. Returns ``chunk_wall_s`` and ``chunk_commits``."""
    path = chunks / "wall.json"
    try:
        tally = json.loads(path.read_text())
        total, commits = float(tally["seconds"]), list(tally["commits"])
    except (OSError, ValueError, KeyError, TypeError):
        total, commits = 0.0, []
    total += seconds
    if commit is not None and commit not in commits:
        commits.append(commit)
    atomic_write(path, json.dumps({"seconds": total, "commits": commits}).encode())
    return {"chunk_wall_s": total, "chunk_commits": commits}


def _count(store: Path) -> int:
    return sum(1 for _ in store.rglob("*.pkl")) if store.exists() else 0


def _chunk_seconds(chunks: Path, pts: list[sweep.Point]) -> float:
    total = 0.0
    for p in pts:
        path = chunks / "runs" / f"{p.name}.manifest.json"
        try:
            total += float(json.loads(path.read_text())["seconds"])
        except (OSError, ValueError, KeyError):
            pass
    return total


def figures(notebook: str | Path) -> dict[str, bytes]:
    """The PNG figures of an executed notebook's captioned plotting cells, by figure name."""
    import base64

    nb = json.loads(Path(notebook).read_text())
    found: dict[str, bytes] = {}
    for cell in nb["cells"]:
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if cell["cell_type"] != "code" or not name:
            continue
        pngs = [o["data"]["image/png"] for o in cell.get("outputs", [])
                if "image/png" in o.get("data", {})]
        for k, png in enumerate(pngs):
            key = name if len(pngs) == 1 else f"{name}-{k + 1}"
            found[key] = base64.b64decode("".join(png) if isinstance(png, list) else png)
    return found


def _commit(root: Path) -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":!book/results"],
                               cwd=root, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + (" (with uncommitted changes)" if dirty else "")


def _machine() -> str:
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {mem:.0f} GiB, "
            f"Python {platform.python_version()}")


def publish(rec: dict[str, Any], dest: str | Path, command: str) -> None:
    """Copy a finished run's numbers and figures to ``dest`` and record its provenance."""
    if rec.get("profile", PROFILE) != PROFILE:
        raise ValueError(f"only paper-profile runs are published, this one is "
                         f"{rec.get('profile')!r}")
    if not rec.get("ok"):
        raise ValueError(f"run of {rec.get('chapter')} did not finish: {rec.get('error')}")
    dest = Path(dest)
    chapter = rec["chapter"]
    atomic_write(dest / f"{chapter}.csv", Path(rec["results"]).read_bytes())
    for name, png in figures(rec["notebook"]).items():
        atomic_write(dest / "figures" / f"{name}.png", png)
    prov_path = dest / "provenance.json"
    prov = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    prov[chapter] = {
        "commit": rec["commit"], "chunk_commits": rec.get("chunk_commits", [rec["commit"]]),
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(), "command": command, "chunks": rec["n_chunks"],
        "seed": rec["seed"], "chunk_wall_s": round(rec["chunk_wall_s"], 1),
        "chunk_sum_s": round(rec["chunk_sum_s"], 1), "merge_s": round(rec["merge_s"], 1),
        "merge_computed_trials": rec["merge_computed"],
    }
    atomic_write(prov_path, json.dumps(prov, indent=1, sort_keys=True).encode())
    atomic_write(dest / "PROVENANCE.md", provenance_markdown(prov).encode())


def provenance_markdown(prov: dict[str, dict[str, Any]]) -> str:
    """``PROVENANCE.md``: one row per chapter of the committed paper-profile results."""
    lines = [
        "# Provenance of the paper-profile results",
        "",
        "Each `<chapter>.csv` here holds the numbers a chapter recorded when run with",
        "`profile=\"paper\"` by `python -m mrflib paper` (chunks as sweep points, then one",
        "merging run; see `mrflib/repro/paper.py`). `figures/` holds that run's captioned",
        "figures. Wall times are of this machine; *chunks* is the wall time of the chunk sweep,",
        "*chunk sum* the chunks' own run times added (the time one process would need),",
        "*merge* the merging run (which reads the chunks' trials and draws the figures).",
        "A chapter's trials are keyed by their function's source and parameters, so a merge",
        "at a later commit reads the chunks' trials only if those are unchanged (else it",
        "computes them again); the commit column names the merge's commit and the chunks'.",
        "",
        "| chapter | commit | date (UTC) | machine | chunks | chunks wall | chunk sum | merge "
        "| command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for chapter in sorted(prov):
        p = prov[chapter]
        dirty = " (dirty)" if "uncommitted" in p["commit"] else ""
        chunked = ", ".join(f"`{c[:12]}`" for c in p.get("chunk_commits", []))
        lines.append(
            f"| {chapter} | merge `{p['commit'][:12]}`{dirty}"
            + (f"; chunks {chunked}" if chunked else "")
            + f" | {p['date_utc']} | {p['machine']} | {p['chunks']} | {_mins(p['chunk_wall_s'])} "
            + f"| {_mins(p['chunk_sum_s'])} | {_mins(p['merge_s'])} | `{p['command']}` |")
    total = sum(p["chunk_wall_s"] + p["merge_s"] for p in prov.values())
    lines += ["", f"Total wall time of the chapters listed: {_mins(total)}.", ""]
    return "\n".join(lines)


def _mins(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m mrflib paper ...``; returns the number of failed chapters."""
    ap = argparse.ArgumentParser(prog="python -m mrflib paper",
                                 description="Run chapters at the paper profile in chunks.")
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--chunks", type=int, default=1, help="chunks per chapter (sweep points)")
    ap.add_argument("--out", type=Path, default=Path("_build/paper"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default=PROFILE, choices=experiments.PROFILES,
                    help="the notebook profile (paper; quick to try the machinery)")
    ap.add_argument("--publish", type=Path, default=None,
                    help="copy numbers, figures and provenance here (book/results/paper)")
    args = ap.parse_args(argv)
    command = "python -m mrflib paper " + " ".join(sys.argv[1:] if argv is None else argv)
    failed = 0
    for nb in args.notebooks:
        try:
            rec = run_chapter(nb, args.out, n_chunks=args.chunks, workers=args.workers,
                              scheduler=args.scheduler, seed=args.seed, profile=args.profile)
        except (ValueError, sweep.SweepBusy) as err:
            ap.error(str(err))
        status = "ok" if rec["ok"] else "FAILED"
        print(f"{rec['chapter']}: {status}; chunks {_mins(rec['chunk_wall_s'])} "
              f"(sum {_mins(rec['chunk_sum_s'])}), merge {_mins(rec['merge_s'])}, "
              f"{rec['merge_computed']} trials computed in the merge", flush=True)
        if not rec["ok"]:
            failed += 1
            print(rec["error"], file=sys.stderr)
        elif args.publish is not None:
            publish(rec, args.publish, command)
    return min(failed, 255)
