"""The ``MPE`` answers of ``python -m mrflib solve --time-limit SECONDS``
(:mod:`mrflib.io.anytime`): states of positive weight, each better than the last, and the
upper bounds that prove one optimal.

Every decoding is first repaired to a state of positive weight and improved by local search
(:func:`improved_state`). Where the evidence fixes variables, the model is reduced for MAP
(:func:`_reduced`: solved on its parts by max-product where they fit, the answer then
optimal), the best answer improved by the propagated moves of its parts for
:data:`MOVES_SHARE` of the time (:func:`_moves`) and each part solved by a branch and bound
over the part reparameterized by its dual bound for :data:`DUAL_PARTS_SHARE` of the time
left (:func:`_dual_parts`). Elsewhere max mini-bucket runs of growing budgets answer
(:func:`_mini_bucket_answers`), then a branch and bound over the last run's mini-buckets
(:func:`_branch_and_bound`) and local search with perturbations (:func:`_perturbed`). An
answer whose log-weight meets the lowest upper bound known is optimal
(:func:`stop_optimal`): the solver stops. Each function writes to ``answers``, the
solver's :class:`mrflib.io.anytime.AnswerFile` (given, not imported: that module calls
this one). Where ``pytoulbar2`` is installed, toulbar2 searches beside these steps from the
start (:func:`start_toulbar2`, :class:`Toulbar2Beside`): its states are offered as they
are read, between the steps and at each look at the exact child, and its proof of
optimality ends them as the exact child's answer does. The names of ``__all__`` are what
the solver calls; the others are the steps of :func:`approximate_mpe`.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mrflib._support.forked import Forked, deferred, first_done
from mrflib._support.threads import reserve_cores
from mrflib._support.validation import check_instance
from mrflib.inference._reduction import observed_states
from mrflib.inference.approx.map_reduction import (
    MapReduction,
    dual_branch_and_bound_parts,
    exact_parts,
    propagated_moves_parts,
    reduce_map,
)
from mrflib.inference.approx.map_search import feasible_state, local_search
from mrflib.inference.approx.map_toulbar2 import Toulbar2Search
from mrflib.inference.approx.map_toulbar2 import available as toulbar2_available
from mrflib.inference.approx.max_mini_bucket import branch_and_bound, growing_max_mini_bucket
from mrflib.inference.approx.wmb import elimination_order
from mrflib.models.factor_graph import FactorGraph

__all__ = ["NO_STATE", "improved_state", "load_search_kernels", "stop_optimal",
           "proves_zero", "engine_stops", "approximate_mpe", "Toulbar2Beside",
           "start_toulbar2"]

#: How :func:`improved_state` names a model whose search proved ``Z = 0``.
NO_STATE = "the model has no state of positive weight"


def _left(stop: float) -> float | None:
    """Seconds until the :func:`time.perf_counter` time ``stop`` (``None``: no limit)."""
    return None if stop == math.inf else max(stop - time.perf_counter(), 0.0)


def improved_state(model: FactorGraph, x: np.ndarray | None, stop: float
                   ) -> tuple[np.ndarray | None, str]:
    """A state of positive weight improved by local search, and how it was found.

    Parameters
    ----------
    model : FactorGraph
        The model whose state is sought.
    x : numpy.ndarray or None
        The state whose values the search for a state of positive weight tries first
        (:func:`mrflib.inference.approx.map_search.feasible_state`); ``None``: none
        preferred.
    stop : float
        The :func:`time.perf_counter` time by which the search and the local search end
        (``math.inf``: no limit).

    Returns
    -------
    state : numpy.ndarray or None
        The state found and improved by
        :func:`mrflib.inference.approx.map_search.local_search`; ``x`` itself when the
        search does not end in time or proves ``Z = 0``.
    how : str
        How the state was found, for the solver's stderr; :data:`NO_STATE` when the search
        proved that no state has positive weight.
    """
    check_instance(model, FactorGraph, "model")
    try:
        y = feasible_state(model, start=x, deadline=_left(stop))
    except TimeoutError:
        return x, "not repaired: the search for a state of positive weight ran out of time"
    if y is None:
        return x, NO_STATE
    if x is None:
        how = "found by search"
    else:
        how = "kept" if np.array_equal(x, y) else "repaired to positive weight"
    return local_search(model, y, deadline=_left(stop)).state, how + ", improved by local search"


def load_search_kernels() -> None:
    """Load the compiled kernels of the search and the local search on a model of two
    variables.

    They come from numba's cache or are compiled, so that
    :data:`mrflib.io.anytime.FIRST_ANSWER_SECONDS` is spent searching: loading them takes
    about half a second on an idle machine and several on a loaded one, which would leave
    the first search no time at all.
    """
    tiny = FactorGraph(np.array([2, 2]), [(0, 1)],
                       [np.array([[-np.inf, 0.0], [0.0, -np.inf]])])
    local_search(tiny, feasible_state(tiny, start=np.array([0, 0])))


def stop_optimal(answers: Any, say: Callable[[str], object]) -> bool:
    """Whether the last ``MPE`` answer is proven optimal, said on ``say``: nothing can
    improve it, so the solver stops.

    Parameters
    ----------
    answers : mrflib.io.anytime.AnswerFile
        The solver's answers: their task, the last answer's log-weight and the lowest
        upper bound on the MAP log-weight known.
    say : callable
        Takes the line that says the answer optimal.

    Returns
    -------
    bool
        ``True`` when the task is ``MPE`` and the last answer's log-weight meets the upper
        bound.
    """
    if answers.task != "MPE" or not answers.optimal():
        return False
    say(f"optimal: the log-weight {answers.log_weight:.10g} meets the upper bound "
        f"{answers.upper:.10g}; stopped")
    return True


def proves_zero(reason: str) -> bool:
    """Whether an engine's refusal is its proof that ``Z = 0``.

    Parameters
    ----------
    reason : str
        The message of the engine's ``ValueError`` or of a child's error.

    Returns
    -------
    bool
        ``True`` when the message says "Z = 0", as the engines' proofs do; a refusal for
        memory or time is no such proof.
    """
    return "Z = 0" in reason


@contextlib.contextmanager
def engine_stops(say: Callable[[str], object], engine: str, unit: str) -> Iterator[None]:
    """The loop of an anytime engine whose end by time or by memory leaves the answers
    written so far standing.

    A ``TimeoutError`` is said as no ``unit`` of ``engine`` ending in time, a
    ``ValueError`` (a budget past the memory) as the engine stopping with its reason; a
    refusal that proves ``Z = 0`` (:func:`proves_zero`) is raised on.

    Parameters
    ----------
    say : callable
        Takes the line that says why the engine stopped.
    engine : str
        The engine's name in that line (``"max mini-bucket"``).
    unit : str
        What one step of the engine is called (``"run"``, ``"pass"``).

    Yields
    ------
    None
        The loop runs in the ``with`` block.
    """
    try:
        yield
    except TimeoutError:
        say(f"no {engine} {unit} ended in time; stopped")
    except ValueError as err:
        if proves_zero(str(err)):
            raise
        say(f"{engine} stopped: {' '.join(str(err).split())}")


def approximate_mpe(model: FactorGraph, answers: Any, say: Callable[[str], object],
                    deadline: float, child: Forked | None, order: list[int] | None,
                    seed: Any = 0, beside: Toulbar2Beside | None = None) -> bool:
    """``MPE`` answers after the first, written to ``answers`` until the deadline.

    Where the evidence fixes variables, the model is reduced for MAP (:func:`_reduced`:
    solved on its parts by max-product where they fit, the answer then optimal), then its
    parts' propagated moves (:func:`_moves`) and branch and bound over the dual bound
    (:func:`_dual_parts`) answer. Elsewhere max mini-bucket runs of growing budgets
    (:func:`mrflib.inference.approx.max_mini_bucket.growing_max_mini_bucket`) answer: each
    run's decoding repaired and improved (:func:`improved_state`), offered with the run's
    upper bound on the MAP log-weight, until the runs end, the exact child has answered or
    an answer meets the bound; then half the time left goes to :func:`_branch_and_bound`
    (not with toulbar2 ``beside``, a stronger branch and bound).
    The rest goes to :func:`_perturbed` (on the reduced parts where the reduction fixed
    variables).

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    answers : mrflib.io.anytime.AnswerFile
        The solver's answer file, which keeps only answers better than the last.
    say : callable
        Takes each line the solver writes to stderr.
    deadline : float
        The :func:`time.perf_counter` time by which the answers end.
    child : mrflib._support.forked.Forked or None
        The exact computation's child, whose answer ends the approximate ones; ``None``:
        none started.
    order : list of int or None
        The mini-buckets' elimination order; ``None``: made here where needed.
    seed : int, numpy.random.Generator or None
        Seeds the perturbations of the local search and of the propagated moves.
    beside : Toulbar2Beside or None
        toulbar2's search running beside these steps (:func:`start_toulbar2`): its new
        states are offered after each step and at each look at the exact child, and a
        proof that the last answer is optimal ends the steps as the exact child's answer
        does.

    Returns
    -------
    bool
        ``True`` when an answer is proven optimal (or the reduction solved the model):
        nothing is left to do.
    """
    check_instance(model, FactorGraph, "model")
    left = deadline - time.perf_counter()
    if left <= 0:
        return False
    watch = _Watch(child, beside)
    red = _reduced(model, answers, say, deadline)
    if red is None:
        return True
    if red is not False and red.fixed:
        # the deterministic tables the evidence makes binding block one-variable moves;
        # the propagated moves of the reduced parts find far better states than the
        # mini-buckets' decodings there, so they come first
        if not watch.done():
            _moves(model, answers, say, time.perf_counter() + MOVES_SHARE
                   * (deadline - time.perf_counter()), red, np.random.default_rng(seed),
                   fresh=True)
        watch.done()
        if stop_optimal(answers, say) or _dual_parts(model, answers, say, deadline, red):
            return True
        # the mini-buckets of the whole model bound far above the parts' dual bound
        # there, and their decodings repaired are far below the moves' states: the time
        # left goes to the moves
    else:
        if order is None:
            order = elimination_order(model)[0]
        memory = _mini_bucket_answers(model, answers, say, deadline, watch, order)
        if memory is None:
            return True
        if memory and not watch.done():
            if beside is not None:
                # toulbar2 is the stronger branch and bound, on its own core; ours would
                # rebuild the last run's mini-buckets first, past its share of the time on
                # the one core left (12 s for 5 on Grids_22): local search takes the time
                say("branch and bound over the mini-buckets left to toulbar2")
            elif _branch_and_bound(model, answers, say, deadline, order, memory):
                return True
    if not watch.done():
        # where evidence or zeros fixed variables, the deterministic tables they make
        # binding block one-variable moves of the model: the rounds move the reduced parts
        _perturbed(model, answers, say, deadline, watch, seed,
                   red if red is not False and red.fixed else None)
    watch.done()
    return stop_optimal(answers, say)


class _Watch:
    """What ends the approximate answers early, looked at by its ``done``: the exact
    child's answer, or toulbar2's states (read and offered first) proving the last answer
    optimal."""

    def __init__(self, child: Forked | None, beside: Toulbar2Beside | None) -> None:
        self.child, self.beside = child, beside

    def done(self) -> bool:
        proven = self.beside is not None and self.beside.poll()
        return proven or (self.child is not None and self.child.done())


#: Share of the time left that the reduction for MAP may take.
REDUCTION_SHARE = 0.2
#: Share of the time left that the max-product elimination of the reduced parts may take.
EXACT_PARTS_SHARE = 0.5


def _reduced(model: FactorGraph, answers: Any, say: Any, deadline: float
             ) -> MapReduction | bool | None:
    """The model reduced for MAP (:func:`mrflib.inference.approx.map_reduction.reduce_map`):
    ``None`` when its parts were solved exactly (the answer written is optimal), ``False``
    when the model has no evidence (no variable fixed) or the reduction did not fit in
    memory or in :data:`REDUCTION_SHARE` of the time left; a proof of ``Z = 0`` raises."""
    if not observed_states(model):
        # without evidence nothing is fixed to propagate, and on large models the
        # reduction takes seconds of the limit (a loaded machine multiplies them)
        return False
    try:
        red = reduce_map(model, deadline=(deadline - time.perf_counter()) * REDUCTION_SHARE)
    except MemoryError:
        say("the reduction for MAP did not fit in memory; skipped")
        return False
    except TimeoutError:
        say("the reduction for MAP did not end in its share of the time; skipped")
        return False
    if red.infeasible:
        raise ValueError("the model has Z = 0 (the zeros' propagation emptied a domain)")
    left = (deadline - time.perf_counter()) * EXACT_PARTS_SHARE
    x = exact_parts(red, left) if left > 0 else None
    sizes = sorted((p.n for p in red.parts), reverse=True)
    what = (f"{red.fixed} variables fixed, {red.eliminated} eliminated, {len(sizes)} parts "
            f"left (largest {sizes[0] if sizes else 0} variables)")
    if x is None:
        say(f"reduced for MAP: {what}; too wide for exact max-product in the time")
        return red
    answers.offer(x, f"max-product on the reduced model ({what})", say,
                  bound=float(model.log_weight(x)))
    return None if stop_optimal(answers, say) else red


#: Share of the time left after the first propagated moves that the dual bound and the
#: branch and bound of the reduced parts may take.
DUAL_PARTS_SHARE = 0.8


def _dual_parts(model: FactorGraph, answers: Any, say: Any, deadline: float,
                red: MapReduction) -> bool:
    """The reduced parts solved by branch and bound over their models reparameterized by
    the dual bound (:func:`mrflib.inference.approx.map_reduction.dual_branch_and_bound_parts`)
    for :data:`DUAL_PARTS_SHARE` of the time left, from the last answer; ``True`` when its
    answer is proven optimal."""
    left = (deadline - time.perf_counter()) * DUAL_PARTS_SHARE
    if left <= 0 or not answers.log_weight > -math.inf:
        return False
    how = "branch and bound on the reduced parts reparameterized by the dual bound"

    def better(x: np.ndarray, value: float) -> None:
        if float(model.log_weight(x)) > answers.log_weight:
            answers.offer(x, how, say)

    r = dual_branch_and_bound_parts(red, answers.values[-1], deadline=left, report=better)
    if float(model.log_weight(r.state)) > answers.log_weight:
        answers.offer(r.state, how, say)
    answers.upper = min(answers.upper, r.upper_bound)
    if r.optimal:
        answers.upper = min(answers.upper, max(answers.log_weight, r.log_weight))
    say(f"{how}: upper bound {r.upper_bound:.10g}" + (", every part's search ended"
                                                      if r.optimal else ""))
    return stop_optimal(answers, say)


#: Share of the time left after the mini-buckets that the branch and bound may take.
BRANCH_AND_BOUND_SHARE = 0.5


def _branch_and_bound(model: FactorGraph, answers: Any, say: Any, deadline: float,
                      order: list[int], memory: float) -> bool:
    """Branch and bound above the last answer's log-weight
    (:func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound`, the mini-buckets of
    ``memory`` bytes) for :data:`BRANCH_AND_BOUND_SHARE` of the time left; a search that
    ends proves its best state (or the last answer) optimal (``True``)."""
    left = (deadline - time.perf_counter()) * BRANCH_AND_BOUND_SHARE
    if left <= 0 or not answers.log_weight > -math.inf:
        return False
    r = branch_and_bound(model, memory=memory, order=order, deadline=left,
                         lower=answers.log_weight)
    how = f"branch and bound (i-bound {r.ibound}, {r.nodes} nodes)"
    if r.state is not None:
        answers.offer(r.state, how, say, bound=math.inf if not r.complete else
                      max(r.log_weight, answers.log_weight))
    elif r.complete:
        answers.upper = min(answers.upper, answers.log_weight)
        say(f"{how}: no state weighs more than the last answer")
    else:
        say(f"{how}: nothing better found in {left:.3g} s")
    return stop_optimal(answers, say)


#: Seconds of each round of perturbations between two looks at the exact child.
PERTURB_ROUND_SECONDS = 1.0


def _perturbed(model: FactorGraph, answers: Any, say: Any, deadline: float,
               watch: _Watch, seed: Any, red: MapReduction | None = None) -> None:
    """Local search with perturbations of the last answer
    (:func:`mrflib.inference.approx.map_search.local_search`, ``rng=seed``) in rounds of
    :data:`PERTURB_ROUND_SECONDS` until the deadline or ``watch`` ends them, each
    round's better state offered; on the parts of ``red`` where given, the propagated moves
    of :func:`_moves` instead, in rounds of :data:`MOVES_ROUND_SECONDS`."""
    if not answers.values or not answers.log_weight > -math.inf:
        return
    rng = np.random.default_rng(seed)
    while time.perf_counter() < deadline and not watch.done():
        if red is not None:
            _moves(model, answers, say, min(deadline, time.perf_counter()
                                            + MOVES_ROUND_SECONDS), red, rng)
            continue
        left = max(min(PERTURB_ROUND_SECONDS, deadline - time.perf_counter()), 0.0)
        r = local_search(model, answers.values[-1], deadline=left,
                         perturbations=10**9, rng=rng)
        if r.log_weight > answers.log_weight:
            answers.offer(r.state, f"local search with perturbations ({r.perturbations} "
                                   f"in this round, {r.improvements} improving)", say)


#: Share of the time left after the reduction that the first propagated moves take (their
#: first answers come within a second; the dual bound and the branch and bound, which prove
#: optimality, need the rest).
MOVES_SHARE = 0.15
#: Seconds of each round of propagated moves between two looks at the exact child.
MOVES_ROUND_SECONDS = 4.0


def _moves(model: FactorGraph, answers: Any, say: Any, stop: float,
           red: MapReduction, rng: np.random.Generator, fresh: bool = False) -> None:
    """The iterated local search of propagated moves on the reduced parts
    (:func:`mrflib.inference.approx.map_reduction.propagated_moves_parts`) from the last
    answer (``fresh``: from each part's state by score, found by search) until the
    :func:`time.perf_counter` time ``stop``, each state better than the last answer
    offered as soon as it is found."""
    left = stop - time.perf_counter()
    if left <= 0 or not answers.values or (not fresh and not answers.log_weight > -math.inf):
        return

    def better(x: np.ndarray, value: float) -> None:
        # the parts' sum may round apart from the model's log-weight, which the file keeps
        if float(model.log_weight(x)) > answers.log_weight:
            answers.offer(x, "propagated moves on the reduced parts", say)

    x = propagated_moves_parts(red, None if fresh else answers.values[-1], deadline=left,
                               rng=rng, report=better)
    better(x, math.nan)


def _mini_bucket_answers(model: FactorGraph, answers: Any, say: Any, deadline: float,
                         watch: _Watch, order: list[int]) -> float | None:
    """The max mini-bucket answers of :func:`approximate_mpe` until ``watch`` ends them:
    ``None`` when one is proven optimal, else the table budget of the last run (0: none
    ended)."""
    left = deadline - time.perf_counter()
    memory = 0.0
    with engine_stops(say, "max mini-bucket", "run"):
        for res in growing_max_mini_bucket(model, left, order=order):
            if not res.upper_bound > -math.inf:
                raise ValueError("the model has Z = 0 (the max mini-bucket bound on the MAP "
                                 "log-weight is -inf)")
            x, how = improved_state(model, res.state, deadline)
            if how == NO_STATE:
                raise ValueError(f"the model has Z = 0 ({NO_STATE}, proven by search)")
            answers.offer(x, f"max mini-bucket decoding (i-bound {res.ibound}), {how}", say,
                          bound=res.upper_bound)
            memory = res.memory
            if stop_optimal(answers, say):
                return None
            if watch.done():
                return memory
    return memory


#: Seconds of each wait on toulbar2 once the solver's own steps have ended before the
#: deadline.
TOULBAR2_WAIT_SECONDS = 0.2


class Toulbar2Beside:
    """toulbar2's search (:class:`mrflib.inference.approx.map_toulbar2.Toulbar2Search`)
    beside the solver's own steps: each state it prints is offered to the answer file as
    soon as it is read (:meth:`poll`), and its final bound with its last state.

    Parameters
    ----------
    search : mrflib.inference.approx.map_toulbar2.Toulbar2Search
        The search, started.
    answers : mrflib.io.anytime.AnswerFile
        The solver's answer file, which keeps only answers better than the last.
    say : callable
        Takes each line the solver writes to stderr.
    """

    def __init__(self, search: Toulbar2Search, answers: Any,
                 say: Callable[[str], object]) -> None:
        self.search, self.answers, self.say = search, answers, say
        self.ended = False
        reserve_cores(1)  # toulbar2's: the solver's own kernels keep to the other cores

    def poll(self) -> bool:
        """Offer toulbar2's new states; once its child has ended, take its bound (said
        once).

        Returns
        -------
        bool
            Whether the last answer is now proven optimal (``answers.optimal()``).
        """
        new = self.search.poll()
        if new and new[-1][1] > self.answers.log_weight:  # the best of them
            self.answers.offer(new[-1][0], f"toulbar2 (state {self.search.solutions} of its "
                                           "branch and bound)", self.say)
        if not self.ended and self.search.done():
            self.ended = True
            self._end()
        return self.answers.optimal()

    def _end(self) -> None:
        res = self.search.result()
        if res is None:  # pragma: no cover - done() said it answered
            return
        if res.state is not None and res.log_weight > self.answers.log_weight:
            self.answers.offer(res.state, "toulbar2 (its best state)", self.say)
        if "failed" in res.details:
            self.say(f"toulbar2 failed: {res.details['failed']}")
            return
        self.answers.upper = min(self.answers.upper, res.upper_bound)
        how = ("its search ended: the best of its states is optimal" if res.optimal else
               "it stopped at its time limit")
        self.say(f"toulbar2 ended ({res.details['solutions']} states): {how}; upper bound "
                 f"{res.upper_bound:.10g}")

    def wait(self, deadline: float, child: Forked | None = None) -> bool:
        """Offer toulbar2's states until it ends, the exact ``child`` answers or the
        :func:`time.perf_counter` time ``deadline`` passes.

        Parameters
        ----------
        deadline : float
            When to stop waiting.
        child : mrflib._support.forked.Forked or None, default None
            The exact computation's child, whose answer ends the wait (the caller writes
            it).

        Returns
        -------
        bool
            Whether the last answer is proven optimal.
        """
        while not self.poll() and not self.ended and not (child is not None and child.done()):
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            first_done([c for c in (self.search.child, child) if c is not None],
                       time.perf_counter() + min(left, TOULBAR2_WAIT_SECONDS))
        return self.answers.optimal()

    def stop(self) -> None:
        """Kill toulbar2's child if it still runs (saying so), close its stream and give
        its core back (:func:`mrflib._support.threads.reserve_cores`)."""
        if not self.ended:
            self.say("toulbar2 stopped before its search ended")
        self.search.stop()
        reserve_cores(-1)


def start_toulbar2(model: FactorGraph, answers: Any, say: Callable[[str], object],
                   deadline: float) -> Toulbar2Beside | None:
    """toulbar2's search of ``model`` started in a forked child until the deadline, where
    ``pytoulbar2`` is installed, its start said with the child's process id.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    answers : mrflib.io.anytime.AnswerFile
        The solver's answer file, to which its states go.
    say : callable
        Takes each line the solver writes to stderr.
    deadline : float
        The :func:`time.perf_counter` time by which the search ends.

    Returns
    -------
    Toulbar2Beside or None
        The search beside the solver's own; ``None`` without ``pytoulbar2``, without
        time left, or when a table of the model has no entry of positive weight (the
        solver's own steps prove ``Z = 0`` then).
    """
    check_instance(model, FactorGraph, "model")
    left = deadline - time.perf_counter()
    if left <= 0 or not toulbar2_available():
        return None
    try:
        with deferred():
            search = Toulbar2Search(model, time_limit=left)
            say(f"toulbar2 (branch and bound on the model's costs, scaled by "
                f"2^{math.log2(search.scale):g} to integers) started in process {search.pid}")
    except ValueError as err:
        say(f"toulbar2 not started: {' '.join(str(err).split())}")
        return None
    return Toulbar2Beside(search, answers, say)
