"""Kullback-Leibler divergences of exact distributions: data against a model, a model
against a model, and two probability vectors.

Each is an exact answer about given models, computed by enumeration (a Boltzmann machine's
``2^n`` states by the blocked tables of :mod:`mrflib.inference.exact`, a factor graph's by
:mod:`mrflib.inference.exact.enumeration`), so it lives with the exact engines; the front
:mod:`mrflib.inference.exact` exports every name here (``exact.kl_model``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import check_array, require_memory

# the front, for the likelihoods it answers (at call time: it imports this module)
from mrflib.inference import exact as _front
from mrflib.inference.exact import enumeration as factor_enumeration
from mrflib.inference.exact._data_checks import check_factor_samples, check_samples
from mrflib.inference.exact.enumeration import MAX_STATE_BYTES_FACTOR, log_probabilities
from mrflib.models.boltzmann import BoltzmannMachine, check_model
from mrflib.models.factor_graph import FactorGraph, as_factor_graph
from mrflib.models.structure import is_pairwise_binary

__all__ = ["kl_data_model", "kl_divergence", "kl_model"]


def _entropy_of_rows(s: np.ndarray) -> float:
    _, counts = np.unique(s, axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def kl_data_model(model: BoltzmannMachine | FactorGraph, data: Any) -> float:
    """``KL(p_data ‖ P_model)`` in nats, without forming the empirical table.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    data : array_like of int, shape (N, n)
        As in :func:`~mrflib.inference.exact.log_likelihood`: samples in the model's domain.

    Returns
    -------
    float
        The divergence, at least 0.
    """
    if not is_pairwise_binary(model):
        x = check_factor_samples(model, data)
        return max(0.0, -_entropy_of_rows(x) - _front.log_likelihood(model, x))
    bm = check_model(model, "model")
    s = check_samples(data, bm.n)
    return max(0.0, -_entropy_of_rows(s) - _front.log_likelihood(bm, s))


def kl_divergence(p: Any, q: Any) -> float:
    """``KL(p ‖ q) = Σ p log(p / q)`` in nats for two probability vectors (``0 log 0 = 0``).

    Parameters
    ----------
    p : array_like of float, shape (K,)
        A probability vector: non-negative, summing to 1.
    q : array_like of float, shape (K,)
        A probability vector of the same shape.

    Returns
    -------
    float
        The divergence; ``inf`` where ``q`` vanishes on the support of ``p``.
    """
    p = check_array(p, "p", ndim=1)
    q = check_array(q, "q", shape=p.shape)
    for name, a in (("p", p), ("q", q)):
        if np.any(a < 0) or not np.isclose(a.sum(), 1.0, atol=1e-8):
            raise ValueError(f"{name} must be a probability vector (non-negative, summing to 1)")
    support = p > 0
    if np.any(q[support] == 0):
        return float("inf")
    return float(np.sum(p[support] * (np.log(p[support]) - np.log(q[support]))))


def _kl_factor_graphs(p: FactorGraph, q: FactorGraph) -> float:
    """``KL(P_p ‖ P_q)`` of two factor graphs on the same variables, by enumeration."""
    if not np.array_equal(p.cardinalities, q.cardinalities):
        raise ValueError("q must have the same variables and cardinalities as p")
    lp = factor_enumeration.joint_log_table(p)
    lp -= factor_enumeration.log_partition(p)
    lq = factor_enumeration.joint_log_table(q)
    lq -= factor_enumeration.log_partition(q)
    if not (np.isfinite(lp.max()) and np.isfinite(lq.max())):
        raise ValueError("p and q must have Z > 0 (some state of positive weight)")
    pp = np.exp(lp)
    support = pp > 0
    if np.any(lq[support] == -np.inf):
        return float("inf")
    return max(0.0, float(np.sum(pp[support] * (lp[support] - lq[support]))))


def kl_model(p: BoltzmannMachine | FactorGraph, q: BoltzmannMachine | FactorGraph) -> float:
    """``KL(P_p ‖ P_q)`` between two models on the same variables, by enumeration.

    A Boltzmann machine against a factor graph is compared through
    :meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann`.

    Parameters
    ----------
    p : BoltzmannMachine or FactorGraph
        The first model.
    q : BoltzmannMachine or FactorGraph
        The second, on the same variables and numbers of states.

    Returns
    -------
    float
        The divergence in nats, at least 0; ``inf`` where ``q`` gives zero weight to a
        state of positive ``p`` probability (factor graphs).
    """
    if not (is_pairwise_binary(p, "p") and is_pairwise_binary(q, "q")):
        return _kl_factor_graphs(as_factor_graph(p), as_factor_graph(q))
    p, q = check_model(p, "p"), check_model(q, "q")
    if p.n != q.n:
        raise ValueError(f"q must have the same number of spins as p ({p.n}), got {q.n}")
    # log P (held) while log Q is built: its log-weights and one temporary; the half-state
    # tables of the log-weights and the masks are below 1 MiB + 2^n bytes
    require_memory((MAX_STATE_BYTES_FACTOR + 1) * 2.0**p.n + 2**20,
                   f"kl_model over 2^{p.n} states")
    lp = log_probabilities(p)
    lq = log_probabilities(q)
    with np.errstate(invalid="ignore"):  # -inf - (-inf) = nan only where p = 0
        np.subtract(lp, lq, out=lq)  # log(p / q)
    np.exp(lp, out=lp)
    lq[lp == 0.0] = 0.0
    lq *= lp
    return max(0.0, float(np.sum(lq)))
