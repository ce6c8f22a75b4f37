"""The book end to end: notebook hygiene, every notebook executed with profile="quick",
the HTML book rendered from those executions, and its pages opened in headless Chromium."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
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


def test_every_notebook_is_in_the_toc():
    assert {p.stem for p in NOTEBOOKS} == {p.stem for p in TOC_NOTEBOOKS}
    for f in build_book.toc_files(ROOT):
        assert (ROOT / f"{f}.md").exists() or (ROOT / f"{f}.ipynb").exists(), f


# ----------------------------------------------------------------------------- execution
@pytest.fixture(scope="session")
def quick_book(tmp_path_factory):
    """Execute every notebook (profile quick), then render the book from those runs."""
    out = tmp_path_factory.mktemp("book")
    src, results = out / "src", out / "results"
    records = build_book.execute_all(TOC_NOTEBOOKS, src / "notebooks", "quick", results, jobs=2)
    by_name = {r["notebook"]: r for r in records}
    html = None
    if all(r["ok"] for r in records):
        build_book.stage(src, {k: r["output"] for k, r in by_name.items()}, ROOT)
        from mrflib import report

        report.write_pages(results, ROOT / "bench" / "results", src / "book")
        build_book.render(src, out / "html")
        html = out / "html"
    return {"records": by_name, "html": html, "results": results}


@pytest.mark.slow
@pytest.mark.parametrize("nb", TOC_NOTEBOOKS, ids=[p.stem for p in TOC_NOTEBOOKS])
def test_notebook_executes_quick(quick_book, nb):
    rec = quick_book["records"][nb.stem]
    assert rec["ok"], f"{nb.name} failed under papermill (profile=quick):\n{rec['error']}"


@pytest.mark.slow
def test_book_renders_every_page(quick_book):
    html = quick_book["html"]
    assert html is not None, "a notebook failed, so the book was not rendered"
    for f in build_book.toc_files(ROOT):
        assert (html / f"{f}.html").exists(), f"missing page {f}.html"
    score = (html / "book" / "scorecard.html").read_text()
    assert "reproduced" in score or "new" in score


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


@pytest.mark.slow
def test_pages_in_headless_chromium(served_book):
    assert CHROMIUM, "Debian's chromium is not installed: run `make browser` (make test does)"
    from playwright.sync_api import sync_playwright

    external, failed, problems = [], [], []
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
        page.on("requestfailed", lambda r: failed.append(r.url))
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
            has_math = page.evaluate("document.querySelectorAll('.math').length > 0")
            if has_math:
                page.wait_for_function(
                    "window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000)
                page.evaluate("MathJax.startup.promise")
                typeset = page.evaluate("document.querySelectorAll('mjx-container').length")
                raw = page.evaluate(
                    "Array.from(document.querySelectorAll('.math')).filter("
                    "e => !e.querySelector('mjx-container')).length")
                if typeset == 0 or raw:
                    problems.append(f"{f}: math not typeset ({typeset} typeset, {raw} raw)")
        browser.close()
    assert not external, f"requests left the machine: {sorted(set(external))[:10]}"
    assert not failed, f"requests failed: {sorted(set(failed))[:10]}"
    assert not problems, "\n".join(problems)
