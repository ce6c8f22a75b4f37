"""Good states of positive probability: a feasible state by search, then local search.

::

    x = map_search.feasible_state(model, start=x_wmb, deadline=1.0)   # P(x) > 0, or None
    r = map_search.local_search(model, x)                              # a local maximum

Zeros of the tables (``-inf`` log-weights) are hard constraints: a state that decodes each
variable on its own (the argmax of a marginal, a trivial all-zero state) usually breaks
some of them, and its probability is then zero however good its other factors are.

* :func:`feasible_state` finds a state of positive weight, or proves there is none
  (``Z = 0``). The factors holding a zero are the constraints; their variables are searched
  depth first, the variable of smallest domain first (ties: the one in most constraints),
  keeping every state left supported by every constraint (generalized arc consistency,
  Mackworth 1977, maintained at each node: Sabin and Freuder 1994), and backtracking on an
  empty domain. A variable's values are tried in the order of ``start`` (its value first)
  and then of their score given the states left (``Σ_k max θ_k`` over the rows each factor
  still allows). The variables of no constraint are then set in increasing order, each to
  ``start``'s value or its best score given the others. The search is complete: without a
  deadline it ends with a state or with the proof that none exists (deciding this is
  NP-hard, so a deadline may stop it first: :class:`TimeoutError`).
* :func:`local_search` improves a state of positive weight by iterated conditional modes
  (:func:`mrflib.inference.approx.point_estimates.icm`'s sweeps: each variable to its best state
  given the others, a move only when strictly better, so never onto a zero), until a sweep
  changes nothing: a local maximum. Optional perturbations (a connected block of variables
  moved at random to states of positive weight, then the sweeps again, kept when better)
  leave that local maximum for a better one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive
from mrflib.inference.approx._state_search import Ascent, Search, check_state, stop_time
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["LocalSearchResult", "feasible_state", "local_search"]


def feasible_state(model: FactorGraph | BoltzmannMachine, start: Any = None, *,
                   deadline: float | None = None) -> np.ndarray | None:
    """A state of positive weight, or ``None`` when the model has none (``Z = 0``).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied (a Boltzmann machine is taken as its factor graph,
        state 0 is spin -1; it has no zeros).
    start : array_like of int, shape (n,), optional
        A preferred state (for example the decoding of approximate marginals): returned
        as it is when its weight is positive, else each variable's value in it is tried
        first. Without it the values are tried by decreasing score (see the module notes).
    deadline : float, optional
        Seconds from the call after which the search stops (it looks at the clock after
        each chunk of
        :data:`~mrflib.inference.approx._state_search.SEARCH_CHUNK` table entries, so it
        always does one).

    Returns
    -------
    ndarray of int64, shape (n,), or None
        A state ``x`` with ``model.log_weight(x) > -inf``; ``None`` when the search proved
        that every state has zero weight.

    Raises
    ------
    TimeoutError
        When the deadline passes before the search ends.
    """
    fg = as_factor_graph(model)
    stop = stop_time(deadline)
    prefer = np.full(fg.n, -1, dtype=np.int64)
    if start is not None:
        prefer = check_state(fg, start, "start")
        if fg.log_weight(prefer) > -np.inf:
            return prefer
    if any(not s and t == -np.inf for s, t in zip(fg.scopes, fg.log_tables)):
        return None  # a constant factor of weight zero
    search = Search(fg, prefer)
    if not search.constraints.size:  # nothing to search: the kernel would find at once
        return search.state()       # (and its compilation costs seconds on first use)
    return search.state() if search.run(stop) else None


@dataclass(frozen=True)
class LocalSearchResult:
    """The answer of :func:`local_search`.

    Attributes
    ----------
    state : ndarray of int64, shape (n,)
        The best state found.
    log_weight : float
        Its unnormalized log-weight ``Σ_k θ_k(x_{S_k})``, never below the start's.
    sweeps : int
        Sweeps of conditional modes done, over all perturbations.
    local_maximum : bool
        Whether ``state`` is a local maximum: no change of one variable raises its weight.
    perturbations : int
        Perturbations done.
    improvements : int
        Perturbations that led to a better state.
    """

    state: np.ndarray
    log_weight: float
    sweeps: int
    local_maximum: bool
    perturbations: int
    improvements: int


def local_search(model: FactorGraph | BoltzmannMachine, init: Any, *,
                 deadline: float | None = None, max_sweeps: int = 1000,
                 perturbations: int = 0, block: int = 16, rng: Any = None
                 ) -> LocalSearchResult:
    """Coordinate ascent from a state of positive weight (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a Boltzmann machine is taken as its factor graph, state 0 is spin -1).
    init : array_like of int, shape (n,)
        The start, a state of positive weight (:func:`feasible_state` gives one).
    deadline : float, optional
        Seconds from the call after which no further sweep or perturbation starts.
    max_sweeps : int, default 1000
        Largest number of sweeps of each ascent.
    perturbations : int, default 0
        Perturbations of the best state, each followed by an ascent (0: the ascent only).
    block : int, default 16
        Variables moved by each perturbation.
    rng : seed or Generator or None, default None
        The randomness of the perturbations (required when ``perturbations > 0``).

    Returns
    -------
    LocalSearchResult
        The best state found: its log-weight is never below ``init``'s.
    """
    fg = as_factor_graph(model)
    x = check_state(fg, init, "init")
    stop = stop_time(deadline)
    max_sweeps = check_positive(max_sweeps, "max_sweeps", integer=True)
    perturbations = check_positive(perturbations, "perturbations", integer=True,
                                   allow_zero=True)
    block = check_positive(block, "block", integer=True)
    if perturbations and rng is None:
        raise ValueError("rng must be given (a seed or a Generator) when perturbations > 0")
    gen = as_rng(rng) if perturbations else None
    if not fg.log_weight(x) > -np.inf:
        raise ValueError("init must be a state of positive weight (feasible_state gives one)")
    ascent = Ascent(fg)
    best = x[None, :].copy()
    local = ascent.climb(best, max_sweeps, stop)
    value = float(fg.log_weight(best[0]))
    done = better = 0
    while done < perturbations and time.perf_counter() < stop:
        done += 1
        y = best.copy()
        ascent.perturb(y, block, gen)
        y_local = ascent.climb(y, max_sweeps, stop)
        y_value = float(fg.log_weight(y[0]))
        if y_value > value:
            best, value, local, better = y, y_value, y_local, better + 1
    return LocalSearchResult(best[0].copy(), value, ascent.sweeps, local, done, better)
