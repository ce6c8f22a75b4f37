"""Anytime answers of ``python -m mrflib solve --time-limit SECONDS``.

The UAI competitions let a solver write improving answers one after another, each after a
``-BEGIN-`` line, the last one counting. :func:`solve_anytime`

0. writes a trivial answer (:func:`trivial_answer`: uniform marginals), so that the file
   holds an answer from the start; for ``MPE`` a state of positive weight instead when
   :func:`mrflib.inference.approx.map_search.feasible_state` finds one within
   :data:`FIRST_ANSWER_SECONDS`, counted once its kernels are loaded (improved by
   :func:`~mrflib.inference.approx.map_search.local_search`);
1. orders the variables once for the mini-buckets
   (:func:`mrflib.inference.approx.wmb.elimination_order`; for ``MPE`` with evidence only
   once the reduction for MAP is found to fix nothing) and estimates the exact computation's
   time from the clique tables of that order or of the exact engine's own candidates
   (:func:`mrflib.inference.exact.elimination.plan` without its seconds-long randomized search),
   whichever is smaller (:data:`EXACT_NS_PER_ENTRY` per entry); an estimate under
   :data:`QUICK_EXACT_SECONDS` is solved at once and is the only answer;
2. otherwise starts the exact computation (its own plan, refused when it does not fit in
   memory) in a forked child (:class:`mrflib._support.forked.Forked`) unless the estimate is
   hopeless (for ``PR``, when it is not expected within the time left and some table
   holds a zero, also an exact search over the zeros: for a constraint model (every table
   one positive value where it is not zero, as in the SAT encodings) the exact model
   counters of :func:`mrflib.inference.exact.model_counting.counted_log_partition` (d4
   and Ganak, raced) when either is installed, otherwise the conditioning search of
   :func:`mrflib.inference.exact.conditioning.conditioned_log_partition`, which propagates
   the zeros, splits and caches components; either finishes exactly by the deadline or is
   stopped; on a constraint model also the approximate model counter of
   :func:`mrflib.inference.approx.approx_counting.approx_counted_log_partition` when
   ``pyapproxmc`` is installed, whose estimates, with their guarantee, replace the
   sampling's as they come; :mod:`mrflib.io.anytime_pr`), and meanwhile writes approximate
   answers of
   ``args.method``: for ``PR`` by
   default (``"importance"``) importance sampling estimates of ``log Z`` with the weighted
   mini-bucket proposal (:func:`mrflib.inference.approx.importance.importance_estimates`,
   seeded with ``args.seed``), one after each batch of samples, its probabilistic bounds
   and the certified upper bound on stderr (the certified bound is the answer until a
   sample of positive weight is drawn); weighted
   mini-bucket (``"wmb"``, :func:`mrflib.inference.approx.wmb.growing_passes`, an answer after each
   pass that lowers the upper bound on ``log Z``; for ``MPE`` mini-bucket elimination with
   max instead, :func:`mrflib.inference.approx.max_mini_bucket.growing_max_mini_bucket`, each
   run's decoding repaired to a state of positive weight and improved by local search,
   written when its log-weight beats the last answer's) with a small table budget first,
   then larger budgets while the next run is expected to end in time (for ``MPE`` where
   the evidence fixes variables, the model is instead reduced for MAP, the best answer
   improved by the propagated moves of its parts for
   :data:`~mrflib.io.anytime_mpe.MOVES_SHARE` of the time,
   :func:`mrflib.inference.approx.map_reduction.propagated_moves_parts`, and each part
   solved by a branch and bound over the part reparameterized by its dual bound for
   :data:`~mrflib.io.anytime_mpe.DUAL_PARTS_SHARE` of the time left,
   :func:`mrflib.inference.approx.map_reduction.dual_branch_and_bound_parts`, which proves
   its answer optimal when every part's search ends; elsewhere half the
   time left after the runs goes to a branch and bound over the last run's mini-buckets,
   :func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound`, which proves its answer
   optimal when it ends, and the rest to local search with perturbations of the best
   answer, or to propagated moves on the reduced parts, seeded with ``args.seed``;
   :mod:`mrflib.io.anytime_mpe`);
   ``"exact"``, the exact child alone, started even when hopeless;
   or a method of ``mrflib.inference.approx`` (``MAR``), with
   ``rng=args.seed``, in a second forked child, since neither the exact engine nor a
   kernel's first compilation can be interrupted and the limit must hold;
3. writes the exact answer last when the child finishes before the limit, and stops it
   otherwise. The waits on the children are bounded steps of a pipe poll, so a limit of any
   size (``1e300`` s) is a deadline far away, never an overflow.

For ``MPE`` (method ``"wmb"``) where ``pytoulbar2`` is installed, toulbar2's branch and
bound (:mod:`mrflib.inference.approx.map_toulbar2`) runs from the start in a forked child
of its own beside all of the above (:func:`mrflib.io.anytime_mpe.start_toulbar2`; it is
single-threaded, the solver's own steps take the other core, and their branch and bound
over the mini-buckets is left to it): each state it prints is
offered as an answer when read (between the solver's steps and at each look at the exact
child; when the steps end first, until the deadline), its bound when it ends, and its
proof of optimality stops the solver. Without ``pytoulbar2`` nothing changes.

Every answer rewrites the answer file atomically (:class:`AnswerFile`), so a kill at any
moment leaves the answers written so far, complete. Each answer's method goes to stderr
(for ``MPE`` with its log-weight and the lowest upper bound on the MAP log-weight known:
``Σ_k max θ_k`` at first, then the mini-buckets', an exact answer's own log-weight), and
each child's process id. An ``MPE`` answer whose log-weight meets the bound is optimal: the
solver says so and stops. The ``MPE`` answers of a
file only improve: each one written has a log-weight strictly above the one before. A
proof that ``Z = 0`` (the exact engine's, or any engine's refusal saying so) makes ``PR``'s
answer ``-inf``, with a warning, and for ``MAR`` and ``MPE``, which have no answer then,
removes the answer file and raises ``ValueError``. The children die with the command
(:mod:`mrflib._support.forked`): SIGTERM and SIGINT kill them before the command ends, and
the kernel kills them when it dies of anything else.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.forked import Forked, deferred, first_done
from mrflib._support.validation import check_instance, is_choice, require_memory
from mrflib.inference._reduction import observed_states
from mrflib.inference.approx.importance import importance_sampling
from mrflib.inference.approx.max_mini_bucket import bound_meets, trivial_upper_bound
from mrflib.inference.approx.wmb import (
    WMBResult,
    elimination_order,
    growing_passes,
    weighted_mini_bucket,
)
from mrflib.inference.exact.elimination import REPORT_LOG_ENTRIES, plan
from mrflib.io import uai as io
from mrflib.io._answers import require_answer_memory
from mrflib.io.anytime_mpe import (
    NO_STATE,
    Toulbar2Beside,
    approximate_mpe,
    engine_stops,
    improved_state,
    load_search_kernels,
    proves_zero,
    start_toulbar2,
    stop_optimal,
)
from mrflib.io.anytime_pr import (
    COUNT_FIRST_SHARE,
    ApproxCounts,
    estimate_pr,
    first_count,
    start_counting,
    start_exact_search,
)
from mrflib.models.factor_graph import FactorGraph

__all__ = ["AnswerFile", "Approximate", "solve_anytime", "approximate_answer",
           "trivial_answer", "process_age", "methods", "default_method"]

#: Estimated seconds of the exact engine per entry of all its clique tables (MAR, this
#: machine: 3 to 70 ns on the UAI 2014 problems it answers; the larger end is used).
EXACT_NS_PER_ENTRY = 60.0
#: An exact plan estimated under this many seconds is solved directly.
QUICK_EXACT_SECONDS = 1.0
#: The child is not started when the exact estimate exceeds the time left this many times.
HOPELESS_FACTOR = 20.0
#: Seconds kept back at the end for writing the last answer (plus this share of the limit).
MARGIN_SECONDS = 0.3
MARGIN_SHARE = 0.05
#: Samples of :func:`approximate_answer`'s ``"importance"`` without a time limit.
IMPORTANCE_SAMPLES = 10000
#: Seconds the first ``MPE`` answer may search for a state of positive weight (it does one
#: chunk of search however late it is) before the trivial answer is written instead.
FIRST_ANSWER_SECONDS = 1.0


class AnswerFile:
    """The answers written so far: each ``add`` rewrites ``out`` atomically with every
    answer after a ``-BEGIN-`` line (on standard output, ``"-"``, the new block is
    appended and flushed); ``remove`` deletes the file. A signal that ends the command
    during either waits for it to complete (:func:`mrflib._support.forked.deferred`), so
    the file is always complete answers or absent. Given the ``model``, an ``MPE`` answer
    is written only when its log-weight is strictly above the last one's (``log_weight``),
    so the answers only improve; ``upper`` is the lowest upper bound on the MAP log-weight
    offered with them (:meth:`offer`), and :meth:`optimal` says when the last answer meets
    it.

    Parameters
    ----------
    out : str
        The answer file's path, or ``"-"`` for standard output.
    task : {"PR", "MAR", "MPE"}
        The UAI task of the answers.
    model : FactorGraph or None, default None
        The model, for the log-weights of ``MPE`` answers; ``None`` writes every answer.

    Attributes
    ----------
    out, task, model
        The constructor's arguments.
    values : list
        The answers written so far, in order.
    log_weight : float
        The last ``MPE`` answer's log-weight (``-inf`` before the first).
    upper : float
        The lowest upper bound on the MAP log-weight offered so far (``inf`` before one).
    """

    def __init__(self, out: str, task: str, model: FactorGraph | None = None) -> None:
        self.out, self.task, self.model = out, task, model
        self.values: list = []
        self.log_weight = -math.inf
        self.upper = math.inf

    def add(self, value: Any) -> bool:
        """Write ``value`` after the answers so far.

        Parameters
        ----------
        value : float or list of ndarray or ndarray
            An answer of ``task``, as :func:`mrflib.io.uai.write_answer` takes it
            (checked before anything is written).

        Returns
        -------
        bool
            ``True`` if written; ``False`` (nothing written) for an ``MPE`` answer no better
            than the last.
        """
        text = io.format_answers(self.task, [value])  # checked before anything is written
        if self.task == "MPE" and self.model is not None:
            weight = float(self.model.log_weight(value))
            if self.values and not weight > self.log_weight:
                return False
            self.log_weight = weight
        with deferred():
            self.values.append(value)
            if self.out == "-":
                body = text[len(self.task) + 1:]
                sys.stdout.write((f"{self.task}\n" if len(self.values) == 1 else "") + body)
                sys.stdout.flush()
            else:
                io.write_answers(self.out, self.task, self.values)
        return True

    def remove(self) -> None:
        """Delete the answers written (one unlink: the file is whole or gone); those on
        standard output cannot be taken back, and the exit status says they do not
        count."""
        with deferred():
            self.values = []
            if self.out != "-":
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.out)

    def optimal(self) -> bool:
        """Whether the last ``MPE`` answer's log-weight meets the lowest upper bound.

        Returns
        -------
        bool
            ``True`` once an answer is written whose log-weight meets ``upper``.
        """
        return bool(self.values) and bound_meets(self.upper, self.log_weight)

    def offer(self, value: Any, how: str, say: Any, bound: float | None = None) -> bool:
        """:meth:`add`, and a line on ``say`` saying how the answer was found.

        Parameters
        ----------
        value : float or list of ndarray or ndarray
            An answer of ``task``.
        how : str
            How it was found, for the line.
        say : callable
            Takes the line of text, whether the answer was written or not (for ``MPE`` it
            names the answer's log-weight and the lowest upper bound known).
        bound : float or None, default None
            An upper bound on the MAP log-weight found with the answer, kept in
            ``upper`` when lower.

        Returns
        -------
        bool
            Whether the answer was written (:meth:`add`).
        """
        weight = ""
        if bound is not None:
            self.upper = min(self.upper, float(bound))
        if self.task == "MPE" and self.model is not None:
            weight = f", log-weight {float(self.model.log_weight(value)):.10g}"
            if self.upper < math.inf:
                weight += f", upper bound {self.upper:.10g}"
        if self.add(value):
            say(f"answer {len(self.values)}: {how}{weight}; wrote {self.out}")
            return True
        say(f"not written: {how}{weight}, not above the last answer's "
            f"{self.log_weight:.10g}")
        return False


class Approximate(NamedTuple):
    """An approximate answer (:func:`approximate_answer`).

    Attributes
    ----------
    value : float or list of ndarray or ndarray
        The answer, as :func:`mrflib.io.uai.write_answer` takes it.
    how : str
        How it was found.
    ibound : int or None
        The i-bound of weighted mini-bucket; ``None`` for another method.
    """

    value: Any
    how: str
    ibound: int | None


def approximate_answer(model: FactorGraph, task: str, method: str = "wmb", *,
                       memory: float | None = None, time_limit: float | None = None,
                       max_iter: int = 20, order: Any = None,
                       deadline: float | None = None, rng: Any = None) -> Approximate:
    """An approximate answer of ``task`` (:class:`Approximate`).

    ``"importance"`` (``PR``): the importance sampling estimate of ``log10 Z``
    (:func:`mrflib.inference.approx.importance.importance_sampling`, ``rng``, until ``time_limit``,
    else ``deadline``, else :data:`IMPORTANCE_SAMPLES` samples).
    ``"wmb"``: weighted mini-bucket (``PR``: its upper bound on ``log10 Z``; ``MAR``: its
    beliefs; ``MPE``: each variable's most probable state under its belief, repaired to a
    state of positive weight by :func:`mrflib.inference.approx.map_search.feasible_state`, which
    tries that state's values first, and improved by
    :func:`~mrflib.inference.approx.map_search.local_search`; the decoding itself where the search
    proves ``Z = 0`` or does not end by ``deadline``, else ``time_limit``). Another
    ``method`` is passed to ``mrflib.inference.approx.marginals`` (``MAR`` only), where that module
    is installed, with ``time_limit`` and ``rng``.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    task : {"PR", "MAR", "MPE"}
        The UAI task.
    method : str, default "wmb"
        One of :func:`methods` ``(task)``.
    memory : float or None, default None
        ``"wmb"``: bytes of the largest mini-bucket table (``None``: the mini-bucket
        default).
    time_limit : float or None, default None
        Seconds after which ``"wmb"`` starts no new pass, or the time limit of another
        method.
    max_iter : int, default 20
        ``"wmb"``: forward-backward passes at most.
    order : sequence of int or None, default None
        ``"wmb"``: the elimination order (``None``: computed).
    deadline : float or None, default None
        ``"wmb"``: seconds after which a running pass is abandoned.
    rng : numpy.random.Generator or int or None, default None
        Another method's seed or generator (the samplers ``"gibbs"``, ``"smci"`` and
        ``"importance"`` refuse ``None``); unused by ``"wmb"``.

    Returns
    -------
    Approximate
        The answer, how it was found and the i-bound.
    """
    _check_model_task(model, task)
    if not is_choice(method, methods(task)):
        raise ValueError(f"method must be one of {methods(task)} for {task}, got {method!r}")
    if method == "wmb":
        start = time.perf_counter()
        res = weighted_mini_bucket(model, memory=memory, time_limit=time_limit,
                                   max_iter=max_iter, order=order, deadline=deadline)
        if task == "MPE":
            limit = deadline if deadline is not None else time_limit
            return _mpe_from_wmb(model, res, start + (math.inf if limit is None else limit))
        return _from_wmb(res, task)
    if method == "importance" and task == "PR":
        limit = time_limit if time_limit is not None else deadline
        r = importance_sampling(model, rng=rng, time_limit=limit,
                                n_samples=None if limit is not None else IMPORTANCE_SAMPLES)
        return Approximate(r.log_partition / math.log(10.0),
                           f"importance sampling ({r.proposal} proposal, {r.n_samples} "
                           f"samples)", r.ibound)
    approx = importlib.import_module("mrflib.inference.approx")
    res = approx.marginals(model, method=method, time_limit=time_limit, rng=rng)
    return Approximate(list(res.marginals), f"{getattr(res, 'method', method)}", None)


def methods(task: str) -> list[str]:
    """The methods :func:`approximate_answer` takes for ``task``.

    Parameters
    ----------
    task : {"PR", "MAR", "MPE"}
        The UAI task.

    Returns
    -------
    list of str
        ``"wmb"``; for ``PR`` ``"importance"`` first (the default, :func:`default_method`);
        for ``MAR`` every method of ``mrflib.inference.approx`` where that module is
        installed.
    """
    if task == "PR":
        return ["importance", "wmb"]
    if task != "MAR" or importlib.util.find_spec("mrflib.inference.approx") is None:
        return ["wmb"]
    approx = importlib.import_module("mrflib.inference.approx")
    return ["wmb"] + [m for m in approx.available() if m != "wmb"]


def default_method(task: str) -> str:
    """The method of ``solve --time-limit`` without ``--method``.

    Parameters
    ----------
    task : {"PR", "MAR", "MPE"}
        The UAI task.

    Returns
    -------
    str
        ``"importance"`` for ``PR`` (an estimate of ``Z``, not a bound), ``"wmb"`` otherwise.
    """
    return "importance" if task == "PR" else "wmb"


def _wmb_how(res: WMBResult, bound: bool = True) -> str:
    """What made a mini-bucket answer: its i-bound, passes and (with ``bound``) its bound."""
    passes = "pass" if res.iterations == 1 else "passes"
    tail = f", log Z <= {res.log_upper:.6g}" if bound else ""
    return f"weighted mini-bucket (i-bound {res.ibound}, {res.iterations} {passes}{tail})"


def _from_wmb(res: WMBResult, task: str) -> Approximate:
    """The answer of ``task`` from a weighted mini-bucket result (``MPE``: the decoding,
    each variable's most probable state under its belief)."""
    how = _wmb_how(res)
    if task == "PR":
        value: Any = res.log_upper / math.log(10.0)
    elif task == "MAR":
        value = res.marginals
    else:
        value = np.array([int(np.argmax(p)) for p in res.marginals], dtype=np.int64)
    return Approximate(value, how, res.ibound)


def _mpe_from_wmb(model: FactorGraph, res: WMBResult, stop: float) -> Approximate:
    """The ``MPE`` answer of a weighted mini-bucket result: its decoding, improved
    (:func:`~mrflib.io.anytime_mpe.improved_state`). The bound is on ``log Z``, and so on
    the MAP log-weight too (``max_x w(x) <= Σ_x w(x)``)."""
    x, how = improved_state(model, _from_wmb(res, "MPE").value, stop)
    passes = "pass" if res.iterations == 1 else "passes"
    return Approximate(x, f"weighted mini-bucket decoding (i-bound {res.ibound}, "
                          f"{res.iterations} {passes}; its bound log Z <= {res.log_upper:.6g} "
                          f"bounds the MAP log-weight too), {how}", res.ibound)


def _first_answer(model: FactorGraph, task: str, stop: float) -> tuple[Any, str]:
    """The first answer and how it was found: for ``MPE`` the better of the trivial state
    and a search's own state, each made feasible and improved
    (:func:`~mrflib.io.anytime_mpe.improved_state`) by ``stop``, when a state of positive
    weight is found; else, and for the other tasks, the trivial answer."""
    trivial = trivial_answer(model, task)
    if task != "MPE":
        return trivial, "trivial (no inference)"
    best, value, name = trivial, -math.inf, "trivial (no state of positive weight found)"
    for start, origin in ((trivial, "the trivial state"), (None, "no preferred state")):
        x, how = improved_state(model, start, stop)
        if how == NO_STATE:
            return trivial, f"trivial ({NO_STATE})"
        weight = -math.inf if x is None else float(model.log_weight(x))
        if weight > value:
            best, value, name = x, weight, f"search from {origin}: {how}"
    return best, name


def _check_model_task(model: Any, task: Any) -> None:
    check_instance(model, FactorGraph, "model")
    if not is_choice(task, io.TASKS):
        raise ValueError(f"task must be one of {io.TASKS}, got {task!r}")


def trivial_answer(model: FactorGraph, task: str) -> Any:
    """An answer computed without inference, written first so that the file always holds one.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    task : {"PR", "MAR", "MPE"}
        The UAI task.

    Returns
    -------
    float or list of ndarray or ndarray of int64
        ``MAR`` uniform marginals (a point mass on each observed value), ``MPE`` the
        observed values and state 0 elsewhere, ``PR`` the upper bound
        ``Σ_k max θ_k + Σ_v log |X_v|`` on ``log Z`` (``Z`` sums at most ``Π_v |X_v|``
        states, none of weight above ``exp Σ_k max θ_k``; ``v`` over the unobserved
        variables), in ``log10``.
    """
    _check_model_task(model, task)
    observed = observed_states(model)
    card = model.cardinalities.tolist()
    if task == "MAR":
        require_memory(8.0 * sum(card), f"the uniform marginals of {model.n} variables")
        out = []
        for v, c in enumerate(card):
            p = np.full(c, 1.0 / c)
            if v in observed:
                p = np.zeros(c)
                p[observed[v]] = 1.0
            out.append(p)
        return out
    if task == "MPE":
        return np.array([observed.get(v, 0) for v in range(model.n)], dtype=np.int64)
    top = sum(float(np.max(t)) for t in model.log_tables)
    top += sum(math.log(c) for v, c in enumerate(card) if v not in observed)
    return top / math.log(10.0)


def _plan(model: FactorGraph, say: Any, barren: bool = False, mini_bucket: bool = True
          ) -> tuple[list[int] | None, float]:
    """The mini-bucket elimination order and the estimated seconds of exact elimination:
    in that order, or in the exact engine's best candidate order where it is cheaper (a
    single min-fill order can be thousands of times worse on a pedigree; the engine, which
    also searches further when a plan is large, does no worse than either). With
    ``barren`` (``PR``) the engine's plan prunes barren CPTs, as its ``log Z`` does (a
    Bayesian network without evidence has nothing left). Without ``mini_bucket`` no
    mini-bucket order is made (``None``; its cliques take a minute on a dense SAT-derived
    model): the estimate is the engine's."""
    engine = plan(model, check=False, search=False, barren=barren)
    total = engine.total_bytes / 8.0 if engine.order is not None else math.inf
    biggest = math.log(engine.max_table_bytes / 8.0) if engine.order is not None else math.inf
    order = None
    if mini_bucket:
        order, wmb_biggest, wmb_total = elimination_order(model)
        if not total <= wmb_total:
            total, biggest = wmb_total, wmb_biggest
    est = EXACT_NS_PER_ENTRY * 1e-9 * total
    if math.isfinite(biggest):
        say(f"elimination order: largest clique table 10^{biggest / math.log(10):.1f} "
            f"entries; exact inference estimated at {est:.3g} s")
    else:  # no order found: the plan's table size is the proved lower bound
        least = math.log10(engine.max_table_bytes / 8.0)
        width = ("" if engine.treewidth_lower_bound is None else
                 f", the treewidth is at least {engine.treewidth_lower_bound}")
        searched = REPORT_LOG_ENTRIES / math.log(10.0)
        found = ("" if least > searched else
                 f"none found with a largest clique table below 10^{searched:.1f} entries; ")
        say(f"elimination order: none of use ({found}the largest clique table of every "
            f"order holds at least 10^{least:.1f} entries{width}); exact inference out of "
            f"reach")
    return order, est


def process_age() -> float:
    """Seconds since this process started.

    Returns
    -------
    float
        The process's age, its start-up and imports included; ``0.0`` where ``/proc`` does
        not say.
    """
    try:
        with open("/proc/self/stat") as fh:
            started = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            up = float(fh.read().split()[0])
        return max(0.0, up - started / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _fresh_command() -> bool:
    """Whether this process is ``python -m mrflib`` (not a caller of ``solve.main``)."""
    main = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return main.name == "__main__.py" and main.parent.name == "mrflib"


def solve_anytime(args: Any, say: Any, solve: Any) -> None:
    """Write answers of ``args.task`` for ``args.model`` into ``args.out`` within
    ``args.time_limit`` seconds of the process's start (of the call when ``solve.main`` is
    called from Python; see the module's docstring); ``solve``
    (:func:`mrflib.io.solve.solve`) gives the exact answer of a model and task.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of :func:`mrflib.io.solve.build_parser`: ``args.model``,
        ``args.evid``, ``args.task``, ``args.out``, ``args.time_limit``; ``args.method`` is
        the approximate method and ``args.seed`` its ``rng``.
    say : callable
        Takes each progress line.
    solve : callable
        ``solve(model, task)`` (optionally with a ``progress`` callable) gives the exact
        answer.

    Raises
    ------
    ValueError
        When the model has ``Z = 0`` and ``args.task`` is ``MAR`` or ``MPE`` (the answers
        written so far are removed first), and for what the model's file or the exact
        plan refuse.
    """
    limit = float(args.time_limit)
    startup = 0.0
    if _fresh_command():  # the interpreter's start and imports count
        startup = max(0.0, process_age() - (time.perf_counter() - say.start))
    deadline = say.start - startup + limit - MARGIN_SECONDS - MARGIN_SHARE * limit
    say(f"start-up took {startup:.2f} s; answering within {limit:g} s of the start")
    say(f"reading {args.model}" + (f" with evidence {args.evid}" if args.evid else ""))
    model = io.read_uai(args.model, evidence=args.evid)
    if args.task == "MAR":
        require_answer_memory(int(model.cardinalities.sum()))
    answers = AnswerFile(args.out, args.task, model)
    # toulbar2 runs on a core of its own from the start (single-threaded), beside all below
    beside = (start_toulbar2(model, answers, say, deadline)
              if args.task == "MPE" and args.method == "wmb" else None)
    try:
        if args.task == "MPE":
            load_search_kernels()
        first = _first_answer(model, args.task,
                              min(deadline, time.perf_counter() + FIRST_ANSWER_SECONDS))
        answers.offer(*first, say, bound=trivial_upper_bound(model) if args.task == "MPE"
                      else None)
        if NO_STATE in first[1]:  # the search's proof: no MPE answer exists
            raise ValueError(f"the model has Z = 0 ({NO_STATE}, proven by search)")
        if stop_optimal(answers, say):
            return
        _improve(model, args, answers, say, deadline, solve, beside)
        if beside is not None:
            beside.poll()  # the states toulbar2 printed since the last look
    except ValueError as err:
        if not proves_zero(str(err)):
            raise
        _zero_partition(answers, args, say, str(err))
    finally:
        if beside is not None:
            beside.stop()


def _exact_bound(model: FactorGraph, task: str, value: Any) -> float | None:
    """The upper bound an exact ``MPE`` answer proves: its own log-weight."""
    return float(model.log_weight(value)) if task == "MPE" else None


def _zero_partition(answers: AnswerFile, args: Any, say: Any, reason: str) -> None:
    """``Z = 0`` proven: ``PR``'s answer is ``log10 0 = -inf`` (with the warning the exact
    path gives); ``MAR`` and ``MPE`` have none, so the answers written are removed and the
    engine's reason raised."""
    if args.task == "PR":
        warnings.warn("the model has Z = 0 (every state has zero weight, e.g. evidence of "
                      "probability zero): log Z = -inf", RuntimeWarning, stacklevel=2)
        answers.add(-math.inf)
        say(f"answer {len(answers.values)}: exact (Z = 0); wrote {args.out}")
        return
    answers.remove()
    say(f"the model has Z = 0; removed {args.out}")
    raise ValueError(reason)


def _improve(model: FactorGraph, args: Any, answers: AnswerFile, say: Any, deadline: float,
             solve: Any, beside: Toulbar2Beside | None = None) -> None:
    """Every answer after the trivial one: exact at once when cheap; otherwise approximate
    answers (``MPE``: toulbar2's too, ``beside``) while the exact computation runs in a
    forked child, whose answer, when it comes in time, is written last. Every child started
    is stopped on the way out."""
    # MPE with evidence goes to the reduced parts, where the whole model's mini-bucket
    # order (seconds on a Promedas network) is not used: it is made later where needed
    reduced_mpe = args.task == "MPE" and bool(observed_states(model))
    sampled_pr = args.task == "PR" and args.method == "importance"
    with contextlib.ExitStack() as children:
        cond, cond_name, counts = (start_counting(model, say, deadline, args.seed, children)
                                   if sampled_pr else (None, "", None))
        if counts is not None:
            # the counters alone first (no plan, no sampling): their answer is likelier
            # and better than the sampling's, and the cores are theirs meanwhile; without
            # the exact count, the junction tree is still planned for an exact answer
            until = time.perf_counter() + COUNT_FIRST_SHARE * (deadline - time.perf_counter())
            if (first_count(counts, cond, answers, args.out, until)
                    and (cond is not None or counts.exact)):
                _finish([cond] if cond else [], None, args, answers, say, deadline, cond,
                        cond_name, counts)
                return
        order, est = _plan(model, say, barren=args.task == "PR",
                           mini_bucket=(args.task != "PR" or args.method == "wmb")
                           and not reduced_mpe)
        left = deadline - time.perf_counter()
        if est <= QUICK_EXACT_SECONDS:  # even when late: a kill would leave the trivial answer
            value = solve(model, args.task)
            answers.offer(value, "exact", say, bound=_exact_bound(model, args.task, value))
            stop_optimal(answers, say)
            return
        # "exact" asks for the exact computation alone, hopeless or not: it runs in the
        # child, where the deadline can stop it (the engine itself cannot be interrupted)
        child = None
        if args.method == "exact" or est <= HOPELESS_FACTOR * max(left, 0.0):
            # a signal that comes between the fork and the line naming the child waits for
            # the line: whoever watches the output sees every child that was started
            with deferred():
                child = Forked(solve, (model, args.task))
                children.callback(child.stop)
                say(f"exact inference started in process {child.pid}")
        if sampled_pr:
            if cond is None and est > left:
                # where the junction tree is not expected in time, zeros may still let
                # conditioning finish exactly
                cond, cond_name = start_exact_search(model, say, deadline)
                if cond is not None:
                    children.callback(cond.stop)
            estimate_pr(model, args, answers, say, deadline, trivial_answer(model, "PR"),
                        child, cond, counts)
            _finish([c for c in (child, cond) if c], child, args, answers, say, deadline,
                    cond, cond_name, counts)
        elif args.method == "wmb":
            if args.task == "MPE":
                if approximate_mpe(model, answers, say, deadline, child, order, args.seed,
                                   beside) or (beside is not None
                                               and beside.wait(deadline, child)
                                               and stop_optimal(answers, say)):
                    return  # proven optimal: the exact child is stopped on the way out
            else:
                _approximate(model, args, answers, say, deadline, child, order)
            _finish([child] if child else [], child, args, answers, say, deadline)
        elif args.method == "exact":
            _finish([child], child, args, answers, say, deadline)
        else:
            with deferred():
                helper = Forked(_method_answer, (model, args.task, args.method,
                                                 max(deadline - time.perf_counter(), 0.0),
                                                 args.seed))
                children.callback(helper.stop)
                say(f"{args.method} started in process {helper.pid}")
            _finish([c for c in (child, helper) if c], child, args, answers, say, deadline)


def _method_answer(model: FactorGraph, task: str, method: str, left: float, seed: int
                   ) -> Approximate:  # pragma: no cover - runs in a forked child
    return approximate_answer(model, task, method=method, time_limit=left, rng=seed)


def _finish(pending: list[Forked], child: Forked | None, args: Any, answers: AnswerFile,
            say: Any, deadline: float, cond: Forked | None = None, cond_name: str = "",
            counts: ApproxCounts | None = None) -> None:
    """Write the answers of the ``pending`` children (the exact ``child``, the search over
    the zeros ``cond``, named ``cond_name``, an approximate method's, the approximate model
    counts' runs ``counts`` one after another) as they come, until the deadline or an exact
    answer, which ends the wait (an approximate answer after it would count instead of
    it)."""
    if counts is not None and counts.exact:
        return
    while pending or (counts is not None and counts.child is not None):
        done = first_done(pending + ([counts.child] if counts and counts.child else []),
                          deadline)
        if done is None:
            break
        if counts is not None and done is counts.child:
            counts.poll(answers, args.out)
            if counts.exact:
                return
            continue
        pending.remove(done)
        kind, value = done.result()
        if kind == "error":
            if proves_zero(value):
                raise ValueError(value)
            say(("exact inference" if done is child else cond_name if done is cond
                 else f"{args.method}") + f" failed: {value}")
            continue
        if done is child or done is cond:
            answers.offer(value, "exact" if done is child else f"exact ({cond_name})", say,
                          bound=_exact_bound(answers.model, args.task, value))
            stop_optimal(answers, say)
            return
        answers.offer(value.value, value.how, say)
    if counts is not None and counts.child is not None:
        pending.append(counts.child)
    for still in pending:
        counting = counts is not None and still is counts.child
        say(("exact inference" if still is child else cond_name if still is cond
             else "approximate model counting" if counting else f"{args.method}")
            + " did not finish in time; stopped")


def _approximate(model: FactorGraph, args: Any, answers: AnswerFile, say: Any,
                 deadline: float, child: Forked | None, order: list[int]) -> None:
    """Weighted mini-bucket answers of growing budgets
    (:func:`mrflib.inference.approx.wmb.growing_passes`) until the next would not end in time, no
    larger budget fits in memory, or the exact child has answered (then its answer is left
    for the caller)."""
    left = deadline - time.perf_counter()
    if left <= 0:
        return
    # The bound is the mini-buckets' own measure of how well a pass fits the model: the
    # first pass of a larger budget often fits worse than many passes of a smaller one
    # (linkage_27 of UAI 2014: one pass at i-bound 21 left the bound where it was and its
    # marginals scored 76 against the 91 of the answer before it), so a pass that does not
    # lower the bound does not replace the last answer.
    written = math.inf
    # a limit so long that the budget outgrows the memory: the answers so far stand
    with engine_stops(say, "weighted mini-bucket", "pass"):
        for res in growing_passes(model, left, order=order, strict=True):
            got = _from_wmb(res, args.task)
            if res.log_upper < written:
                written = res.log_upper
                answers.add(got.value)
                say(f"answer {len(answers.values)}: {got.how}; wrote {args.out}")
            else:
                say(f"not written: {_wmb_how(res, bound=False)}, whose pass did not lower "
                    "the bound")
            if child is not None and child.done():
                return
