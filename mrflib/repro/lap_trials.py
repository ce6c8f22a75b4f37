"""Experiments of the LAP chapter (Mizrahi, de Freitas & Tenorio, section 6).

Per-paper trials for the book, kept apart from the estimators in :mod:`mrflib.learning.lap`. The
functions named ``*_trial`` compute one trial of a loop with the generator they are given,
in the signature :meth:`mrflib.repro.trials.Trials.map` calls (``fn(t, rng, **params)``), so
that a paper-scale run can split the loop into chunks and merge them.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mrflib._support.optional import optional_import
from mrflib._support.validation import as_rng, check_counts, check_positive, require_memory
from mrflib.inference import exact
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import lap, potentials
from mrflib.learning import learners as learning
from mrflib.models import graphs
from mrflib.models import lattices as factor_models
from mrflib.models.boltzmann import BoltzmannMachine

__all__ = ["accuracy_trial", "beyond_ising_model", "beyond_ising_timing",
           "beyond_ising_trial", "figure8_gaussian", "figure8_merge", "figure8_trial",
           "relative_error"]

#: The models of the chapter's section "LAP beyond Ising".
BEYOND_ISING = ("potts-q3", "potts-q4", "triangles")

#: Penalties of the graphical-lasso baseline (on the correlation scale); the best is kept.
GLASSO_ALPHAS = (0.003, 0.01, 0.03)


def relative_error(Kh: Any, K: Any) -> float:
    """Relative Frobenius error ``|Kh - K| / |K|`` (dense or sparse).

    ``K`` must be finite and not all zero, ``Kh`` finite and of the shape of ``K``.
    """
    if np.shape(Kh) != np.shape(K):
        raise ValueError(f"Kh and K must have the same shape, got {np.shape(Kh)} and "
                         f"{np.shape(K)}")
    try:
        if hasattr(K, "toarray"):
            from scipy.sparse.linalg import norm as sp_norm

            num, den = sp_norm(Kh - K), sp_norm(K)
        else:
            num, den = np.linalg.norm(Kh - K), np.linalg.norm(K)
        num, den = float(num), float(den)
    except (TypeError, ValueError) as ex:
        raise ValueError(f"Kh and K must be real matrices ({ex})") from None
    if not np.isfinite(den) or den == 0:
        raise ValueError(f"K must be finite and not all zero (its norm is {den})")
    if not np.isfinite(num):
        raise ValueError("Kh must be finite")
    return num / den


def _glasso_best(X: np.ndarray, K: np.ndarray, tally: dict[str, int]) -> float:
    """Smallest error of scikit-learn's graphical lasso over :data:`GLASSO_ALPHAS` (an
    oracle choice of the penalty); failed runs are counted in ``tally``."""
    graphical_lasso = optional_import("sklearn.covariance", "the graphical-lasso baseline",
                                      "book").graphical_lasso

    N = X.shape[0]
    S = X.T @ X / N
    sd = np.sqrt(np.diag(S))
    best = np.nan
    for alpha in GLASSO_ALPHAS:  # correlation scale, then rescaled
        tally["runs"] += 1
        try:
            _, prec = graphical_lasso(S / np.outer(sd, sd), alpha=alpha, max_iter=100, tol=1e-4)
            best = np.nanmin([best, relative_error(prec / np.outer(sd, sd), K)])
        except (FloatingPointError, ValueError, np.linalg.LinAlgError):
            tally["failed"] += 1
    return best


def _small_grid_rows(X: np.ndarray, Ks: np.ndarray, es: np.ndarray, ec: np.ndarray,
                     clique_c: int, grid: int, tally: dict[str, int]) -> list[dict]:
    """Every estimator of Figure 8 on the small grid's data ``X``."""
    N = X.shape[0]
    rows = [dict(grid=grid, N=N, method="LAP", err=relative_error(lap.fit_gaussian(X, es), Ks))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows.append(dict(grid=grid, N=N, method="ML (pattern)",
                         err=relative_error(lap.fit_gaussian_mle(X, es), Ks)))
        best = _glasso_best(X, Ks, tally)
    rows.append(dict(grid=grid, N=N, method="graphical lasso (oracle alpha)", err=best))
    if N > clique_c:
        rows.append(dict(grid=grid, N=N, method="ML, chordal completion (junction tree)",
                         err=relative_error(lap.fit_gaussian_decomposable(X, ec), Ks)))
    if N > Ks.shape[0]:
        rows.append(dict(grid=grid, N=N, method="ML, no pattern (D^-1)",
                         err=relative_error(np.linalg.inv(X.T @ X / N), Ks)))
    return rows


@functools.lru_cache(maxsize=4)
def _figure8_patterns(g_big: int, g_small: int) -> tuple:
    """The Laplacian precisions (with factors) of both grids and the small grid's chordal
    completion: ``(Kb, eb, Lb, Ksd, es, Ls, ec, clique_c)`` (deterministic, cached)."""
    import networkx as nx

    Kb, eb, Lb = lap.laplacian_precision(g_big, g_big, return_factor=True)
    Ks, es, Ls = lap.laplacian_precision(g_small, g_small, return_factor=True)
    chordal, _ = nx.complete_to_chordal_graph(graphs.to_networkx(es, Ks.shape[0]))
    ec = graphs.from_pairs(np.array(list(chordal.edges()), dtype=np.int64))
    clique_c = max(len(c) for c in nx.chordal_graph_cliques(chordal))
    return Kb, eb, Lb, Ks.toarray(), es, Ls, ec, clique_c


def figure8_trial(t: int, rng: Any, *, g_big: int, g_small: int,
                  sizes: Sequence[int]) -> dict[str, Any]:
    """Trial ``t`` of the Gaussian experiment of Figure 8 (section 6): one draw of both grids.

    Draws ``max(sizes)`` samples of the ``g_big x g_big`` and the ``g_small x g_small``
    grid-Laplacian Gaussians (:func:`mrflib.learning.lap.laplacian_precision`) and, for every ``N``
    in ``sizes``, fits on the first ``N``: LAP on the big grid; on the small grid LAP, ML
    under the sparsity pattern (covariance selection), scikit-learn's graphical lasso (best
    of :data:`GLASSO_ALPHAS`), ML on a chordal completion of the pattern (the junction-tree
    model, when ``N`` exceeds its largest clique) and the unrestricted ML ``D^{-1}`` (when
    ``N > k``). The signature is the one :meth:`mrflib.repro.trials.Trials.map` calls.

    Returns
    -------
    dict
        ``rows`` (dicts ``trial, grid, N, method, err``, the relative Frobenius error of
        ``Sigma^{-1}``), ``seconds_big`` (LAP time on the big grid), ``glasso_runs``,
        ``glasso_failed``, ``clique_c`` (largest clique of the chordal completion),
        ``pattern_edges``, ``chordal_edges``.
    """
    g_big = check_positive(g_big, "g_big", integer=True)
    g_small = check_positive(g_small, "g_small", integer=True)
    sizes = check_counts(sizes, "sizes")
    rng = as_rng(rng)
    Kb, eb, Lb, Ksd, es, Ls, ec, clique_c = _figure8_patterns(g_big, g_small)
    tally = {"runs": 0, "failed": 0}
    rows: list[dict] = []
    t_big = 0.0
    Xb_all = lap.sample_gaussian(Kb, max(sizes), rng=rng, factor=Lb)
    Xs_all = lap.sample_gaussian(Ksd, max(sizes), rng=rng, factor=Ls)
    for N in sizes:
        t0 = time.perf_counter()
        Kh = lap.fit_gaussian(Xb_all[:N], eb, sparse=True)
        t_big += time.perf_counter() - t0
        rows.append(dict(grid=g_big, N=N, method="LAP", err=relative_error(Kh, Kb)))
        rows += _small_grid_rows(Xs_all[:N], Ksd, es, ec, clique_c, g_small, tally)
    return dict(rows=[{"trial": int(t), **row} for row in rows], seconds_big=t_big,
                glasso_runs=tally["runs"], glasso_failed=tally["failed"], clique_c=clique_c,
                pattern_edges=len(es), chordal_edges=len(ec))


def figure8_merge(results: Sequence[dict[str, Any]]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Combine :func:`figure8_trial` results: ``(rows, info)`` as :func:`figure8_gaussian`
    returns them (times and graphical-lasso counts summed over the trials)."""
    if len(results) == 0:
        raise ValueError("results must hold at least one figure8_trial result")
    rows = pd.DataFrame([row for r in results for row in r["rows"]])
    info = dict(seconds_big=float(sum(r["seconds_big"] for r in results)),
                glasso_runs=sum(r["glasso_runs"] for r in results),
                glasso_failed=sum(r["glasso_failed"] for r in results),
                **{k: results[0][k] for k in ("clique_c", "pattern_edges", "chordal_edges")})
    return rows[["grid", "N", "method", "err"]], info


def figure8_gaussian(g_big: int, g_small: int, sizes: Sequence[int], trials: int,
                     rng: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The Gaussian experiment of Figure 8: LAP against ML on Laplacian precision patterns.

    ``trials`` runs of :func:`figure8_trial` drawing from one generator ``rng``, combined by
    :func:`figure8_merge`.

    Returns
    -------
    rows : DataFrame
        ``grid, N, method, err`` (relative Frobenius error of ``Sigma^{-1}``), one row per
        trial, size and method.
    info : dict
        ``seconds_big`` (LAP time on the big grid, summed), ``glasso_runs``,
        ``glasso_failed``, ``clique_c`` (largest clique of the chordal completion),
        ``pattern_edges``, ``chordal_edges``.
    """
    g_big = check_positive(g_big, "g_big", integer=True)
    g_small = check_positive(g_small, "g_small", integer=True)
    sizes = check_counts(sizes, "sizes")
    trials = check_positive(trials, "trials", integer=True)
    rng = as_rng(rng)
    return figure8_merge([figure8_trial(t, rng, g_big=g_big, g_small=g_small, sizes=sizes)
                          for t in range(trials)])


def accuracy_trial(t: int, rng: Any, *, grid: int, sizes: Sequence[int]) -> list[dict]:
    """Trial ``t`` of the accuracy experiment (Theorem 10, section 5): LAP, ML and MPLE.

    Draws a generating machine on the ``grid x grid`` square lattice
    (:meth:`BoltzmannMachine.random`: biases U[-0.2, 0.2], couplings U[-0.3, 0.3]) and, for
    every ``N`` in ``sizes``, ``N`` exact samples (:func:`mrflib.inference.exact.sample`), fitted by
    LAP (:func:`mrflib.learning.lap.fit_ising`), exact ML and MPLE
    (:func:`mrflib.learning.learners.fit`: ``"mle"``, and ``"mple"`` with L-BFGS). The
    signature is the one :meth:`mrflib.repro.trials.Trials.map` calls.

    Returns
    -------
    list of dict
        ``trial, N, method, mae_true, mae_mle``: mean absolute error of all parameters to the
        generating machine and to the MLE, one row per size and method.
    """
    grid = check_positive(grid, "grid", integer=True)
    sizes = check_counts(sizes, "sizes")
    rng = as_rng(rng)
    edges = graphs.square_grid(grid, grid)
    gen = BoltzmannMachine.random(edges, grid * grid, rng=rng)
    rows = []
    for N in sizes:
        d = exact.sample(gen, N, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            est = {"LAP": lap.fit_ising(d, edges),
                   "MLE": learning.fit(d, edges, "mle", record=False, progress=False).model,
                   "MPLE": learning.fit(d, edges, "mple", solver="lbfgs", record=False,
                                        progress=False).model}
        for m, bm in est.items():
            rows.append(dict(trial=int(t), N=N, method=m,
                             mae_true=float(np.mean(np.abs(bm.params - gen.params))),
                             mae_mle=float(np.mean(np.abs(bm.params - est["MLE"].params)))))
    return rows


# ------------------------------------------------------------------- LAP beyond Ising
def beyond_ising_model(kind: str, side: int, rng: Any) -> Any:
    """A generating model of the section "LAP beyond Ising" on a ``side x side`` lattice.

    ``"potts-q3"``, ``"potts-q4"``: :func:`mrflib.models.lattices.potts_lattice` with 3 or 4
    states (mean coupling 0.4, fields U[-0.2, 0.2]); ``"triangles"``: binary
    :func:`mrflib.models.lattices.triangle_lattice` (free three-variable tables U[-0.5, 0.5]).
    """
    if kind not in BEYOND_ISING:
        raise ValueError(f"kind must be one of {BEYOND_ISING}, got {kind!r}")
    side = check_positive(side, "side", integer=True)
    require_memory(8.0 * side * side * 3 * 64, f"the tables of a side x side = {side} x "
                   f"{side} lattice")
    if kind == "triangles":
        return factor_models.triangle_lattice(side, side, 2, scale=0.5, rng=rng)
    return factor_models.potts_lattice(side, side, 3 if kind == "potts-q3" else 4,
                                       coupling=0.4, rng=rng)


def _potential_mae(a: Any, b: Any) -> float:
    """Mean absolute difference of two models' normalized tables (Definition 5)."""
    return float(np.mean(np.concatenate([np.abs(x - y).ravel() for x, y in zip(
        potentials.normalize(a).log_tables, potentials.normalize(b).log_tables)])))


def _fit_all(data: np.ndarray, structure: Any, methods: Sequence[str]) -> dict[str, tuple]:
    """``method -> (Fit, seconds)`` of ``learning.fit(data, structure, method)``."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for m in methods:
            t0 = time.perf_counter()
            f = learning.fit(data, structure, m, record=False)
            out[m] = (f, time.perf_counter() - t0)
    return out


def beyond_ising_trial(t: int, rng: Any, *, kind: str, side: int,
                       sizes: Sequence[int]) -> list[dict]:
    """Trial ``t`` of the accuracy experiment beyond Ising: LAP, exact ML and MPLE on a
    factor graph (:func:`beyond_ising_model`), from ``N`` exact samples for each ``N`` in
    ``sizes`` (nested: the first ``N`` of one draw). The signature is the one
    :meth:`mrflib.repro.trials.Trials.map` calls.

    Returns
    -------
    list of dict
        ``trial, model, N, method, mae_true, mae_mle, seconds, converged``: mean absolute
        error of the normalized potentials to the generating model and to the MLE.
    """
    side = check_positive(side, "side", integer=True)
    sizes = check_counts(sizes, "sizes")
    rng = as_rng(rng)
    truth = beyond_ising_model(kind, side, rng)
    data = exact.sample(truth, max(sizes), rng=rng)
    rows = []
    for N in sizes:
        fits = _fit_all(data[:N], truth, ("mle", "mple", "lap"))
        mle = fits["mle"][0].model
        for m, (f, secs) in fits.items():
            rows.append(dict(trial=int(t), model=kind, N=N, method=m.upper(),
                             mae_true=_potential_mae(f.model, truth),
                             mae_mle=_potential_mae(f.model, mle), seconds=secs,
                             converged=bool(f.converged)))
    return rows


def beyond_ising_timing(kind: str, sides: Sequence[int], N: int, rng: Any, *,
                        mle_max_side: int = 5, repeats: int = 3) -> list[dict]:
    """Fit times against lattice size: LAP and MPLE on every ``side``, exact ML (junction
    tree) up to ``mle_max_side``; data from 20 Gibbs sweeps of :func:`beyond_ising_model`.
    Each fit is timed ``repeats`` times and the fastest kept: the first run of a method
    includes numba's compilation or cache loading, and the small fits take milliseconds,
    where one timing on a shared machine is mostly noise.

    Returns
    -------
    list of dict
        ``model, side, factors, method, seconds``.
    """
    sides = check_counts(sides, "sides")
    N = check_positive(N, "N", integer=True)
    repeats = check_positive(repeats, "repeats", integer=True)
    rng = as_rng(rng)
    rows = []
    for side in sides:
        truth = beyond_ising_model(kind, side, rng)
        data = factor_gibbs.gibbs(truth, N, burn_in=20, rng=rng)
        methods = ("lap", "mple") + (("mle",) if side <= mle_max_side else ())
        runs = [_fit_all(data, truth, methods) for _ in range(repeats)]
        for m in methods:
            rows.append(dict(model=kind, side=side, factors=truth.n_factors,
                             method=m.upper(), seconds=min(r[m][1] for r in runs)))
    return rows
