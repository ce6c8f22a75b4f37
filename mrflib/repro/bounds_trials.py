"""Experiments of the higher-order bounds chapter (Leisink & Kappen, section 5).

Per-paper trials for the book, kept apart from the algorithms in :mod:`mrflib.inference.bounds`.
:func:`sk_group_trial` and :func:`random_networks_trial` have the signature
``fn(t, rng, **params)`` of :meth:`mrflib.repro.trials.Trials.map`: the chapter's heavy loops
run through it in resumable chunks at the paper's scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mrflib._support.validation import as_rng, check_counts, check_positive
from mrflib.inference import bounds, exact
from mrflib.models import graphs
from mrflib.models.boltzmann import BoltzmannMachine

__all__ = ["random_networks_trial", "sk_errors", "sk_group_trial"]


def sk_errors(
    N: int,
    sigma_w: float,
    n_networks: int,
    orders: Sequence[int],
    rng: Any,
    *,
    theta_sd: float = 0.2,
    solution: str | Sequence[str] = "best",
    correlations: bool = True,
) -> pd.DataFrame:
    """Bounds of several orders on random SK networks against exact enumeration (Fig. 2-4).

    Returns a tidy :class:`pandas.DataFrame` with one row per (network, solution, order):
    ``network, sigma_w, solution, order, log_z, bound, rel_error`` (``1 − log B_K / log Z``,
    Figure 2) and, with ``correlations``, ``corr, corr_exact, corr_sq_error`` for
    ``⟨s_0 s_1⟩`` (Figure 3, :func:`mrflib.inference.bounds.pair_correlation_estimates`).
    ``solution`` (one name or several, evaluated on the same networks) is passed to
    :func:`mrflib.inference.bounds.mean_field_solution`: ``"zero"`` with ``theta_sd = 0``
    gives Figure 4. The moments come from enumeration (``N`` small).
    """
    n_networks = check_positive(n_networks, "n_networks", integer=True)
    gen = as_rng(rng)
    orders = [bounds.check_order(o) for o in check_counts(orders, "orders")]
    solutions = [solution] if isinstance(solution, str) else list(solution)
    rows = []
    for net in range(n_networks):
        bm = bounds.sk_model(N, sigma_w, rng=gen, theta_sd=theta_sd)
        logz = exact.log_partition(bm)
        c = float(exact.moments(bm)[1][0]) if correlations else math.nan
        for sol in solutions:
            m = bounds.mean_field_solution(bm, solution=sol, rng=gen)
            lb = bounds.log_partition_lower_bounds(bm, orders, m=m, method="enumerate")
            if correlations:
                est = bounds.pair_correlation_estimates(bm, orders, 0, m=m, method="enumerate")
            for k, o in enumerate(orders):
                row = dict(network=net, sigma_w=sigma_w, solution=sol, order=o, log_z=logz,
                           bound=lb[k], rel_error=1.0 - lb[k] / logz)
                if correlations:
                    row.update(corr=est[k], corr_exact=c, corr_sq_error=(est[k] - c) ** 2)
                rows.append(row)
    return pd.DataFrame(rows)


def sk_group_trial(
    t: int,
    rng: Any,
    *,
    N: int,
    sigmas: Sequence[float],
    n_groups: int,
    group_size: int,
    orders: Sequence[int],
    **options: Any,
) -> list[dict[str, Any]]:
    """Trial ``t`` of Figures 2-4 (section 5): one group of SK networks at one ``sigma_w``.

    The trials cover ``sigmas x range(n_groups)`` with ``sigma_w`` the slower index:
    trial ``t`` is group ``t % n_groups`` at ``sigma_w = sigmas[t // n_groups]``, the
    :func:`sk_errors` of ``group_size`` networks (``options`` are passed on: ``theta_sd``,
    ``solution``, ``correlations``). Returns its rows as dicts with a ``group`` column.
    """
    n_groups = check_positive(n_groups, "n_groups", integer=True)
    sigmas = np.asarray(sigmas, dtype=float)
    if sigmas.ndim != 1 or not 0 <= t < sigmas.size * n_groups:
        raise ValueError(f"t must be in [0, len(sigmas) * n_groups) = "
                         f"[0, {sigmas.size * n_groups}), got {t!r}")
    s, group = divmod(int(t), n_groups)
    df = sk_errors(N, float(sigmas[s]), group_size, orders, rng, **options)
    df["group"] = group
    return df.to_dict("records")


def random_networks_trial(
    t: int, rng: Any, *, n_networks: int, block: int, orders: Sequence[int]
) -> dict[str, Any]:
    """Trial ``t`` of the section 3 check: bound ``<= log Z`` and monotone in the order.

    Trial ``t`` draws the networks ``k`` in ``[t * block, (t + 1) * block)`` (fewer in the
    last block of ``n_networks``): for ``k % 3 == 0`` a random graph ``G(N, 0.5)`` with
    biases ``N(0, 0.5^2)`` and couplings ``N(0, 1)`` (skipped if it has no edge), else an SK
    model (:func:`mrflib.inference.bounds.sk_model`) with ``sigma_w ~ U[0.1, 3]``; ``N ~ U{3..12}``.
    Each gets the lower bounds of ``orders`` (eq. (5), by enumeration) and exact ``log Z``.

    Returns ``networks`` (drawn), ``violations`` (networks with a bound above ``log Z``),
    ``non_monotone`` (networks whose bounds decrease with the order) and ``worst_gap``
    (smallest ``log Z - bound``; ``inf`` if no network was evaluated).
    """
    n_networks = check_positive(n_networks, "n_networks", integer=True)
    block = check_positive(block, "block", integer=True)
    gen = as_rng(rng)
    ks = range(int(t) * block, min((int(t) + 1) * block, n_networks))
    if len(ks) == 0:
        raise ValueError(f"t must be below ceil(n_networks / block) = "
                         f"{-(-n_networks // block)}, got {t!r}")
    viol = mono = 0
    worst = math.inf
    for k in ks:
        N = int(gen.integers(3, 13))
        if k % 3 == 0:
            E = graphs.random_graph(N, 0.5, rng=gen)
            if len(E) == 0:
                continue
            bm = BoltzmannMachine(gen.normal(0, 0.5, N), E, gen.normal(0, 1.0, len(E)))
        else:
            bm = bounds.sk_model(N, gen.uniform(0.1, 3.0), rng=gen)
        lz = exact.log_partition(bm)
        lb = bounds.log_partition_lower_bounds(bm, orders, method="enumerate")
        viol += int(np.any(lb > lz + 1e-10))
        mono += int(np.any(np.diff(lb) < -1e-10))
        worst = min(worst, float(np.min(lz - lb)))
    return dict(networks=len(ks), violations=viol, non_monotone=mono, worst_gap=worst)
