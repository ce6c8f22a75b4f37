"""The answer every approximate-inference method of :mod:`mrflib.inference.approx` returns.

A method plugged into :data:`mrflib.inference.approx.METHODS` builds an :class:`ApproxResult`; it
lives in its own module so that those methods need not import the front that dispatches
to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ApproxResult"]


@dataclass(frozen=True)
class ApproxResult:
    """Marginals of a model and how they were obtained.

    Attributes
    ----------
    marginals : list of ndarray
        One ``(|X_i|,)`` probability vector per variable, as
        :func:`mrflib.inference.exact.marginals`
        gives them (an observed variable a point mass; a Boltzmann machine's state 0 is
        spin -1).
    method : str
        The method that produced the marginals (for ``"auto"``, the one it chose).
    seconds : float
        Wall time of the call.
    converged : bool
        Whether the method met its stopping rule (exact: always; sampling: the requested
        samples were drawn).
    log_partition : float or None
        The method's estimate or bound of ``log Z`` (exact; Bethe for loopy BP; the lower
        bound for mean field; the upper bound for weighted mini-bucket), ``None`` if it
        gives none.
    n_samples : int or None
        Samples the estimate averages (sampling methods only).
    standard_errors : list of ndarray or None
        One standard error per probability (sampling methods only).
    iterations : int or None
        Sweeps or passes made (iterative methods).
    details : dict
        Anything else the method reports (for ``"auto"``: what it tried, and why).
    """

    marginals: list
    method: str
    seconds: float
    converged: bool
    log_partition: float | None = None
    n_samples: int | None = None
    standard_errors: list | None = None
    iterations: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
