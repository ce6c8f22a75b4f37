"""The book end to end: notebook hygiene, every notebook executed with profile="quick",
the HTML book rendered from those executions, and its pages opened in headless Chromium."""

from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.util
import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
build_book = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_book)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOC_NOTEBOOKS = build_book.toc_notebooks(ROOT)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# ----------------------------------------------------------------------------- hygiene
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_committed_clean_with_parameters(nb):
    data = json.loads(nb.read_text())
    code = [c for c in data["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        f"{nb.name} is committed with outputs: strip them"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{nb.name} must have exactly one cell tagged 'parameters'"
    src = "".join(tagged[0]["source"])
    assert 'profile = "book"' in src, f"{nb.name}: the parameters cell must set profile = 'book'"
    assert data["cells"][0]["cell_type"] == "markdown" and \
        "".join(data["cells"][0]["source"]).startswith("# "), f"{nb.name}: start with a title"


_DRAWS = re.compile(r"\bplt\.|\.savefig\(")


def test_plotting_cells_are_captioned_and_folded():
    """The figure convention (CONTRIBUTING.md, 'Writing a chapter'), checked statically;
    the browser test checks what the reader sees."""
    names, problems = {}, []
    for nb in NOTEBOOKS:
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "code" or not _DRAWS.search("".join(cell["source"])):
                continue
            meta = cell.get("metadata", {})
            fig = meta.get("mystnb", {}).get("figure", {})
            where = f"{nb.stem}, cell {cell.get('id')}"
            if "hide-input" not in meta.get("tags", []):
                problems.append(f"{where}: draws a figure but is not tagged hide-input")
            if not str(fig.get("caption", "")).strip() or not fig.get("name"):
                problems.append(f"{where}: no mystnb.figure caption and name")
            elif fig["name"] in names:
                problems.append(f"{where}: figure name {fig['name']!r} already used in "
                                f"{names[fig['name']]}")
            else:
                names[fig["name"]] = where
            if _shows_in_a_loop("".join(cell["source"])):
                problems.append(f"{where}: shows a figure in a loop, so several figures would "
                                "share one caption (one cell and one caption per figure)")
    assert not problems, "\n".join(problems)


def _shows_in_a_loop(source: str) -> bool:
    """True when ``plt.show()`` is called inside a ``for`` or ``while`` loop: each pass draws
    a figure, and every figure of the cell would get the cell's one caption."""
    import ast

    code = "\n".join(ln for ln in source.splitlines() if not ln.startswith(("%", "!")))
    for loop in ast.walk(ast.parse(code)):
        if isinstance(loop, (ast.For, ast.While)):
            for node in ast.walk(loop):
                if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "show"
                        and getattr(node.func.value, "id", "") == "plt"):
                    return True
    return False


def test_the_loop_check_finds_figures_drawn_in_a_loop():
    assert _shows_in_a_loop("for k in ks:\n    plt.plot(k)\n    plt.show()")
    assert not _shows_in_a_loop("for k in ks:\n    plt.plot(k)\nplt.show()")
    assert not _shows_in_a_loop("def f(k):\n    plt.show()\n\n\nf(1)")


@pytest.mark.parametrize("nb", TOC_NOTEBOOKS, ids=[p.stem for p in TOC_NOTEBOOKS])
def test_every_chapter_ends_in_prose(nb):
    """A chapter closes with a paragraph saying what reproduced, what did not and why (a
    markdown cell with more than a heading), not with a table or a code cell."""
    last = json.loads(nb.read_text())["cells"][-1]
    text = "".join(last["source"])
    prose = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("#", "```",
                                                                                   ":"))]
    assert last["cell_type"] == "markdown" and sum(len(ln) for ln in prose) > 200, \
        f"{nb.name} does not end in a prose conclusion"


# What a conclusion may say in digits without quoting a record: references to the paper's
# figures, tables, theorems and equations, method and data-set names, years, ±1 spins and the
# paper's own words in quotation marks. Every other number of a conclusion is computed: a
# glued paragraph ({glue:md}), a glued value ({glue:text}) or the chapter's generated
# conclusion (mrflib.repro.scorecard.chapter_conclusion), all read from this run's records.
_QUOTED_OK = re.compile(
    r"(?:Figures?|Fig\.|Tables?|Theorems?|Definitions?|Algorithms?|Lemmas?|Corollary|[Ee]qs?\."
    r"|[Ss]ections?|[Aa]ppendix|[Pp]art)\s*\(?[\dA-Z][\d.]*\)?"
    r"(?:\s*(?:-|–|and|,)\s*\(?\d[\d.]*\)?)*"
    r"|\(\d+\)(?:\s*-\s*\(\d+\))?"  # an equation of the paper: recursion (3), (13)-(15)
    r"|\b[12ks]2?-SMCI\b|\bUAI 20\d\d\b|\b(?:19|20)\d\d\b|\bBN20-\d+[SL]?\b"
    r"|\bIsing\d+x\d+[SL]?\b|±1|\bL-BFGS\b|\bfloat64\b"
    r'|"[^"\n]*"|“[^”]*”')


def _conclusion_prose(nb: Path) -> str:
    """The text a reader sees in a chapter's conclusion section (its markdown cells from the
    "Conclusion" heading on) without math, code, roles and directives."""
    text, inside = [], False
    for cell in json.loads(nb.read_text())["cells"]:
        src = "".join(cell["source"])
        inside = inside or (cell["cell_type"] == "markdown"
                            and re.match(r"#+\s+Conclusion", src.strip()) is not None)
        if inside and cell["cell_type"] == "markdown":
            text.append(src)
    out = "\n".join(text)
    for pattern in (r"(?s)```.*?```", r"(?s)\$\$.*?\$\$", r"\$[^$]*\$", r"`[^`]*`",
                    r"\{[\w:-]+\}", r"(?m)^:[\w-]+:.*$", r"\]\([^)]*\)", r"(?m)^#+ .*$"):
        out = re.sub(pattern, " ", out)
    return out


@pytest.mark.parametrize("nb", TOC_NOTEBOOKS, ids=[p.stem for p in TOC_NOTEBOOKS])
def test_conclusions_quote_no_hand_typed_numbers(nb):
    """A conclusion's numbers come from the run's records (glued or generated), so that the
    prose cannot contradict its own tables: no digit outside equations, code and the
    references of :data:`_QUOTED_OK`."""
    prose = _conclusion_prose(nb)
    assert prose.strip(), f"{nb.name} has no Conclusion section"
    left = _QUOTED_OK.sub(" ", prose)
    typed = [" ".join(left[max(0, m.start() - 30):m.end() + 20].split())
             for m in re.finditer(r"\d+", left)]
    assert not typed, f"{nb.name}: hand-typed numbers in the conclusion: {typed}"


def test_the_quoted_numbers_check_catches_a_typed_number():
    """The check above finds a number typed into prose and lets references, math and glue
    through."""
    fine = ("## Conclusion\n\nTheorem 2 and eq. (12) hold; Figure 3(b) and the recursion (3) "
            "too, for 1-SMCI on BN20-37S ($N = 1000$), as \"about 100 times\" says; "
            "{glue:text}`ratio` of `n = 5`.")
    assert not re.search(r"\d", _QUOTED_OK.sub(" ", _strip_prose(fine)))
    typed = "## Conclusion\n\nThe fit took 2.6 s on a 427 x 640 image at 20%."
    assert re.findall(r"\d+", _QUOTED_OK.sub(" ", _strip_prose(typed))) == \
        ["2", "6", "427", "640", "20"]


def _strip_prose(markdown: str) -> str:
    cell = {"cell_type": "markdown", "source": [markdown], "metadata": {}}
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.ipynb"
        path.write_text(json.dumps({"cells": [cell]}))
        return _conclusion_prose(path)


def test_build_refuses_stderr_outputs():
    out = {"output_type": "stream", "name": "stderr", "text": "RuntimeWarning: overflow\n"}
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [out]},
                    {"cell_type": "code", "metadata": {"tags": ["remove-output"]},
                     "outputs": [out]},
                    {"cell_type": "code", "metadata": {}, "outputs": [{**out, "name": "stdout"}]}]}
    assert build_book.stderr_outputs(nb) == ["cell 0: RuntimeWarning: overflow"]


def test_every_notebook_is_in_the_toc():
    assert {p.stem for p in NOTEBOOKS} == {p.stem for p in TOC_NOTEBOOKS}
    for f in build_book.toc_files(ROOT):
        assert (ROOT / f"{f}.md").exists() or (ROOT / f"{f}.ipynb").exists(), f


def test_a_reader_starts_here_and_meets_the_internals_after_the_chapters():
    """The first page after the intro is "Start here" (install, the two commands, where to go
    next); the developer-facing Architecture page comes after every chapter; the intro states
    the outcome (generated from the records) and links to the scorecard."""
    files = build_book.toc_files(ROOT)
    assert files[1] == "book/start_here"
    start = (ROOT / "book" / "start_here.md").read_text()
    assert "pip install" in start and "`make book`" in start and "`make test`" in start
    assert "## Where to go next" in start
    last_chapter = max(i for i, f in enumerate(files) if f.startswith("notebooks/"))
    assert files.index("book/architecture") > last_chapter
    intro = (ROOT / "book" / "intro.md").read_text()
    assert "```{include} _outcome.md" in intro and "<scorecard>" in intro


def test_no_page_or_chapter_shows_a_path_of_the_machine_that_built_it():
    """Absolute paths of the machine that ran a job mean nothing to a reader."""
    pages = [*(ROOT / "book").glob("*.md"), *(ROOT / "book" / "results" / "paper").glob("*.md"),
             *NOTEBOOKS]
    found = [f"{p.name}: {m.group()}" for p in pages
             for m in re.finditer(r"(?<![\w.])/(?:work|home|Users|tmp|root)/[\w./-]*",
                                  p.read_text())]
    assert not found


# ----------------------------------------------------------------------------- presentation
def _out(kind, mime="text/plain"):
    if kind == "stream":
        return {"output_type": "stream", "name": "stdout", "text": "x"}
    return {"output_type": kind, "data": {mime: "x"}, "metadata": {}}


def test_split_figure_cell_gives_each_image_its_caption_and_tables_none():
    fig = {"caption": "A $\\sqrt{M}$ law, see {cite}`key`.", "name": "ch-law"}
    cell = {"cell_type": "code", "id": "abc", "source": "plot()", "execution_count": None,
            "metadata": {"tags": ["hide-input"], "mystnb": {"figure": fig}},
            "outputs": [_out("stream"), _out("display_data", "image/png"),
                        _out("execute_result", "text/html"), _out("display_data", "image/png")]}
    pieces = build_book.split_figure_cell(cell)
    assert [len(p["outputs"]) for p in pieces] == [2, 1, 1]
    assert pieces[0]["source"] == "plot()" and pieces[0]["metadata"]["tags"] == ["hide-input"]
    assert all(p["source"].strip() and p["metadata"]["tags"] == ["remove-input"]
               for p in pieces[1:])
    assert len({p["id"] for p in pieces}) == 3
    figs = [p["metadata"]["mystnb"].get("figure") for p in pieces]
    assert figs[0]["name"] == "ch-law" and figs[1] is None and figs[2]["name"] == "ch-law-2"
    assert pieces[0]["metadata"]["mystnb"]["image"]["alt"] == "A √M law, see key."
    plain = {"cell_type": "code", "source": "1", "metadata": {}, "outputs": [_out("stream")]}
    assert build_book.split_figure_cell(plain) == [plain]


def test_present_parameters_hides_the_injected_copy_and_says_how_to_rerun():
    cells = [{"cell_type": "code", "source": 'profile = "book"\nseed = 0\n',
              "metadata": {"tags": ["parameters"]}},
             {"cell_type": "code", "source": '# Parameters\nprofile = "quick"\n',
              "metadata": {"tags": ["injected-parameters"]}}]
    build_book.present_parameters(cells, "smci")
    assert "remove-cell" in cells[1]["metadata"]["tags"]
    shown = cells[0]["source"]
    assert "papermill smci.ipynb out.ipynb -p profile paper" in shown
    assert 'built with profile = "quick"' in shown and shown.endswith('seed = 0\n')


# ----------------------------------------------------------------------------- execution
#: The profile the book is executed at for these tests: quick, unless the environment
#: variable names another (``MRFLIB_TEST_BOOK_PROFILE=book`` checks the book as ``make book``
#: publishes it, in about the time ``make book`` takes).
BOOK_PROFILE = os.environ.get("MRFLIB_TEST_BOOK_PROFILE", "quick")


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory):
    """Execute every notebook (profile :data:`BOOK_PROFILE`), then render the book from
    those runs."""
    out = tmp_path_factory.mktemp("book")
    src, results = out / "src", out / "results"
    records = build_book.execute_all(TOC_NOTEBOOKS, src / "notebooks", BOOK_PROFILE, results,
                                     jobs=2)
    by_name = {r["notebook"]: r for r in records}
    html = None
    if all(r["ok"] for r in records):
        build_book.stage(src, {k: r["output"] for k, r in by_name.items()}, ROOT)
        from mrflib.repro import report

        report.write_pages(results, ROOT / "bench" / "results", src / "book", PAPER_RESULTS)
        build_book.render(src, out / "html")
        html = out / "html"
    return {"records": by_name, "html": html, "results": results}


@pytest.mark.slow
@pytest.mark.parametrize("nb", TOC_NOTEBOOKS, ids=[p.stem for p in TOC_NOTEBOOKS])
def test_notebook_executes(quick_book, nb):
    rec = quick_book["records"][nb.stem]
    assert rec["ok"], (f"{nb.name} failed under papermill (profile={BOOK_PROFILE}):\n"
                       f"{rec['error']}")


PAPER_RESULTS = ROOT / "book" / "results" / "paper"


@pytest.mark.slow
def test_paper_results_cover_every_recorded_item(quick_book):
    """The committed paper-profile numbers (book/results/paper) cover every item a chapter
    records, so the scorecard can set the two profiles side by side."""
    from mrflib.repro import report

    quick = report.load_records(quick_book["results"])
    assert not quick.empty
    paper = report.load_records(PAPER_RESULTS, published=True)
    assert set(paper["profile"]) <= {"paper"}, "book/results/paper holds other profiles"
    key = ["chapter", "item", "quantity"]
    published = set(paper["chapter"])
    missing = quick[quick["chapter"].isin(published)].merge(paper[key], on=key, how="left",
                                                            indicator=True)
    missing = missing[missing["_merge"] == "left_only"]
    assert missing.empty, ("items recorded by a chapter but absent from its paper-profile "
                           f"results:\n{missing[key].to_string()}")
    prov = (PAPER_RESULTS / "PROVENANCE.md").read_text() if published else ""
    assert all(ch in prov for ch in published), "a published chapter has no provenance row"
    unpublished = sorted(set(quick["chapter"]) - published)
    if unpublished:
        pytest.xfail(f"not yet run at paper scale: {', '.join(unpublished)}")


@pytest.mark.slow
def test_book_renders_every_page(quick_book):
    html = quick_book["html"]
    assert html is not None, "a notebook failed, so the book was not rendered"
    for f in build_book.toc_files(ROOT):
        assert (html / f"{f}.html").exists(), f"missing page {f}.html"
    score = (html / "book" / "scorecard.html").read_text()
    assert "reproduced" in score or "new" in score


@pytest.mark.slow
def test_api_reference_renders_every_contract_name(quick_book):
    """Each name of the public contract has its entry (an anchor) in the rendered reference."""
    from test_api_reference import CONTRACT, home

    html = quick_book["html"]
    assert html is not None, "a notebook failed, so the book was not rendered"
    pages = "".join(f.read_text() for f in (html / "book" / "api").glob("*.html"))
    missing = [n for n in CONTRACT if 'id="{}.{}"'.format(*home(n)) not in pages]
    assert not missing, f"contract names without an entry in the API reference: {missing}"


# ----------------------------------------------------------------------------- browser
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def served_book(quick_book):
    html = quick_book["html"]
    if html is None:
        pytest.fail("the book was not rendered")
    handler = functools.partial(_Quiet, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


# What a page shows a reader: raw MyST left in the text (outside code), unresolved
# cross-references, images and whether each sits in a captioned, folded figure, links.
_INSPECT_JS = r"""() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main')
                  || document.body;
  const prose = article.cloneNode(true);
  prose.querySelectorAll('pre, code, script, style, .cell_input, .math, mjx-container')
       .forEach(e => e.remove());
  const images = Array.from(article.querySelectorAll('img')).map(i => {
    const fig = i.closest('figure');
    const cell = i.closest('div.cell');
    return {src: i.getAttribute('src') || '', alt: (i.getAttribute('alt') || '').trim(),
            natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
            output: !!i.closest('div.cell_output, div.output'),
            caption: fig ? (fig.querySelector('figcaption')?.textContent || '').trim() : null,
            folded: cell ? ['tag_hide-input', 'tag_remove-input', 'tag_hide-cell',
                            'tag_remove-cell'].some(t => cell.classList.contains(t)) : true};
  });
  const unresolved = Array.from(article.querySelectorAll('.xref'))
      .filter(e => !e.closest('a')).map(e => e.textContent.trim());
  const links = Array.from(article.querySelectorAll('a[href]')).map(a => a.href);
  // blocks wider than the text column (code, outputs, tables, display math, figures),
  // unless a container of their own, inside the column, scrolls them
  const right = article.getBoundingClientRect().right;
  const wide = [];
  const blocks = 'pre, table, div.math, mjx-container[display="true"], figure, img, '
                 + 'div.cell_output > *, div.output';
  for (const t of article.querySelectorAll(blocks)) {
    const r = t.getBoundingClientRect();
    // content spilling out of its own box (a long unwrapped line in a <pre>) counts too
    const spills = getComputedStyle(t).overflowX === 'visible' && t.scrollWidth > t.clientWidth + 1;
    const extent = spills ? r.left + t.scrollWidth : r.right;
    if (!t.offsetParent || extent <= right + 1) continue;  // hidden (closed dropdown) or fits
    let box = t.parentElement, scrolls = false;
    while (box && box !== article.parentElement && !scrolls) {
      const ox = getComputedStyle(box).overflowX;
      scrolls = (ox === 'auto' || ox === 'scroll' || ox === 'hidden')
                && box.getBoundingClientRect().right <= right + 1;
      box = box.parentElement;
    }
    if (!scrolls) wide.push({tag: t.tagName.toLowerCase(), width: Math.round(extent - r.left),
                             column: Math.round(right - r.left),
                             head: (t.querySelector('tr')?.textContent || t.textContent || '')
                                   .trim().slice(0, 60)});
  }
  // content wider than the column even where a box of its own scrolls it: display math,
  // tables and visible code must fit, a reader should not have to scroll sideways
  const overflow = [];
  const style = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(style.paddingLeft)
                 - parseFloat(style.paddingRight);
  for (const t of article.querySelectorAll('mjx-container[display="true"], table, '
                                           + 'div.cell_input pre, div.highlight pre')) {
    if (!t.offsetParent) continue;  // folded (hide-input) or in a closed dropdown
    const width = t.scrollWidth;  // its content, also where its own box scrolls it
    if (width > t.clientWidth + 1 || t.getBoundingClientRect().left + width > right + 1)
      overflow.push({tag: t.tagName.toLowerCase(), width: width, column: Math.round(column),
                     head: (t.querySelector('tr')?.textContent || t.textContent || '')
                           .trim().slice(0, 60)});
  }
  // numbers shown as Python reprs rather than formatted
  const reprs = (article.textContent.match(/np\.(?:float|int)\d+\(/g) || []).length;
  // display equations that carry a number the prose can refer to
  const numbered = article.querySelectorAll('div.math span.eqno').length;
  // stderr a reader would see (warnings, tracebacks written to stderr)
  const stderr = Array.from(article.querySelectorAll('.output.stderr, .stderr'))
      .filter(e => e.offsetParent).map(e => e.textContent.trim().slice(0, 120));
  return {text: prose.textContent, images, unresolved, links, wide, stderr, overflow, reprs,
          numbered};
}"""
# TeX left outside typeset math: a backslash command or a dollar sign in the text a reader
# sees (code, typeset math and MathJax's own markup removed), i.e. math the parser missed.
_RAW_TEX = re.compile(r"\\[A-Za-z]+|\$")
# MyST syntax that only survives into the HTML when it was not parsed: fences, roles,
# directive names, options.
_RAW_MYST = re.compile(r"```|:::|\{[A-Za-z][\w:-]*\}`|\{(?:prf|cite|doc|ref|numref|eq)[:}]"
                       r"|:label:|:class:|:name:")


# Figures: the smallest text a figure is drawn with (points at 100 dpi), by where it is
# drawn: the chapters' style file, or the Performance page's own size.
def _style_pt(text: str) -> float:
    sizes = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().endswith(("size", "fontsize")) and value.strip():
            sizes[key.strip()] = float(value)
    return min(v for k, v in sizes.items() if k.startswith(("font", "axes", "xtick", "ytick",
                                                             "legend", "figure")))


def _smallest_style_pt() -> float:
    return _style_pt((ROOT / "notebooks" / "matplotlibrc").read_text())


@functools.cache
def _style_pt_at(commit: str) -> float | None:
    """The smallest text of the chapters' style file at ``commit``; None where this clone
    lacks the commit."""
    import subprocess

    got = subprocess.run(["git", "show", f"{commit}:notebooks/matplotlibrc"], cwd=ROOT,
                         capture_output=True, text=True)
    return _style_pt(got.stdout) if got.returncode == 0 else None


def _paper_figures() -> dict[str, tuple[str, float | None]]:
    """The committed paper-scale figures by the sha256 of their file: their name and the
    smallest text of the style their run drew them with (the style file at the run's
    commit, from ``provenance.json``)."""
    folder = ROOT / "book" / "results" / "paper"
    runs = json.loads((folder / "provenance.json").read_text())
    commit = {name: run["commit"] for run in runs.values() for name in run["figures"]}
    return {hashlib.sha256(p.read_bytes()).hexdigest():
            (p.stem, _style_pt_at(commit[p.stem]) if p.stem in commit else None)
            for p in (folder / "figures").glob("*.png")}


_PAPER_FIGURES = _paper_figures()
#: No text in a figure smaller than this as shown (points) at a 1280 px window.
_SMALLEST_TEXT_PT = 9.0
#: A paper-scale figure (book/results/paper/figures) is drawn by its run with the style of
#: that run's commit, and held to the rule of any chapter figure: a figure of a former,
#: smaller style fails until `python -m mrflib paper --publish` redraws it. Where this clone
#: lacks the run's commit, the style before today's 14 pt text (13 pt ticks) is assumed.
_PAPER_DRAWN_PT = 13.0


def _paper_drawn_pt(digest: str) -> float | None:
    """The smallest text a paper figure was drawn with (pt); None for any other image."""
    if digest not in _PAPER_FIGURES:
        return None
    drawn = _PAPER_FIGURES[digest][1]
    return drawn if drawn is not None else _PAPER_DRAWN_PT


def _shown_text_pt(f: str, img: dict) -> float | None:
    """The smallest text size of an image as shown (pt), when it is a figure this book
    draws (a notebook's output or the Performance page's); None otherwise."""
    if img["output"]:
        drawn = _paper_drawn_pt(img["src"].rsplit("/", 1)[-1].split(".")[0])
        drawn = drawn if drawn is not None else _smallest_style_pt()
    elif f == "book/performance":
        from mrflib.repro import performance

        drawn = performance.FIG_FONT_PT
    else:
        return None
    scale = min(1.0, img["shown"] / img["natural"]) if img["natural"] else 1.0
    return drawn * 100 / 96 * scale  # 100 dpi pixels to CSS pixels (96 a inch)


def _small_text(f: str, img: dict) -> str | None:
    name = img["src"].rsplit("/", 1)[-1]
    digest = name.split(".")[0]
    paper = _PAPER_FIGURES[digest][0] if digest in _PAPER_FIGURES else ""
    pt = _shown_text_pt(f, img)
    wanted = _SMALLEST_TEXT_PT
    if pt is None or pt >= wanted:
        return None
    return (f"{f}: figure {paper or name} is {img['natural']} px wide, shown at "
            f"{img['shown']:.0f} px: its smallest text reads at {pt:.1f} pt (at least "
            f"{wanted:g} wanted; draw it narrower, see notebooks/matplotlibrc)")


def _shared_captions(f: str, images: list[dict]) -> list[str]:
    """Figures of one page that share one caption (beside their numbers): a reader cannot
    tell them apart."""
    seen: dict[str, str] = {}
    problems = []
    for img in images:
        caption = re.sub(r"^(Fig\.|Figure)\s*[\d.]+\s*", "", img.get("caption") or "")
        name = img["src"].rsplit("/", 1)[-1]
        if caption in seen:
            problems.append(f"{f}: figures {seen[caption]} and {name} share one caption "
                            f"('{caption[:60]}...')")
        elif caption:
            seen[caption] = name
    return problems


def _page_problems(f: str, found: dict) -> list[str]:
    """What is wrong on one page, as a reader would see it."""
    problems = [p for p in (_small_text(f, img) for img in found["images"]) if p]
    problems += _shared_captions(f, found["images"])
    for m in _RAW_MYST.finditer(found["text"]):
        snippet = " ".join(found["text"][max(0, m.start() - 40):m.end() + 40].split())
        problems.append(f"{f}: raw MyST {m.group(0)!r} in '... {snippet} ...'")
    for m in list(_RAW_TEX.finditer(found["text"]))[:3]:
        snippet = " ".join(found["text"][max(0, m.start() - 40):m.end() + 40].split())
        problems.append(f"{f}: raw TeX {m.group(0)!r} outside typeset math in '... {snippet} "
                        f"...'")
    for t in found["wide"]:
        problems.append(f"{f}: a {t['tag']} {t['width']} px wide in a text column of "
                        f"{t['column']} px, without a scrolling container ('{t['head']}')")
    for t in found.get("overflow", []):
        problems.append(f"{f}: a {t['tag']} {t['width']} px wide in a text column of "
                        f"{t['column']} px: the reader scrolls it sideways ('{t['head']}')")
    if found.get("reprs"):
        problems.append(f"{f}: {found['reprs']} raw numpy repr(s) such as 'np.float64(' shown")
    for text in found.get("stderr", []):
        problems.append(f"{f}: a stderr output ('{text}')")
    if found["unresolved"]:
        problems.append(f"{f}: unresolved references {found['unresolved'][:5]}")
    for img in found["images"]:
        name = img["src"].rsplit("/", 1)[-1]
        if img["caption"] is None or not img["caption"]:
            problems.append(f"{f}: image {name} is not a captioned figure (see CONTRIBUTING.md,"
                            " 'Writing a chapter')")
        if not img["alt"] or name in img["alt"]:
            problems.append(f"{f}: image {name} has no alt text")
        if not img["folded"]:
            problems.append(f"{f}: the code of the cell drawing {name} is not folded "
                            "(tag it hide-input)")
    return problems


def _inspect(page, f: str) -> tuple[dict, list[str]]:
    """What the loaded ``page`` (the book's page ``f``) shows a reader, once MathJax has
    typeset it, and what is wrong with it."""
    problems = []
    if page.evaluate("document.querySelectorAll('.math').length > 0"):
        page.wait_for_function(
            "window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000)
        page.evaluate("MathJax.startup.promise")
        typeset = page.evaluate("document.querySelectorAll('mjx-container').length")
        raw = page.evaluate(
            "Array.from(document.querySelectorAll('.math')).filter("
            "e => !e.querySelector('mjx-container')).length")
        if typeset == 0 or raw:
            problems.append(f"{f}: math not typeset ({typeset} typeset, {raw} raw)")
    found = page.evaluate(_INSPECT_JS)
    return found, problems + _page_problems(f, found)


_LABELLED = re.compile(r"\$\$[ \t]*\([\w-]+\)")


def _labelled_equations(f: str) -> int:
    """Display equations of the page ``f`` (a toc entry) that carry a label (``$$ ...
    $$ (label)``), so that the prose can refer to them by number."""
    for suffix in (".md", ".ipynb"):
        path = ROOT / f"{f}{suffix}"
        if path.exists():
            text = path.read_text()
            if suffix == ".ipynb":
                text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"]
                                 if c["cell_type"] == "markdown")
            return len(_LABELLED.findall(text))
    return 0


def test_the_prose_refers_to_numbered_equations():
    """Every {eq} reference names a label of its own page, and the pages that define the
    notation and the estimators number their display equations."""
    problems = []
    for f in build_book.toc_files(ROOT):
        for suffix in (".md", ".ipynb"):
            path = ROOT / f"{f}{suffix}"
            if not path.exists():
                continue
            text = path.read_text()
            if suffix == ".ipynb":
                text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"]
                                 if c["cell_type"] == "markdown")
            labels = set(re.findall(r"\$\$[ \t]*\(([\w-]+)\)", text))
            problems += [f"{f}: {{eq}}`{ref}` names no equation of the page"
                         for ref in re.findall(r"\{eq\}`([^`]+)`", text) if ref not in labels]
    assert not problems, "\n".join(problems)
    for f in ("book/notation", "notebooks/smci", "notebooks/approximate_inference",
              "notebooks/learning"):
        assert _labelled_equations(f) >= 1, f"{f} numbers none of its display equations"


def _image_outputs(nb: Path) -> int:
    """Image outputs a reader should see in one executed notebook (hidden cells excluded)."""
    hidden = {"remove-cell", "remove-output", "remove_cell", "remove_output"}
    count = 0
    for cell in json.loads(nb.read_text())["cells"]:
        if cell["cell_type"] != "code" or hidden & set(cell.get("metadata", {}).get("tags", [])):
            continue
        count += sum(any(m.startswith("image/") for m in out.get("data", {}))
                     for out in cell.get("outputs", []))
    return count


def _broken_links(links: set[str], base: str, html: Path) -> list[str]:
    """Links inside the book that lead to no page, or to no anchor of that page."""
    broken = []
    for url in sorted(links):
        if not url.startswith(base + "/"):
            continue
        path, _, anchor = url[len(base) + 1:].partition("#")
        target = html / (path.split("?")[0] or "index.html")
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(url)
        elif anchor and f'id="{anchor}"' not in target.read_text(errors="replace"):
            broken.append(url)
    return broken


@pytest.mark.slow
def test_pages_in_headless_chromium(served_book, quick_book):
    assert CHROMIUM, "Debian's chromium is not installed: run `make browser` (make test does)"
    from playwright.sync_api import sync_playwright

    external, failed, problems, links = [], [], [], set()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"],
        )
        context = browser.new_context()

        def guard(route):
            url = route.request.url
            if url.startswith(served_book) or url.startswith("data:"):
                route.continue_()
            else:
                external.append(url)
                route.abort()

        context.route("**/*", guard)
        page = context.new_page()
        # a request the browser cancels because the test moves on to the next page (a
        # MathJax font still loading) is not a fault of the book; a file the server does
        # not have is, and shows as a response of status 400 or more
        page.on("requestfailed", lambda r: None if r.failure == "net::ERR_ABORTED"
                else failed.append(f"{r.url} ({r.failure})"))
        page.on("response", lambda r: failed.append(f"{r.url} (HTTP {r.status})")
                if r.status >= 400 else None)
        for f in build_book.toc_files(ROOT):
            resp = page.goto(f"{served_book}/{f}.html", wait_until="load")
            if resp is None or resp.status != 200:
                problems.append(f"{f}: HTTP {resp.status if resp else 'no response'}")
                continue
            broken = page.evaluate(
                "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                ".map(i => i.src)")
            if broken:
                problems.append(f"{f}: images not loaded {broken}")
            found, page_problems = _inspect(page, f)
            problems += page_problems
            if found["numbered"] < _labelled_equations(f):
                problems.append(f"{f}: {_labelled_equations(f)} labelled display equations in "
                                f"the source, {found['numbered']} shown with a number")
            executed = quick_book["html"].parent / "src" / f"{f}.ipynb"
            if executed.exists() and _image_outputs(executed) != len(found["images"]):
                problems.append(f"{f}: {_image_outputs(executed)} images in the executed "
                                f"notebook, {len(found['images'])} on the page")
            links.update(found["links"])
        browser.close()
    assert not external, f"requests left the machine: {sorted(set(external))[:10]}"
    assert not failed, f"requests failed: {sorted(set(failed))[:10]}"
    problems += [f"broken link {u}" for u in _broken_links(links, served_book, quick_book["html"])]
    assert not problems, "\n".join(problems)


# The LAP chapter's Definition 5 as an earlier build rendered it: its display formula sat
# in a paragraph ("... Then $$V...,$$ where ..."), so the dollar signs paired up wrongly and
# the reader saw "$x^{\mathcal B} agrees with x on \mathcal B and is 0$".
_OLD_DEFINITION_5 = r"""<p>Then
$<span class="math notranslate nohighlight">\(V_{\mathcal C}(x) = \sum_{\mathcal B \subseteq
\mathcal C} (-1)^{|\mathcal C - \mathcal B|} \log f(x^{\mathcal B}),\)</span><span class="math
notranslate nohighlight">\(
where \)</span>x^{\mathcal B}<span class="math notranslate nohighlight">\( agrees with
\)</span>x<span class="math notranslate nohighlight">\( on \)</span>\mathcal B<span
class="math notranslate nohighlight">\( and is \)</span>0$ elsewhere.</p>"""
_FIXED_DEFINITION_5 = r"""<p>Then</p>
<div class="math notranslate nohighlight">\[V_{\mathcal C}(x) = \sum_{\mathcal B \subseteq
\mathcal C} (-1)^{|\mathcal C - \mathcal B|} \log f(x^{\mathcal B}),\]</div>
<p>where <span class="math notranslate nohighlight">\(x^{\mathcal B}\)</span> agrees with
<span class="math notranslate nohighlight">\(x\)</span>; in code: <code>\mathcal B</code>.</p>"""
_WIDE = "<table><tr>" + "<td>a_long_unbreakable_cell_value</td>" * 12 + "</tr></table>"
_WIDE_PRE = "<pre>" + "an_unbreakable_printed_line_" * 40 + "</pre>"
_STDERR = '<div class="output stderr"><pre>Warning: on stderr</pre></div>'
# Display math, a table and a visible code cell that each scroll in a box of their own, and a
# raw repr: what the reader had to scroll sideways and read as Python.
_SCROLLED = ('<div style="overflow-x: auto"><mjx-container display="true" style="display: block;'
             ' width: 900px">x</mjx-container></div><div style="overflow-x: auto"><table><tr>'
             + "<td>scrolled_cell_value_without_spaces</td>" * 12 + '</tr></table></div>'
             '<div class="cell_input"><pre style="overflow-x: auto">x = 1' + " + 1" * 80
             + '</pre></div><p>0.021 printed as np.float64(0.021)</p>')
# The same content as the reader should get it: wrapping table cells, wrapped code.
_WRAPPED = ('<table><tr>' + "<td>a cell of words that wrap</td>" * 12 + '</tr></table>'
            '<div class="cell_input"><pre style="white-space: pre-wrap">x = 1' + " + 1" * 80
            + '</pre></div><p>0.021, formatted</p>')
_PAGE = ('<html><body><main><article class="bd-article" style="width: 600px">{}</article>'
         '</main></body></html>')


@pytest.mark.slow
def test_page_checks_catch_raw_tex_and_tables_wider_than_the_column():
    """The browser checks fail on the old LAP Definition 5 and on a table running past the
    text column, and pass on the fixed definition and on a wide table that scrolls in its
    own container."""
    assert CHROMIUM, "Debian's chromium is not installed: run `make browser` (make test does)"
    from playwright.sync_api import sync_playwright

    pages = {"old": _OLD_DEFINITION_5 + _WIDE + _WIDE_PRE + _STDERR + _SCROLLED,
             "fixed": _FIXED_DEFINITION_5 + _WRAPPED
             + f'<div style="overflow-x: auto">{_WIDE_PRE}</div>'}
    found = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        for name, body in pages.items():
            page.set_content(_PAGE.format(body))
            page.evaluate("document.querySelectorAll('.math').forEach(e => "  # as if typeset
                          "e.appendChild(document.createElement('mjx-container')));"
                          "window.MathJax = {startup: {promise: Promise.resolve()}}")
            found[name] = _inspect(page, name)[1]
        browser.close()
    assert not found["fixed"], found["fixed"]
    old = "\n".join(found["old"])
    assert "old: raw TeX '$' outside typeset math in '... Then $" in old
    assert "raw TeX '\\\\mathcal'" in old and "x^{\\mathcal B}" in old
    assert "a table" in old and "without a scrolling container" in old
    assert "a pre " in old and "a stderr output ('Warning: on stderr')" in old
    # scrolling is no remedy for display math, tables and visible code: they must fit
    assert "a mjx-container 900 px wide in a text column of 600 px: the reader scrolls" in old
    assert "a table" in old and "the reader scrolls it sideways ('scrolled_cell" in old
    assert "a pre" in old and "the reader scrolls it sideways ('x = 1" in old
    assert "old: 1 raw numpy repr(s)" in old


def test_figure_check_catches_small_text():
    """A chapter figure of 14 in (1,400 px) shown in the 672 px column has its 14 pt ticks
    at 7.0 pt and is refused, and so is one of 1,111 px (8.8 pt); one of 1,080 px passes
    (9.1 pt), and so does one shown at its own width; a paper-scale figure is held to the
    same rule. The Performance page draws at the column's
    width: its 10 pt text reads at 10.4 pt, and would fail at half that width."""
    wide = {"src": "_images/abc.png", "natural": 1400, "shown": 672.0, "output": True}
    assert _smallest_style_pt() == 14.0
    assert "reads at 7.0 pt" in _small_text("notebooks/x", wide)
    assert "reads at 8.8 pt" in _small_text("notebooks/x", dict(wide, natural=1111))
    assert _small_text("notebooks/x", dict(wide, natural=1080)) is None
    assert _small_text("notebooks/x", dict(wide, natural=500, shown=500.0)) is None
    assert _small_text("book/intro", dict(wide, output=False)) is None  # not a figure drawn here
    # a paper figure is held to 9 pt like any chapter figure, whatever style drew it
    for d in list(_PAPER_FIGURES)[:1]:
        assert "at least 9 wanted" in _small_text(
            "notebooks/x", dict(wide, src=f"_images/{d}.png", natural=1111))
    perf = {"src": "_perf/bounds.png", "natural": 670, "shown": 670.0, "output": False}
    assert _small_text("book/performance", perf) is None
    assert "reads at 5.2 pt" in _small_text("book/performance", dict(perf, shown=335.0))


def test_figure_check_catches_figures_sharing_a_caption():
    imgs = [{"src": f"_images/{k}.png", "caption": c} for k, c in
            enumerate(["Fig. 25 Noise.", "Fig. 26 Noise.", "Fig. 27 Other.", None])]
    assert _shared_captions("x", imgs) == ["x: figures 0.png and 1.png share one caption "
                                           "('Noise....')"]  # the numbers differ, no more
    imgs[1]["caption"] = "Fig. 26 Salt and pepper."
    assert _shared_captions("x", imgs) == []


# ----------------------------------------------------------------------------- reading
# Code a reader sees that serves the harness rather than the argument: recording scorecard
# rows, trial maps, profile tables and the chapter's scorecard/trials objects.
_BOOKKEEPING = re.compile(r"\brecord\(|\.map\(|\.trials\(|\bsettings\(|\bPROFILES?\b"
                          r"|\bChapter\(|\bchunk\b|\bn_chunks\b|\btrial_cache\b")
_FOLDED = {"hide-input", "remove-input", "remove-cell", "hide-cell"}


def _visible_code(nb: Path) -> list[tuple[str, bool]]:
    """``(line, is bookkeeping)`` for every non-blank, non-comment code line a reader sees
    unfolded (cells not tagged hide-input, remove-input, remove-cell or hide-cell). A
    statement that calls the harness counts as bookkeeping with all its lines."""
    import ast

    lines = []
    for cell in json.loads(nb.read_text())["cells"]:
        if cell["cell_type"] != "code" or _FOLDED & set(cell["metadata"].get("tags", [])):
            continue
        src = "".join(cell["source"])
        code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                         for ln in src.splitlines())
        marked = set()
        for node in ast.parse(code).body:
            if _BOOKKEEPING.search(ast.unparse(node)):  # the code, not its comments
                marked.update(range(node.lineno, node.end_lineno + 1))
        lines += [(ln, k in marked) for k, ln in enumerate(src.splitlines(), 1)
                  if ln.strip() and not ln.lstrip().startswith("#")]
    return lines


def bookkeeping_share() -> dict[str, tuple[int, int]]:
    """Per chapter: (bookkeeping lines, visible code lines)."""
    out = {}
    for nb in NOTEBOOKS:
        lines = _visible_code(nb)
        out[nb.stem] = (sum(b for _, b in lines), len(lines))
    return out


def test_bookkeeping_is_at_most_5_percent_of_the_visible_code():
    """The code a reader sees unfolded is the argument (library calls, derivations, asserted
    claims, figures); recording, trial maps and profile tables are folded, removed or one
    library call: at most 5% of the visible code lines over all chapters."""
    share = bookkeeping_share()
    kept, total = map(sum, zip(*share.values()))
    detail = ", ".join(f"{k} {b}/{n}" for k, (b, n) in share.items())
    assert kept <= 0.05 * total, f"bookkeeping {kept} of {total} visible lines ({detail})"
