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
    assert have == want, f"only in environment.yml: {have - want}; only in pyproject: {want - have}"


def test_readme_starts_with_the_two_commands():
    head = (ROOT / "README.md").read_text()[:3000]
    assert "make book" in head and "make test" in head


def test_jupyter_book_is_pinned_to_1x():
    text = (ROOT / "pyproject.toml").read_text()
    assert "jupyter-book>=1.0.4,<2" in text


def test_ci_calls_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
