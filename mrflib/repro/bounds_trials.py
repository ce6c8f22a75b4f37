"""Experiments of the higher-order bounds chapter (Leisink & Kappen, section 5).

Per-paper trials for the book, kept apart from the algorithms in :mod:`mrflib.bounds`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import bounds, exact
from .._validation import as_rng, check_counts, check_positive

__all__ = ["sk_errors"]


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
    ``⟨s_0 s_1⟩`` (Figure 3, :func:`mrflib.bounds.pair_correlation_estimates`).
    ``solution`` (one name or several, evaluated on the same networks) is passed to
    :func:`mrflib.bounds.mean_field`: ``"zero"`` with ``theta_sd = 0`` gives Figure 4. The
    moments come from enumeration (``N`` small).
    """
    n_networks = check_positive(n_networks, "n_networks", integer=True)
    gen = as_rng(rng)
    orders = [bounds._check_order(o) for o in check_counts(orders, "orders")]
    solutions = [solution] if isinstance(solution, str) else list(solution)
    rows = []
    for net in range(n_networks):
        bm = bounds.sk_model(N, sigma_w, gen, theta_sd=theta_sd)
        logz = exact.log_partition(bm)
        c = float(exact.moments(bm)[1][0]) if correlations else math.nan
        for sol in solutions:
            m = bounds.mean_field(bm, solution=sol, rng=gen)
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
