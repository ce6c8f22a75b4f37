"""Experiments of the SMCI chapters (Yasuda & Uchizawa, GSMCI section 4.2).

Per-paper trials for the book, kept apart from the estimators in :mod:`mrflib.inference.smci`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive
from mrflib.inference import exact, sampling, smci
from mrflib.inference.smci import covariances
from mrflib.learning import learners as learning
from mrflib.models import graphs
from mrflib.models.boltzmann import BoltzmannMachine, check_model

__all__ = ["covariance_mae_trial", "figure5_trial", "figure7_trial"]


def covariance_mae_trial(
    bm: BoltzmannMachine,
    sample_sizes: Sequence[int],
    methods: Sequence[str] = smci.METHODS,
    *,
    burn_in: int,
    rng: Any,
    ais_beta_step: float | None = None,
) -> list[dict[str, Any]]:
    """One trial of the experiment of section 4.2 (Figure 5) of the GSMCI paper.

    For each ``M`` in ``sample_sizes``, draws ``M`` Gibbs samples of ``bm`` (one
    independent chain per sample, ``burn_in`` sweeps) and returns, for every method, the
    mean absolute error of the edge covariances ``χ_ij = ⟨x_i x_j⟩ - ⟨x_i⟩⟨x_j⟩``
    against exact enumeration. Rows: ``{"M", "method", "mae"}``. With ``ais_beta_step``,
    also ``M`` runs of :func:`mrflib.inference.smci.ais_moments` (method ``"ais"``), the paper's AIS
    remark.
    """
    bm = check_model(bm, "bm")
    rng = as_rng(rng)
    for m in methods:
        if m not in smci.METHODS:
            raise ValueError(f"method must be one of {smci.METHODS}, got {m!r}")
    cov_exact = covariances(bm, *exact.moments(bm))
    rows = []
    for M in sample_sizes:
        M = check_positive(M, "sample size", integer=True)
        s = sampling.gibbs(bm, M, burn_in=burn_in, rng=rng)
        for m in methods:
            cov = covariances(bm, *smci.moments(bm, s, m))
            rows.append({"M": M, "method": m, "mae": float(np.mean(np.abs(cov - cov_exact)))})
        if ais_beta_step is not None:
            cov = covariances(bm, *smci.ais_moments(bm, M, beta_step=ais_beta_step, rng=rng))
            rows.append({"M": M, "method": "ais", "mae": float(np.mean(np.abs(cov - cov_exact)))})
    return rows


def figure5_trial(
    t: int,
    rng: Any,
    *,
    n: int,
    graph: Any,
    sizes: Sequence[int],
    burn_in: int,
    methods: Sequence[str] = smci.METHODS,
    ais_trials: int = 0,
    ais_beta_step: float = 1e-4,
) -> list[dict[str, Any]]:
    """Trial ``t`` of Figure 5 of the GSMCI paper (section 4.2) on one graph setting.

    Draws the model (biases U[-0.2, 0.2], couplings U[-0.3, 0.3], the paper's setting) on
    ``graph``, an edge array (the 4x5 grid) or a float ``p`` (a fresh Erdős–Rényi graph
    G(n, p) per trial), then runs :func:`covariance_mae_trial` (with AIS if ``t <
    ais_trials``). A trial drawing a graph without edges has no covariances: no rows.
    The signature is the one :meth:`mrflib.repro.trials.Trials.map` calls.
    """
    rng = as_rng(rng)
    edges = graphs.random_graph(n, float(graph), rng=rng) if np.ndim(graph) == 0 else graph
    if len(edges) == 0:
        return []
    bm = BoltzmannMachine.random(edges, n, rng=rng)
    ais = ais_beta_step if t < ais_trials else None
    rows = covariance_mae_trial(bm, sizes, methods, burn_in=burn_in, rng=rng, ais_beta_step=ais)
    return [{"trial": t, **row} for row in rows]


def figure7_trial(
    t: int,
    rng: Any,
    *,
    gen_edges: Any,
    model_edges: Any,
    n: int,
    n_data: int,
    curves: Sequence[tuple[str, str, dict[str, Any]]],
    steps: int,
    learning_rate: float,
) -> dict[str, np.ndarray]:
    """Trial ``t`` of Figure 7 of the GSMCI paper (section 5): learning curves to the MLE.

    Draws a generating model on ``gen_edges`` (biases U[-0.2, 0.2], couplings U[-0.3, 0.3]),
    ``n_data`` exact samples of it, the exact maximum-likelihood model on ``model_edges``,
    and then, for every ``(name, method, options)`` of ``curves``, fits ``model_edges`` by
    :func:`mrflib.learning.learners.fit` for ``steps`` steps at ``learning_rate``. Returns ``{name:
    MAE of the couplings to the MLE after every step}`` (the curves of Figure 7).
    """
    rng = as_rng(rng)
    gen = BoltzmannMachine.random(gen_edges, n, 0.2, 0.3, rng=rng)
    data = exact.sample(gen, n_data, rng=rng)
    mle = learning.fit(data, model_edges, "mle").model
    out = {}
    for name, method, options in curves:
        kw = dict(rng=rng) if method in ("pcd", "smci-pcd") else {}
        f = learning.fit(data, model_edges, method, reference=mle, learning_rate=learning_rate,
                         max_steps=steps, tol=0.0, progress=False, **kw, **options)
        out[name] = np.asarray(f.mae)
    return out
