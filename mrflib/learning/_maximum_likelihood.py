"""Exact maximum likelihood of a Boltzmann machine: the learner behind ``learning.fit(data,
structure, "mle")`` (its default solver, ``"exact"``).

A learner makes a model from data, so it lives in the learning layer; what it needs from
inference is ``log Z`` and the moments of every machine on one graph as a function of the
parameters (:func:`mrflib.inference.exact.calibrator`: enumeration, or the junction tree).
The factor-graph twin is :mod:`mrflib.learning.table_learners`.

``mrflib.inference.exact.fit_mle`` is :func:`fit_mle` here: the call of the previous
release, kept for one release with a :class:`FutureWarning` (the inference layer cannot
import this one, so the top-level package declares where that name went:
:data:`mrflib._support.deprecation.MOVED_NAMES`).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from mrflib._support.deprecation import warn_deprecated
from mrflib._support.optimizers import lbfgs
from mrflib._support.threads import blas_single_threaded
from mrflib._support.validation import check_array, check_edges, check_positive, check_spins
from mrflib.inference import exact
from mrflib.models.boltzmann import BoltzmannMachine

if TYPE_CHECKING:  # scipy.optimize costs about 0.5 s to import; lbfgs imports it when it runs
    import scipy.optimize

__all__ = ["fit_exact", "mle_degeneracies", "fit_mle"]


def mle_degeneracies(mean_d: np.ndarray, pair_d: np.ndarray, edges: np.ndarray,
                     bias: bool, n_samples: int) -> list[str]:
    """Why the MLE does not exist: statistics on the boundary of the marginal polytope.

    Every finite ``θ`` gives each edge's four joint states positive probability, so with
    biases the MLE exists only if the data show all four states of every edge (their
    frequencies ``(1 + a m_i + b m_j + ab c_ij) / 4``, multiples of ``1/N``); without
    biases only the product ``s_i s_j`` is a statistic, so only a pair always equal or
    always opposite is degenerate.

    Parameters
    ----------
    mean_d : ndarray of float64, shape (n,)
        The data means of the spins.
    pair_d : ndarray of float64, shape (E,)
        The data means of each edge's product.
    edges : ndarray of int64, shape (E, 2)
        The edges.
    bias : bool
        Whether the biases are learned.
    n_samples : int
        The number of data points ``N``.

    Returns
    -------
    list of str
        One phrase per kind of degeneracy found; empty when the MLE exists.
    """
    found = []
    if bias:
        const = np.flatnonzero(np.abs(mean_d) == 1.0)
        if const.size:
            found.append(f"spin(s) {const[:8].tolist()} constant in every sample")
    for value, word in ((1.0, "equal"), (-1.0, "opposite")):
        hit = np.flatnonzero(pair_d == value)
        if hit.size:
            pairs = [tuple(e) for e in edges[hit[:8]].tolist()]
            found.append(f"spin pair(s) {pairs} always {word}")
    if bias and len(edges):
        mi, mj = mean_d[edges[:, 0]], mean_d[edges[:, 1]]
        corners = np.stack([1 + a * mi + b * mj + a * b * pair_d
                            for a in (1, -1) for b in (1, -1)], axis=1) / 4
        explained = ((np.abs(pair_d) == 1.0) | (np.abs(mi) == 1.0) | (np.abs(mj) == 1.0))
        hit = np.flatnonzero(np.any(corners < 0.5 / n_samples, axis=1) & ~explained)
        if hit.size:
            pairs = [tuple(e) for e in edges[hit[:8]].tolist()]
            found.append(f"spin pair(s) {pairs} never seen in one of their four joint states")
    return found


def _initial(init: Any, n: int, edges: np.ndarray, bias: bool) -> np.ndarray:
    E = len(edges)
    if init is None:
        return np.zeros(n + E if bias else E)
    if isinstance(init, BoltzmannMachine):
        if init.n != n or not np.array_equal(init.edges, edges):
            raise ValueError("init must be a BoltzmannMachine on the same spins and edges")
        theta = init.params
    else:
        theta = check_array(init, "init", shape=(n + E,))
    return theta.copy() if bias else theta[n:].copy()


@blas_single_threaded
def fit_exact(
    data: Any,
    edges: Any,
    n: int | None = None,
    *,
    bias: bool = True,
    init: Any = None,
    tol: float = 1e-9,
    max_iter: int = 10_000,
    engine: str = "auto",
) -> tuple[BoltzmannMachine, scipy.optimize.OptimizeResult]:
    """Exact maximum-likelihood Boltzmann machine on a given graph, and how the fit ended.

    Maximizes the exact average log-likelihood
    ``l(θ) = θ · s_data - log Z(θ)`` (eq. (4)-(5) of Yasuda, SMCI learning), whose
    gradient is ``s_data - ⟨s⟩_θ`` (eq. (6)-(7)), with scipy's L-BFGS-B on the exact
    ``log Z`` and moments of :func:`mrflib.inference.exact.calibrator`: enumerated
    (``engine="enumerate"``) or from the junction tree (``"junction-tree"``, its plan
    built once, then quasi-Newton steps on the gradient alone where the line search can no
    longer resolve the objective); ``"auto"`` enumerates for ``n <= 20`` and uses the
    junction tree beyond.

    Parameters
    ----------
    data : array_like, int, shape (N, n)
        Spins in {-1, +1}; at least one sample.
    edges : array_like, shape (E, 2)
        The learner's graph.
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).
    bias : bool, default True
        Learn biases (``True``) or fix them at zero (the bias-free model of the SMCI
        learning paper).
    init : BoltzmannMachine or array_like of float, shape (n + E,), or None, default None
        Starting point (``None``: all parameters zero).
    tol : float, default 1e-9
        Stop when the largest gradient component is below ``tol``.
    max_iter : int, default 10_000
        Iteration limit.
    engine : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine of ``log Z`` and the moments, as above.

    Returns
    -------
    model : BoltzmannMachine
        The fitted model on ``edges`` (biases zero without ``bias``).
    result : scipy.optimize.OptimizeResult
        ``success`` true only when the fit converged by the rule of every L-BFGS fit
        (:func:`mrflib._support.optimizers.lbfgs_verdict`) and the MLE exists,
        ``grad_max`` the largest gradient component, ``mle_exists``, ``nit`` and
        ``message`` the stopping reason.

    Warns
    -----
    RuntimeWarning
        When the MLE does not exist (:func:`mle_degeneracies`): the likelihood approaches
        its supremum only as parameters diverge, so whatever stops the fit it is reported
        as not converged.
    """
    s = check_spins(data, n, "data")
    if len(s) == 0:
        raise ValueError("data must contain at least one sample (got 0 rows)")
    n = s.shape[1]
    edges = check_edges(edges, n)
    tol = check_positive(tol, "tol")
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    calibrate = exact.calibrator(edges, n, method=engine)
    mean_d, pair_d = exact.sufficient_statistics(s, edges)
    target = np.concatenate([mean_d, pair_d]) if bias else pair_d
    degenerate = mle_degeneracies(mean_d, pair_d, edges, bias, s.shape[0])
    if degenerate:
        warnings.warn("the maximum-likelihood estimate does not exist for this data ("
                      + "; ".join(degenerate) + "): parameters diverge and the fit is "
                      "reported as not converged", RuntimeWarning, stacklevel=2)
    x0 = _initial(init, n, edges, bias)
    zeros = np.zeros(n)

    def negll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        b = theta[:n] if bias else zeros
        J = theta[n:] if bias else theta
        logz, mean, pair = calibrate(b, J)
        model = np.concatenate([mean, pair]) if bias else pair
        return logz - theta @ target, model - target

    res = lbfgs(negll, x0, max_iter=max_iter, tol=tol, memory=30,
                polish=50 if calibrate.engine == "junction-tree" else 0)
    theta = res.x
    res.mle_exists = not degenerate
    res.success = bool(res.converged and not degenerate)
    if degenerate:
        res.message = "the MLE does not exist: " + "; ".join(degenerate)
    else:
        res.message = res.stop_reason
    bm = BoltzmannMachine(theta[:n] if bias else zeros, edges, theta[n:] if bias else theta)
    return bm, res


def fit_mle(data: Any, edges: Any, n: int | None = None, *, return_result: bool = False,
            method: str = "auto", **options: Any
            ) -> BoltzmannMachine | tuple[BoltzmannMachine, scipy.optimize.OptimizeResult]:
    """Deprecated: ``learning.fit(data, edges, "mle")`` returns the same model as a
    :class:`~mrflib.learning.fit_result.Fit` (its ``model``, ``converged``, ``n_steps``
    and ``stop_reason``); ``method=`` is its option ``engine=``.

    Reached as ``mrflib.inference.exact.fit_mle`` for one release.

    Parameters
    ----------
    data, edges, n
        As in :func:`fit_exact`.
    return_result : bool, default False
        Also return scipy's ``OptimizeResult`` (:func:`fit_exact`'s second answer).
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine, :func:`fit_exact`'s ``engine``.
    **options
        :func:`fit_exact`'s ``bias``, ``init``, ``tol`` and ``max_iter``.

    Returns
    -------
    BoltzmannMachine or tuple of (BoltzmannMachine, scipy.optimize.OptimizeResult)
        The fitted model; with ``return_result``, also the optimizer's result.
    """
    new = 'learning.fit(data, edges, "mle")'
    if method != "auto":
        new = f'learning.fit(data, edges, "mle", engine="{method}")'
    if return_result:
        new += ", whose Fit has model, converged, n_steps and stop_reason"
    warn_deprecated("exact.fit_mle(...)" if not return_result
                    else "exact.fit_mle(..., return_result=True)", new)
    bm, res = fit_exact(data, edges, n, engine=method, **options)
    return (bm, res) if return_result else bm
