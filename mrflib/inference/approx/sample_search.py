"""``log Z`` of a constraint model by SampleSearch: importance sampling whose every sample is
a model of the formula, found by search (Gogate & Dechter, "SampleSearch: importance
sampling in presence of determinism", Artificial Intelligence 175, 2011).

A constraint model (every table one positive value where it is not zero) has
``Z = (Π_k c_k) · #F``, the scaled number of models of a formula ``F`` in conjunctive normal
form (:mod:`mrflib.inference.exact.model_counting`, whose encoding and scale this module
reuses). On the SAT encodings of the UAI PR sets the models are a vanishing share of the
states: a proposal that ignores the formula (the weighted mini-bucket one of
:mod:`mrflib.inference.approx.importance`) draws none in the time, and its answer stays a
bound.

SampleSearch draws the Booleans of the formula one at a time, in a fixed order, from the
*backtrack-free* distribution of a uniform proposal: at step ``i`` the values of ``b_i``
that some model of ``F`` extends (given the values drawn so far) are found with a SAT
solver, and one of them is drawn uniformly. The sample is a model of ``F``, and its
probability is ``Q(x) = Π_i 1 / m_i(x)``, ``m_i`` the number of values of ``b_i`` that
extend to a model (1 or 2). Its weight ``w = 1 / Q(x) = 2^{k(x)}``, ``k`` the number of steps
with both values open, is unbiased for the count (Knuth's estimator of the size of a
search tree, "Estimating the efficiency of backtrack programs", 1975, which SampleSearch
generalizes to any proposal):

.. math::  E_Q[w] = \\sum_{x \\models F} Q(x) \\, \\frac{1}{Q(x)} = \\#F,

so ``Ẑ = (Π_k c_k) · 2^{free} · (1/N) Σ_j w_j`` is unbiased for ``Z`` (``free``: Booleans in no
clause, each doubling the count). Its log is biased low (Jensen), and where the weights
vary over many orders of magnitude it is typically below ``log Z``: in ``solve --task PR
--time-limit 20`` on the seven UAI 2014 SAT encodings that neither Ganak nor ApproxMC
finishes in that time (run beside both, on two cores, without d4), every Boolean
drawn, 98 to 649 samples were 0.28 to 6.1 ``log10`` units below it; with the completions
counted (below), 47 to 241 samples were 0.20 to 7.0 units below, four of them more than 1
(``logistics.c``, ``log-5`` and its copy ``prob005.pddl``, ``prob012.pddl``). Markov's
inequality gives a lower bound that holds with probability ``1 - delta`` whatever the
variance (the bound Gogate & Dechter use for SampleSearch's lower bounds):
``P(Ẑ >= Z / delta) <= delta``, so ``log Z >= log Ẑ + log delta``. There is no upper bound
of that kind.

Each step costs at most one SAT call: the solver's last model extends the values drawn so
far, so the value it gives ``b_i`` is open, and only the other needs a call (under the
drawn values as assumptions; the solver is incremental). Values that unit propagation
forces are not steps at all. The order decides the variance, not the mean: the Booleans
are drawn from the one in fewest clauses to the one in most, so that the most constrained
ones come last, when propagation forces most of them. Four orders were tried, one 10 s run
each on nine UAI 2014 SAT encodings (``2bitadd_11``, ``2bitmax_6``, ``log-4``, ``log-5``,
``logistics.c``, ``prob012.pddl``, ``ra``, ``rb``, ``rc``): fewest clauses first was
within 7.3 ``log10`` units of the published ``log10 Z`` on all nine (the closest of the
four on six), the reverse of the file's order within 6.1; the file's order and most
clauses first were up to 153 and 120 units low (on ``ra`` and ``rb``).

**The completions counted.** Where Ganak is installed
(``model_counting.available("ganak")``), only the first
:data:`DRAWN_SHARE` of the order is drawn; the models that extend the
values drawn (those and the ones unit propagation implies) are then counted exactly
(:func:`~mrflib.inference.exact.model_counting.model_count`), and the sample's weight is
``w = 2^k · #F|x_drawn``. This is Rao-Blackwellization: summing over the drawn prefixes,
``E_Q[w] = Σ_x Q(x) · #F|x / Q(x) = #F``, so ``Ẑ`` stays unbiased and the lower bound
holds as before, while the variance of the steps counted is gone. The counts are cheap:
after a fifth of the order, propagation has fixed most Booleans of the SAT encodings
(0.02 to 0.15 s a count; under a time limit each runs in a forked child that can be
killed, since the counter cannot be interrupted). One 15 s run each (``rng=0``, alone on
a core) on the six UAI 2014 SAT encodings that SampleSearch answered worse than 1
``log10`` unit in ``solve --task PR --time-limit 20`` with every Boolean drawn, by the
share of the order drawn (``log10 Ẑ - log10 Z``, and samples drawn):

==================  ============  ============  ============
problem             all drawn     half          a fifth
==================  ============  ============  ============
``log-4``           -1.80 (290)   -1.19 (157)   -0.86 (178)
``logistics.c``     -3.22 (770)   -3.46 (294)   -2.85 (307)
``prob012.pddl``    -6.17 (243)   -6.56 (141)   -6.99 (156)
``log-5``           -5.55 (191)   -5.75 (111)   -2.82 (129)
``rb``              -4.00 (329)   -0.55 (171)   -0.50 (161)
``rc``              -3.29 (113)   -1.55 (85)    +0.10 (77)
==================  ============  ============  ============

A fifth is the default. Where the completions are hard to count (the arithmetic circuit
of ``2bitadd_11``: 1.8 s a count after a fifth, 6 ms after half), a count under a time
limit that outlasts :data:`COUNT_SECONDS` is stopped, and the sample draws on to halfway
through the rest of the order before counting again, as do the samples after it. Whether
to count or draw on may depend on anything about the path drawn so far, the time its count
takes included, and the weight stays unbiased: at every node both continuations estimate
the count below it without bias. The samples then depend on the counter's speed, as their
number already does under a time limit; without one they depend on the seed alone (the
counts run to the end, in this process). The spread from seed to seed is large
(``logistics.c`` at a fifth was -0.99 with another seed); where the first steps decide
most of the count (``prob012.pddl``), counting the completions does not help.

The SAT solver is Glucose 4 through the ``python-sat`` bindings (Ignatiev, Morgado &
Marques-Silva, SAT 2018), an optional dependency: ``pip install "mrflib[counting]"``. It is
deterministic, so the same ``rng`` seed gives the same samples (under a time limit, as far
as the counts of completions finish in the same time: above); a ``time_limit`` interrupts
the solver at the deadline, and the sample under way is dropped.
"""

from __future__ import annotations

import collections
import functools
import math
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrflib._support.forked import call_within
from mrflib._support.optional import importable, optional_import
from mrflib._support.validation import as_rng, check_positive
from mrflib.inference.exact import model_counting
from mrflib.inference.exact._search_arguments import conditioned_model
from mrflib.inference.exact.model_counting import (
    clause_booleans,
    cnf_clauses,
    constraint_scale,
)

__all__ = ["available", "SampleSearchResult", "sample_search_estimates",
           "sample_search_log_partition", "DELTA", "SAMPLES", "DRAWN_SHARE",
           "COUNT_SECONDS"]

#: The optional module, what needs it and the extra of mrflib that installs it.
REQUIRES = ("pysat.solvers", "SampleSearch", "counting")
#: The default probability with which the lower bound may fail.
DELTA = 0.05
#: Samples drawn without a ``time_limit`` when ``n_samples`` is not given.
SAMPLES = 1000
#: The share of the order drawn before the completions are counted, where Ganak is
#: installed (see the module text).
DRAWN_SHARE = 0.2
#: Seconds a count of completions may take under a time limit before the sample draws on
#: (see the module text).
COUNT_SECONDS = 0.5
#: The SAT solver of ``python-sat`` (Glucose 4.1).
SOLVER = "glucose4"
LN2 = math.log(2.0)


def available() -> bool:
    """Whether the SAT solver of SampleSearch (``python-sat``) imports.

    Returns
    -------
    bool
        ``True`` when :func:`sample_search_log_partition` can run.
    """
    return importable(*REQUIRES)


@dataclass(frozen=True)
class SampleSearchResult:
    """A SampleSearch estimate of ``log Z`` and its lower bound.

    Attributes
    ----------
    log_partition : float
        ``log Ẑ`` (natural log), the log of an unbiased estimate of ``Z``; ``-inf`` when the
        formula has no model (then exact).
    lower : float
        ``log Z >= lower`` with probability at least ``1 - delta`` (Markov's inequality).
    delta : float
        The probability with which the bound may fail.
    n_samples : int
        Samples drawn.
    exact : bool
        Whether ``log_partition`` is ``log Z`` itself: no model, or a sample with no open
        step among the Booleans drawn (a single path: a formula with one model, or the
        completions of that path counted).
    seconds : float
        Wall time of the call so far.
    details : dict
        ``booleans`` (the formula's), ``free`` (Booleans of no clause), ``sat_calls``,
        ``open_steps``: the fewest and the most steps of a sample with both values open
        (its weight ``2^k``, times its completions where they are counted), which show
        how far the weights spread, ``drawn``: the Booleans of the order the samples draw
        now, and ``counted``: whether their completions are counted (fewer drawn than
        all).
    """

    log_partition: float
    lower: float
    delta: float
    n_samples: int
    exact: bool
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)


def _order(held: np.ndarray, occurrences: np.ndarray) -> np.ndarray:
    """The Booleans some clause holds (:func:`~mrflib.inference.exact.model_counting.
    clause_booleans`), from the one in fewest clauses to the one in most (ties by number):
    the sampling order (see the module notes)."""
    return held[np.argsort(occurrences, kind="stable")]


class _Sampler:
    """The formula's incremental SAT solver and the draws of one sample after another."""

    def __init__(self, n_bool: int, clauses: list[list[int]], order: np.ndarray,
                 deadline: float) -> None:
        solvers = optional_import(*REQUIRES)
        self.solver = solvers.Solver(name=SOLVER, bootstrap_with=clauses)
        self.order = order
        self.n_bool, self.calls, self.deadline = n_bool, 0, deadline
        self.timer = None
        if math.isfinite(deadline):
            self.timer = threading.Timer(max(deadline - time.perf_counter(), 0.0),
                                         self.solver.interrupt)
            self.timer.daemon = True
            self.timer.start()

    def close(self) -> None:
        if self.timer is not None:  # an interrupt under way must not meet a deleted solver
            self.timer.cancel()
            self.timer.join()
        self.solver.delete()

    def solve(self, assumptions: list[int]) -> bool | None:
        """Whether a model extends ``assumptions`` (``None``: the deadline has passed, or
        interrupted the call)."""
        if time.perf_counter() >= self.deadline:
            return None
        self.calls += 1
        return self.solver.solve_limited(assumptions=assumptions, expect_interrupt=True)

    def model(self) -> np.ndarray:
        """The solver's last model: the sign of each Boolean ``1..n`` (index ``b - 1``)."""
        return np.sign(np.asarray(self.solver.get_model(), dtype=np.int64)[:self.n_bool])

    def begin(self, start: np.ndarray) -> _Path:
        """A sample with nothing drawn yet, from the model ``start`` (the values unit
        propagation forces at the root fixed)."""
        ok, implied = self.solver.propagate(assumptions=[])
        path = _Path(start, np.zeros(self.n_bool + 1, dtype=bool), list(implied))
        path.fixed[np.abs(np.asarray(implied, dtype=np.int64))] = True
        return path

    def draw(self, path: _Path, rng: np.random.Generator, stop: int) -> bool:
        """Draw the Booleans of the order up to position ``stop`` into ``path``; ``False``
        when the deadline interrupts it."""
        for b in self.order[path.position:stop].tolist():
            path.position += 1
            if path.fixed[b]:
                continue
            lit = b if path.current[b - 1] > 0 else -b  # open: the last model extends it
            other = self.solve(path.assumptions + [-lit])
            if other is None:
                return False
            if other:
                path.open_steps += 1
                if rng.random() < 0.5:
                    lit, path.current = -lit, self.model()
            ok, implied = self.solver.propagate(assumptions=path.assumptions + [lit])
            path.assumptions = list(implied)
            path.fixed[np.abs(np.asarray(implied, dtype=np.int64))] = True
        return True


@dataclass
class _Path:
    """A sample under way: the model that extends its values, the Booleans it fixes (drawn
    or implied) as a mask and as literals, the position reached in the order, and its steps
    with both values open."""

    current: np.ndarray
    fixed: np.ndarray
    assumptions: list[int]
    position: int = 0
    open_steps: int = 0


def sample_search_estimates(model: Any, *, rng: Any,
                            evidence: Mapping[Any, Any] | None = None,
                            n_samples: int | None = None, time_limit: float | None = None,
                            delta: float = DELTA, drawn_share: float | None = None
                            ) -> Iterator[SampleSearchResult]:
    """The SampleSearch estimates of ``log Z``, one after each sample (see the module
    text); the arguments are checked in the call, the samples drawn as they are asked for.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        A constraint model, as the model counters take it
        (:func:`~mrflib.inference.approx.approx_counting.approx_counted_log_partition`).
    rng : numpy.random.Generator or int
        Draws the samples' values (the same seed, the same samples).
    evidence : mapping or None, default None
        Observed ``{variable: value}``, applied first; the answer is ``log Z`` of the
        evidence.
    n_samples : int or None, default None
        Samples to draw; ``None``: until ``time_limit``, or :data:`SAMPLES` without one.
    time_limit : float or None, default None
        Seconds the sampling may take (``None``: no limit); the sample under way at the
        limit is dropped.
    delta : float, default DELTA
        The probability, in ``(0, 1)``, with which the lower bound may fail.
    drawn_share : float or None, default None
        The share of the order, in ``[0, 1]``, drawn before the models that extend the
        values drawn are counted exactly (see the module text); 1 draws every Boolean and
        counts nothing. ``None``: :data:`DRAWN_SHARE` where ``pyganak`` is installed,
        else 1.

    Returns
    -------
    iterator of SampleSearchResult
        The estimate from the samples so far, after each sample (once, exact, when the
        formula has no model, or one: a sample with no open step).

    Raises
    ------
    ValueError
        When the model is not a constraint model, or ``n_samples``, ``time_limit``,
        ``delta`` or ``drawn_share`` is out of its range.
    ImportError
        When ``python-sat`` is not installed, or ``pyganak`` for a ``drawn_share`` below 1
        (``pip install "mrflib[counting]"``).
    """
    start = time.perf_counter()
    model, time_limit, deadline = conditioned_model(model, evidence, time_limit)
    rng = as_rng(rng)
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if n_samples is not None:
        n_samples = check_positive(n_samples, "n_samples", integer=True)
    elif time_limit is None:
        n_samples = SAMPLES
    if drawn_share is None:
        drawn_share = DRAWN_SHARE if model_counting.available("ganak") else 1.0
    drawn_share = float(drawn_share)
    if not 0.0 <= drawn_share <= 1.0:
        raise ValueError(f"drawn_share must be in [0, 1], got {drawn_share}")
    scale = constraint_scale(model)
    if scale is None:
        raise ValueError("model must be a constraint model (every table one positive value "
                         "where it is not zero) for SampleSearch; use approx.log_partition")
    optional_import(*REQUIRES)
    if drawn_share < 1.0:
        optional_import("pyganak", "SampleSearch's counted completions", "counting")
    n_bool, clauses = cnf_clauses(model)
    order = _order(*clause_booleans(clauses))
    drawn = math.ceil(drawn_share * len(order))
    return _estimates(rng, scale, n_bool, clauses, order, drawn, n_samples, delta, deadline,
                      start)


def _estimates(rng: np.random.Generator, scale: float, n_bool: int,
               clauses: list[list[int]], order: np.ndarray, drawn: int,
               n_samples: int | None, delta: float, deadline: float, start: float
               ) -> Iterator[SampleSearchResult]:
    """The generator of :func:`sample_search_estimates`, its arguments checked; ``drawn``
    Booleans of the order are drawn, the models extending them counted when fewer than
    all."""
    free = n_bool - len(order)
    steps: list[int] = []

    def result(log_z: float, exact: bool, calls: int = 0) -> SampleSearchResult:
        lower = log_z if exact else log_z + math.log(delta)
        details = {"booleans": n_bool, "free": free, "sat_calls": calls,
                   "open_steps": (min(steps), max(steps)) if steps else None,
                   "drawn": drawn, "counted": drawn < len(order)}
        return SampleSearchResult(log_partition=log_z, lower=lower, delta=delta,
                                  n_samples=len(steps), exact=exact,
                                  seconds=time.perf_counter() - start, details=details)

    if any(len(c) == 0 for c in clauses):
        yield result(-math.inf, True)
        return
    if not clauses:
        yield result(scale + free * LN2, True)
        return
    sampler = _Sampler(n_bool, clauses, order, deadline)
    try:
        found = sampler.solve([])
        if found is None:
            return
        if not found:
            yield result(-math.inf, True, sampler.calls)
            return
        first = sampler.model()
        total = -math.inf  # log Σ_j w_j, the free Booleans' 2^free left out
        while n_samples is None or len(steps) < n_samples:
            path, stop = sampler.begin(first), drawn
            while True:
                if not sampler.draw(path, rng, stop):
                    return
                if stop == len(order):  # every Boolean drawn: one model, no count
                    log_w = path.open_steps * LN2
                    break
                log_c = _log_completions(n_bool, clauses, path.assumptions, deadline)
                if log_c is not None:
                    log_w = path.open_steps * LN2 + log_c - free * LN2
                    break
                if time.perf_counter() >= deadline:
                    return
                # the count outlasted COUNT_SECONDS (or failed): this sample draws on, and so
                # do the later ones (a choice made on the path so far keeps it unbiased)
                stop = drawn = stop + math.ceil((len(order) - stop) / 2)
            k = path.open_steps
            steps.append(k)
            total = float(np.logaddexp(total, log_w))
            # a sample with no open step: the search tree is one path to the completions
            yield result(scale + free * LN2 + total - math.log(len(steps)), k == 0,
                         sampler.calls)
            if k == 0:
                return
    finally:
        sampler.close()


def _log_completions(n_bool: int, clauses: list[list[int]], fixed: list[int],
                     deadline: float) -> float | None:
    """``log`` of the number of models of the formula that extend the literals ``fixed``
    (Ganak). Without a deadline (``inf``) in this process; with one, in a forked child
    killed after :data:`COUNT_SECONDS` or at the deadline, whichever comes first (the
    counter cannot be interrupted): ``None`` then, or when the child failed (the sample
    draws on either way, so the answer never waits on a count)."""
    units = clauses + [[lit] for lit in fixed]
    # Ganak alone: its preprocessing finds what the drawn literals imply, and a race would
    # cost a fork and a backbone per sample for counts of a tenth of a second
    count_by_ganak = functools.partial(model_counting.model_count, counter="ganak")
    if not math.isfinite(deadline):
        count = count_by_ganak(n_bool, units)
    else:
        until = min(deadline, time.perf_counter() + COUNT_SECONDS)
        try:
            count = call_within(count_by_ganak, (n_bool, units), COUNT_SECONDS,
                                "the count of a sample's completions", until)
        except (TimeoutError, RuntimeError):
            return None
    # the values drawn extend to a model (the SAT solver found one), so the count is >= 1
    return math.log(count)


def sample_search_log_partition(model: Any, *, rng: Any,
                                evidence: Mapping[Any, Any] | None = None,
                                n_samples: int | None = None,
                                time_limit: float | None = None,
                                delta: float = DELTA, drawn_share: float | None = None
                                ) -> SampleSearchResult:
    """``log Z`` of a constraint model by SampleSearch: the last estimate of
    :func:`sample_search_estimates` (see the module text).

    Parameters
    ----------
    model, rng, evidence, n_samples, time_limit, delta, drawn_share
        As :func:`sample_search_estimates` takes them.

    Returns
    -------
    SampleSearchResult
        The estimate of every sample drawn.

    Raises
    ------
    ValueError
        As :func:`sample_search_estimates` raises it.
    ImportError
        When ``python-sat`` is not installed.
    TimeoutError
        When not one sample was drawn within ``time_limit``.
    """
    last = collections.deque(sample_search_estimates(
        model, rng=rng, evidence=evidence, n_samples=n_samples, time_limit=time_limit,
        delta=delta, drawn_share=drawn_share), maxlen=1)
    if not last:
        raise TimeoutError(f"SampleSearch drew no sample within time_limit={time_limit} s")
    return last[0]
