"""The parameters a factor-graph learner optimizes: its parameter map and its start.

The learners of :mod:`mrflib.learning.table_learners` and
:mod:`mrflib.learning.stochastic_learning` optimize either the normalized potentials of a
structure (:class:`~mrflib.learning._layout.Layout`) or the free parameters of a
:class:`~mrflib.learning.tying.Tie`: :func:`parameter_map` chooses one from the learners'
``tie`` option and :func:`initial_parameters` gives the start from their ``init``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mrflib._support.validation import check_array
from mrflib.learning._layout import Layout
from mrflib.learning.tying import Tie
from mrflib.models.factor_graph import FactorGraph

__all__ = ["parameter_map", "initial_parameters"]


def parameter_map(structure: FactorGraph, tie: Any) -> Any:
    """The parameter map a learner optimizes: the normalized potentials
    (:class:`~mrflib.learning._layout.Layout`) when ``tie`` is None, else the
    :class:`~mrflib.learning.tying.Tie` (given, or made from a sequence of group labels)."""
    if tie is None:
        return Layout(structure)
    if not isinstance(tie, Tie):
        if isinstance(tie, (str, bytes, Mapping)) or not hasattr(tie, "__len__"):
            raise ValueError("tie must be a Tie or a sequence of group labels (one per "
                             f"factor), got {type(tie).__name__}")
        return Tie(structure, tie)
    if (not np.array_equal(tie.card, structure.cardinalities)
            or tie.scopes != structure.scopes):
        raise ValueError("tie must be made for the structure (the same cardinalities and "
                         "scopes)")
    return tie


def initial_parameters(lay: Any, structure: FactorGraph, init: Any) -> np.ndarray:
    """The starting parameters: zeros, or those of ``init`` (a FactorGraph over the same
    scopes, untied; an array of ``n_params`` with a
    :class:`~mrflib.learning.tying.Tie`)."""
    if init is None:
        return np.zeros(lay.n_params)
    if isinstance(lay, Tie):
        if isinstance(init, FactorGraph):
            raise ValueError("init with a tie must be an array of the tie's n_params = "
                             f"{lay.n_params} parameters (a FactorGraph need not be in the "
                             "tied family)")
        return check_array(init, "init", ndim=1, shape=(lay.n_params,)).astype(
            np.float64, copy=True)
    if not isinstance(init, FactorGraph):
        raise TypeError(f"init must be a FactorGraph, got {type(init).__name__}")
    if (not np.array_equal(init.cardinalities, structure.cardinalities)
            or init.scopes != structure.scopes):
        raise ValueError("init must be a FactorGraph with the structure's cardinalities "
                         "and scopes")
    bad = [k for k, t in enumerate(init.log_tables) if not np.all(np.isfinite(t))]
    if bad:
        raise ValueError(f"init must have finite log-tables (a zero weight has no "
                         f"normalized potentials, Theorem 6), got -inf in factor {bad[0]}")
    return lay.theta(init)
