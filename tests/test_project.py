"""Project-level invariants: the two dependency lists agree, the README tells the commands."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names for PyPI names that differ (dask[distributed] is two conda packages).
CONDA_NAMES = {"dask": {"dask", "distributed"}}


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for extra in meta["optional-dependencies"].values():
        reqs += extra
    want = set()
    for r in reqs:
        want |= CONDA_NAMES.get(_name(r), {_name(r)})
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    have = {_name(d) for d in env["dependencies"] if isinstance(d, str)} - {"python", "pip"}
    pip_only = [d for d in env["dependencies"] if isinstance(d, dict)]  # the pip: section
    have |= {_name(r) for d in pip_only for r in d.get("pip", []) if not r.startswith("-")}
    assert have == want, f"only in environment.yml: {have - want}; only in pyproject: {want - have}"


def test_readme_starts_with_the_two_commands():
    head = (ROOT / "README.md").read_text()[:3000]
    assert "make book" in head and "make test" in head


def test_jupyter_book_is_pinned_to_1x():
    text = (ROOT / "pyproject.toml").read_text()
    assert "jupyter-book>=1.0.4,<2" in text


def test_ci_calls_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_readme_makefile_and_pyproject_agree_on_python():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    version = re.fullmatch(r">=(3\.\d+)", meta["project"]["requires-python"]).group(1)
    assert f"Python ≥ {version}" in (ROOT / "README.md").read_text()
    assert f"Python {version}+" in (ROOT / "Makefile").read_text().splitlines()[0]
    assert f"python={version}" in (ROOT / "environment.yml").read_text()


def test_licence_is_an_spdx_string_with_a_setuptools_that_reads_it():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(meta["project"]["license"], str)  # PEP 639; a table is deprecated
    assert "setuptools>=77" in meta["build-system"]["requires"]


def test_nothing_points_outside_the_repository():
    """README, contributing notes, book pages, notebooks and docstrings refer only to files
    inside the repository (the design notes and papers the project started from are not)."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "Makefile",
             *(ROOT / "book").glob("*.md"), *(ROOT / "notebooks").glob("*.ipynb"),
             *(ROOT / "mrflib").rglob("*.py"), *(ROOT / "tools").glob("*.py")]
    outside = re.compile(r"\.\./shared|shared/(?:DESIGN|papers)|DESIGN\.md|(?<![\w.])\.\./\.\.")
    hits = [f"{f.relative_to(ROOT)}: {m.group(0)}" for f in files
            for m in outside.finditer(f.read_text())]
    assert not hits, hits


def test_no_issue_numbers():
    """Code, tests, benchmarks, book and notebooks say the reason for a choice themselves: a
    reader has never seen the project's issue tracker, so a tracker number tells them
    nothing."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md",
             *(ROOT / "book").glob("*.md"), *(ROOT / "notebooks").glob("*.ipynb"),
             *(ROOT / "tests").glob("*.py"), *(ROOT / "bench").glob("*.py"),
             *(ROOT / "mrflib").rglob("*.py"), *(ROOT / "tools").glob("*.py")]
    number = re.compile(r"\b(?:issues?|PRs?|pull requests?)\s*#?\d+", re.IGNORECASE)
    hits = [f"{f.relative_to(ROOT)}: {m.group(0)}" for f in files
            for m in number.finditer(f.read_text())]
    assert not hits, hits
