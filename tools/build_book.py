#!/usr/bin/env python
"""Execute every notebook of the book with papermill, then render the HTML book.

    python tools/build_book.py [--profile quick|book|paper] [--jobs N] [--out _build]

Steps:

1. every notebook listed in ``_toc.yml`` is executed by papermill with ``-p profile ...``
   into ``<out>/src/notebooks/`` (the committed notebooks stay output-free); numbers the
   notebooks record go to ``<out>/results/<chapter>.csv``;
2. the narrative pages, the configuration and the bundled MathJax are staged beside them,
   and the executed notebooks are prepared for reading (:func:`present`): papermill's
   injected-parameters cell is hidden behind the one parameters cell, which says how to
   rerun the chapter, and each figure of a captioned plotting cell becomes its own captioned
   figure with alt text;
3. the reproduction scorecard is generated from the recorded numbers;
4. ``jupyter-book build`` (execution off) renders ``<out>/html`` and fails on any Sphinx
   warning (``-W -n``: nitpicky, so an unresolved reference is a warning too).
"""

from __future__ import annotations

import argparse
import copy
import json
import re
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
    from mrflib.repro.sweep import execute

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


# ----------------------------------------------------------------------------- presentation
PRESENTED = "mrflib_book_presented"  # notebook metadata flag: present() already ran


def _tags(cell: dict) -> list[str]:
    return cell.setdefault("metadata", {}).setdefault("tags", [])


def _assignments(source: str) -> dict[str, str]:
    """``name = value`` lines of a parameters cell (comments dropped), as source text."""
    found = {}
    for line in source.splitlines():
        m = re.match(r"^([A-Za-z_]\w*)\s*=\s*(.+?)\s*(#.*)?$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def present_parameters(cells: list[dict], stem: str) -> None:
    """One visible parameters cell that says how to rerun; papermill's copy is removed.

    The injected cell (tag ``injected-parameters``) gets ``remove-cell``; the cell tagged
    ``parameters`` gets a comment header with a papermill command and, when this build ran
    with other values than its defaults, the values it ran with.
    """
    params = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    injected = [c for c in cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    if len(params) != 1:
        raise ValueError(f"{stem}: expected one cell tagged 'parameters', found {len(params)}")
    header = ["# Rerun from notebooks/ with other values, e.g. at the papers' scale:",
              f"#   papermill {stem}.ipynb out.ipynb -p profile paper",
              '# ("quick": seconds, "book": this book, "paper": the papers\' counts)']
    defaults = _assignments("".join(params[0]["source"]))
    for cell in injected:
        _tags(cell).append("remove-cell")
        used = _assignments("".join(cell["source"]))
        changed = [f"{k} = {v}" for k, v in used.items() if defaults.get(k) != v]
        if changed:
            header.append(f"# This page was built with {', '.join(changed)}.")
    params[0]["source"] = "\n".join(header) + "\n" + "".join(params[0]["source"])


_TEX_WORDS = {"times": "×", "langle": "⟨", "rangle": "⟩", "sqrt": "√", "propto": "∝",
              "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "epsilon": "ε", "varepsilon": "ε",
              "sigma": "σ", "mu": "μ", "lambda": "λ", "theta": "θ", "rho": "ρ", "infty": "∞",
              "mathcal": "", "mathrm": "", "mathbf": "", "left": "", "right": ""}


def _plain(markdown: str) -> str:
    """Caption text for an image's alt attribute: roles, TeX and emphasis marks dropped."""
    text = re.sub(r"\{[\w:-]+\}`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", markdown)
    text = re.sub(r"\\([A-Za-z]+)\s?", lambda m: _TEX_WORDS.get(m.group(1), m.group(1) + " "),
                  text)
    return " ".join(re.sub(r"[$`*{}]|\\[,;!]", "", text).split())


def _is_rich(output: dict) -> bool:
    return output.get("output_type") in ("display_data", "execute_result")


def split_figure_cell(cell: dict) -> list[dict]:
    """Split a captioned plotting cell so that each rich output gets its own cell.

    myst-nb wraps *every* rich output of a cell with ``mystnb.figure`` metadata in a figure
    carrying the cell's caption and name; a table shown after the plot would get the caption
    too, and a second plot would repeat the name. Here each image output keeps the figure
    (the k-th image is named ``<name>-k`` from the second on) with the caption as its alt
    text, other rich outputs lose it, and every cell after the first shows its output only.
    """
    meta = cell.get("metadata", {}).get("mystnb", {})
    figure = meta.get("figure")
    if not isinstance(figure, dict):
        return [cell]
    chunks: list[list[dict]] = [[]]
    for out in cell.get("outputs", []):
        if _is_rich(out) and any(_is_rich(o) for o in chunks[-1]):
            chunks.append([])
        chunks[-1].append(out)
    pieces, n_images = [], 0
    for k, outs in enumerate(chunks):
        piece = copy.deepcopy(cell)
        piece["outputs"] = outs
        if k:  # hidden source, but not empty: myst-nb skips a cell whose source is empty
            piece["source"] = "# more output of the cell above"
            piece["metadata"]["tags"] = ["remove-input"]
            if "id" in piece:
                piece["id"] = f"{cell['id'][:56]}-out{k}"
        mystnb = piece["metadata"].setdefault("mystnb", {})
        if any(_is_rich(o) and any(m.startswith("image/") for m in o.get("data", {}))
               for o in outs):
            n_images += 1
            fig = dict(figure)
            if n_images > 1 and fig.get("name"):
                fig["name"] = f"{fig['name']}-{n_images}"
            mystnb["figure"] = fig
            image = dict(mystnb.get("image", {}))
            image.setdefault("alt", _plain(str(fig.get("caption", ""))))
            mystnb["image"] = image
        else:
            mystnb.pop("figure", None)
        pieces.append(piece)
    return pieces


def present(path: Path) -> None:
    """Prepare one executed notebook for reading, in place (idempotent)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    if nb.metadata.get(PRESENTED):
        return
    present_parameters(nb.cells, path.stem)
    cells = []
    for cell in nb.cells:
        cells += split_figure_cell(cell) if cell.cell_type == "code" else [cell]
    nb.cells = [nbformat.from_dict(c) for c in cells]
    nb.metadata[PRESENTED] = True
    nbformat.write(nb, path)


_HIDDEN = {"remove-output", "remove-cell", "remove_output", "remove_cell"}


def stderr_outputs(nb: dict) -> list[str]:
    """The stderr streams a reader would see in one executed notebook (``nb`` as JSON):
    ``"cell <k>: <first line>"`` each. The book shows none: a warning that is expected is
    silenced or handled where it arises, and an unexpected one is a bug to fix."""
    found = []
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code" or _HIDDEN & set(_tags(cell)):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = "".join(out.get("text", "")).strip()
                found.append(f"cell {k}: {text.splitlines()[0][:200] if text else ''}")
    return found


def stage(src: Path, executed: dict[str, Path], root: Path = ROOT) -> None:
    """Copy configuration, pages, executed notebooks and MathJax into ``src``; a notebook
    with a stderr output (:func:`stderr_outputs`) stops the build."""
    noisy = {stem: stderr_outputs(json.loads(Path(path).read_text()))
             for stem, path in executed.items()}
    noisy = {stem: lines for stem, lines in noisy.items() if lines}
    if noisy:
        raise SystemExit("stderr output in the book (silence or handle the warning where it "
                         "arises):\n" + "\n".join(f"{stem}: {line}" for stem, lines in
                                                    noisy.items() for line in lines))
    src.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, src / name)
    shutil.copytree(root / "book", src / "book", dirs_exist_ok=True)
    (src / "notebooks").mkdir(exist_ok=True)
    for stem, path in executed.items():
        target = src / "notebooks" / f"{stem}.ipynb"
        if path.resolve() != target.resolve():
            shutil.copy2(path, target)
        present(target)
    mathjax = root / "_build" / "vendor" / "mathjax"
    if not (mathjax / "tex-chtml.js").exists():
        raise SystemExit("MathJax is not bundled yet: run `make mathjax` first")
    shutil.copytree(mathjax, src / "_vendor" / "mathjax", dirs_exist_ok=True)


def render(src: Path, html: Path) -> None:
    """``jupyter-book build`` of the staged sources; the HTML ends up in ``html``."""
    work = src.parent / "site"
    cmd = [str(BIN / "jupyter-book"), "build", str(src), "--path-output", str(work),
           "--builder", "html", "-W", "-n", "--keep-going"]
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
    from mrflib.repro import report

    report.write_pages(results, ROOT / "bench" / "results", src / "book",
                       ROOT / "book" / "results" / "paper")
    render(src, out / "html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
