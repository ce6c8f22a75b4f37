"""The answers of the approximate front :mod:`mrflib.inference.approx`.

A method plugged into :data:`mrflib.inference.approx.METHODS` builds an :class:`ApproxResult`
(marginals); :func:`mrflib.inference.approx.map_assignment` returns a :class:`MapResult` (a
most probable state and a bound on its log-weight), which a :class:`MapIncumbent` builds up
step by step. They live in their own module so that the methods need not import the front
that dispatches to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrflib.inference.approx.max_mini_bucket import bound_meets
from mrflib.models.factor_graph import FactorGraph

__all__ = ["ApproxResult", "MapResult", "MapIncumbent"]


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
        bound for mean field; the upper bound for weighted mini-bucket; the importance
        sampling estimate), ``None`` if it gives none.
    n_samples : int or None
        Samples the estimate averages (sampling methods only).
    standard_errors : list of ndarray or None
        One standard error per probability (sampling methods only).
    iterations : int or None
        Sweeps or passes made (iterative methods).
    log_partition_bounds : tuple of (float, float) or None
        ``(lower, upper)`` with ``lower <= log Z <= upper`` with probability at least
        ``confidence`` (importance sampling; exact: both ``log Z``), ``None`` if the method
        gives none.
    confidence : float or None
        The probability with which ``log_partition_bounds`` hold (``1.0``: certified).
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
    log_partition_bounds: tuple[float, float] | None = None
    confidence: float | None = None


@dataclass(frozen=True)
class MapResult:
    """A most probable state of a model as far as a method found it, and how sure it is.

    Attributes
    ----------
    state : ndarray, shape (n,)
        The best state found: ``int64`` states of a factor graph (observed variables at
        their values), ``int8`` spins ``±1`` of a Boltzmann machine. Its weight is positive
        whenever a state of positive weight was found.
    log_weight : float
        Its unnormalized log-weight ``Σ_k θ_k(x_{S_k})`` (``-inf`` only when no state of
        positive weight was found in the time).
    upper_bound : float
        A certified upper bound on the largest log-weight of any state (``log_weight``
        itself when ``optimal`` by exact elimination).
    optimal : bool
        Whether ``upper_bound`` meets ``log_weight`` (within ``1e-9`` relative): ``state``
        is then a most probable state.
    method : str
        The method that found ``state`` (for ``"auto"``, the one whose state is returned).
    seconds : float
        Wall time of the call.
    details : dict
        Anything else the method reports (the start's log-weight, i-bounds, the steps of
        ``"auto"``).
    """

    state: Any
    log_weight: float
    upper_bound: float
    optimal: bool
    method: str
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)


class MapIncumbent:
    """The best state a MAP search has found so far, the lowest upper bound, and the steps'
    notes: what the steps of :func:`mrflib.inference.approx.map_assignment` share.

    Parameters
    ----------
    model : FactorGraph
        The model searched (evidence applied).
    upper : float
        An upper bound on its largest log-weight to start from.

    Attributes
    ----------
    state : ndarray of int64, shape (n,), or None
        The best state offered so far (``None`` before the first).
    value : float
        Its log-weight (``-inf`` before the first).
    method : str
        The step that offered it.
    upper : float
        The lowest upper bound offered on the largest log-weight.
    details : dict
        What the steps report (the ``details`` of the :class:`MapResult`).
    """

    def __init__(self, model: FactorGraph, upper: float) -> None:
        self.model, self.upper = model, upper
        self.state: np.ndarray | None = None
        self.value, self.method = -math.inf, ""
        self.details: dict[str, Any] = {}

    def offer(self, x: np.ndarray | None, method: str, upper: float = math.inf) -> None:
        """Keep ``x`` when it weighs more than the best state, and ``upper`` when lower.

        Parameters
        ----------
        x : ndarray of int or None
            A state of the model (``None``: only a bound).
        method : str
            The step that found it.
        upper : float, default inf
            An upper bound on the largest log-weight.

        Returns
        -------
        None
        """
        self.upper = min(self.upper, float(upper))
        if x is None:
            return
        value = float(self.model.log_weight(x))
        if self.state is None or value > self.value:
            self.state, self.value, self.method = np.asarray(x, dtype=np.int64), value, method

    def done(self) -> bool:
        """Whether the bound meets the best log-weight (``bound_meets``).

        Returns
        -------
        bool
            ``True`` when the best state is proven most probable.
        """
        return bound_meets(self.upper, self.value)
