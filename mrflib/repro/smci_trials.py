"""Experiments of the SMCI chapters (Yasuda & Uchizawa, GSMCI section 4.2).

Per-paper trials for the book, kept apart from the estimators in :mod:`mrflib.smci`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import exact, sampling, smci
from .._validation import as_rng, check_model, check_positive
from ..model import BoltzmannMachine
from ..smci import covariances

__all__ = ["covariance_mae_trial"]


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
    also ``M`` runs of :func:`mrflib.smci.ais_moments` (method ``"ais"``), the paper's AIS
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
