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


#: The most lines a module of mrflib may hold.
HOUSE_LIMIT = 800


def test_every_module_stays_under_the_house_limit():
    """Every module of mrflib keeps to the house limit of 800 lines: one idea per module,
    named for it, so that a reader looking for an idea finds the one module that holds it
    and can read that module whole. A module that outgrows the limit holds a second idea,
    which gets a module of its own (a private one for machinery, re-exported or imported
    where its names are documented)."""
    from pathlib import Path

    package = Path(mrflib.__file__).parent
    long = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > HOUSE_LIMIT:
            long.append(f"mrflib/{where}: {lines} lines")
    assert not long, f"modules over {HOUSE_LIMIT} lines: {long}"


ANYTIME_PARTS = ["mrflib.io.anytime", "mrflib.io.anytime_mpe", "mrflib.io.anytime_pr"]


def _imported_names(name: str) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from module import name`` in the module ``name``."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(importlib.import_module(name).__file__).read_text())
    return [(node.module, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names]


@pytest.mark.parametrize("name", ANYTIME_PARTS)
def test_the_anytime_solver_parts_call_each_other_through_their_interface(name):
    """The anytime solver is one module per task: what one part takes from another is a
    public name of that part, listed in its ``__all__`` (and so in the API reference)."""
    taken = [(module, what) for module, what in _imported_names(name)
             if module in ANYTIME_PARTS]
    for module, what in taken:
        assert not what.startswith("_"), f"{name} imports {module}.{what}"
        assert what in importlib.import_module(module).__all__, f"{module}.{what}"


LEARNER_MODULES = ["mrflib.learning.learners", "mrflib.learning._fit_arguments",
                   "mrflib.learning._problem", "mrflib.learning._ascent_directions",
                   "mrflib.learning.stochastic_learning"]


def test_the_learners_functions_stay_under_the_house_limit():
    """No function of the ±1 learners' modules, nor of the factor graphs' stochastic
    learners, runs over 100 lines of code (its docstring aside: ``fit`` documents every
    option of every learner): each ``fit`` calls one function a step (argument checks,
    set-up, the step loop, the result), and the ascent directions are one function a
    family of methods."""
    import ast
    from pathlib import Path

    long = []
    for name in LEARNER_MODULES:
        tree = ast.parse(Path(importlib.import_module(name).__file__).read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            lines = node.end_lineno - node.lineno + 1
            if ast.get_docstring(node) is not None:
                doc = node.body[0]
                lines -= doc.end_lineno - doc.lineno + 1
            if lines > 100:
                long.append(f"{name}.{node.name}: {lines} lines")
    assert not long, long
