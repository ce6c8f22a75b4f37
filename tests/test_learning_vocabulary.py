"""The learning modules' vocabulary.

A function of a Boltzmann machine takes it as ``model`` (the calling conventions of
CONTRIBUTING.md); the old keyword ``bm=`` still works for one release, with a
:class:`FutureWarning` naming the new call. (The docstrings' sections are checked for every
rendered module by ``tests/test_numpydoc_sections.py``.)
"""

from __future__ import annotations

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
