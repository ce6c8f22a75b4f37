"""The ``PR`` answers of ``python -m mrflib solve --time-limit SECONDS``
(:mod:`mrflib.io.anytime`): importance sampling estimates of ``log Z`` while an exact search
over the model's zeros runs beside the junction tree, and on a constraint model the
estimates of an approximate model counter.

A model whose tables hold zeros may have an exact answer where the junction tree is out of
reach: the zeros cut the states that count. :func:`start_exact_search` starts the search
that suits the model in a forked child (:class:`mrflib._support.forked.Forked`): for a
constraint model (every table one positive value where it is not zero, as in the SAT
encodings) the exact model counters of
:func:`mrflib.inference.exact.model_counting.counted_log_partition` (d4 and Ganak, raced)
when either is installed, otherwise the conditioning search of
:func:`mrflib.inference.exact.conditioning.conditioned_log_partition`, which propagates the
zeros, splits and caches components. Either finishes exactly by the deadline or is
stopped. Meanwhile :func:`estimate_pr` writes the estimates of importance sampling with the
weighted mini-bucket proposal, or its certified upper bound before any sample of positive
weight.

On a constraint model, :class:`ApproxCounts` also runs the approximate model counter of
:func:`mrflib.inference.approx.approx_counting.approx_counted_log_partition` (ApproxMC,
when ``pyapproxmc`` is installed) in a forked child of its own, once per tolerance of
:data:`COUNT_TOLERANCES`, loosest first, and writes each estimate as the answer when it
comes, with its guarantee (``log10 Z`` within ``log10(1 + ε)`` with probability
``1 - δ``); the importance sampling stops at the first one. It beats importance sampling
there: the states of positive weight of a SAT encoding are a vanishing share of all
states, so the weighted mini-bucket proposal draws none in the time (the UAI 2014
``log-*``, ``logistics.*``, ``r*`` and ``2bit*`` problems: every weight zero, the answer its
certified bound, tens to hundreds of ``log10`` units above ``log Z``), while the hashes
find the models without sampling the states at all. The exact count, when it finishes,
still wins: its answer is written last and ends the wait.

Where no counter finishes (the hardest UAI 2014 encodings: ``rc``, ``2bitadd_11``), the
sampling itself must find the models: on a constraint model, when
``python-sat`` is installed, :func:`estimate_pr` draws SampleSearch's samples
(:mod:`mrflib.inference.approx.sample_search`) instead of the weighted mini-bucket
proposal's, each a model of the formula found by search (where ``pyganak`` is installed,
the models extending a fifth of the order drawn are counted exactly), and writes its
estimates with their lower bound (probability 0.95); the first approximate count still
ends them.

Scheduling on two cores. On a constraint model the counters are the likely answers
(measured alone here, the exact counters answer ``logistics.a`` in well under a second and
``log-2`` in under one, ApproxMC the ISCAS circuits in under half a second and ``log-2``
in 4 s at its looser tolerance; each finishes some problems the others do not), so the
parent first waits idle for :data:`COUNT_FIRST_SHARE` of the time left
(:func:`first_count`), leaving the two cores to them. When one answers in that time the
parent neither plans the junction tree nor samples: it waits for the exact count and for
the approximate counts' tighter runs until the deadline (without an exact counter it
still plans the junction tree, then the only way to an exact answer). Otherwise it plans
and samples as on any model, and the sampling stops at the first approximate count.
Then the exact count keeps a core of its own: where both exact counters are installed
they race (:func:`mrflib.inference.exact.model_counting.raced_count`), d4 at the parent's
priority and Ganak at a lower one, and the approximate counts run at that lower priority
too (:data:`~mrflib._support.forked.LOW_NICENESS`), taking the time the sampling leaves.
An exact answer is worth more than an approximate one, and the exact counts of the hard
encodings take most of the 20 s (measured alone here: d4 counts ``logistics.c`` in 14.4
s, ``log-5`` in 7.1; within the solver, ``logistics.c`` is counted at 17.7 s, half a
second before the solver's end); at the parent's priority, ApproxMC halved the exact
count's share of its core. d4 keeps the core because it is the faster on all but the ISCAS circuits,
which Ganak counts in under a second even at the lower priority, while the parent waits.
The looser tolerance runs first because it is the answer most likely in time (one round
of ApproxMC against three at the default, a cell threshold of 45 against 73), and an
estimate within a factor 2.5 is at most 0.4 ``log10`` units off: two points of the UAI
score at worst on the UAI 2014 SAT encodings, whose trivial answers are 20 to 400 units
off; the default tolerance follows with the stronger guarantee. The conditioning search,
whose model is not a constraint model and so has no counter beside it, runs at the lower
priority too, taking the processor time the sampling leaves.
These functions and the class are what the solver calls.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mrflib._support.forked import Forked, deferred, first_done, yield_processor
from mrflib._support.validation import check_instance
from mrflib.inference.approx import approx_counting, sample_search
from mrflib.inference.approx.importance import importance_estimates
from mrflib.inference.exact import model_counting
from mrflib.inference.exact.conditioning import conditioned_log_partition
from mrflib.io.anytime_mpe import proves_zero
from mrflib.models.factor_graph import FactorGraph

__all__ = ["start_exact_search", "start_counting", "estimate_pr", "ApproxCounts",
           "first_count", "COUNT_TOLERANCES", "COUNT_FIRST_SHARE"]

#: The ``(epsilon, delta)`` of the approximate counts of a constraint model, run one after
#: another while time remains: one round of ApproxMC first (a factor 2.5 with probability
#: 0.7), then its default (a factor 1.8 with probability 0.8, three rounds).
COUNT_TOLERANCES = ((1.5, 0.3), (approx_counting.EPSILON, approx_counting.DELTA))
#: Share of the time left that the solver gives the counters of a constraint model alone
#: (:func:`first_count`) before it plans and samples itself: at half the time, the weighted
#: mini-bucket bound of ``prob005.pddl`` and ``prob012.pddl`` (UAI 2014) came too late at a
#: load of 4 on two cores, and the answer was the trivial one.
COUNT_FIRST_SHARE = 0.25
#: Seconds between two importance sampling answers (the last estimate is written at the end).
ESTIMATE_SECONDS = 1.0
LN10 = math.log(10.0)

#: What the exact searches over the zeros say when they start, by the name of each.
_STARTED = {"model counting": "exact inference by model counting",
            "conditioning": "exact inference by conditioning (zeros propagated, components "
                            "cached)"}


def _has_zeros(model: FactorGraph) -> bool:
    """Whether some table of ``model`` with a scope holds a zero (``-inf``)."""
    return any(bool(np.isneginf(t).any()) for s, t in zip(model.scopes, model.log_tables) if s)


def _counts(model: FactorGraph) -> bool:
    """Whether the exact model counters answer ``model``: a constraint model
    (:func:`mrflib.inference.exact.model_counting.constraint_scale`) and a counter
    installed."""
    return model_counting.constraint_scale(model) is not None and model_counting.available()


def start_exact_search(model: FactorGraph, say: Callable[[str], object], deadline: float,
                       conditioning: bool = True) -> tuple[Forked | None, str]:
    """Start the exact search over the zeros of ``model`` that suits it in a forked child.

    The model count where it answers the model (:func:`_counts`), at the parent's
    priority, else the conditioning search, at a lower one
    (:data:`~mrflib._support.forked.LOW_NICENESS`); either runs until the deadline, and
    its start is said with the child's process id.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    say : callable
        Takes the line that names the search and its process.
    deadline : float
        The :func:`time.perf_counter` time by which the search ends.
    conditioning : bool
        Whether the conditioning search is wanted where the model count does not answer
        the model.

    Returns
    -------
    child : mrflib._support.forked.Forked or None
        The child computing ``log10 Z``; ``None`` when the time is out, the model has no
        zero, or no search is wanted.
    name : str
        The search's name (``"model counting"``, ``"conditioning"``; ``""`` without a
        child).
    """
    check_instance(model, FactorGraph, "model")
    left = deadline - time.perf_counter()
    if left <= 0 or not _has_zeros(model):
        return None, ""
    if _counts(model):
        name, target, argv = "model counting", _counted_pr, (model,)
    elif conditioning:
        name, target, argv = "conditioning", _conditioned_pr, (model, left)
    else:
        return None, ""
    with deferred():
        child = Forked(target, argv)
        counters = (" (" + " and ".join(model_counting.COUNTERS[c][1]
                                        for c in model_counting.installed()) + ")"
                    if name == "model counting" else "")
        say(f"{_STARTED[name]}{counters} started in process {child.pid}")
    return child, name


def _conditioned_pr(model: FactorGraph, left: float
                    ) -> float:  # pragma: no cover - runs in a forked child
    # the search finishes only on some models; the sampling in the parent answers all of
    # them, so on a busy machine the search takes only the processor time left over
    yield_processor()
    return conditioned_log_partition(model, time_limit=left).log_partition / math.log(10.0)


def _counted_pr(model: FactorGraph) -> float:  # pragma: no cover - runs in a forked child
    # at the parent's priority: on a constraint model the count is the likeliest answer and
    # the sampling the poorest (see the module notes)
    log_z = model_counting.counted_log_partition(model)
    if log_z == -math.inf:  # the solver's proof of Z = 0, which it answers with a warning
        raise ValueError("the model has Z = 0 (the formula has no model, by Ganak)")
    return log_z / math.log(10.0)


def _approx_counted(model: FactorGraph, seed: int, epsilon: float, delta: float
                    ) -> approx_counting.ApproxCountResult:  # pragma: no cover - in a child
    # below the exact count, whose answer is worth more (see the module notes)
    yield_processor()
    return approx_counting.approx_counted_log_partition(model, rng=seed, epsilon=epsilon,
                                                        delta=delta)


class ApproxCounts:
    """The approximate model counts of a constraint model, one forked child at a time, one
    per tolerance of :data:`COUNT_TOLERANCES` (see the module notes).

    The first run starts at once. :meth:`poll` writes the answer of a run that has ended
    and starts the next while time remains; the solver calls it from the sampling loop
    (:func:`estimate_pr`) and when it waits on its children.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied: a constraint model with a zero
        (:func:`wanted`).
    say : callable
        Takes each line the solver writes to stderr.
    deadline : float
        The :func:`time.perf_counter` time by which the counts end.
    seed : int
        Seeds the generator that draws each run's seed.

    Attributes
    ----------
    child : mrflib._support.forked.Forked or None
        The run under way (``None`` once none is left or the time is out).
    written : int
        Estimates written so far.
    exact : bool
        Whether a run counted exactly (fewer models than its threshold): its answer is then
        ``log10 Z`` itself.
    """

    def __init__(self, model: FactorGraph, say: Callable[[str], object], deadline: float,
                 seed: int) -> None:
        check_instance(model, FactorGraph, "model")
        self.model, self.say, self.deadline = model, say, deadline
        self.rng = np.random.default_rng(seed)
        self.steps = list(COUNT_TOLERANCES)
        self.child: Forked | None = None
        self.written, self.exact = 0, False
        self._start()

    @staticmethod
    def wanted(model: FactorGraph) -> bool:
        """Whether the counts answer ``model``: a constraint model with a zero in some
        table, and ``pyapproxmc`` installed.

        Parameters
        ----------
        model : FactorGraph
            The model, evidence applied.

        Returns
        -------
        bool
            ``True`` when an :class:`ApproxCounts` of it is worth starting.
        """
        return (_has_zeros(model) and model_counting.constraint_scale(model) is not None
                and approx_counting.available())

    def _start(self) -> None:
        self.child = None
        if not self.steps or self.deadline - time.perf_counter() <= 0:
            return
        self.tolerance = self.steps.pop(0)
        seed = int(self.rng.integers(approx_counting.SEED_BOUND))
        with deferred():
            self.child = Forked(_approx_counted, (self.model, seed, *self.tolerance))
            self.say(f"approximate model counting (ApproxMC, epsilon {self.tolerance[0]:g}, "
                     f"delta {self.tolerance[1]:g}) started in process {self.child.pid}")

    def poll(self, answers: Any, out: Any) -> bool:
        """Write the answer of the run under way if it has ended, and start the next.

        Parameters
        ----------
        answers : mrflib.io.anytime.AnswerFile
            The solver's answer file.
        out : path
            Its name, for the line on stderr.

        Returns
        -------
        bool
            Whether a run ended (its answer written, or its failure said).

        Raises
        ------
        ValueError
            When the run found no model: the proof that ``Z = 0``, which the solver
            answers.
        """
        child = self.child
        if child is None or not child.done():
            return False
        kind, res = child.result()
        child.stop()
        if kind == "error":
            self.say(f"approximate model counting failed: {res}")
        elif res.log_partition == -math.inf:
            raise ValueError("the model has Z = 0 (the formula has no model, by ApproxMC's "
                             "SAT solver)")
        elif res.exact:
            self.exact = True
            answers.add(res.log_partition / LN10)
            self.say(f"answer {len(answers.values)}: exact (model counting, ApproxMC: fewer "
                     f"models than its threshold); wrote {out}")
        else:
            self.written += 1
            answers.add(res.log_partition / LN10)
            d = res.details
            self.say(f"answer {len(answers.values)}: approximate model counting (ApproxMC, "
                     f"epsilon {res.epsilon:g}, delta {res.delta:g}, {d['cells']} * "
                     f"2^{d['hashes'] + d['free']} models of the formula): log10 Z = "
                     f"{res.log_partition / LN10:.6g}; log10 Z in [{res.lower / LN10:.6g}, "
                     f"{res.upper / LN10:.6g}] with probability {1.0 - res.delta:g}; "
                     f"wrote {out}")
        if not self.exact:
            self._start()
        return True

    def stop(self) -> None:
        """Kill the run under way, if any, and start no other.

        Returns
        -------
        None
        """
        self.steps = []
        if self.child is not None:
            self.child.stop()
            self.child = None


def start_counting(model: FactorGraph, say: Callable[[str], object], deadline: float,
                   seed: Any, children: contextlib.ExitStack
                   ) -> tuple[Forked | None, str, ApproxCounts | None]:
    """The counts ``solve --task PR`` starts at once: the exact count of a constraint
    model (:func:`start_exact_search` without conditioning) and, beside it, the
    approximate counts (:class:`ApproxCounts`, where :meth:`ApproxCounts.wanted`).

    A constraint model is counted from the start: the plan alone can take seconds on one
    (an order search over thousands of clauses), and the count is its likeliest answer.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    say : callable
        Takes each line the solver writes to stderr.
    deadline : float
        The :func:`time.perf_counter` time by which the answers end.
    seed : int or None
        Seeds the approximate counter.
    children : contextlib.ExitStack
        Takes the stop of every child started, called when the solver leaves.

    Returns
    -------
    tuple
        ``(cond, cond_name, counts)``: the exact count's child and its name (``None`` and
        ``""`` when none started), and the approximate counts (``None``: not wanted).
    """
    check_instance(model, FactorGraph, "model")
    cond, cond_name = start_exact_search(model, say, deadline, conditioning=False)
    if cond is not None:
        children.callback(cond.stop)
    counts = ApproxCounts(model, say, deadline, seed) if ApproxCounts.wanted(model) else None
    if counts is not None:
        children.callback(counts.stop)
    return cond, cond_name, counts


def first_count(counts: ApproxCounts, cond: Forked | None, answers: Any, out: Any,
                until: float) -> bool:
    """Wait for the first answer of the approximate counts ``counts`` or of the exact count
    ``cond`` until :func:`time.perf_counter` reaches ``until``, the parent idle meanwhile so
    that the two counters have the processors (see the module notes).

    Parameters
    ----------
    counts : ApproxCounts
        The approximate counts; their answers are written as they come.
    cond : mrflib._support.forked.Forked or None
        The exact count (:func:`start_exact_search`), left for the caller to write.
    answers : mrflib.io.anytime.AnswerFile
        The solver's answer file.
    out : path
        Its name, for the lines on stderr.
    until : float
        The :func:`time.perf_counter` time the wait ends.

    Returns
    -------
    bool
        Whether a count has answered: an approximate count written (or an exact one), or
        the exact count ``cond`` ended (its answer not yet taken).
    """
    check_instance(counts, ApproxCounts, "counts")
    while True:
        ended = cond is not None and cond.done()
        if counts.written or counts.exact or (ended and _answers(cond)):
            return True
        waiting = [c for c in (counts.child, None if ended else cond) if c is not None]
        if not waiting or first_done(waiting, until) is None:
            return False
        counts.poll(answers, out)


def _answers(cond: Forked) -> bool:
    """Whether the ended exact count ``cond`` answers: its ``log10 Z``, or its proof that
    ``Z = 0`` (a failure for time or memory is no answer: the solver goes on without it)."""
    kind, value = cond.result()
    return kind == "ok" or proves_zero(value)


def estimate_pr(model: FactorGraph, args: Any, answers: Any, say: Callable[[str], object],
                deadline: float, trivial: float, child: Forked | None,
                cond: Forked | None = None, counts: ApproxCounts | None = None) -> None:
    """``PR`` answers of importance sampling with the weighted mini-bucket proposal
    (:func:`mrflib.inference.approx.importance.importance_estimates`, ``rng=args.seed``).

    The estimate of the latest batch, with its bounds on stderr, is written at most every
    :data:`ESTIMATE_SECONDS` and when the sampling ends (the deadline, or the exact child's
    answer, or the search over the zeros ``cond``, or the first answer of the approximate
    model counts ``counts``, which beats every later estimate of the sampling: the pending
    one is then dropped). Before any sample of positive weight
    the proposal's certified upper bound is written where it is below ``trivial`` (also a
    certified bound: the mini-buckets' bound on the model after evidence and pruning can
    be the looser of the two). On a constraint model with a zero, when ``python-sat`` is
    installed, the samples are SampleSearch's instead
    (:mod:`mrflib.inference.approx.sample_search`): each is a state of positive weight,
    found by search, and the estimate comes with a lower bound that holds with
    probability 0.95 but no certified upper bound.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    args : argparse.Namespace
        The command's arguments: ``seed`` seeds the sampling, ``out`` is the answer file
        named on stderr.
    answers : mrflib.io.anytime.AnswerFile
        The solver's answer file.
    say : callable
        Takes each line the solver writes to stderr.
    deadline : float
        The :func:`time.perf_counter` time by which the sampling ends.
    trivial : float
        The trivial answer's ``log10 Z`` (:func:`mrflib.io.anytime.trivial_answer`).
    child : mrflib._support.forked.Forked or None
        The exact computation's child, whose answer ends the sampling.
    cond : mrflib._support.forked.Forked or None
        The exact search over the zeros (:func:`start_exact_search`), whose answer ends
        the sampling too.
    counts : ApproxCounts or None
        The approximate model counts of a constraint model, polled after each batch (their
        answers are written as they come).

    Raises
    ------
    ValueError
        When the proposal's bound is ``-inf``, a proof that ``Z = 0``.
    """
    check_instance(model, FactorGraph, "model")
    left = deadline - time.perf_counter()
    if left <= 0:
        return
    ln10 = math.log(10.0)
    bound_written = False

    def counted() -> bool:
        if counts is None:
            return False
        counts.poll(answers, args.out)
        return bool(counts.written or counts.exact)

    if counted():  # an approximate count is in: no estimate of the sampling would beat it
        return
    if _searched(model):
        _sample_search_pr(model, args, answers, say, deadline, (child, cond), counted)
        return

    def write(res: Any) -> None:
        proposal = (f"{res.proposal} proposal" + (f", i-bound {res.ibound}"
                                                  if res.ibound is not None else ""))
        bounds = (f"log10 Z in [{res.lower / ln10:.6g}, {res.upper / ln10:.6g}] with "
                  f"probability {1.0 - res.delta:g}, certified log10 Z <= "
                  f"{res.log_upper_bound / ln10:.6g}")
        answers.add(res.log_partition / ln10)
        say(f"answer {len(answers.values)}: importance sampling ({proposal}, "
            f"{res.n_samples} samples, {res.details['zero_share']:.0%} of weight zero): "
            f"log10 Z = {res.log_partition / ln10:.6g}; {bounds}; wrote {args.out}")

    # the proposal orders the model left after barren pruning itself: not ``order``
    estimates = _Throttled(write)
    for res in importance_estimates(model, rng=args.seed, time_limit=left):
        if counted():
            estimates.drop()
            break
        if not res.log_upper_bound > -math.inf:
            raise ValueError("the model has Z = 0 (the weighted mini-bucket bound on log Z is "
                             "-inf)")
        if res.details.get("exact"):
            answers.add(res.log_partition / ln10)
            say(f"answer {len(answers.values)}: weighted mini-bucket without splitting a "
                f"bucket (i-bound {res.ibound}): exact; wrote {args.out}")
            return
        if res.log_partition > -math.inf:
            estimates.offer(res)
        elif not bound_written:
            bound_written = True
            bound = res.log_upper_bound / ln10
            if bound < trivial:
                answers.add(bound)
                say(f"answer {len(answers.values)}: the certified upper bound of the "
                    f"{res.proposal} proposal (no sample of positive weight yet in "
                    f"{res.n_samples}); certified log10 Z <= {bound:.6g}; wrote {args.out}")
            else:
                say(f"the {res.proposal} proposal's certified bound log10 Z <= {bound:.6g} "
                    f"is no tighter than the trivial bound {trivial:.6g}: not written")
        if any(c is not None and c.done() for c in (child, cond)):
            break
    estimates.flush()


def _searched(model: FactorGraph) -> bool:
    """Whether the sampling of ``model`` is SampleSearch's: a constraint model with a zero
    in some table, and ``python-sat`` installed (see the module notes)."""
    return (_has_zeros(model) and model_counting.constraint_scale(model) is not None
            and sample_search.available())


def _sample_search_pr(model: FactorGraph, args: Any, answers: Any,
                      say: Callable[[str], object], deadline: float,
                      children: tuple[Forked | None, ...], counted: Callable[[], bool]
                      ) -> None:
    """:func:`estimate_pr`'s answers on a constraint model: SampleSearch's estimates
    (:func:`mrflib.inference.approx.sample_search.sample_search_estimates`,
    ``rng=args.seed``), written as the importance sampling's are, until the deadline, an
    exact child's answer or the first approximate count (``counted``)."""

    def write(res: sample_search.SampleSearchResult) -> None:
        answers.add(res.log_partition / LN10)
        d = res.details
        counted = (f", the models extending the first {d['drawn']} Booleans counted"
                   if d["counted"] else "")
        say(f"answer {len(answers.values)}: SampleSearch ({res.n_samples} samples, "
            f"{d['sat_calls']} SAT calls{counted}): log10 Z = "
            f"{res.log_partition / LN10:.6g}; log10 Z >= {res.lower / LN10:.6g} with "
            f"probability {1.0 - res.delta:g}; wrote {args.out}")

    left = deadline - time.perf_counter()
    if left <= 0:
        return
    estimates = _Throttled(write)
    for res in sample_search.sample_search_estimates(model, rng=args.seed, time_limit=left):
        if counted():
            return
        if res.exact:
            if res.log_partition == -math.inf:
                raise ValueError("the model has Z = 0 (the formula has no model, by "
                                 "SampleSearch's SAT solver)")
            answers.add(res.log_partition / LN10)
            say(f"answer {len(answers.values)}: exact (SampleSearch: the formula has one "
                f"model); wrote {args.out}")
            return
        estimates.offer(res)
        if any(c is not None and c.done() for c in children):
            break
    estimates.flush()


class _Throttled:
    """The estimates of a sampling written at most every :data:`ESTIMATE_SECONDS`: the
    first at once, each later one when that much time has passed since the last written,
    and the one held back (if any) when the sampling ends (:meth:`flush`), unless a better
    answer came meanwhile (:meth:`drop`)."""

    def __init__(self, write: Callable[[Any], None]) -> None:
        self.write, self.last, self.pending = write, -math.inf, None

    def offer(self, res: Any) -> None:
        self.pending = res
        if time.perf_counter() - self.last >= ESTIMATE_SECONDS:
            self.write(res)
            self.last, self.pending = time.perf_counter(), None

    def drop(self) -> None:
        self.pending = None

    def flush(self) -> None:
        if self.pending is not None:
            self.write(self.pending)
            self.pending = None
