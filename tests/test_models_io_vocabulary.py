"""The models and io modules' vocabulary.

A function of a Boltzmann machine takes it as ``model`` (the calling conventions of
CONTRIBUTING.md); the old keyword ``bm=`` still works for one release, with a
:class:`FutureWarning` naming the new call. A generator whose ``rng`` had a seed for default
warns when ``rng`` is omitted and draws the same bits as with that seed. Every public function
and public method of the models and io modules the API reference renders has numpydoc
``Parameters`` (one entry per argument of its signature) and, unless it returns None,
``Returns`` (or ``Yields``) sections.
"""

from __future__ import annotations

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
