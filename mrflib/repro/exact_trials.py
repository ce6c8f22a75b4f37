"""Trials of the exact-inference-and-sampling chapter (the substrate every chapter relies on).

:func:`moment_error_trial` has the signature ``fn(t, rng, **params)`` of
:meth:`mrflib.repro.trials.Trials.map`, so the chapter's sampler check runs in resumable
chunks at the paper's scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mrflib.models.boltzmann import BoltzmannMachine

from . import experiments

__all__ = ["moment_error_trial"]


def moment_error_trial(
    t: int,
    rng: Any,
    *,
    bm: BoltzmannMachine,
    sampler: str,
    sample_sizes: Sequence[int],
    burn_in: int,
) -> list[dict[str, Any]]:
    """Trial ``t`` of the sampler check: moment errors of one sample per size ``M``.

    One repetition of :func:`mrflib.repro.experiments.moment_error_curve` (``sampler`` ``"gibbs"``:
    ``M`` independent chains of ``burn_in`` sweeps, the samplers of section 4 of the GSMCI
    paper; ``"exact"``: i.i.d. draws by enumeration) for every ``M`` in ``sample_sizes``,
    all drawn from ``rng``. Returns its rows (``M, trial, sampler, quantity, mae``) as dicts
    with ``trial = t``.
    """
    df = experiments.moment_error_curve(bm, sample_sizes, 1, sampler, rng, burn_in=burn_in)
    df["trial"] = int(t)
    return df.to_dict("records")
