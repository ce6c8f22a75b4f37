"""Every documented module path imports: the short paths of the top level
(``import mrflib.approx``) are the modules they name, not copies."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import mrflib

SHORT = sorted(mrflib._PUBLIC)


@pytest.mark.parametrize("short", SHORT)
def test_short_path_is_the_module_it_names(short):
    module = importlib.import_module(f"mrflib.{short}")
    assert module is importlib.import_module(mrflib._PUBLIC[short])
    assert module is getattr(mrflib, short)
    assert module.__spec__.name == mrflib._PUBLIC[short]


def test_import_statement_of_a_short_path_in_a_fresh_process():
    code = ("import mrflib.approx, mrflib.exact, mrflib.graphs\n"
            "from mrflib.smci import moments\n"
            "import mrflib.inference.approx as a\n"
            "assert mrflib.approx is a and moments.__module__ == 'mrflib.inference.smci'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_short_path_is_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mrflib.no_such_module")


def test_a_renamed_argument_warns_names_the_new_one_and_refuses_both():
    from mrflib._support.deprecation import renamed_argument

    @renamed_argument("bm", "model")
    def f(model, k=1):
        return model, k

    with pytest.warns(FutureWarning, match=r"f\(model=...\)"):
        assert f(bm=3, k=2) == (3, 2)
    with pytest.raises(TypeError, match="both model= and its deprecated name bm="):
        f(model=1, bm=2)


@pytest.mark.parametrize("name", ["mrflib.learning.table_learners", "mrflib.io.anytime"])
def test_a_module_split_by_idea_stays_under_the_house_limit(name):
    """The learners of factor tables and the anytime solver keep to the house limit of 800
    lines a module: the warm start of LAP's fits and the ``PR`` and ``MPE`` parts of the
    solver are modules of their own."""
    from pathlib import Path

    path = Path(importlib.import_module(name).__file__)
    assert len(path.read_text().splitlines()) <= 800, name
