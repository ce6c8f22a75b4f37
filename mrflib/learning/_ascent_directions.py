"""The ascent direction ``Delta(theta)`` of each method of
:func:`mrflib.learning.learners.fit`, made once per fit as a function of the parameters.

By family: the local methods' scaled objective gradients (:func:`_local_gradient`), the
exact moments of ``"mle"`` (:func:`_exact_moments`), the SMCI moments on the data
(:func:`_smci_moments`), the SMCI moments on a sample set advanced by Gibbs sweeps
(:func:`_smci_pcd`, Algorithm 2 of Yasuda & Uchizawa) and the sampled moments of contrastive
divergence (:func:`_contrastive`). A direction that keeps chains from step to step
carries them as ``direction.state`` (``{"chains": ...}``), which
:func:`~mrflib.learning.learners.fit` returns.

Each works on the validated :class:`~mrflib.learning._problem.Problem` of the fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, check_spins, is_choice, require_memory
from mrflib.learning import _local
from mrflib.learning._fit_arguments import TABLE
from mrflib.learning._problem import Problem

__all__ = ["SMCI_ESTIMATORS", "direction_fn", "require_chains"]

#: The estimators of ``"smci-pcd"`` (option ``estimator``).
SMCI_ESTIMATORS = ("mci", "1-smci", "s2-smci", "2-smci")


def require_chains(prob: Problem, n_chains: int, what: str) -> None:
    """Refuse, before allocating, a chain set of ``n_chains`` rows (CD, PCD, SMCI-PCD):
    the int8 chains and their Gibbs copy, the float64 copy and edge products the moments
    are averaged from, the row index, and the sampler's uniforms."""
    from mrflib.inference.sampling import UNIFORM_BLOCK
    from mrflib.inference.sampling._counts import gibbs_bytes

    rows = float(n_chains)
    need = (rows * (8.0 + 10.0 * prob.n + 24.0 * prob.E)
            + gibbs_bytes(n_chains, prob.n, 0, 1, UNIFORM_BLOCK))
    require_memory(need, f"{what} ({n_chains} chains of {prob.n} spins)")


def direction_fn(prob: Problem, method: str, rng: Any, options: dict) -> Callable:
    """The ascent direction Delta(theta) of a method, as a function of the parameters."""
    if method in _local.LOCAL_METHODS:
        return _local_gradient(prob, method)
    if method == "mle":
        return _exact_moments(prob, options.get("engine", "auto"))
    if method in ("1-smci", "s2-smci"):
        return _smci_moments(prob, method)
    if method == "smci-pcd":
        return _smci_pcd(prob, rng, options)
    return _contrastive(prob, method, rng, options)


def _target(prob: Problem) -> np.ndarray:
    """The data moments ``(<x_i>, <x_i x_j>)`` a moment-matching direction aims at."""
    return np.concatenate([prob.data_mean, prob.data_pair])


def _local_gradient(prob: Problem, method: str) -> Callable:
    """The local objective's gradient, scaled per parameter type by the method's row."""
    n = prob.n
    sb, sj = TABLE[method].scale
    local = prob.local(method)

    def direction(theta):
        _, gb, gj = local(theta, False)
        out = np.empty_like(theta)
        out[:n] = sb * gb
        out[n:] = sj * gj
        return out

    return direction


def _exact_moments(prob: Problem, engine: str) -> Callable:
    """Eq. (5): the data moments less the model's exact moments (``engine``)."""
    from mrflib import exact

    target = _target(prob)

    def direction(theta):
        mean, pair = exact.moments(prob.model(theta), method=engine)
        return target - np.concatenate([mean, pair])

    return direction


def _smci_moments(prob: Problem, method: str) -> Callable:
    """The data moments less the SMCI estimates on the data (``"1-smci"`` from pattern
    counts where they are available, its cost then flat in N)."""
    from mrflib import smci

    target = _target(prob)
    n = prob.n
    counts = prob.smci1() if method == "1-smci" else None
    if counts is not None and counts.available:  # from pattern counts, cost flat in N
        def direction(theta):
            mean, pair = counts(theta[:n], theta[n:])
            return target - np.concatenate([mean, pair])
    else:
        def direction(theta):
            mean, pair = smci.moments(prob.trusted_model(theta), prob.x, method)
            return target - np.concatenate([mean, pair])

    return direction


def _smci_pcd(prob: Problem, rng: Any, options: dict) -> Callable:
    """Algorithm 2 of Yasuda & Uchizawa: the SMCI estimates (``estimator``) on a sample
    set, the ``extension_rate``-replicated data or ``samples``, advanced by ``kappa`` Gibbs
    sweeps under each new ``theta``."""
    from mrflib import sampling, smci

    target = _target(prob)
    N = prob.x.shape[0]
    estimator = options.get("estimator", "1-smci")
    if not is_choice(estimator, SMCI_ESTIMATORS):
        raise ValueError(f"estimator must be one of {SMCI_ESTIMATORS}, got {estimator!r}")
    kappa = check_positive(options.get("kappa", 1), "kappa", integer=True)
    if options.get("samples") is not None:
        if "extension_rate" in options:
            raise ValueError("give either samples or extension_rate, not both")
        chains = check_spins(options["samples"], prob.n, "samples").copy()
        if chains.shape[0] == 0:
            raise ValueError("samples must contain at least one configuration")
    else:
        e = check_positive(options.get("extension_rate", 1), "extension_rate", integer=True)
        require_chains(prob, e * N, f"extension_rate = {e}")
        chains = np.tile(prob.x, (e, 1))  # S_0: the e-replicated data
    state = {"chains": chains, "first": True}

    def direction(theta):
        bm = prob.trusted_model(theta)
        if not state["first"]:  # S_t: kappa sweeps of S_{t-1} under theta_t (line 7)
            state["chains"] = sampling.sweep(bm, state["chains"], kappa, rng=rng)
        state["first"] = False
        mean, pair = smci.moments(bm, state["chains"], estimator)
        return target - np.concatenate([mean, pair])

    direction.state = state
    return direction


def _contrastive(prob: Problem, method: str, rng: Any, options: dict) -> Callable:
    """CD (chains restarted at the data, or at ``n_chains`` data points drawn each step)
    and PCD (persistent chains): the data moments less those of the chains after ``k``
    Gibbs sweeps."""
    from mrflib import sampling

    target = _target(prob)
    N = prob.x.shape[0]
    k = check_positive(options.get("k", 1), "k", integer=True)
    if "extension_rate" in options:
        if "n_chains" in options:
            raise ValueError("give either n_chains or extension_rate, not both")
        e = check_positive(options["extension_rate"], "extension_rate", integer=True)
        n_chains = e * N
        require_chains(prob, n_chains, f"extension_rate = {e}")
        init = np.tile(prob.x, (e, 1))
    else:
        default_chains = N if method == "cd" else min(N, 1000)
        n_chains = check_positive(options.get("n_chains", default_chains), "n_chains",
                                  integer=True)
        require_chains(prob, n_chains, f"n_chains = {n_chains}")
        init = prob.x[rng.choice(N, size=n_chains, replace=n_chains > N)].copy()
    state = {"chains": init}

    def direction(theta):
        bm = prob.trusted_model(theta)
        if method == "cd":
            if n_chains == N:
                start = prob.x
            else:
                start = prob.x[rng.choice(N, size=n_chains, replace=n_chains > N)]
        else:
            start = state["chains"]
        chains = sampling.sweep(bm, start, k, rng=rng)
        if method == "pcd":
            state["chains"] = chains
        cf = chains.astype(np.float64)
        mean = cf.mean(axis=0)
        pair = np.mean(cf[:, prob.ei] * cf[:, prob.ej], axis=0)
        return target - np.concatenate([mean, pair])

    if method == "pcd":
        direction.state = state
    return direction
