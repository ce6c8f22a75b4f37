"""Experiments of the 1-SMCI learning chapter (Yasuda 2018, sections 4.2 and 5).

Per-paper trials for the book, kept apart from the learners in :mod:`mrflib.learning.learners`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive
from mrflib.inference import exact
from mrflib.learning.learners import METHODS, fit, mae
from mrflib.models.boltzmann import BoltzmannMachine, check_model

__all__ = ["mae_trial", "figure_trial"]


def mae_trial(
    generator: Any,
    edges: Any,
    n_data: int,
    methods: tuple[str, ...] = ("mple", "1-smci"),
    *,
    rng: Any,
    bias: bool = False,
    curves: bool = False,
    **fit_options: Any,
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """One trial of the experiments of sections 4.2 and 5 of Yasuda (2018).

    Draws ``n_data`` exact i.i.d. points from ``generator`` (:func:`mrflib.inference.exact.sample`),
    fits the exact MLE on ``edges`` and every method in ``methods`` (gradient ascent
    from zero), and measures the coupling MAE of each solution to the MLE.

    Parameters
    ----------
    generator : BoltzmannMachine
        The generative machine (its graph may differ from ``edges``: model error).
    edges : array (E, 2)
        The learning machine's graph.
    n_data : int
        N.
    methods : tuple of str
        Methods of :func:`mrflib.learning.learners.fit` compared with the MLE.
    rng : Generator or int
        Draws the data.
    bias : bool
        Learn biases (the paper's experiments have none: default False).
    curves : bool
        Also return the per-step MAE curves (Figure 3).
    **fit_options
        Passed to :func:`mrflib.learning.learners.fit` (``learning_rate``, ``max_steps``, ``tol``,
        ...).

    Returns
    -------
    rows : list of dict
        One per method: ``method, N, mae, steps, converged, seconds``.
    curves : dict
        ``method -> MAE per step`` (empty unless ``curves``).
    """
    generator = check_model(generator, "generator")
    n_data = check_positive(n_data, "n_data", integer=True)
    if isinstance(methods, str) or not all(m in METHODS for m in np.atleast_1d(methods)):
        raise ValueError(f"methods must be a tuple of names from {METHODS}, got {methods!r}")
    data = exact.sample(generator, n_data, rng=as_rng(rng))
    mle = fit(data, edges, "mle", n=generator.n, bias=bias)
    rows, out = [], {}
    for m in methods:
        f = fit(data, edges, m, n=generator.n, bias=bias, reference=mle.model, record=curves,
                progress=False, **fit_options)
        rows.append(dict(method=m, N=n_data, mae=mae(f.model, mle.model), steps=f.n_steps,
                         converged=f.converged, seconds=f.seconds))
        if curves:
            out[m] = f.mae
    return rows, out


def figure_trial(
    t: int,
    rng: Any,
    *,
    gen_edges: Any,
    lam: float,
    n: int,
    model_edges: Any,
    n_data: int,
    methods: tuple[str, ...],
    curves: bool = False,
    **fit_options: Any,
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Trial ``t`` of Figures 2 and 3 of Yasuda (2018): a fresh generator, then :func:`mae_trial`.

    The generator has no biases and couplings U[-lam, lam] on ``gen_edges`` (section 5:
    λ = 0.3 on the 4x4 grid; λ = 0.2 on the complete graph for the model-error case). Rows
    carry ``trial = t``. The signature is the one :meth:`mrflib.repro.trials.Trials.map` calls.
    """
    rng = as_rng(rng)
    gen = BoltzmannMachine(np.zeros(n), gen_edges, rng.uniform(-lam, lam, len(gen_edges)))
    rows, cv = mae_trial(gen, model_edges, n_data, methods, rng=rng, curves=curves,
                         **fit_options)
    return [dict(r, trial=t) for r in rows], cv
