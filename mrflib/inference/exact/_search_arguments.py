"""The arguments shared by the exact searches of ``log Z`` over a model's zeros.

The conditioning search (:mod:`mrflib.inference.exact.conditioning`) and the model counter
(:mod:`mrflib.inference.exact.model_counting`) take the same model, evidence and time
limit, and must refuse them alike: one reading of them serves both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from mrflib._support.validation import check_positive
from mrflib.models.factor_graph import FactorGraph, as_factor_graph, with_evidence


def conditioned_model(model: Any, evidence: Mapping[Any, Any] | None,
                      time_limit: float | None) -> tuple[FactorGraph, float | None, float]:
    """The factor graph of ``model`` given ``evidence``, ``time_limit`` checked, and the
    deadline it sets from the call.

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
    tuple of (FactorGraph, float or None, float)
        The conditioned factor graph, the time limit (``None`` kept) and the
        :func:`time.perf_counter` time it ends (``inf`` without a limit), counted from
        this call so that reading the model spends the limit too.

    Raises
    ------
    ValueError
        When ``time_limit`` is not a positive number, or the evidence does not fit the model.
    """
    start = time.perf_counter()
    model = as_factor_graph(with_evidence(model, evidence))
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    return model, time_limit, math.inf if time_limit is None else start + time_limit
