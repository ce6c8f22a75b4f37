"""Experiments of the FSLL chapter (Takabatake & Akaho, section 3, Table 1).

The paper's Table 1 and the learn-and-score trial of each model, kept apart from the
algorithm in :mod:`mrflib.learning.fsll`. :func:`table1_trial` and :func:`theorem3_trial` have the
signature ``fn(t, rng, **params)`` of :meth:`mrflib.repro.trials.Trials.map`: the chapter's
heavy loops run through it in resumable chunks at the paper's scale.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mrflib._support.validation import check_instance, check_positive
from mrflib.inference import exact
from mrflib.io import datasets
from mrflib.io.datasets import Dataset
from mrflib.learning import fsll
from mrflib.learning import learners as learning
from mrflib.models import graphs

__all__ = ["PAPER_TABLE1", "MODELS", "learn_and_score", "fit_seconds", "table1_trial",
           "theorem3_trial"]

#: Table 1 of the paper: ``{dataset: {model: (KL(p_d||p_theta), KL(p*||p_theta), #basis,
#: CPU seconds)}}`` (Java 8 on an Intel Core i7-6700K, median of three trials).
PAPER_TABLE1 = {
    "Ising5x4S": {"FL": (2.501, 0.012, 31, 5), "BM-DI": (2.424, 0.087, 210, 13),
                  "BM-PCD": (2.504, 0.094, 210, 3)},
    "Ising5x4L": {"FL": (0.476, 0.004, 37, 9), "BM-DI": (0.473, 0.002, 210, 12),
                  "BM-PCD": (0.528, 0.053, 210, 3)},
    "BN20-37S": {"FL": (4.355, 0.317, 39, 5), "BM-DI": (4.746, 0.863, 210, 17),
                 "BM-PCD": (4.803, 0.903, 210, 3)},
    "BN20-37L": {"FL": (0.697, 0.026, 105, 12), "BM-DI": (1.422, 0.750, 210, 19),
                 "BM-PCD": (1.477, 0.806, 210, 3)},
    "BN20-54S": {"FL": (3.288, 0.697, 41, 5), "BM-DI": (3.743, 1.301, 210, 23),
                 "BM-PCD": (3.826, 1.338, 210, 3)},
    "BN20-54L": {"FL": (0.430, 0.057, 192, 23), "BM-DI": (1.545, 1.166, 210, 21),
                 "BM-PCD": (1.620, 1.242, 210, 3)},
}
MODELS = ("FL", "BM-DI", "BM-PCD")


def learn_and_score(
    dataset: Any,
    model: str,
    *,
    pcd_steps: int = 10_000,
    pcd_chains: int = 100,
    pcd_rate: float = 0.01,
    rng: Any = 0,
    eps: float = 1e-4,
) -> dict[str, Any]:
    """Fit one model of section 3 to a :class:`mrflib.io.datasets.Dataset` and score it.

    ``model``: ``"FL"`` (:func:`mrflib.learning.fsll.fit`), ``"BM-DI"`` (fully connected Boltzmann
    machine with biases, exact gradient, quasi-Newton: :func:`mrflib.learning.learners.fit`
    with ``"mle"``, L-BFGS-B rather than the paper's BFGS) or ``"BM-PCD"``
    (:func:`mrflib.learning.learners.fit` with ``"pcd"``: learning rate ``pcd_rate``,
    ``pcd_chains`` persistent chains, ``pcd_steps`` updates of one Gibbs sweep each, our
    reading of "chain length 10000"). The Boltzmann machines see the data as spins
    ``s = 2 x - 1``; a fully connected machine with biases is the same exponential family in
    either encoding.

    Returns a dict with ``kl_data`` (``KL(p_d||p_theta)``), ``kl_true``
    (``KL(p*||p_theta)``), ``n_basis``, ``seconds`` (wall time of the learning alone) and
    ``cpu_seconds`` (the CPU time of this process in the learning alone: what speed claims
    are decided on, :mod:`mrflib.repro.timing`).
    """
    check_instance(dataset, Dataset, "dataset")
    n = dataset.data.shape[1]
    if model == "FL":
        t0, c0 = time.perf_counter(), time.process_time()
        m = fsll.fit(dataset.data, dataset.cardinalities, eps=eps)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        q = m.probabilities()
        return dict(kl_data=m.kl_data, kl_true=exact.kl_divergence(dataset.p_star, q),
                    n_basis=m.n_basis, seconds=seconds, cpu_seconds=cpu, fit=m)
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if any(k != 2 for k in dataset.cardinalities):
        raise ValueError("the Boltzmann machines need binary variables")
    spins = (2 * dataset.data.astype(np.int8) - 1).astype(np.int8)
    edges = graphs.complete(n)
    t0, c0 = time.perf_counter(), time.process_time()
    if model == "BM-DI":
        bm = learning.fit(spins, edges, "mle", record=False, progress=False).model
    else:
        bm = learning.fit(spins, edges, "pcd", rng=rng, learning_rate=pcd_rate,
                          max_steps=pcd_steps, n_chains=pcd_chains, record=False,
                          progress=False).model
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    q = exact.probabilities(bm)
    return dict(kl_data=exact.kl_data_model(bm, spins),
                kl_true=exact.kl_divergence(dataset.p_star, q),
                n_basis=n + len(edges), seconds=seconds, cpu_seconds=cpu, fit=bm)


def fit_seconds(dataset: Any, model: str, repeats: int = 3) -> float:
    """The median CPU time (s) of ``repeats`` fits of ``model`` to ``dataset`` in this
    process (:func:`learn_and_score`'s ``cpu_seconds``: the learning alone), for speed claims
    that the machine's load must not decide (:mod:`mrflib.repro.timing`)."""
    repeats = check_positive(repeats, "repeats", integer=True)
    return float(np.median([learn_and_score(dataset, model)["cpu_seconds"]
                            for _ in range(repeats)]))


def _split(t: int, n_outer: int, n_inner: int, name: str) -> tuple[int, int]:
    """``divmod(t, n_inner)`` for a trial index over ``n_outer x n_inner`` settings."""
    if isinstance(t, bool) or not 0 <= t < n_outer * n_inner:
        raise ValueError(f"t must be in [0, {name}) = [0, {n_outer * n_inner}), got {t!r}")
    return divmod(int(t), n_inner)


def table1_trial(
    t: int, rng: Any, *, names: Sequence[str], models: Sequence[str], pcd_steps: int
) -> dict[str, Any]:
    """Trial ``t`` of Table 1 and Figures 3-4 (section 3.4): one model on one dataset.

    The trials cover ``names x models`` (model the faster index). The dataset is
    :func:`mrflib.io.datasets.load` ``(name)``, the paper's size with our fixed sample seed;
    :func:`learn_and_score` fits the model (``rng`` drives only BM-PCD's chains). Returns
    ``dataset, model, kl_data, kl_true, n_basis, seconds`` (the fit itself is left out).
    """
    i, j = _split(t, len(names), len(models), "len(names) * len(models)")
    out = learn_and_score(datasets.load(names[i]), models[j], pcd_steps=pcd_steps, rng=rng)
    out.pop("fit")
    return dict(dataset=names[i], model=models[j], **out)


def theorem3_trial(
    t: int, rng: Any, *, sizes: Sequence[int], n_trials: int, eps: Sequence[float]
) -> list[dict[str, Any]]:
    """Trial ``t`` of the Theorem 3 check: FL on a fresh BN20-37 sample, for each ``eps``.

    The trials cover ``sizes x range(n_trials)`` (repetition the faster index, so the
    costly large ``N`` fall in different chunks): trial ``t`` draws ``N = sizes[t //
    n_trials]`` samples of BN20-37 (:func:`mrflib.io.datasets.bn20_37`, the network fixed, the
    samples from ``rng``) and fits :func:`mrflib.learning.fsll.fit` with every stopping threshold in
    ``eps`` on them. Returns one row per ``eps``: ``N, eps, trial, n_basis, seconds`` (of
    the fit) and ``kl_true`` (``KL(p*||p_theta)``).
    """
    n_trials = check_positive(n_trials, "n_trials", integer=True)
    i, trial = _split(t, len(sizes), n_trials, "len(sizes) * n_trials")
    N = int(sizes[i])
    ds = datasets.bn20_37(N, rng=rng)
    rows = []
    for e in eps:
        t0 = time.perf_counter()
        m = fsll.fit(ds.data, ds.cardinalities, eps=e)
        sec = time.perf_counter() - t0
        rows.append(dict(N=N, eps=e, trial=trial, n_basis=m.n_basis, seconds=sec,
                         kl_true=exact.kl_divergence(ds.p_star, m.probabilities())))
    return rows
