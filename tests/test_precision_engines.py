"""The precision limit (mrflib.models.precision) at every door: the exact engines' own
modules warn as their fronts do, each call once, and the warning names the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mrflib import BoltzmannMachine, FactorGraph, approx, exact
from mrflib.inference.exact import elimination, enumeration, junction_tree, sliced
from mrflib.io import solve as solve_module
from mrflib.models.precision import PrecisionWarning


def _unary(top: float) -> FactorGraph:
    return FactorGraph([2, 2, 2], [(0,), (0, 1), (1, 2)],
                       [np.array([0.0, top]), np.array([[0.0, 0.0], [0.0, 1.0]]),
                        np.array([[0.0, 0.0], [0.0, 0.5]])])


def _chain(J: float) -> BoltzmannMachine:
    edges = np.array([[i, i + 1] for i in range(5)])
    return BoltzmannMachine(np.full(6, 0.5), edges, np.full(5, J))


CALLS = {
    "elimination.log_partition": lambda: elimination.log_partition(_unary(1e16)),
    "elimination.marginals": lambda: elimination.marginals(_unary(1e16)),
    "elimination.factor_marginals": lambda: elimination.factor_marginals(_unary(1e16)),
    "elimination.map_assignment": lambda: elimination.map_assignment(_unary(1e16)),
    "elimination.sample": lambda: elimination.sample(_unary(1e16), 2, rng=0),
    "enumeration.log_partition": lambda: enumeration.log_partition(_unary(1e16)),
    "enumeration.marginals": lambda: enumeration.marginals(_unary(1e16)),
    "enumeration.joint_probabilities": lambda: enumeration.joint_probabilities(_unary(1e16)),
    "enumeration.map_assignment": lambda: enumeration.map_assignment(_unary(1e16)),
    "enumeration.sample": lambda: enumeration.sample(_unary(1e16), 2, rng=0),
    "exact.log_partition (machine)":
        lambda: exact.log_partition(_chain(1e16), method="junction-tree"),
    "exact.sample (machine)": lambda: exact.sample(_chain(1e16), 2, rng=0,
                                                   method="junction-tree"),
    "junction_tree.moments (deprecated)": lambda: junction_tree.moments(_chain(1e16)),
    "sliced.marginals": lambda: sliced.marginals(_unary(1e16)),
    "exact.marginals": lambda: exact.marginals(_unary(1e16), method="junction-tree"),
    "exact.moments": lambda: exact.moments(_chain(1e16), method="junction-tree"),
    "approx.marginals": lambda: approx.marginals(_unary(1e16), "exact"),
    "approx.log_partition_bounds": lambda: approx.log_partition_bounds(_unary(1e16)),
    "solve.solve": lambda: solve_module.solve(_unary(1e16), "MAR"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_door_warns_once_at_the_callers_line(name):
    """Before, the engines' modules answered such models without a word (only the fronts
    exact, approx and solve warned); a front that calls an engine warns once, not twice."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", FutureWarning)  # (the deprecated module's)
        CALLS[name]()
    ours = [w for w in caught if issubclass(w.category, PrecisionWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert ours[0].filename == __file__  # the lambda above: the user's call, not mrflib's
    assert "2^32" in str(ours[0].message)


def test_within_the_limit_no_engine_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        elimination.marginals(_unary(1e3))
        exact.moments(_chain(3.0), method="junction-tree")
        enumeration.log_partition(_unary(-1e3))
