"""The arguments shared by the exact searches of ``log Z`` over a model's zeros.

The conditioning search (:mod:`mrflib.inference.exact.conditioning`) and the model counter
(:mod:`mrflib.inference.exact.model_counting`) take the same model, evidence and time
limit, and must refuse them alike: one reading of them serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mrflib._support.validation import check_positive
from mrflib.models.factor_graph import FactorGraph, as_factor_graph, with_evidence


def conditioned_model(model: Any, evidence: Mapping[Any, Any] | None,
                      time_limit: float | None) -> tuple[FactorGraph, float | None]:
    """The factor graph of ``model`` given ``evidence``, and ``time_limit`` checked.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise).
    evidence : mapping or None
        ``{variable: value}`` (:func:`~mrflib.models.factor_graph.with_evidence`).
    time_limit : float or None
        Seconds the search may take (``None``: no limit).

    Returns
    -------
    tuple of (FactorGraph, float or None)
        The conditioned factor graph and the time limit (``None`` kept).

    Raises
    ------
    ValueError
        When ``time_limit`` is not a positive number, or the evidence does not fit the model.
    """
    model = as_factor_graph(with_evidence(model, evidence))
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    return model, time_limit
