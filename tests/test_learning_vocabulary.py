"""The learning modules' vocabulary and reference docstrings.

A function of a Boltzmann machine takes it as ``model`` (the calling conventions of
CONTRIBUTING.md); the old keyword ``bm=`` still works for one release, with a
:class:`FutureWarning` naming the new call. Every public function of the learning modules
the API reference renders has numpydoc ``Parameters`` (one entry per argument of its
signature) and ``Returns`` sections.
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings

import numpy as np
import pytest

from mrflib import BoltzmannMachine, graphs
from mrflib.learning import learners, potentials

EDGES = graphs.square_grid(2, 2)
MODEL = BoltzmannMachine(np.array([0.1, -0.2, 0.3, 0.0]), EDGES,
                         np.array([0.4, -0.3, 0.2, 0.1]))
DATA = np.array([[1, -1, 1, 1], [-1, -1, 1, -1], [1, 1, -1, 1]], dtype=np.int8)

#: (name, function, the other arguments): every public learning function whose machine
#: argument is ``model``.
RENAMED = [
    ("objective", learners.objective, dict(data=DATA, method="mple")),
    ("objective_gradient", learners.objective_gradient, dict(data=DATA, method="rm")),
    ("mpf_log_flow", learners.mpf_log_flow, dict(data=DATA)),
    ("ascent_direction", learners.ascent_direction, dict(data=DATA, method="mple")),
    ("mple_rho", learners.mple_rho, dict(x=DATA)),
    ("estimator_variances", learners.estimator_variances, {}),
    ("ising_normalized_potentials", potentials.ising_normalized_potentials, {}),
]


def _same(a, b):
    """Equal results, whatever their nesting (floats, arrays, tuples, dicts)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    return np.array_equal(a, b)


@pytest.mark.parametrize("fn, rest", [pytest.param(f, r, id=n) for n, f, r in RENAMED])
def test_model_keyword_is_accepted_and_bm_warns_with_the_same_result(fn, rest):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        new = fn(model=MODEL, **rest)
    with pytest.warns(FutureWarning, match=r"bm=.*deprecated.*model="):
        old = fn(bm=MODEL, **rest)
    assert _same(new, old)
    assert _same(new, fn(MODEL, **rest))  # positional callers are unchanged


@pytest.mark.parametrize("fn, rest", [pytest.param(f, r, id=n) for n, f, r in RENAMED])
def test_a_wrong_model_is_refused_by_its_new_name(fn, rest):
    with pytest.raises(TypeError, match=r"\bmodel\b"):
        fn(model=np.zeros(4), **rest)
    with pytest.raises(TypeError, match="both"):
        fn(model=MODEL, bm=MODEL, **rest)


LEARNING_MODULES = [
    "learners", "fit_result", "factor_learning", "factor_layout", "stochastic_learning",
    "tying", "existence", "lap", "lap_gaussian", "neighbourhoods", "potentials", "fsll",
    "log_linear",
]


def _documented_functions():
    """``(id, function)`` for every public function and method the reference renders."""
    out = []
    for short in LEARNING_MODULES:
        mod = importlib.import_module(f"mrflib.learning.{short}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if getattr(obj, "__module__", None) != mod.__name__:
                continue  # re-exported: checked in its home module
            if inspect.isfunction(obj):
                out.append((f"{short}.{name}", obj))
            elif inspect.isclass(obj):
                out += [(f"{short}.{name}.{m}", f) for m, f in vars(obj).items()
                        if inspect.isfunction(f) and not m.startswith("_")]
    return out


def _section(doc: str, title: str) -> str | None:
    """The body of a numpydoc section (``None`` if absent); its underline must match."""
    match = re.search(rf"^{title}\n(-+)\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", doc, re.M | re.S)
    if match is None:
        return None
    assert len(match.group(1)) == len(title), f"the underline of {title} has the wrong length"
    return match.group(2)


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in _documented_functions()])
def test_public_function_has_parameters_and_returns(fn):
    doc = inspect.getdoc(fn) or ""
    params = [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]
    if params:
        body = _section(doc, "Parameters")
        assert body is not None, "no Parameters section"
        names = {n.strip().lstrip("*") for line in re.findall(r"^(\**\w[\w, *]*?)(?: :|$)",
                                                                body, re.M)
                 for n in line.split(",")}
        assert set(params) <= names, f"undocumented: {sorted(set(params) - names)}"
    if inspect.signature(fn).return_annotation not in (None, "None"):
        assert _section(doc, "Returns") is not None or _section(doc, "Yields") is not None
