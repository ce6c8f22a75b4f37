"""The checks of data samples the exact front (:mod:`mrflib.inference.exact`) and its
divergences (:mod:`mrflib.inference.exact.divergence`) share: at least one sample, each a
state of the model (spins of a Boltzmann machine, :func:`check_samples`; states of a factor
graph, :func:`check_factor_samples`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import check_spins
from mrflib.models._checks import check_states
from mrflib.models.factor_graph import FactorGraph

__all__ = ["check_samples", "check_factor_samples"]


def check_samples(data: Any, n: int | None = None) -> np.ndarray:
    """Spin samples ``data`` (``±1``, shape ``(N, n)``, ``N >= 1``) as ``int8``; a
    ``ValueError`` naming ``data`` otherwise."""
    s = check_spins(data, n, "data")
    if len(s) == 0:
        raise ValueError("data must contain at least one sample (got 0 rows)")
    return s


def check_factor_samples(model: FactorGraph, data: Any) -> np.ndarray:
    """States of ``model`` (shape ``(N, n)``, ``N >= 1``) as ``int64``; a ``ValueError``
    naming ``data`` otherwise."""
    x = check_states(data, model.cardinalities, "data")
    if len(x) == 0:
        raise ValueError("data must contain at least one sample (got 0 rows)")
    return x
