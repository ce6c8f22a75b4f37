#!/usr/bin/env python
"""Execute every notebook of the book with papermill, then render the HTML book.

    python tools/build_book.py [--profile quick|book|paper] [--jobs N] [--out _build]

Steps:

1. every notebook listed in ``_toc.yml`` is executed by papermill with ``-p profile ...``
   into ``<out>/src/notebooks/`` (the committed notebooks stay output-free); numbers the
   notebooks record go to ``<out>/results/<chapter>.csv``;
2. the narrative pages, the configuration and the bundled MathJax are staged beside them;
3. the reproduction scorecard is generated from the recorded numbers;
4. ``jupyter-book build`` (execution off) renders ``<out>/html``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))


def toc_files(root: Path = ROOT) -> list[str]:
    """All files named in ``_toc.yml`` (without suffix), in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return found


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks of the book, in toc order."""
    return [root / f"{f}.ipynb" for f in toc_files(root) if (root / f"{f}.ipynb").exists()]


def execute_notebook(nb: Path, out: Path, profile: str, results: Path) -> dict:
    """Run one notebook with papermill (profile set) in a subprocess; a status record."""
    from mrflib.sweep import execute

    out.parent.mkdir(parents=True, exist_ok=True)
    rec = execute(nb, out, {"profile": profile}, results_dir=results, cwd=nb.parent)
    return {"notebook": nb.stem, "output": out, **rec}


def execute_all(notebooks: list[Path], dest: Path, profile: str, results: Path,
                jobs: int = 1) -> list[dict]:
    """Execute notebooks (``jobs`` at a time) into ``dest``, printing one line each."""
    def run(nb: Path) -> dict:
        rec = execute_notebook(nb, dest / nb.name, profile, results)
        status = "ok" if rec["ok"] else "FAILED"
        print(f"  {nb.stem:<32} {status:>6} {rec['seconds']:8.1f} s", flush=True)
        return rec

    print(f"Executing {len(notebooks)} notebooks (profile={profile}, jobs={jobs})", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(run, notebooks))


def stage(src: Path, executed: dict[str, Path], root: Path = ROOT) -> None:
    """Copy configuration, pages, executed notebooks and MathJax into ``src``."""
    src.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, src / name)
    shutil.copytree(root / "book", src / "book", dirs_exist_ok=True)
    (src / "notebooks").mkdir(exist_ok=True)
    for stem, path in executed.items():
        target = src / "notebooks" / f"{stem}.ipynb"
        if path.resolve() != target.resolve():
            shutil.copy2(path, target)
    mathjax = root / "_build" / "vendor" / "mathjax"
    if not (mathjax / "tex-chtml.js").exists():
        raise SystemExit("MathJax is not bundled yet: run `make mathjax` first")
    shutil.copytree(mathjax, src / "_vendor" / "mathjax", dirs_exist_ok=True)


def render(src: Path, html: Path) -> None:
    """``jupyter-book build`` of the staged sources; the HTML ends up in ``html``."""
    work = src.parent / "site"
    cmd = [str(BIN / "jupyter-book"), "build", str(src), "--path-output", str(work),
           "--builder", "html", "--keep-going"]
    print("Rendering:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    if html.exists():
        shutil.rmtree(html)
    shutil.copytree(work / "_build" / "html", html)
    print(f"Book written to {html}/index.html")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--profile", default="book", choices=["quick", "book", "paper"])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "_build")
    ap.add_argument("--skip-execute", action="store_true",
                    help="reuse notebooks already executed into <out>/src/notebooks")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    src, results = out / "src", out / "results"
    notebooks = toc_notebooks()
    if args.skip_execute:
        executed = {nb.stem: src / "notebooks" / nb.name for nb in notebooks}
    else:
        if results.exists():
            shutil.rmtree(results)
        records = execute_all(notebooks, src / "notebooks", args.profile, results, args.jobs)
        failed = [r for r in records if not r["ok"]]
        for r in failed:
            print(f"\n--- {r['notebook']} failed ---\n{r['error']}", file=sys.stderr)
        if failed:
            return 1
        executed = {r["notebook"]: r["output"] for r in records}
    stage(src, executed)
    from mrflib import report

    report.write_pages(results, ROOT / "bench" / "results", src / "book")
    render(src, out / "html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
