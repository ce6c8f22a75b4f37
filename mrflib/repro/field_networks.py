"""Field test, part 2: the full-span log-linear model on expert Bayesian networks.

pgmpy bundles networks built by people (:func:`mrflib.io.datasets.expert_network`). For each
network (or the marginal of an ancestral subset of a large one) we know the exact joint
``p*``, draw ``N`` samples with its ancestral sampler, fit models, and score each by the exact
``KL(p*||p_theta)``:

``FSLL``
    :func:`mrflib.learning.fsll.fit` (Algorithm 1 of Takabatake & Akaho, MDL cost eq. 7).
``empirical``, ``empirical (KT)``
    the sample frequencies, and the Krichevsky-Trofimov estimate ``(count + 1/2) /
    (N + |X| / 2)`` (the raw frequencies have infinite KL as soon as one state of positive
    ``p*`` is unseen).
``pairwise ML``
    the maximum-likelihood log-linear model with every basis function of order <= 2 (all
    biases and pairwise interactions of the full-span basis, eq. 3-5;
    :func:`mrflib.learning.log_linear.fit_log_linear`); on binary variables it is the fully
    connected Boltzmann machine with biases, BM-DI of the FSLL chapter.
``best pairwise``
    the same family fitted to ``p*`` itself (the information projection,
    ``argmin_q KL(p*||q)``): the floor no pairwise learner can pass, at any ``N``.
``BM-DI``, ``BM-PCD``
    on binary networks, the Boltzmann machines of the FSLL chapter:
    :func:`mrflib.learning.learners.fit` with ``"mle"`` and with ``"pcd"`` on the complete
    graph (spins ``s = 2 x - 1``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mrflib import exact, fsll, graphs, learning
from mrflib._support.optional import optional_import
from mrflib._support.recorded_warnings import recorded
from mrflib._support.validation import as_rng, check_array, check_instance, check_positive
from mrflib.learning import log_linear

__all__ = ["MODELS", "kl", "network_trial", "pgmpy_peer"]

MODELS = ("FSLL", "empirical", "empirical (KT)", "pairwise ML", "best pairwise", "BM-DI",
          "BM-PCD")
#: Only these need binary variables.
BINARY_MODELS = ("BM-DI", "BM-PCD")

#: The log-linear learner lives in :mod:`mrflib.learning.log_linear` (an algorithm, not
#: experiment code); these names let the trials call it beside the other models.
order_mask = log_linear.order_mask
fit_log_linear = log_linear.fit_log_linear


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
        bm = learning.fit(spins, edges, "mle", record=False, progress=False).model
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
    ``seconds`` (fitting only), ``note`` (the fit's RuntimeWarnings, such as a
    maximum-likelihood estimate that does not exist for the sample; empty if none). The
    Boltzmann machines are skipped on non-binary networks.
    ``pcd``: options of the BM-PCD fit (default: the FSLL chapter's, 100 chains, learning
    rate 0.01, 10,000 steps).
    """
    import pandas as pd

    n_samples = check_positive(n_samples, "n_samples", integer=True)
    rng = as_rng(rng)
    p_star = net.joint() if p_star is None else p_star
    data = net.sample(n_samples, rng=rng)
    binary = all(k == 2 for k in net.cardinalities)
    pcd = dict(dict(learning_rate=0.01, max_steps=10_000, n_chains=100), **(pcd or {}))
    rows = []
    for model in models:
        if model not in MODELS:
            raise ValueError(f"models must be among {MODELS}, got {model!r}")
        if model in BINARY_MODELS and not binary:
            continue
        t0 = time.perf_counter()
        # a small sample can miss a joint state of a pair: BM-DI's maximum-likelihood
        # estimate then does not exist, which the row says (its note) instead of stderr
        with recorded() as notes:
            q, n_basis = _fit_model(model, data, p_star, tuple(net.cardinalities), rng, eps,
                                    pcd)
        seconds = time.perf_counter() - t0
        rows.append(dict(network=net.name, n=net.n, states=p_star.size, N=n_samples,
                         model=model, kl_true=kl(p_star, q), n_basis=n_basis,
                         seconds=seconds, note="; ".join(notes)))
    return pd.DataFrame(rows)


def _check_peer(net: Any, model: Any) -> None:
    """``net`` an :class:`~mrflib.io.datasets.ExpertNetwork` whose joint fits, ``model`` a pgmpy
    network with its variables and state names (else TypeError/ValueError naming them)."""
    from mrflib import datasets

    check_instance(net, datasets.ExpertNetwork, "net")
    if net.n_states > datasets.MAX_JOINT_STATES:
        raise ValueError(f"net {net.name!r} has {net.n_states} states, more than "
                         f"{datasets.MAX_JOINT_STATES}: pass an ancestral subset")
    if not (hasattr(model, "get_cpds") and hasattr(model, "nodes")):
        raise TypeError(f"model must be a pgmpy Bayesian network, got {type(model).__name__}")
    nodes = set(model.nodes())
    for v, states in zip(net.variables, net.states or [()] * net.n):
        cpd = model.get_cpds(v) if v in nodes else None
        if cpd is None or [str(s) for s in cpd.state_names[v]] != list(states):
            raise ValueError(f"model must hold variable {v!r} of net {net.name!r} with states "
                             f"{list(states)}")


def pgmpy_peer(net: Any, model: Any) -> dict[str, float]:
    """pgmpy's exact single-variable marginals (variable elimination) against ours.

    Ours are sums of the joint table of ``net`` (:meth:`ExpertNetwork.joint`), pgmpy's come
    from ``VariableElimination`` on the pgmpy ``model`` of the same network (or of a network
    that ``net`` is an ancestral subset of). Returns the largest absolute difference and
    both times.

    Parameters
    ----------
    net : mrflib.io.datasets.ExpertNetwork
        With at most :data:`mrflib.io.datasets.MAX_JOINT_STATES` states.
    model : pgmpy.models.DiscreteBayesianNetwork
        Holding every variable of ``net`` with the same state names.
    """
    _check_peer(net, model)
    import logging

    inference = optional_import("pgmpy.inference", "the expert-network peer check", "book")
    logging.getLogger("pgmpy").setLevel(logging.ERROR)

    t0 = time.perf_counter()
    p = net.joint().reshape(tuple(net.cardinalities[::-1]))
    ours = [p.sum(axis=tuple(a for a in range(net.n) if a != net.n - 1 - i))
            for i in range(net.n)]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ve = inference.VariableElimination(model)
    theirs = []
    for i, v in enumerate(net.variables):
        f = ve.query([v], show_progress=False)
        order = [list(f.state_names[v]).index(s) for s in net.states[i]]
        theirs.append(np.asarray(f.values)[order])
    t_pgmpy = time.perf_counter() - t0
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs))
    return dict(max_abs_diff=diff, seconds_ours=t_ours, seconds_pgmpy=t_pgmpy)
