"""``log Z`` of a constraint model within a factor ``1 + ε`` with probability ``1 - δ``, by
approximate model counting (ApproxMC).

A constraint model (every table one positive value where it is not zero) has
``Z = (Π_k c_k) · #F``, the scaled number of models of a formula ``F`` in conjunctive normal
form (:mod:`mrflib.inference.exact.model_counting`, whose encoding and scale this module
reuses). Where the exact count is out of reach, ApproxMC (Chakraborty, Meel & Vardi,
"Algorithmic improvements in approximate counting for probabilistic inference: from linear
to logarithmic SAT calls", IJCAI 2016; the ``pyapproxmc`` bindings of version 4.1, an
optional dependency: ``pip install "mrflib[counting]"``; 4.3 and 4.4 miscount, see
:func:`available`) estimates ``#F`` by hashing: ``m``
random XOR constraints cut the models into ``2^m`` cells; a SAT solver counts the models of
one cell up to a threshold that depends on ``ε``, the smallest ``m`` whose cell holds fewer
than the threshold is found, and the median over rounds (more rounds for a smaller ``δ``)
of ``cells · 2^m`` is the estimate ``Ĉ``. Its guarantee (the paper's Theorem 1):

.. math::  P\\bigl(\\#F / (1 + ε) \\le Ĉ \\le (1 + ε) \\#F\\bigr) \\ge 1 - δ,

so ``log Z`` lies within ``log(1 + ε)`` of the estimate with probability at least ``1 - δ``
(``|log10 error| <= 0.26`` at ``ε = 0.8``). A formula with fewer models than the threshold
is counted exactly (no XOR is added; :attr:`ApproxCountResult.exact` where the
preprocessing freed no variable either). The counter
minimizes the sampling set itself (its Arjun preprocessing finds variables that the others
define); the sampling set handed to it is every Boolean some clause holds, and each
Boolean no clause holds (a binary variable in no table with a zero) doubles the count
outside it. Unlike importance sampling, the estimate needs no sample of positive weight: on
the SAT encodings, whose positive states are a vanishing share of all states, the hashes
find the models where a proposal finds none.

The counter cannot be interrupted; with ``time_limit`` it runs in a forked child
(:class:`mrflib._support.forked.Forked`) that is killed at the limit. The counter's seed is
drawn from ``rng``: the same seed gives the same estimate.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mrflib._support.forked import call_within
from mrflib._support.optional import optional_import
from mrflib._support.validation import as_rng, check_real
from mrflib.inference.exact._search_arguments import conditioned_model
from mrflib.inference.exact.model_counting import (
    clause_booleans,
    cnf_clauses,
    constraint_scale,
)

__all__ = ["available", "ApproxCountResult", "approx_counted_log_partition", "EPSILON",
           "DELTA"]

#: The default tolerance: the estimate is within a factor ``1 + EPSILON`` of the count.
EPSILON = 0.8
#: The default probability with which that may fail (three rounds of ApproxMC 4).
DELTA = 0.2
#: The optional module, what needs it and the extra of mrflib that installs it.
REQUIRES = ("pyapproxmc", "approximate model counting", "counting")
#: A formula whose preprocessing frees ``x1`` (6 models): the check of :func:`_counter`.
FREED = [[1, -2, -3], [-1, -2, -3]]
#: Seeds of the counter are drawn below this (it takes an unsigned 32-bit seed).
SEED_BOUND = 2**31 - 1


def available() -> bool:
    """Whether the approximate model counter (``pyapproxmc``) imports and counts a formula
    whose preprocessing frees a variable right (:func:`_counter`): without it
    :func:`approx_counted_log_partition` raises ``ImportError``, and the solver
    (:class:`mrflib.io.anytime_pr.ApproxCounts`) starts no count.

    Returns
    -------
    bool
        ``True`` when it can count.
    """
    try:
        _counter()
    except ImportError:
        return False
    return True


@functools.cache
def _counter() -> Any:
    """The ``pyapproxmc`` module, once it has counted :data:`FREED` right.

    Versions 4.3 and 4.4 of ``pyapproxmc`` drop from the count each variable of the
    sampling set that their preprocessing (Arjun) leaves in no clause: on
    ``(x1 ∨ ¬x2 ∨ ¬x3) ∧ (¬x1 ∨ ¬x2 ∨ ¬x3)``, whose resolvent ``¬x2 ∨ ¬x3`` frees ``x1``, they
    count 3 models of 6, half the count for each variable so freed; 4.1 counts 6.
    """
    amc = optional_import(*REQUIRES)
    counter = amc.Counter(verbosity=0, seed=1)
    counter.add_clauses(FREED)
    cells, hashes = counter.count([1, 2, 3])
    if cells * 2**hashes != 6:
        raise ImportError(f"approximate model counting needs pyapproxmc below 4.3: the "
                          f"installed one counts {cells * 2**hashes} models of 6 where its "
                          f'preprocessing frees a variable: pip install "mrflib[counting]"')
    return amc


@dataclass(frozen=True)
class ApproxCountResult:
    """An approximate model count's ``log Z`` and its guarantee.

    Attributes
    ----------
    log_partition : float
        The estimate of ``log Z`` (natural log; ``-inf`` when the formula has no model,
        which the counter's SAT solver proves).
    lower, upper : float
        ``lower <= log Z <= upper`` with probability at least ``1 - delta``:
        ``log_partition ∓ log(1 + epsilon)`` (both ``log_partition`` when ``exact``).
    epsilon : float
        The tolerance: the count is within a factor ``1 + epsilon`` of the estimate.
    delta : float
        The probability with which the bounds may fail.
    exact : bool
        Whether the count is known to be exact: no model, or ``hashes`` 0 (fewer models
        than the counter's threshold, and no variable freed by its preprocessing, which
        the counter reports as hashes too).
    seconds : float
        Wall time of the call.
    details : dict
        ``cells`` and ``hashes`` (the count is ``cells · 2^hashes``), ``sampling_set``
        (Booleans handed to the counter), ``free`` (Booleans of no clause, each doubling
        the count) and the counter's ``seed``.
    """

    log_partition: float
    lower: float
    upper: float
    epsilon: float
    delta: float
    exact: bool
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)


def _cells(clauses: list[list[int]], sampling_set: list[int], seed: int, epsilon: float,
           delta: float) -> tuple[int, int]:
    """ApproxMC's ``(cells, hashes)`` for the formula over ``sampling_set``."""
    amc = _counter()
    counter = amc.Counter(verbosity=0, seed=seed, epsilon=epsilon, delta=delta)
    counter.add_clauses(clauses)
    cells, hashes = counter.count(sampling_set)
    return int(cells), int(hashes)


def _check_tolerances(epsilon: Any, delta: Any) -> tuple[float, float]:
    epsilon = check_real(epsilon, "epsilon")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    delta = check_real(delta, "delta")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return epsilon, delta


def approx_counted_log_partition(model: Any, *, rng: Any,
                                 evidence: Mapping[Any, Any] | None = None,
                                 epsilon: float = EPSILON, delta: float = DELTA,
                                 time_limit: float | None = None) -> ApproxCountResult:
    """``log Z`` of a constraint model by ApproxMC, within ``log(1 + epsilon)`` with
    probability at least ``1 - delta`` (see the module text).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise); every table must hold one positive value
        where it is not zero
        (:func:`~mrflib.inference.exact.model_counting.constraint_scale`).
    rng : numpy.random.Generator or int
        Draws the counter's seed (the same seed, the same estimate).
    evidence : mapping or None, default None
        ``{variable: value}``: the answer is ``log Z`` of the model conditioned on it
        (:func:`~mrflib.models.factor_graph.with_evidence`).
    epsilon : float, default EPSILON
        The tolerance, positive: the count is within a factor ``1 + epsilon``.
    delta : float, default DELTA
        The probability, in ``(0, 1)``, with which the tolerance may be missed; a smaller
        one takes more rounds.
    time_limit : float or None, default None
        Seconds the count may take (``None``: no limit). The counter cannot be interrupted:
        under a limit it runs in a forked child, killed when the limit is reached, and the
        call raises ``TimeoutError``.

    Returns
    -------
    ApproxCountResult
        The estimate of ``log Z`` (natural log), its bounds and its guarantee.

    Raises
    ------
    ValueError
        When the model is not a constraint model, ``epsilon``, ``delta``, ``rng`` or
        ``time_limit`` is out of its range, or the formula would not fit in memory.
    ImportError
        When ``pyapproxmc`` is not installed (``pip install "mrflib[counting]"``), or
        miscounts (versions 4.3 and 4.4: :func:`available`).
    TimeoutError
        When the count does not finish within ``time_limit``.
    """
    start = time.perf_counter()
    model, time_limit, deadline = conditioned_model(model, evidence, time_limit)
    epsilon, delta = _check_tolerances(epsilon, delta)
    seed = int(as_rng(rng).integers(SEED_BOUND))
    scale = constraint_scale(model)
    if scale is None:
        raise ValueError("model must be a constraint model (every table one positive value "
                         "where it is not zero) for approximate model counting; use "
                         "approx.log_partition")
    _counter()
    n_bool, clauses = cnf_clauses(model)
    sampling_set = clause_booleans(clauses)[0].tolist()
    free = n_bool - len(sampling_set)
    details: dict[str, Any] = {"sampling_set": len(sampling_set), "free": free, "seed": seed}
    if any(len(c) == 0 for c in clauses):
        cells, hashes = 0, 0
    elif not clauses:
        cells, hashes = 1, 0
    elif time_limit is None:
        cells, hashes = _cells(clauses, sampling_set, seed, epsilon, delta)
    else:
        cells, hashes = call_within(_cells, (clauses, sampling_set, seed, epsilon, delta),
                                    time_limit, "the approximate model count", deadline)
    details.update(cells=cells, hashes=hashes)
    exact = hashes == 0
    if cells == 0:
        log_z = -math.inf
    else:
        log_z = scale + math.log(cells) + (hashes + free) * math.log(2.0)
    slack = 0.0 if exact else math.log1p(epsilon)
    return ApproxCountResult(log_partition=log_z, lower=log_z - slack, upper=log_z + slack,
                             epsilon=epsilon, delta=delta, exact=exact,
                             seconds=time.perf_counter() - start, details=details)
