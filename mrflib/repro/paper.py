"""Run a chapter at the papers' scale: chunks as sweep points, then one merging run.

``python -m mrflib paper NOTEBOOK [NOTEBOOK ...] --chunks K --out DIR [--workers W]
[--scheduler ADDR] [--publish book/results/paper]``

For each notebook:

1. **Chunks.** :func:`mrflib.repro.sweep.sweep` runs the notebook with ``profile="paper"``
   as K points ``chunk=0..K-1`` of ``n_chunks=K`` in ``DIR/<chapter>/chunks`` (locally,
   ``W`` at a time, or on a Dask cluster). The chunk reaches the notebook's trials as
   environment variables set where the notebook runs (:data:`CHUNK_ENV`), not as
   parameters a chapter would have to declare. Each chunk computes its share of every
   trial loop (:class:`mrflib.repro.trials.Trials`) and sends the trials back as files the
   sweep stores with checksums. A stopped sweep resumes where it stopped; a failed chunk is
   retried. Cells tagged ``merge-only`` (:data:`MERGE_ONLY`: work only the merge needs:
   summaries, figures, records and timings of the trials, which a chunk holds only a part
   of) are left out of the chunks' runs.
2. **Collect.** The trial files of every verified point are copied into the trial store
   ``DIR/<chapter>/trials``.
3. **Merge.** The notebook runs once more, whole, with the store in the environment
   (:data:`~mrflib.repro.trials.TRIAL_CACHE_ENV`): it reads every stored trial (computing,
   and storing, any that no chunk delivered), draws the figures and records the numbers
   into ``DIR/<chapter>/results/<chapter>.csv``.
   Each trial's generator depends only on the seed, the loop and the trial index, so the
   result is the one an uninterrupted run with the same seed gives. Stopped, it resumes.

With ``--chunks 1`` step 1 is skipped and the merge run is the whole run (resumable through
the store). ``--publish FOLDER`` copies the recorded numbers to ``FOLDER/<chapter>.csv``, the
merged run's captioned figures to ``FOLDER/figures/<name>.png`` and adds the run's commit,
date, machine, command and wall times to ``FOLDER/provenance.json`` and ``PROVENANCE.md``.

Safety
    Everything is checked before anything runs: the notebook's parameters cell must define
    ``profile`` and ``seed``; ``--chunks`` is at most :data:`MAX_CHUNKS`; no folder the run
    writes may be a file; a ``--publish`` folder must be writable, only paper-profile runs
    are published, and its ``provenance.json`` must be readable (:func:`read_provenance`).
    One ``paper`` command at a time per chapter folder (``DIR/<chapter>/.paper.lock``,
    refused at once like a second sweep). A chunk sweep that stores no trial, or whose
    chunks record numbers, means the notebook ignores its chunk: the chapter fails before
    the merge. The merge runs in ``DIR/<chapter>/merge-partial`` and its notebook and
    numbers replace the previous ones only when it succeeds (numbers last), so a killed
    merge leaves no file that looks finished. Trial files are checked by
    :mod:`mrflib.repro.trials` (see its security note: the store is unpickled and must be as
    trusted as the code).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mrflib._support.cli import Parser, check_folder, connect, fail
from mrflib._support.files import atomic_write, holder, lock, release, try_lock

from . import experiments, sweep, trials

__all__ = ["run_chapter", "check_run", "collect", "figures", "publish", "check_publish",
           "check_published", "read_provenance", "portable_command", "main"]

PROFILE = "paper"
#: The most chunks a chapter is split into. Each chunk is one notebook run (seconds of
#: start-up); chunks beyond a loop's trial count compute nothing of it (the paper profiles'
#: loops have at most a few thousand trials), and a million chunks would be a million
#: notebook runs of start-up alone; more is refused, not attempted.
MAX_CHUNKS = 1000
#: The cell tag of work only the merging run needs (timings, which chunks running side by
#: side would measure under each other's load and then throw away): chunks leave such cells
#: out. A cell a later cell needs must not carry it unless that cell carries it too.
MERGE_ONLY = "merge-only"
#: The notebook parameters a chapter needs to run in chunks and be merged. The chunk itself
#: is not a parameter: it reaches the chapter's trials as environment variables
#: (:data:`CHUNK_ENV`), so that no chapter shows the runner's plumbing.
CHUNK_PARAMETERS = ("profile", "seed")
#: Chunk grid parameters -> the environment variables :class:`~mrflib.repro.trials.Trials`
#: reads (:func:`~mrflib.repro.trials.run_settings`).
CHUNK_ENV = {"chunk": trials.CHUNK_ENV, "n_chunks": trials.N_CHUNKS_ENV}
_REPO = Path(__file__).resolve().parents[2]


def _chunk_grid(n_chunks: int, seed: int, profile: str) -> dict[str, list[Any]]:
    return {"profile": [profile], "seed": [seed], "n_chunks": [n_chunks],
            "chunk": list(range(n_chunks))}


def collect(chunks: Path, pts: list[sweep.Point], store: Path) -> dict[str, int]:
    """Copy the trial files of every finished point of ``chunks`` into ``store``.

    Only files of points whose manifest verifies are read (:func:`mrflib.repro.sweep.point_files`).
    Returns ``{"points": finished points, "files": trial files copied or already there,
    "recorded": numbers files the chunks recorded (0 for a chunk-aware notebook)}``.
    """
    done = files = recorded = 0
    for p in pts:
        state, message, stored = sweep.check_point(chunks, p)
        if state != "done":
            print(f"chunk {p.name}: {state} {message}".rstrip(), file=sys.stderr)
            continue
        done += 1
        prefix = f"{p.name}.results/trials/"
        for rel, data in stored.items():
            if not rel.startswith(prefix):
                recorded += rel.startswith(f"{p.name}.results/") and rel.endswith(".csv")
                continue
            target = store / rel[len(prefix):]
            if not (target.exists() and target.read_bytes() == data):
                atomic_write(target, data)
            files += 1
    return {"points": done, "files": files, "recorded": recorded}


def run_chapter(notebook: str | Path, out: str | Path, *, n_chunks: int = 1, workers: int = 2,
                scheduler: Any = None, seed: int = 0, progress: bool = True,
                profile: str = PROFILE) -> dict[str, Any]:
    """Run one chapter at the paper profile in chunks and merge them (see the module).

    ``profile`` exists for tests (``"quick"`` checks the merge in seconds).

    Returns a record of the run: chapter, chunks, seconds of the chunk sweep (wall) and the
    sum of the chunks' own seconds, seconds of the merge, trials computed in the merge, the
    merged notebook and results paths, and ``ok``.

    Raises
    ------
    ValueError
        Bad arguments, a notebook without the chunk parameters, or a folder of the run that
        is a file (all checked before anything runs).
    mrflib.repro.sweep.SweepBusy
        Another ``paper`` command is running this chapter in ``out``.
    """
    notebook, base = check_run(notebook, out, n_chunks=n_chunks, workers=workers, seed=seed,
                               profile=profile)
    base.mkdir(parents=True, exist_ok=True)
    fd = try_lock(base / ".paper.lock", f"python -m mrflib paper {notebook.name}")
    if fd is None:
        raise sweep.SweepBusy(f"chapter folder {base} is in use by another paper run (pid "
                              f"{holder(base / '.paper.lock')}); wait for it to finish or "
                              f"choose another --out")
    try:
        return _run_locked(notebook, base, n_chunks, workers, scheduler, seed, progress,
                           profile)
    finally:
        release(fd)


def _run_locked(notebook: Path, base: Path, n_chunks: int, workers: int, scheduler: Any,
                seed: int, progress: bool, profile: str) -> dict[str, Any]:
    chapter, store = notebook.stem, base / "trials"
    for stale in store.rglob(".*.tmp") if store.exists() else ():
        stale.unlink(missing_ok=True)  # temporary files of a killed writer (we hold the lock)
    rec: dict[str, Any] = {"chapter": chapter, "n_chunks": n_chunks, "seed": seed,
                           "profile": profile, "commit": _commit(_REPO),
                           "chunk_wall_s": 0.0, "chunk_sum_s": 0.0, "merge_s": 0.0,
                           "merge_computed": 0, "notebook": str(base / f"{chapter}.ipynb"),
                           "results": str(base / "results" / f"{chapter}.csv")}
    if n_chunks > 1:
        pts = sweep.points(notebook, _chunk_grid(n_chunks, seed, profile))
        finished = sum(sweep.check_point(base / "chunks", p)[0] == "done" for p in pts)
        rec["chunk_commits"] = _add_chunk_commit(
            base / "chunks", rec["commit"] if finished < len(pts) else None)
        table = sweep.sweep(notebook, _chunk_grid(n_chunks, seed, profile), base / "chunks",
                            workers=workers, scheduler=scheduler, progress=progress,
                            skip_tags=(MERGE_ONLY,), env_parameters=CHUNK_ENV)
        rec["chunk_wall_s"], rec["chunk_sum_s"] = _chunk_seconds(base / "chunks", pts)
        rec["chunks_failed"] = int((table.groupby("run")["status"].first() != "ok").sum())
        rec.update(collect(base / "chunks", pts, store))
        if rec["points"] and (rec["recorded"] or not rec["files"]):
            what = ("recorded numbers" if rec["recorded"] else "stored no trial")
            return {**rec, "ok": False, "error": (
                f"the chunks of {notebook.name} {what}: the notebook ignores its chunk "
                f"(it gives Trials a chunk of its own) or has no trial loop (run its loops "
                f"with Chapter.trials(seed).map), so chunks would repeat the whole run; run "
                f"it with --chunks 1")}
    rec.update(_merge(notebook, base, profile, seed))
    return rec


def _merge(notebook: Path, base: Path, profile: str, seed: int) -> dict[str, Any]:
    """The merging run, in ``base/merge-partial``; its notebook and numbers replace the
    previous ones only if it succeeds (the numbers last, so present means finished)."""
    chapter, store = notebook.stem, base / "trials"
    merged, results = base / f"{chapter}.ipynb", base / "results" / f"{chapter}.csv"
    results.unlink(missing_ok=True)  # from now on no finished merge is on disk
    merged.unlink(missing_ok=True)
    scratch = base / "merge-partial"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    since, t0 = time.time(), time.perf_counter()
    run = sweep.execute(notebook, scratch / merged.name, {"profile": profile, "seed": seed},
                        results_dir=scratch / "results", cwd=notebook.parent,
                        env={trials.TRIAL_CACHE_ENV: str(store)})
    done = {"merge_s": time.perf_counter() - t0, "merge_computed": _count(store, since),
            "ok": run["ok"], "error": run["error"]}
    numbers = scratch / "results" / f"{chapter}.csv"
    if run["ok"] and not numbers.exists():
        return {**done, "ok": False, "error": f"the merging run of {notebook.name} recorded "
                                              f"no numbers (nothing to publish)"}
    if not run["ok"]:
        return {**done, "notebook": str(scratch / merged.name)}  # the failed run, to read
    os.replace(scratch / merged.name, merged)
    atomic_write(results, numbers.read_bytes())
    shutil.rmtree(scratch, ignore_errors=True)
    return done


def check_run(notebook: str | Path, out: str | Path, *, n_chunks: int, workers: int,
              seed: int, profile: str) -> tuple[Path, Path]:
    """Check a chapter run's arguments before anything runs; return the notebook and the
    chapter's folder ``out/<stem>`` (resolved)."""
    path = Path(notebook).resolve() if isinstance(notebook, (str, Path)) else None
    if path is None or path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"notebook must be an existing .ipynb file, got {str(notebook)!r}")
    for name, value, low in (("n_chunks (--chunks)", n_chunks, 1), ("workers", workers, 1),
                             ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if n_chunks > MAX_CHUNKS:
        raise ValueError(f"n_chunks (--chunks) must be at most {MAX_CHUNKS}, got {n_chunks}: "
                         f"each chunk is one notebook run, and chunks past a loop's trial "
                         f"count have nothing of it to compute")
    if profile not in experiments.PROFILES:
        raise ValueError(f"profile must be one of {experiments.PROFILES}, got {profile!r}")
    lacking = [k for k in CHUNK_PARAMETERS if k not in sweep.notebook_parameters(path)]
    if lacking:
        raise ValueError(f"notebook {path.name} cannot run in chunks: its parameters cell does "
                         f"not define {', '.join(lacking)} (a chapter declares profile and "
                         f"seed and runs its loops with Chapter.trials(seed).map; see "
                         f"notebooks/smci_error_point.ipynb)")
    if not isinstance(out, (str, Path)) or not str(out):
        raise ValueError(f"out must be a folder path, got {out!r}")
    base = Path(out).resolve() / path.stem
    for folder in (base, base / "chunks", base / "trials", base / "results",
                   base / "merge-partial"):
        check_folder(folder, "out")
    return path, base


def _add_chunk_commit(chunks: Path, commit: str | None) -> list[str]:
    """Add ``commit`` to the commits that ran chunks of this folder (``commits.json``; the
    first format's ``wall.json`` is read too), so a run resumed over several sessions names
    all of them. Called before the chunks run, so a session killed after some chunks finished
    is named too. Returns the list."""
    path = chunks / "commits.json"
    commits: list[str] = []
    for source in (chunks / "wall.json", path):
        try:
            commits += [str(c) for c in json.loads(source.read_text())["commits"]
                        if str(c) not in commits]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if commit is not None and commit not in commits:
        commits.append(commit)
        atomic_write(path, json.dumps({"commits": commits}).encode())
    return commits


def _count(store: Path, since: float) -> int:
    """Trial files in ``store`` written at or after ``since`` (epoch seconds)."""
    if not store.exists():
        return 0
    return sum(1 for f in store.rglob("*.pkl") if f.stat().st_mtime >= since)


def _chunk_seconds(chunks: Path, pts: list[sweep.Point]) -> tuple[float, float]:
    """``(wall, sum)`` of the finished chunks, from their manifests: the time during which at
    least one of them was running (the union of their ``[finish - seconds, finish]``
    intervals, so a run resumed over several sessions counts every session and no idle time
    between them; work of chunks killed before they finished is not counted) and the sum of
    their own run times."""
    spans = []
    for p in pts:
        path = chunks / "runs" / f"{p.name}.manifest.json"
        try:
            m = json.loads(path.read_text())
            end = datetime.fromisoformat(m["finished_utc"]).timestamp()
            spans.append((end - float(m["seconds"]), end))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    wall, reach = 0.0, -float("inf")
    for start, end in sorted(spans):
        wall += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return wall, sum(end - start for start, end in spans)


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


def publish(rec: dict[str, Any], dest: str | Path, command: str) -> None:
    """Copy a finished run's numbers and figures to ``dest`` and record its provenance.

    ``dest`` is checked (:func:`check_publish`) before anything is written, and locked
    (``dest/.publish.lock``) while it is written, so two commands publishing to one folder
    never lose each other's provenance. The figures are written first, then the numbers,
    then ``provenance.json`` and ``PROVENANCE.md``; figures an earlier run of the chapter
    published and this one no longer draws are removed. The provenance holds the SHA-256 of
    the numbers and of each figure, so files a publish killed partway left beside an older
    provenance are refused when read (:func:`check_published`), never read as good.
    """
    if rec.get("profile", PROFILE) != PROFILE:
        raise ValueError(f"only paper-profile runs are published, this one is "
                         f"{rec.get('profile')!r}")
    if not rec.get("ok"):
        raise ValueError(f"run of {rec.get('chapter')} did not finish: {rec.get('error')}")
    dest = check_publish(dest)
    chapter = rec["chapter"]
    pngs = figures(rec["notebook"])
    bad = [name for name in pngs if not experiments._CHAPTER.fullmatch(name)]
    if bad:
        raise ValueError(f"figure names must be plain names (letters, digits, '_', '-', '.'), "
                         f"got {bad} in {rec['notebook']}")
    numbers = Path(rec["results"]).read_bytes()
    dest.mkdir(parents=True, exist_ok=True)
    with lock(dest / ".publish.lock"):
        prov = read_provenance(dest)
        for name, png in pngs.items():
            atomic_write(dest / "figures" / f"{name}.png", png)
        for old in set(prov.get(chapter, {}).get("figures", [])) - set(pngs):
            if experiments._CHAPTER.fullmatch(str(old)):
                (dest / "figures" / f"{old}.png").unlink(missing_ok=True)
        atomic_write(dest / f"{chapter}.csv", numbers)
        prov[chapter] = {
            "commit": rec["commit"], "chunk_commits": rec.get("chunk_commits", [rec["commit"]]),
            "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": experiments.machine(), "command": portable_command(command),
            "chunks": rec["n_chunks"],
            "seed": rec["seed"], "chunk_wall_s": round(rec["chunk_wall_s"], 1),
            "chunk_sum_s": round(rec["chunk_sum_s"], 1), "merge_s": round(rec["merge_s"], 1),
            "merge_computed_trials": rec["merge_computed"], "figures": sorted(pngs),
            "sha256": {"csv": _sha(numbers),
                       "figures": {name: _sha(png) for name, png in sorted(pngs.items())}},
        }
        atomic_write(dest / "provenance.json", json.dumps(prov, indent=1, sort_keys=True).encode())
        atomic_write(dest / "PROVENANCE.md", provenance_markdown(prov).encode())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_published(folder: str | Path, chapter: str, name: str = "") -> None:
    """Check that a published chapter's numbers (or, with ``name``, its figure ``name``) are
    the bytes its ``provenance.json`` entry names.

    Entries written before digests were recorded are taken as they are.

    Raises
    ------
    ValueError
        The chapter has no provenance entry, or the file differs from its recorded digest (a
        publish stopped partway, or an edit); the message names the file and how to restore
        it.
    """
    folder = Path(folder)
    prov = read_provenance(folder)
    if chapter not in prov:
        raise ValueError(f"{folder / (chapter + '.csv')} has no entry in "
                         f"{folder / 'provenance.json'}: a first publish was stopped partway; "
                         f"publish the chapter again or remove the file")
    digests = prov[chapter].get("sha256")
    if not isinstance(digests, dict):
        return
    path, want = ((folder / "figures" / f"{name}.png", digests.get("figures", {}).get(name))
                  if name else (folder / f"{chapter}.csv", digests.get("csv")))
    if want is None:
        return
    try:
        ok = _sha(path.read_bytes()) == want
    except OSError:
        ok = False
    if not ok:
        raise ValueError(f"{path} does not match the digest in {folder / 'provenance.json'}: a "
                         f"publish was stopped partway or the file was edited; publish the "
                         f"chapter again or restore the folder from git")


def check_publish(dest: str | Path) -> Path:
    """Check a publishing folder before a run: a folder (or creatable), writable, with a
    readable ``provenance.json`` if it has one. Returns it as a Path."""
    if not isinstance(dest, (str, Path)) or not str(dest):
        raise ValueError(f"publish must be a folder path, got {dest!r}")
    dest = check_folder(dest, "publish")
    check_folder(dest / "figures", "publish")
    read_provenance(dest)
    return dest


#: Fields of a chapter's entry in ``provenance.json`` and their types.
_PROVENANCE_FIELDS = {"commit": str, "date_utc": str, "machine": str, "command": str,
                      "chunks": int, "chunk_wall_s": (int, float), "chunk_sum_s": (int, float),
                      "merge_s": (int, float)}


def read_provenance(folder: str | Path) -> dict[str, dict[str, Any]]:
    """The ``provenance.json`` of a paper results folder: chapter -> run (``{}`` if absent).

    Raises
    ------
    ValueError
        The file is unreadable, not JSON, or a chapter's entry lacks a field (commit,
        date_utc, machine, command, chunks, chunk_wall_s, chunk_sum_s, merge_s) or has one
        of the wrong type; the message names the file and the entry.
    """
    path = Path(folder) / "provenance.json"
    if not path.exists():
        return {}
    try:
        prov = json.loads(path.read_bytes())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} is unreadable ({err}); restore it from git") from None
    if not isinstance(prov, dict):
        raise ValueError(f"{path} must hold a JSON object (chapter -> run), got "
                         f"{type(prov).__name__}; restore it from git")
    for chapter, run in prov.items():
        wrong = ([k for k, kind in _PROVENANCE_FIELDS.items() if not isinstance(run.get(k), kind)
                  or isinstance(run.get(k), bool)] if isinstance(run, dict) else ["all fields"])
        if wrong:
            raise ValueError(f"{path}: the entry of {chapter!r} lacks or has a wrong "
                             f"{', '.join(wrong)}; restore it from git")
    return prov


def provenance_markdown(prov: dict[str, dict[str, Any]], title: bool = True,
                        narrow: bool = False) -> str:
    """``PROVENANCE.md``: one row per chapter of the committed paper-profile results (without
    its title, ``title=False``, for inclusion in a book page; ``narrow``: four columns, the
    run's facts and its wall times each in one cell, so that the table fits a book's text
    column with its command wrapped rather than cut)."""
    lines = [
        *(["# Provenance of the paper-profile results", ""] if title else []),
        "Each `book/results/paper/<chapter>.csv` holds the numbers a chapter recorded when run",
        "with `profile=\"paper\"` by `python -m mrflib paper` (chunks as sweep points, then one",
        "merging run; see `mrflib/repro/paper.py`), and `book/results/paper/figures/` that",
        "run's captioned figures. Wall times are of this machine; *chunks wall* is the time",
        "during which at least one chunk was running (over every session of a resumed run;",
        "chunks killed before they finished are not counted), *chunk sum* the chunks' own run",
        "times added (about the time one process would need),",
        "*merge* the merging run (which reads the chunks' trials and draws the figures).",
        "A chapter's trials are keyed by their function's source and parameters, so a merge",
        "at a later commit reads the chunks' trials only if those are unchanged (else it",
        "computes them again); the commit column names the merge's commit and the chunks'.",
        "",
    ]
    if narrow:
        lines += ["| chapter | run | wall time | command |", "|---|---|---|---|"]
    else:
        lines += ["| chapter | commit | date (UTC) | machine | chunks | chunks wall | chunk sum "
                  "| merge | command |", "|---|---|---|---|---|---|---|---|---|"]
    for chapter in sorted(prov):
        p = prov[chapter]
        dirty = " (dirty)" if "uncommitted" in p["commit"] else ""
        chunked = ", ".join(f"`{c[:12]}`" for c in p.get("chunk_commits", []))
        if narrow:
            lines.append(
                f"| {chapter} | merge `{p['commit'][:12]}`{dirty}"
                + (f"; chunks {chunked}" if chunked else "")
                + f"; {p['date_utc']}; {p['machine']}; {p['chunks']} chunks "
                + f"| chunks wall {_mins(p['chunk_wall_s'])}; chunk sum "
                + f"{_mins(p['chunk_sum_s'])}; merge {_mins(p['merge_s'])} "
                + f"| `{portable_command(p['command'])}` |")
            continue
        lines.append(
            f"| {chapter} | merge `{p['commit'][:12]}`{dirty}"
            + (f"; chunks {chunked}" if chunked else "")
            + f" | {p['date_utc']} | {p['machine']} | {p['chunks']} | {_mins(p['chunk_wall_s'])} "
            + f"| {_mins(p['chunk_sum_s'])} | {_mins(p['merge_s'])} "
            + f"| `{portable_command(p['command'])}` |")
    total = sum(p["chunk_wall_s"] + p["merge_s"] for p in prov.values())
    lines += ["", f"Total wall time of the chapters listed: {_mins(total)}.", ""]
    return "\n".join(lines)


def portable_command(command: str) -> str:
    """``command`` with every absolute path replaced by ``DIR``: a folder of the machine that
    ran it means nothing to a reader elsewhere, and the book shows the command to rerun.

    Examples
    --------
    >>> portable_command("python -m mrflib paper nb.ipynb --out /home/me/runs --publish out")
    'python -m mrflib paper nb.ipynb --out DIR --publish out'
    """
    return re.sub(r"(?<![^\s=])(?:/|[A-Za-z]:\\)[^\s]*", "DIR", str(command))


def _mins(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m mrflib paper ...``; returns the number of failed chapters.

    Every chapter's arguments, the folders, the publishing folder and the scheduler are
    checked before anything runs; a failure is one line on stderr naming the file or the
    option, exit status 2 (the traceback with ``--debug``).
    """
    ap = Parser(prog="python -m mrflib paper",
                description="Run chapters at the paper profile in chunks.")
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--chunks", type=int, default=1, help="chunks per chapter (sweep points)")
    ap.add_argument("--out", default="_build/paper")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default=PROFILE, choices=experiments.PROFILES,
                    help="the notebook profile (paper; quick to try the machinery)")
    ap.add_argument("--publish", default=None,
                    help="copy numbers, figures and provenance here (book/results/paper)")
    args = ap.parse_args(argv)
    command = "python -m mrflib paper " + " ".join(sys.argv[1:] if argv is None else argv)
    try:  # every chapter's arguments and the publishing folder before anything runs
        for nb in args.notebooks:
            check_run(nb, args.out, n_chunks=args.chunks, workers=args.workers,
                      seed=args.seed, profile=args.profile)
        if args.publish is not None:
            if args.profile != PROFILE:
                raise ValueError(f"--publish takes only paper-profile runs, not --profile "
                                 f"{args.profile}")
            check_publish(args.publish)
        client = None if args.scheduler is None else connect(args.scheduler)
    except Exception as err:  # noqa: BLE001 - one line (the traceback with --debug)
        fail(ap, err, args.debug)
    try:
        return _run_chapters(args, client, command)
    except Exception as err:  # noqa: BLE001
        fail(ap, err, args.debug)
    finally:
        if client is not None:
            client.close()


def _run_chapters(args: argparse.Namespace, client: Any, command: str) -> int:
    """Run (and publish) each chapter of the checked command line; the number that failed."""
    failed = 0
    for nb in args.notebooks:
        rec = run_chapter(nb, args.out, n_chunks=args.chunks, workers=args.workers,
                          scheduler=client, seed=args.seed, profile=args.profile)
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
