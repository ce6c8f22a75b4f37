"""LAP: learning Markov random fields with exact local inference.

Mizrahi, de Freitas & Tenorio, *Efficient learning of practical Markov random fields
with exact inference* ({cite}`lap-mizrahi-defreitas-tenorio`). Node labels are
0-based here; the paper counts from 1.

The pieces (each in its own module, all re-exported here):

- :mod:`mrflib.learning.neighbourhoods`: the 1-neighbourhood ``A_Q`` of a clique (Definition 7),
  maximal cliques (section 4.5) and the path-connected pairs of a marginal (Definition 8,
  Proposition 9);
- :mod:`mrflib.learning.potentials`: normalized potentials of a discrete distribution by Möbius
  inversion (Definition 5, Theorem 6) and back;
- :func:`fit_ising`: LAP for Ising models (section 4.2): one auxiliary MRF per clique
  ``Q`` on ``A_Q`` whose parameters ``θ_Q`` are pulled out, all cliques fitted in one
  batched numba kernel, split over local processes or a Dask cluster (the engine is
  :mod:`mrflib.learning._lap_ising`);
- :mod:`mrflib.learning.lap_gaussian`, :func:`fit_gaussian`: LAP for Gaussian MRFs (section 6,
  eq. 13-14), together with the maximum-likelihood estimate under the same sparsity pattern
  (:func:`fit_gaussian_mle`, the baseline of Figure 8) and the data generators of
  Figure 7.

The exact-inference baseline of Figure 5 (pgmpy's junction tree) is a peer the book
compares with, not part of LAP: :func:`mrflib.repro.peers.junction_tree_moments`.

Why the batched Ising fit is the auxiliary-MRF maximum likelihood
-------------------------------------------------------------------
The auxiliary MRF of a clique ``Q`` is
``log f(x_A) = Σ_{i∈Q} b_i x_i + Σ_{e touches Q} J_e x_i x_j + g(x_{A\\Q}) - log Z``
with ``g`` a *fully general* function of ``x_{A\\Q}`` (it absorbs the unknown ``g`` of
eq. (6), every term inside ``A\\Q`` and the path-connected pairs ``H``). Write
``f(x_A) = f(x_{A\\Q}) f(x_Q | x_{A\\Q})``: the conditional depends on ``θ_Q`` only, and
because ``g`` is free the marginal ``f(x_{A\\Q})`` ranges over every positive
distribution whatever ``θ_Q`` is. The likelihood therefore factorizes, the marginal is
fitted by the empirical one and the maximum-likelihood ``θ_Q`` maximizes the
conditional likelihood ``Π_n f(x_Q^n | x_{A\\Q}^n; θ_Q)`` -- a convex problem over the
``2^|Q|`` states of ``x_Q`` for each distinct data pattern of ``x_A`` (at most
``2^|A_Q|``). :func:`fit_auxiliary` fits the auxiliary MRF literally (all ``2^|A_Q|``
states, ``g`` as a free table) and the tests check that both agree.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mrflib._support.deprecation import warn_deprecated
from mrflib._support.optimizers import lbfgs
from mrflib._support.validation import check_positive
from mrflib.inference import exact
from mrflib.learning._lap_ising import check_ising, fit_ising_info
from mrflib.learning.lap_gaussian import (
    fit_gaussian,
    fit_gaussian_decomposable,
    fit_gaussian_mle,
    laplacian_precision,
    random_sparse_precision,
    sample_gaussian,
)
from mrflib.learning.neighbourhoods import (
    clique_list,
    maximal_cliques,
    one_neighbourhood,
    one_neighbourhoods,
    path_connected_pairs,
)
from mrflib.learning.potentials import (
    distribution_from_potentials,
    ising_normalized_potentials,
    normalized_potentials,
)
from mrflib.models.boltzmann import BoltzmannMachine

__all__ = [
    "one_neighbourhood",
    "one_neighbourhoods",
    "maximal_cliques",
    "path_connected_pairs",
    "normalized_potentials",
    "distribution_from_potentials",
    "ising_normalized_potentials",
    "fit_auxiliary",
    "fit_ising",
    "fit_gaussian",
    "fit_gaussian_mle",
    "fit_gaussian_decomposable",
    "laplacian_precision",
    "random_sparse_precision",
    "sample_gaussian",
]

# ------------------------------------------------------------------- Ising: reference
_UNSET = object()  # return_info not passed


def fit_auxiliary(
    data: Any, edges: Any, Q: Any, n: int | None = None, *, gtol: float = 1e-10
) -> dict[str, Any]:
    """Literal LAP step for one clique: the auxiliary MRF on ``A_Q``, fitted by exact ML.

    Plain numpy/scipy reference of :func:`fit_ising` (section 4.2, steps 1-3): the
    auxiliary MRF has the unary and pairwise terms that touch ``Q`` and a free table
    ``g(x_{A\\Q})`` (one parameter per pattern, the first fixed at 0); it is fitted by
    L-BFGS on the exact log-likelihood over all ``2^|A_Q|`` states of the empirical
    distribution of ``x_A``. Then ``θ_Q`` is pulled out.

    Parameters
    ----------
    data : array_like of int, shape (N, n)
        Spins in {-1, +1}, ``N >= 1`` rows.
    edges : array_like of int, shape (E, 2), or Graph
        The MRF's graph.
    Q : int or sequence of int
        The clique: distinct node indices below ``n``. Its 1-neighbourhood ``A_Q`` may
        have at most 16 nodes (all ``2^|A_Q|`` states are enumerated).
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).
    gtol : float, default 1e-10
        The L-BFGS tolerance on the max-abs gradient of the average negative
        log-likelihood.

    Returns
    -------
    dict
        ``A`` (the 1-neighbourhood), ``bias`` (b_i for i in Q, sorted), ``coupling``
        ({edge (i, j): J} for every edge touching Q, inner and boundary), ``loglik``
        (average) and ``result`` (scipy's OptimizeResult).
    """
    s, graph, n = check_ising(data, edges, n)
    edges = graph.edges
    gtol = check_positive(gtol, "gtol")
    q = clique_list([Q], "Q")[0]
    if q[-1] >= n:
        raise ValueError(f"Q refers to node {int(q[-1])}, but n = {n}")
    A = graph.R_k(q, 1)  # the 1-neighbourhood A_Q of Definition 7
    if len(A) > 16:
        raise ValueError(f"the 1-neighbourhood has {len(A)} nodes; the reference fit "
                         "enumerates 2^|A_Q| states and is meant for |A_Q| <= 16")
    pos = {int(v): t for t, v in enumerate(A)}
    inQ = np.isin(edges, q)
    touch = np.flatnonzero(inQ[:, 0] | inQ[:, 1])
    X = exact.states(len(A)).astype(np.float64)  # (2^a, a)
    feats = [X[:, pos[int(i)]] for i in q]
    feats += [X[:, pos[int(edges[e, 0])]] * X[:, pos[int(edges[e, 1])]] for e in touch]
    F = np.stack(feats, axis=1)
    rest = [pos[int(v)] for v in A if v not in set(q.tolist())]
    bitsA = (X[:, rest] > 0).astype(np.int64)
    code = (bitsA << np.arange(len(rest))).sum(axis=1)  # pattern of x_{A\Q}
    G = np.zeros((len(X), 2 ** len(rest)))
    G[np.arange(len(X)), code] = 1.0
    G = G[:, 1:]
    M = np.hstack([F, G])
    p_emp = exact.empirical_distribution(s[:, A], len(A))
    target = p_emp @ M

    def negll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        e = M @ theta
        mx = e.max()
        w = np.exp(e - mx)
        z = w.sum()
        prob = w / z
        return mx + math.log(z) - theta @ target, prob @ M - target

    res = lbfgs(negll, np.zeros(M.shape[1]), max_iter=20_000, tol=gtol, memory=50)
    theta = res.x
    k = len(q)
    coupling = {(int(edges[e, 0]), int(edges[e, 1])): float(theta[k + t])
                for t, e in enumerate(touch)}
    return {"A": A, "bias": theta[:k].copy(), "coupling": coupling,
            "loglik": float(-res.fun), "result": res}


def fit_ising(
    data: Any,
    edges: Any,
    n: int | None = None,
    *,
    cliques: str = "all",
    scheduler: Any = None,
    n_jobs: int | None = None,
    l2: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 100,
    return_info: Any = _UNSET,
) -> BoltzmannMachine:
    """LAP estimate of an Ising model / Boltzmann machine (section 4.2).

    For every clique ``Q``: (1) locate ``A_Q`` (Definition 7); (2) fit the auxiliary
    MRF on ``A_Q`` -- the unary and pairwise terms touching ``Q`` plus a fully general
    log-linear function of ``x_{A\\Q}`` -- by exact maximum likelihood (convex; damped
    Newton over the ``2^|Q|`` states of ``x_Q`` per distinct data pattern of ``x_A``,
    at most ``2^|A_Q|``; see the module docstring for why this is the auxiliary ML);
    (3) pull out ``θ_Q``. All cliques are fitted by one batched numba kernel.

    Parameters
    ----------
    data : array_like, shape (N, n)
        Spins in {-1, +1}.
    edges : array_like, shape (E, 2), or Graph
        The MRF's graph (2D grids, cubic lattices, chimera graphs, any graph with
        small 1-neighbourhoods).
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).
    cliques : {"all", "maximal"}, default "all"
        ``"all"``: every node and every edge is its own ``Q``; ``b_i`` comes from
        ``Q = {i}``, ``J_ij`` from ``Q = {i, j}``. ``"maximal"``: only the maximal
        cliques are fitted (section 4.5, Theorem 12) and a parameter shared by several
        maximal cliques (a bias, or an edge of two triangles) is their average.
    scheduler : str or distributed.Client or None, default None
        Run the clique fits on this Dask cluster (address or client). ``None``: local.
    n_jobs : int or None, default None
        Local worker processes. ``None``: all cores when the problem is large enough
        to pay for starting them, else in-process.
    l2 : float, default 0.0
        Optional ridge penalty ``l2/2 |θ_Q|^2`` on each averaged auxiliary
        log-likelihood (0: exact ML; use > 0 when the data separate some clique and
        its ML is infinite).
    tol : float, default 1e-10
        Stop a clique's Newton iteration (after one last step) when half the squared
        Newton decrement (the predicted gain of average log-likelihood) is below ``tol``.
    max_iter : int, default 100
        Newton iterations per clique.
    return_info : bool, optional
        Deprecated (not passed by default): ``learning.fit(data, edges, "lap")`` gives the
        machine with its convergence (a :class:`mrflib.learning.learners.Fit`). ``True``
        still returns ``(machine, {"iterations", "converged", "n_cliques", "cliques"})``.

    Returns
    -------
    BoltzmannMachine
        The estimate, on ``edges``; with ``return_info=True`` the pair
        ``(machine, info)``.

    Warns
    -----
    RuntimeWarning
        If a clique fit did not converge, or an estimate exceeds 10 in magnitude: data
        that separate a clique (e.g. two spins always equal) have no finite ML.
    """
    bm, info = fit_ising_info(data, edges, n, cliques=cliques, scheduler=scheduler,
                              n_jobs=n_jobs, l2=l2, tol=tol, max_iter=max_iter)
    if return_info is _UNSET:
        return bm
    warn_deprecated("lap.fit_ising(..., return_info=...)",
                    'learning.fit(data, edges, "lap"), whose Fit has n_steps, converged and '
                    "stop_reason")
    return (bm, info) if return_info else bm
