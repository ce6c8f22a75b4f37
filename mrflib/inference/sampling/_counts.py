"""The counts and the memory of a Gibbs run, checked before any sampler allocates.

:func:`check_counts` checks the counts both samplers take (``n_samples``, ``burn_in``,
``thin``, ``n_chains``): the Boltzmann machines' :func:`mrflib.inference.sampling.gibbs` and
the factor graphs' :func:`mrflib.inference.sampling.chains.gibbs`. :func:`gibbs_bytes` is
the peak memory of the former, which the ±1 learners' chains check too.
"""

from __future__ import annotations

from typing import Any

from mrflib._support.validation import check_positive, require_memory

__all__ = ["check_counts", "gibbs_bytes"]


def check_counts(n_samples: Any, burn_in: Any, thin: Any, n_chains: Any
                 ) -> tuple[int, int, int, int, int]:
    """The counts of a Gibbs run, checked: ``n_samples`` (positive), ``burn_in`` (at
    least 0), ``thin`` (positive) and ``n_chains`` (``None``: one chain per sample; at
    most ``n_samples``), each a ``ValueError`` naming it otherwise; a schedule of sweeps
    that would not fit in memory is refused.

    Returns
    -------
    (n_samples, burn_in, thin, n_chains, per_chain)
        The counts as ``int``, ``per_chain`` the samples each chain records
        (``ceil(n_samples / n_chains)``).
    """
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    burn_in = check_positive(burn_in, "burn_in", integer=True, allow_zero=True)
    thin = check_positive(thin, "thin", integer=True)
    n_chains = n_samples if n_chains is None else check_positive(n_chains, "n_chains",
                                                                 integer=True)
    if n_chains > n_samples:
        raise ValueError(f"n_chains must be at most n_samples ({n_samples}), got {n_chains}")
    per_chain = -(-n_samples // n_chains)
    sweeps = max(burn_in, 1) + (per_chain - 1) * thin
    require_memory(8.0 * sweeps, f"the schedule of {sweeps} Gibbs sweeps (burn_in={burn_in}, "
                   f"thin={thin}, n_samples={n_samples}, n_chains={n_chains})")
    return n_samples, burn_in, thin, n_chains, per_chain


def gibbs_bytes(n_chains: int, n: int, per_chain: int, n_sweeps: int, block: int) -> float:
    """Peak bytes of :func:`mrflib.inference.sampling.gibbs`: int8 output, int64 start
    spins (and their temporaries), one block of float64 uniforms, the int64 recording
    schedule (one per sweep) and the checkerboard threshold tables (16 int64 per spin,
    with a copy of the parameters).

    Parameters
    ----------
    n_chains : int
        Chains run at once.
    n : int
        Spins of the model.
    per_chain : int
        Samples each chain records (0: none, a sweep of the chains in place).
    n_sweeps : int
        Sweeps of the schedule.
    block : int
        Uniforms drawn per block (:data:`mrflib.inference.sampling.UNIFORM_BLOCK`).

    Returns
    -------
    float
        The bytes, for :func:`mrflib._support.validation.require_memory`.
    """
    chains = float(n_chains) * n
    return (per_chain * chains + 17.0 * chains + 8.0 * max(block, chains)
            + 24.0 * n_sweeps + 160.0 * n + 2.0**24)
