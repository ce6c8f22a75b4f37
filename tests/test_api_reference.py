"""The API reference (book/api/) shows every name of the public contract.

The reference is rendered by autodoc from the modules its pages name (``automodule`` with
``:members:``, which documents a module's ``__all__``). A contract name is shown when its home
module (where the object is defined) is one of those modules and lists it in ``__all__``; the
rendered pages are checked for the same names by the book build's test
(``tests/test_book.py``).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import mrflib

ROOT = Path(__file__).resolve().parents[1]

#: The public names the chapters and users call, as ``from mrflib import <head>`` then
#: ``<head>.<rest>``: the documented contract of every round.
CONTRACT = [
    "BoltzmannMachine", "BoltzmannMachine.random", "BoltzmannMachine.log_weight",
    "graphs.square_grid", "graphs.random_graph", "graphs.complete", "graphs.chimera",
    "graphs.cubic", "graphs.Graph", "graphs.king_grid",
    "exact.log_partition", "exact.moments", "exact.calibrator", "exact.sample",
    "exact.kl_model", "exact.kl_data_model",
    "exact.log_likelihood", "exact.marginals", "exact.map_assignment", "exact.plan",
    "sampling.gibbs",
    "smci.moments", "smci.s2_region", "smci.gsmci", "smci.asymptotic_variance",
    "learning.fit", "learning.Fit",
    "fsll.fit", "fsll.dual", "fsll.Model",
    "lap.fit_ising", "lap.fit_gaussian", "lap.one_neighbourhood",
    "bounds.coefficients", "bounds.optimal_mu", "bounds.mean_field_solution",
    "bounds.delta_h_moments", "bounds.log_partition_lower_bound", "bounds.partition_graphs",
    "datasets.digits",
    "FactorGraph", "FactorGraph.log_weight", "FactorGraph.condition",
    "FactorGraph.from_boltzmann",
    "io.read_uai", "io.write_uai",
    "approx.marginals", "approx.log_partition", "approx.log_partition_bounds",
    "approx.ApproxResult",
]


def documented_modules() -> set[str]:
    """The modules the API reference pages render with ``automodule``."""
    names = set()
    for page in (ROOT / "book" / "api").glob("*.md"):
        names |= set(re.findall(r"\.\. automodule:: ([\w.]+)", page.read_text()))
    return names


def home(name: str) -> tuple[str, str]:
    """``(module, qualified name)`` where the contract name is defined: its anchor in the
    rendered reference is ``module.qualname``."""
    head, *rest = name.split(".")
    obj = getattr(mrflib, head)
    for part in rest:
        obj = getattr(obj, part)
    if hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
        return obj.__module__, obj.__qualname__
    raise AssertionError(f"{name} is not a function or class")


@pytest.mark.parametrize("name", CONTRACT)
def test_contract_name_is_in_the_reference(name):
    module, qualname = home(name)
    assert module in documented_modules(), (
        f"{name} lives in {module}, which no page of book/api renders")
    top = qualname.split(".")[0]
    exported = getattr(importlib.import_module(module), "__all__", None)
    assert exported is not None and top in exported, (
        f"{name}: {top} is not in {module}.__all__, so autodoc leaves it out")


def public_modules(layer: str) -> list[str]:
    """The public modules of one library layer, sub-packages included (no part of the path
    private)."""
    names = []
    for path in sorted((ROOT / "mrflib" / layer).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) <= 2 or any(part.startswith("_") for part in parts):
            continue
        names.append(".".join(parts))
    return names


def test_every_public_module_is_in_the_reference():
    """Every public module of the four library layers has its section."""
    pages = documented_modules()
    missing = [mod for layer in ("models", "inference", "learning", "io")
               for mod in public_modules(layer) if mod not in pages]
    assert not missing, f"public modules without a reference section: {missing}"


@pytest.mark.parametrize("layer", ["inference", "inference.exact", "learning"])
def test_old_module_paths_forward_to_their_replacements(layer):
    """Each deprecated module path warns and gives the new module object itself; no file
    stands for it."""
    import sys
    import warnings

    package = importlib.import_module(f"mrflib.{layer}")
    assert package.MOVED
    for old, new in package.MOVED.items():
        assert not (ROOT / "mrflib" / layer.replace(".", "/") / f"{old}.py").exists()
        name = f"mrflib.{layer}.{old}"
        sys.modules.pop(name, None)
        package.__dict__.pop(old, None)
        with pytest.warns(FutureWarning, match=new):
            module = importlib.import_module(name)
        assert module is importlib.import_module(new)
        assert module.__spec__.name == new
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert getattr(package, old) is module


#: The public functions whose caller must name the method: the learners and their
#: objectives, where the method is what the call is about, and the reading of a method's
#: name.
METHOD_REQUIRED = {"mrflib.learning.learners.fit", "mrflib.learning.learners.objective",
                   "mrflib.learning.learners.objective_gradient",
                   "mrflib.learning.learners.ascent_direction",
                   "mrflib.inference.smci.regions.order_of"}


def test_method_is_one_positional_or_keyword_argument_everywhere():
    """``method`` follows the arguments every call needs and may be given by position or
    by name (``exact.log_partition(model, "junction-tree")`` as
    ``approx.marginals(model, "lbp")``); it has a default ("auto" where the function
    chooses the engine) except where the method is the point of the call."""
    import inspect

    checked, wrong = 0, []
    for layer in ("models", "inference", "learning", "io"):
        for name in public_modules(layer):
            module = importlib.import_module(name)
            for attr in getattr(module, "__all__", []):
                fn = getattr(module, attr)
                if not inspect.isfunction(fn) or fn.__module__ != name:
                    continue
                p = inspect.signature(fn).parameters.get("method")
                if p is None:
                    continue
                checked += 1
                where = f"{name}.{attr}"
                if p.kind is not p.POSITIONAL_OR_KEYWORD:
                    wrong.append(f"{where}: {p.kind.name}")
                if (p.default is p.empty) != (where in METHOD_REQUIRED):
                    wrong.append(f"{where}: default {p.default!r}")
    assert checked > 20 and not wrong, wrong
