"""Exact inference on a :class:`~mrflib.models.factor_graph.FactorGraph` by brute-force enumeration.

The joint log-weight table ``Σ_k θ_k(x_{S_k})`` over all ``Π_i |X_i|`` states (axis ``i`` is
variable ``i``) is built by broadcasting every factor, then ``log Z``, marginals, factor
marginals, the MAP state and samples are read off it. It is the reference the junction-tree
engine (:mod:`mrflib.inference.exact.elimination`) is tested against, and the fastest way on small
models.

Precision: exact within the limit :mod:`mrflib.models.precision` states (and argues once
for every engine); beyond it :mod:`mrflib.inference.exact` warns before calling this engine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mrflib._support.validation import (
    as_rng,
    check_instance,
    check_positive,
    format_count,
    require_memory,
)
from mrflib.inference._factor_ops import expand, logsumexp, renormalize
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.precision import checked

__all__ = ["joint_log_table", "joint_probabilities", "log_partition", "marginals",
           "factor_marginals",
           "map_assignment", "sample"]


@checked
def joint_log_table(model: FactorGraph) -> np.ndarray:
    """Log-weights ``Σ_k θ_k(x_{S_k})`` of every state, refused before allocating when they
    would not fit.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    ndarray of float64, shape tuple(model.cardinalities)
        Axis ``i`` is variable ``i``; ``-inf`` where a state has zero weight.

    Raises
    ------
    ValueError
        When the table (24 bytes a state at the peak) does not fit in memory.
    """
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    shape = tuple(int(c) for c in model.cardinalities)
    total = math.prod(shape)
    require_memory(24 * total, f"enumeration of the {format_count(total)} states of {model!r}")
    out = np.zeros(shape)
    target = range(model.n)
    for s, t in zip(model.scopes, model.log_tables):
        out += expand(t, s, target)
    return out


@checked
def log_partition(model: FactorGraph) -> float:
    """``log Z = log Σ_x exp Σ_k θ_k(x_{S_k})``.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    float
        The natural log of the partition function; ``-inf`` when every weight is zero.
    """
    lw = joint_log_table(model)
    return float(logsumexp(lw, tuple(range(lw.ndim))))


@checked
def joint_probabilities(model: FactorGraph) -> np.ndarray:
    """``P(x)`` of every state, shaped like :func:`joint_log_table`.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    ndarray of float64, shape tuple(model.cardinalities)
        The probabilities, axis ``i`` variable ``i``.

    Raises
    ------
    ValueError
        When ``Z = 0`` (every state has zero weight).
    """
    lw = joint_log_table(model)
    logz = logsumexp(lw, tuple(range(lw.ndim)))
    if logz == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight): its distribution "
                         "is undefined")
    return renormalize(np.exp(lw - logz), float(logz))


@checked
def marginals(model: FactorGraph) -> list[np.ndarray]:
    """``P(x_i)`` for every variable.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    list of ndarray of float64
        One ``(|X_i|,)`` array per variable.
    """
    p = joint_probabilities(model)
    axes = range(p.ndim)
    return [p.sum(axis=tuple(a for a in axes if a != i)) for i in axes]


@checked
def factor_marginals(model: FactorGraph) -> list[np.ndarray]:
    """``P(x_{S_k})`` for every factor.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    list of ndarray of float64
        One array per factor, shaped like ``model.log_tables[k]`` (axes in scope order).
    """
    p = joint_probabilities(model)
    out = []
    for s in model.scopes:
        m = p.sum(axis=tuple(a for a in range(p.ndim) if a not in s))
        ordered = sorted(s)
        out.append(np.transpose(m, [ordered.index(v) for v in s]) if s else np.asarray(1.0))
    return out


@checked
def map_assignment(model: FactorGraph) -> tuple[np.ndarray, float]:
    """The first most probable state in C order and its log-weight.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    x : ndarray of int64, shape (n,)
        The state: among ties, the first in C order (variable 0 the slowest digit).
    log_weight : float
        Its log-weight ``Σ_k θ_k(x_{S_k})``.

    Raises
    ------
    ValueError
        When ``Z = 0`` (every state has zero weight).
    """
    lw = joint_log_table(model)
    flat = int(np.argmax(lw))
    if lw.flat[flat] == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight): it has no most "
                         "probable state")
    x = np.array(np.unravel_index(flat, lw.shape), dtype=np.int64)
    return x, float(lw.flat[flat])


@checked
def sample(model: FactorGraph, n_samples: int, *, rng: Any) -> np.ndarray:
    """Exact i.i.d. samples by inverse CDF over the enumerated states (one uniform each).

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.
    n_samples : int
        Number of samples, at least 1.
    rng : int or numpy.random.Generator
        Seed or generator of the uniforms; the same seed gives the same samples.

    Returns
    -------
    ndarray of int64, shape (n_samples, n)
        The samples, states ``0..|X_i|-1``.
    """
    check_instance(model, FactorGraph, "model")
    n_samples = int(check_positive(n_samples, "n_samples", integer=True))
    rng = as_rng(rng)
    require_memory(8.0 * n_samples * (model.n + 3), f"n_samples = {n_samples} samples of "
                   f"{model.n} variables")
    cdf = np.cumsum(joint_probabilities(model).ravel())
    u = rng.random(n_samples) * cdf[-1]
    idx = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)
    shape = tuple(int(c) for c in model.cardinalities)
    return np.stack(np.unravel_index(idx, shape), axis=1).astype(np.int64)
