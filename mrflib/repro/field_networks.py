"""Field test, part 2: the full-span log-linear model on expert Bayesian networks.

pgmpy bundles networks built by people (:func:`mrflib.datasets.expert_network`). For each
network (or the marginal of an ancestral subset of a large one) we know the exact joint
``p*``, draw ``N`` samples with its ancestral sampler, fit models, and score each by the exact
``KL(p*||p_theta)``:

``FSLL``
    :func:`mrflib.fsll.fit` (Algorithm 1 of Takabatake & Akaho, MDL cost eq. 7).
``empirical``, ``empirical (KT)``
    the sample frequencies, and the Krichevsky-Trofimov estimate ``(count + 1/2) /
    (N + |X| / 2)`` (the raw frequencies have infinite KL as soon as one state of positive
    ``p*`` is unseen).
``pairwise ML``
    the maximum-likelihood log-linear model with every basis function of order <= 2 (all
    biases and pairwise interactions of the full-span basis, eq. 3-5); on binary variables
    it is the fully connected Boltzmann machine with biases, BM-DI of the FSLL chapter.
``best pairwise``
    the same family fitted to ``p*`` itself (the information projection,
    ``argmin_q KL(p*||q)``): the floor no pairwise learner can pass, at any ``N``.
``BM-DI``, ``BM-PCD``
    on binary networks, the Boltzmann machines of the FSLL chapter:
    :func:`mrflib.exact.fit_mle` and :func:`mrflib.learning.fit` ``"pcd"`` on the complete
    graph (spins ``s = 2 x - 1``).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import scipy.optimize
from scipy.special import logsumexp

from mrflib import exact, fsll, graphs, learning
from mrflib._validation import (
    as_rng,
    check_array,
    check_counts,
    check_positive,
    require_memory,
)

__all__ = ["MODELS", "order_mask", "fit_log_linear", "kl", "network_trial", "pgmpy_peer"]

MODELS = ("FSLL", "empirical", "empirical (KT)", "pairwise ML", "best pairwise", "BM-DI",
          "BM-PCD")
#: Only these need binary variables.
BINARY_MODELS = ("BM-DI", "BM-PCD")


def order_mask(cardinalities: Any, max_order: int) -> np.ndarray:
    """Boolean mask over flat basis indices ``y``: ``1 <= order(y) <= max_order``, where the
    order is the number of variables ``Phi_y`` depends on (non-zero digits of ``y``)."""
    cards = np.asarray(check_counts(cardinalities, "cardinalities"), dtype=np.int64)
    max_order = check_positive(max_order, "max_order", integer=True, allow_zero=True)
    X = math.prod(cards.tolist())
    require_memory(3 * 8 * X, f"order_mask over {X} states (cardinalities)")
    order = np.zeros(X, dtype=np.int64)
    stride = 1
    idx = np.arange(X, dtype=np.int64)
    for k in cards.tolist():
        order += (idx // stride) % k != 0
        stride *= k
    return (order >= 1) & (order <= max_order)


def fit_log_linear(target: Any, cardinalities: Any, mask: Any, *, max_iter: int = 500,
                   tol: float = 1e-7) -> tuple[np.ndarray, dict[str, Any]]:
    """Maximum-likelihood FSLL model restricted to the basis functions in ``mask``.

    Minimizes ``-sum_x target(x) log p_theta(x) = log Z(theta) - theta . d`` with
    ``d_y = <Phi_y>_target`` (the dual of eq. 8), whose gradient is
    ``<Phi_y>_{p_theta} - d_y`` (eq. 6), by L-BFGS-B; every evaluation is one synthesis and
    one dual transform of :mod:`mrflib.fsll` (``O(|X| log |X|)``). ``target`` is the
    empirical distribution (maximum likelihood) or ``p*`` (information projection).
    Returns ``(p_theta, info)``.
    """
    target = np.asarray(target, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    d = fsll.dual(target, cardinalities)[mask]
    theta = np.zeros(target.size)

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        theta[mask] = z
        log_w = fsll.synthesize(theta, cardinalities)
        log_z = float(logsumexp(log_w))
        p = np.exp(log_w - log_z)
        return log_z - float(z @ d), fsll.dual(p, cardinalities)[mask] - d

    res = scipy.optimize.minimize(fun, np.zeros(int(mask.sum())), jac=True, method="L-BFGS-B",
                                  options={"maxiter": max_iter, "gtol": tol, "ftol": 0.0})
    theta[mask] = res.x
    return fsll.probabilities(theta, cardinalities), {"n_iter": int(res.nit),
                                                      "converged": bool(res.success)}


def kl(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p||q)`` in nats over flat tables (``inf`` where ``q`` misses ``p``'s support)."""
    p = check_array(p, "p", ndim=1)
    q = check_array(q, "q", shape=p.shape)
    for name, a in (("p", p), ("q", q)):
        if np.any(a < 0) or not a.sum() > 0:
            raise ValueError(f"{name} must be non-negative with a positive sum")
    return exact.kl_divergence(p / p.sum(), q / q.sum())


def _boltzmann(data: np.ndarray, model: str, rng: Any, pcd: dict) -> np.ndarray:
    spins = (2 * data.astype(np.int8) - 1).astype(np.int8)
    edges = graphs.complete(data.shape[1])
    if model == "BM-DI":
        bm = exact.fit_mle(spins, edges)
    else:
        bm = learning.fit(spins, edges, "pcd", rng=rng, record=False, progress=False,
                          **pcd).model
    return exact.probabilities(bm)  # bit i of the index is spin i = x_i: fsll's order


def _fit_model(model: str, data: np.ndarray, p_star: np.ndarray, cards: tuple,
               rng: Any, eps: float, pcd: dict) -> tuple[np.ndarray, int]:
    """``(p_theta, number of basis functions)`` of one model."""
    X = p_star.size
    if model == "FSLL":
        m = fsll.fit(data, cards, eps=eps)
        return m.probabilities(), m.n_basis
    counts = np.bincount(fsll.flat_index(data, cards), minlength=X).astype(np.float64)
    if model == "empirical":
        return counts / counts.sum(), int(np.count_nonzero(counts)) - 1
    if model == "empirical (KT)":
        return (counts + 0.5) / (counts.sum() + 0.5 * X), X - 1
    mask = order_mask(cards, 2)
    if model in ("pairwise ML", "best pairwise"):
        target = counts / counts.sum() if model == "pairwise ML" else p_star
        return fit_log_linear(target, cards, mask)[0], int(mask.sum())
    return _boltzmann(data, model, rng, pcd), int(mask.sum())


def network_trial(net: Any, n_samples: int, rng: Any, models: Any = MODELS, *,
                  eps: float = 1e-4, pcd: dict | None = None,
                  p_star: np.ndarray | None = None) -> Any:
    """Draw ``n_samples`` from ``net`` and score every model by ``KL(p*||p_theta)``.

    Returns a tidy frame: ``network``, ``N``, ``model``, ``kl_true``, ``n_basis``,
    ``seconds`` (fitting only). The Boltzmann machines are skipped on non-binary networks.
    ``pcd``: options of the BM-PCD fit (default: the FSLL chapter's, 100 chains, learning
    rate 0.01, 10,000 steps).
    """
    import pandas as pd

    n_samples = check_positive(n_samples, "n_samples", integer=True)
    rng = as_rng(rng)
    p_star = net.joint() if p_star is None else p_star
    data = net.sample(n_samples, rng)
    binary = all(k == 2 for k in net.cardinalities)
    pcd = dict(dict(learning_rate=0.01, max_steps=10_000, n_chains=100), **(pcd or {}))
    rows = []
    for model in models:
        if model not in MODELS:
            raise ValueError(f"models must be among {MODELS}, got {model!r}")
        if model in BINARY_MODELS and not binary:
            continue
        t0 = time.perf_counter()
        q, n_basis = _fit_model(model, data, p_star, tuple(net.cardinalities), rng, eps, pcd)
        seconds = time.perf_counter() - t0
        rows.append(dict(network=net.name, n=net.n, states=p_star.size, N=n_samples,
                         model=model, kl_true=kl(p_star, q), n_basis=n_basis,
                         seconds=seconds))
    return pd.DataFrame(rows)


def pgmpy_peer(net: Any, model: Any) -> dict[str, float]:
    """pgmpy's exact single-variable marginals (variable elimination) against ours.

    Ours are sums of the joint table of ``net`` (:meth:`ExpertNetwork.joint`), pgmpy's come
    from ``VariableElimination`` on the pgmpy ``model`` of the same network. Returns the
    largest absolute difference and both times.
    """
    import logging

    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    from pgmpy.inference import VariableElimination

    t0 = time.perf_counter()
    p = net.joint().reshape(tuple(net.cardinalities[::-1]))
    ours = [p.sum(axis=tuple(a for a in range(net.n) if a != net.n - 1 - i))
            for i in range(net.n)]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ve = VariableElimination(model)
    theirs = []
    for i, v in enumerate(net.variables):
        f = ve.query([v], show_progress=False)
        order = [list(f.state_names[v]).index(s) for s in net.states[i]]
        theirs.append(np.asarray(f.values)[order])
    t_pgmpy = time.perf_counter() - t0
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs))
    return dict(max_abs_diff=diff, seconds_ours=t_ours, seconds_pgmpy=t_pgmpy)
