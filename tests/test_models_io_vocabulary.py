"""The models and io modules' vocabulary and reference docstrings.

A function of a Boltzmann machine takes it as ``model`` (the calling conventions of
CONTRIBUTING.md); the old keyword ``bm=`` still works for one release, with a
:class:`FutureWarning` naming the new call. A generator whose ``rng`` had a seed for default
warns when ``rng`` is omitted and draws the same bits as with that seed. Every public function
and public method of the models and io modules the API reference renders has numpydoc
``Parameters`` (one entry per argument of its signature) and, unless it returns None,
``Returns`` (or ``Yields``) sections.
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings

import numpy as np
import pytest

from mrflib.models import boltzmann, graphs, lattices
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph

EDGES = graphs.square_grid(2, 2)
MODEL = BoltzmannMachine(np.array([0.1, -0.2, 0.3, 0.0]), EDGES,
                         np.array([0.4, -0.3, 0.2, 0.1]))

#: (name, function): the public functions of these modules whose machine argument is
#: ``model``.
RENAMED = [
    ("check_model", boltzmann.check_model),
    ("FactorGraph.from_boltzmann", FactorGraph.from_boltzmann),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in RENAMED])
def test_model_keyword_is_accepted_and_bm_warns_with_the_same_result(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        new = fn(model=MODEL)
    with pytest.warns(FutureWarning, match=r"bm=.*deprecated.*model="):
        old = fn(bm=MODEL)
    assert new == old
    assert new == fn(MODEL)  # positional callers are unchanged


#: (name, call with the other arguments): the generators whose ``rng`` defaulted to seed 0.
SEEDED = [
    ("BoltzmannMachine.random", lambda **kw: BoltzmannMachine.random(EDGES, 4, **kw)),
    ("potts_lattice", lambda **kw: lattices.potts_lattice(2, 3, 3, **kw)),
    ("triangle_lattice", lambda **kw: lattices.triangle_lattice(2, 3, 2, **kw)),
]


@pytest.mark.parametrize("name, make", [pytest.param(n, m, id=n) for n, m in SEEDED])
def test_omitted_rng_warns_and_keeps_seed_0(name, make):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an explicit seed warns about nothing
        seeded = make(rng=0)
    with pytest.warns(FutureWarning, match=rf"{re.escape(name)}\(\) without rng=.*rng=") as w:
        omitted = make()
    assert all(r.filename == __file__ for r in w)  # the warning names the caller's line
    assert omitted == seeded  # bit-identical: the old default seed


MODULES = ["mrflib.models.graphs", "mrflib.models.boltzmann", "mrflib.models.factor_graph",
           "mrflib.models.lattices", "mrflib.models.image_noise", "mrflib.models.precision",
           "mrflib.io.uai", "mrflib.io.pgmpy_models", "mrflib.io.solve", "mrflib.io.anytime",
           "mrflib.io.datasets", "mrflib.io.images"]


def _public_functions():
    """(id, function) of every public function and public method defined in MODULES."""
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj):
                out.append((f"{name}.{attr}", obj))
            elif inspect.isclass(obj):
                for meth, member in vars(obj).items():
                    fn = getattr(member, "__func__", member)
                    if not meth.startswith("_") and inspect.isfunction(fn):
                        out.append((f"{name}.{attr}.{meth}", fn))
    return out


def _section(doc: str, title: str) -> str | None:
    """The body of a numpydoc section (``None`` if absent); its underline must match."""
    match = re.search(rf"^{title}\n(-+)\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", doc, re.M | re.S)
    if match is None:
        return None
    assert len(match.group(1)) == len(title), f"{title} underline of the wrong length"
    return match.group(2)


def _entries(body: str) -> list[str]:
    """The parameter names of a Parameters section (``a, b : type`` gives both)."""
    names = []
    for line in body.splitlines():
        if line and not line.startswith(" "):
            names += [n.strip() for n in line.split(" : ")[0].split(",")]
    return names


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in _public_functions()])
def test_public_function_has_parameters_and_returns(fn):
    doc = inspect.getdoc(fn) or ""
    sig = inspect.signature(fn)
    params = [p.name for p in sig.parameters.values() if p.name not in ("self", "cls")]
    if params:
        body = _section(doc, "Parameters")
        assert body is not None, "no Parameters section"
        assert _entries(body) == params
    if sig.return_annotation not in (None, "None"):
        assert _section(doc, "Returns") is not None or _section(doc, "Yields") is not None
