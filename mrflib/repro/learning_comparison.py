"""The learners side by side on factor graphs with known parameters (learning beyond the
treewidth).

Two papers claim that their learners beat maximum pseudo-likelihood on Boltzmann machines:
1-SMCI learning (Yasuda 2018) and SMCI with persistent contrastive divergence (GSMCI,
Algorithm 2). The chapter "Learning beyond the treewidth" asks whether that holds for
multi-state variables (Potts lattices, ``q`` = 3 and 4, mixed couplings) and for factors of
three variables (triangle lattices), at sizes where exact maximum likelihood is the reference
(8x8) and where it is out of reach (32x32, 64x64). This module draws the data (exactly where
the engine can, otherwise by Gibbs chains whose mixing it checks), runs every learner on the
same data, and measures each fit against the truth:

* the **parameter error**: the mean absolute difference of the normalized potentials
  (Mizrahi et al., Definition 5) of the fit and of the truth, over every free entry; the
  normalized potentials are the identifiable parameters, so the error is zero only for the
  true distribution;
* the **test log-likelihood** per sample of held-out data, where exact inference reaches.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from mrflib._support.validation import as_rng, check_positive
from mrflib.inference import exact
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import learners
from mrflib.learning._layout import Layout
from mrflib.models.factor_graph import FactorGraph

__all__ = ["draw", "parameter_error", "error_curve", "compare", "LEARNERS"]

#: The learners compared, each with the options of :func:`mrflib.learning.fit` that the
#: comparison gives it (``steps`` is replaced by the profile's number of updates).
LEARNERS: dict[str, dict[str, Any]] = {
    "mle": {},
    "mple": {},
    "lap": {},
    "1-smci": {},
    "pcd": {"k": 1},
    "smci-pcd": {"estimator": "1-smci", "kappa": 1},
}


def draw(model: FactorGraph, n_samples: int, *, rng: Any, sweeps: int = 200
         ) -> tuple[np.ndarray, dict[str, Any]]:
    """``n_samples`` states of ``model``: exact i.i.d. samples where its junction tree fits,
    otherwise one Gibbs chain per sample, run ``sweeps`` sweeps from a uniformly random state.

    The chains' mixing is checked: a second set of as many chains, started from the all-zero
    state, is run as long; if both have forgotten their start, their variable marginals agree
    within sampling error. ``info["mixing"]`` is the largest difference of a marginal
    probability divided by its standard error (about 4 or less for two samples of one
    distribution; ``0`` for exact samples).

    Returns
    -------
    data : int64 array (n_samples, n)
    info : dict
        ``method`` ("exact" or "gibbs"), ``mixing``, ``seconds``.
    """
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    sweeps = check_positive(sweeps, "sweeps", integer=True)
    rng = as_rng(rng)
    t0 = time.perf_counter()
    if exact.plan(model).fits:
        data = exact.sample(model, n_samples, rng=rng)
        return data, {"method": "exact", "mixing": 0.0, "seconds": time.perf_counter() - t0}
    data = factor_gibbs.gibbs(model, n_samples, burn_in=sweeps, rng=rng)
    other = factor_gibbs.gibbs(model, n_samples, burn_in=sweeps, rng=rng,
                               init=np.zeros((n_samples, model.n), dtype=np.int64))
    z = 0.0
    for v in range(model.n):
        c = int(model.cardinalities[v])
        a = np.bincount(data[:, v], minlength=c) / n_samples
        b = np.bincount(other[:, v], minlength=c) / n_samples
        se = np.sqrt((a * (1 - a) + b * (1 - b)) / n_samples + 1e-12)
        z = max(z, float(np.max(np.abs(a - b) / se)))
    return data, {"method": "gibbs", "mixing": z, "seconds": time.perf_counter() - t0}


def parameter_error(model: FactorGraph, truth: FactorGraph) -> float:
    """Mean absolute difference of the normalized potentials of ``model`` and ``truth`` (the
    same scopes), over every free entry (Definition 5 of Mizrahi et al.)."""
    lay = Layout(truth)
    return float(np.mean(np.abs(lay.theta(model) - lay.theta(truth))))


def error_curve(fit: Any, truth: FactorGraph) -> tuple[np.ndarray, np.ndarray]:
    """The parameter error (:func:`parameter_error`) of every recorded iterate of a fit (the
    start included), and the time at which it was reached (the fit's seconds spread evenly
    over its iterates).

    ``fit.params`` must hold the normalized potentials ``θ`` of each step, as every
    untied factor-graph learner but LAP records them; LAP gives its one estimate.
    """
    theta = Layout(truth).theta(truth)
    if fit.params is None or len(fit.params) == 0:
        return np.array([fit.seconds]), np.array([parameter_error(fit.model, truth)])
    err = np.abs(np.asarray(fit.params) - theta).mean(axis=1)
    return fit.seconds * np.arange(1, len(err) + 1) / len(err), err


def _fit(method: str, data: np.ndarray, truth: FactorGraph, steps: int, rng: Any,
         options: dict) -> Any:
    if method in ("mle", "mple", "lap"):
        return learners.fit(data, truth, method, **options)
    return learners.fit(data, truth, method, max_steps=steps, rng=rng, progress=False,
                        **options)


def compare(truth: FactorGraph, data: np.ndarray, test: np.ndarray | None = None, *,
            methods: list[str] | None = None, steps: int = 200, rng: Any,
            options: dict[str, dict] | None = None) -> tuple[pd.DataFrame, dict]:
    """Fit ``truth``'s family to ``data`` by every learner; one row per learner.

    Parameters
    ----------
    truth : FactorGraph
        The model the data were drawn from: its scopes define the family, its tables the
        parameters the fits are measured against.
    data, test : int arrays (N, n)
        Training data, and held-out data for the test log-likelihood (where the exact
        engine reaches; ``None`` to skip it).
    methods : list of str, optional
        Keys of :data:`LEARNERS` (default: all; ``"mle"`` is skipped where exact inference
        does not reach).
    steps : int
        Parameter updates of the gradient learners (1-SMCI, PCD, SMCI-PCD).
    rng : Generator or int
        The learners' draws (one child stream per learner, so a learner's result does not
        depend on which others ran).
    options : dict, optional
        ``{method: {option: value}}``, added to :data:`LEARNERS`' options.

    Returns
    -------
    table : DataFrame
        ``method``, ``seconds``, ``parameter error``, ``test log-likelihood`` (NaN where
        not computed), ``converged``, ``steps``, ``stop reason``.
    curves : dict
        ``{method: (seconds, parameter error)}`` along each fit (:func:`error_curve`).
    """
    methods = list(LEARNERS) if methods is None else list(methods)
    unknown = [m for m in methods if m not in LEARNERS]
    if unknown:
        raise ValueError(f"methods must be among {list(LEARNERS)}, got {unknown}")
    fits_exactly = exact.plan(truth).fits
    seeds = np.random.SeedSequence(as_rng(rng).integers(2**63)).spawn(len(LEARNERS))
    streams = dict(zip(LEARNERS, seeds))
    rows, curves = [], {}
    for method in methods:
        if method == "mle" and not fits_exactly:
            continue
        opts = {**LEARNERS[method], **(options or {}).get(method, {})}
        fit = _fit(method, data, truth, steps, np.random.default_rng(streams[method]), opts)
        ll = (exact.log_likelihood(fit.model, test)
              if test is not None and fits_exactly else np.nan)
        rows.append({"method": method, "seconds": fit.seconds,
                     "parameter error": parameter_error(fit.model, truth),
                     "test log-likelihood": ll, "converged": fit.converged,
                     "steps": fit.n_steps, "stop reason": fit.stop_reason})
        curves[method] = error_curve(fit, truth)
    return pd.DataFrame(rows), curves
