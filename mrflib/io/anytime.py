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
   counter of :func:`mrflib.inference.exact.model_counting.counted_log_partition` when
   ``pyganak`` is installed, otherwise the conditioning search of
   :func:`mrflib.inference.exact.conditioning.conditioned_log_partition`, which propagates
   the zeros, splits and caches components; either finishes exactly by the deadline or is
   stopped), and meanwhile writes approximate answers of
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
   improved by the propagated moves of its parts for :data:`MOVES_SHARE` of the time,
   :func:`mrflib.inference.approx.map_reduction.propagated_moves_parts`, and each part
   solved by a branch and bound over the part reparameterized by its dual bound for
   :data:`DUAL_PARTS_SHARE` of the time left,
   :func:`mrflib.inference.approx.map_reduction.dual_branch_and_bound_parts`, which proves
   its answer optimal when every part's search ends; elsewhere half the
   time left after the runs goes to a branch and bound over the last run's mini-buckets,
   :func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound`, which proves its answer
   optimal when it ends, and the rest to local search with perturbations of the best
   answer, or to propagated moves on the reduced parts, seeded with ``args.seed``);
   ``"exact"``, the exact child alone, started even when hopeless;
   or a method of ``mrflib.inference.approx`` (``MAR``), with
   ``rng=args.seed``, in a second forked child, since neither the exact engine nor a
   kernel's first compilation can be interrupted and the limit must hold;
3. writes the exact answer last when the child finishes before the limit, and stops it
   otherwise. The waits on the children are bounded steps of a pipe poll, so a limit of any
   size (``1e300`` s) is a deadline far away, never an overflow.

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
from mrflib.inference.approx.importance import importance_estimates, importance_sampling
from mrflib.inference.approx.map_reduction import (
    MapReduction,
    dual_branch_and_bound_parts,
    exact_parts,
    propagated_moves_parts,
    reduce_map,
)
from mrflib.inference.approx.map_search import feasible_state, local_search
from mrflib.inference.approx.max_mini_bucket import (
    bound_meets,
    branch_and_bound,
    growing_max_mini_bucket,
    trivial_upper_bound,
)
from mrflib.inference.approx.wmb import (
    WMBResult,
    elimination_order,
    growing_passes,
    weighted_mini_bucket,
)
from mrflib.inference.exact import model_counting
from mrflib.inference.exact.conditioning import conditioned_log_partition
from mrflib.inference.exact.elimination import _observed, plan
from mrflib.io import uai as io
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
#: Scheduling niceness of the exact searches over the zeros (``PR``: conditioning, model
#: counting) in their children, above the parent's.
CONDITIONING_NICENESS = 10
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


def approximate_answer(model: FactorGraph, task: str, *, method: str = "wmb",
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


#: How :func:`_improved` names a model whose search proved ``Z = 0``.
_NO_STATE = "the model has no state of positive weight"


def _left(stop: float) -> float | None:
    """Seconds until the :func:`time.perf_counter` time ``stop`` (``None``: no limit)."""
    return None if stop == math.inf else max(stop - time.perf_counter(), 0.0)


def _improved(model: FactorGraph, x: np.ndarray | None, stop: float
              ) -> tuple[np.ndarray | None, str]:
    """A state of positive weight (``x``'s values tried first, where given) improved by
    local search, the search ending by the :func:`time.perf_counter` time ``stop``, and
    how; ``x`` itself when the search does not end in time or proves ``Z = 0``."""
    try:
        y = feasible_state(model, start=x, deadline=_left(stop))
    except TimeoutError:
        return x, "not repaired: the search for a state of positive weight ran out of time"
    if y is None:
        return x, _NO_STATE
    if x is None:
        how = "found by search"
    else:
        how = "kept" if np.array_equal(x, y) else "repaired to positive weight"
    return local_search(model, y, deadline=_left(stop)).state, how + ", improved by local search"


def _mpe_from_wmb(model: FactorGraph, res: WMBResult, stop: float) -> Approximate:
    """The ``MPE`` answer of a weighted mini-bucket result: its decoding, improved
    (:func:`_improved`). The bound is on ``log Z``, and so on the MAP log-weight too
    (``max_x w(x) <= Σ_x w(x)``)."""
    x, how = _improved(model, _from_wmb(res, "MPE").value, stop)
    passes = "pass" if res.iterations == 1 else "passes"
    return Approximate(x, f"weighted mini-bucket decoding (i-bound {res.ibound}, "
                          f"{res.iterations} {passes}; its bound log Z <= {res.log_upper:.6g} "
                          f"bounds the MAP log-weight too), {how}", res.ibound)


def _load_search_kernels() -> None:
    """Load the compiled kernels of the search and the local search (from numba's cache,
    or compiled) on a model of two variables, so that :data:`FIRST_ANSWER_SECONDS` is
    spent searching: loading them takes about half a second on an idle machine and
    several on a loaded one, which left the first search no time at all."""
    tiny = FactorGraph(np.array([2, 2]), [(0, 1)],
                       [np.array([[-np.inf, 0.0], [0.0, -np.inf]])])
    local_search(tiny, feasible_state(tiny, start=np.array([0, 0])))


def _first_answer(model: FactorGraph, task: str, stop: float) -> tuple[Any, str]:
    """The first answer and how it was found: for ``MPE`` the better of the trivial state
    and a search's own state, each made feasible and improved (:func:`_improved`) by
    ``stop``, when a state of positive weight is found; else, and for the other tasks, the
    trivial answer."""
    trivial = trivial_answer(model, task)
    if task != "MPE":
        return trivial, "trivial (no inference)"
    best, value, name = trivial, -math.inf, "trivial (no state of positive weight found)"
    for start, origin in ((trivial, "the trivial state"), (None, "no preferred state")):
        x, how = _improved(model, start, stop)
        if how == _NO_STATE:
            return trivial, f"trivial ({_NO_STATE})"
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
    observed = _observed(model)
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
    say(f"elimination order: largest clique table 10^{biggest / math.log(10):.1f} entries; "
        f"exact inference estimated at {est:.3g} s")
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
        io._require_answer_memory(int(model.cardinalities.sum()))
    answers = AnswerFile(args.out, args.task, model)
    if args.task == "MPE":
        _load_search_kernels()
    first = _first_answer(model, args.task,
                          min(deadline, time.perf_counter() + FIRST_ANSWER_SECONDS))
    answers.offer(*first, say, bound=trivial_upper_bound(model) if args.task == "MPE"
                  else None)
    try:
        if _NO_STATE in first[1]:  # the search's proof: no MPE answer exists
            raise ValueError(f"the model has Z = 0 ({_NO_STATE}, proven by search)")
        if _stop_optimal(answers, say):
            return
        _improve(model, args, answers, say, deadline, solve)
    except ValueError as err:
        if not _proves_zero(str(err)):
            raise
        _zero_partition(answers, args, say, str(err))


def _stop_optimal(answers: AnswerFile, say: Any) -> bool:
    """Whether the last ``MPE`` answer is proven optimal (its log-weight meets the upper
    bound), said on ``say``: nothing can improve it, so the solver stops."""
    if answers.task != "MPE" or not answers.optimal():
        return False
    say(f"optimal: the log-weight {answers.log_weight:.10g} meets the upper bound "
        f"{answers.upper:.10g}; stopped")
    return True


def _exact_bound(model: FactorGraph, task: str, value: Any) -> float | None:
    """The upper bound an exact ``MPE`` answer proves: its own log-weight."""
    return float(model.log_weight(value)) if task == "MPE" else None


def _proves_zero(reason: str) -> bool:
    """Whether an engine's refusal is its proof that ``Z = 0`` (the engines' messages say
    "Z = 0"; a refusal for memory or time is no such proof)."""
    return "Z = 0" in reason


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
             solve: Any) -> None:
    """Every answer after the trivial one: exact at once when cheap; otherwise approximate
    answers while the exact computation runs in a forked child, whose answer, when it comes
    in time, is written last."""
    # MPE with evidence goes to the reduced parts, where the whole model's mini-bucket
    # order (seconds on a Promedas network) is not used: it is made later where needed
    reduced_mpe = args.task == "MPE" and bool(_observed(model))
    # a constraint model is counted from the start: the plan alone can take seconds on one
    # (an order search over thousands of clauses), and the count is its likeliest answer
    counting = (_start_counting(model, say, deadline)
                if args.task == "PR" and args.method == "importance" else None)
    try:
        _improve_planned(model, args, answers, say, deadline, solve, reduced_mpe, counting)
    finally:
        if counting is not None:
            counting.stop()


def _improve_planned(model: FactorGraph, args: Any, answers: AnswerFile, say: Any,
                     deadline: float, solve: Any, reduced_mpe: bool,
                     counting: Forked | None) -> None:
    """:func:`_improve` once the model count (``counting``, ``PR`` on a constraint model)
    runs: the plan, then the exact answer at once or the approximate answers."""
    order, est = _plan(model, say, barren=args.task == "PR",
                       mini_bucket=(args.task != "PR" or args.method == "wmb")
                       and not reduced_mpe)
    left = deadline - time.perf_counter()
    if est <= QUICK_EXACT_SECONDS:  # even when late: a kill would leave the trivial answer
        value = solve(model, args.task)
        answers.offer(value, "exact", say, bound=_exact_bound(model, args.task, value))
        _stop_optimal(answers, say)
        return
    # "exact" asks for the exact computation alone, hopeless or not: it runs in the child,
    # where the deadline can stop it (the engine itself cannot be interrupted)
    child = None
    try:
        # a signal that comes between the fork and the line naming the child waits for the
        # line: whoever watches the output sees every child that was started
        if args.method == "exact" or est <= HOPELESS_FACTOR * max(left, 0.0):
            with deferred():
                child = Forked(solve, (model, args.task))
                say(f"exact inference started in process {child.pid}")
        if args.method == "importance" and args.task == "PR":
            # where the junction tree is not expected in time, zeros may still let
            # conditioning finish exactly
            cond, cond_name = counting, "model counting"
            if cond is None:
                cond, cond_name = (_start_conditioning(model, say, deadline) if est > left
                                   else (None, ""))
            try:
                _estimate_pr(model, args, answers, say, deadline, child, cond)
                _finish([c for c in (child, cond) if c], child, args, answers, say, deadline,
                        cond, cond_name)
            finally:
                if cond is not None:
                    cond.stop()
        elif args.method == "wmb":
            if args.task == "MPE":
                if _approximate_mpe(model, answers, say, deadline, child, order, args.seed):
                    return  # proven optimal: the exact child is stopped below
            else:
                _approximate(model, args, answers, say, deadline, child, order)
            _finish([child] if child else [], child, args, answers, say, deadline)
        elif args.method == "exact":
            _finish([child], child, args, answers, say, deadline)
        else:
            helper = None
            try:
                with deferred():
                    helper = Forked(_method_answer, (model, args.task, args.method,
                                                     max(deadline - time.perf_counter(), 0.0),
                                                     args.seed))
                    say(f"{args.method} started in process {helper.pid}")
                _finish([c for c in (child, helper) if c], child, args, answers, say, deadline)
            finally:
                if helper is not None:
                    helper.stop()
    finally:
        if child is not None:
            child.stop()


def _has_zeros(model: FactorGraph) -> bool:
    """Whether some table of ``model`` with a scope holds a zero (``-inf``)."""
    return any(bool(np.isneginf(t).any()) for s, t in zip(model.scopes, model.log_tables) if s)


def _start_counting(model: FactorGraph, say: Any, deadline: float) -> Forked | None:
    """The exact model count
    (:func:`mrflib.inference.exact.model_counting.counted_log_partition`) in a forked child,
    when the model is a constraint model (every table one positive value where it is not
    zero) with zeros and the counter is installed; ``None`` otherwise."""
    if (deadline <= time.perf_counter() or not _has_zeros(model)
            or model_counting.constraint_scale(model) is None
            or not model_counting.available()):
        return None
    with deferred():
        child = Forked(_counted_pr, (model,))
        say(f"exact inference by model counting (Ganak) started in process {child.pid}")
    return child


def _start_conditioning(model: FactorGraph, say: Any, deadline: float
                        ) -> tuple[Forked | None, str]:
    """The conditioning search
    (:func:`mrflib.inference.exact.conditioning.conditioned_log_partition`) in a forked
    child until the deadline, when the model has zeros to propagate, and its name;
    ``(None, "")`` otherwise."""
    left = deadline - time.perf_counter()
    if left <= 0 or not _has_zeros(model):
        return None, ""
    with deferred():
        cond = Forked(_conditioned_pr, (model, left))
        say("exact inference by conditioning (zeros propagated, components cached) started "
            f"in process {cond.pid}")
    return cond, "conditioning"


def _conditioned_pr(model: FactorGraph, left: float
                    ) -> float:  # pragma: no cover - runs in a forked child
    # the search finishes only on some models; the sampling in the parent answers all of
    # them, so on a busy machine the search takes only the processor time left over
    with contextlib.suppress(OSError):
        os.nice(CONDITIONING_NICENESS)
    return conditioned_log_partition(model, time_limit=left).log_partition / math.log(10.0)


def _counted_pr(model: FactorGraph) -> float:  # pragma: no cover - runs in a forked child
    # the count finishes only on some models, the parent's certified bound is an answer on
    # all of them, and its proposal cannot be interrupted: on a busy machine the count
    # takes only the processor time left over, so the limit holds
    with contextlib.suppress(OSError):
        os.nice(CONDITIONING_NICENESS)
    return model_counting.counted_log_partition(model) / math.log(10.0)


def _method_answer(model: FactorGraph, task: str, method: str, left: float, seed: int
                   ) -> Approximate:  # pragma: no cover - runs in a forked child
    return approximate_answer(model, task, method=method, time_limit=left, rng=seed)


def _finish(pending: list[Forked], child: Forked | None, args: Any, answers: AnswerFile,
            say: Any, deadline: float, cond: Forked | None = None, cond_name: str = ""
            ) -> None:
    """Write the answers of the ``pending`` children (the exact ``child``, the search over
    the zeros ``cond``, named ``cond_name``, an approximate method's) as they come, until
    the deadline or an exact
    answer, which ends the wait (an approximate answer after it would count instead of
    it)."""
    while pending:
        done = first_done(pending, deadline)
        if done is None:
            break
        pending.remove(done)
        kind, value = done.result()
        if kind == "error":
            if _proves_zero(value):
                raise ValueError(value)
            say(("exact inference" if done is child else cond_name if done is cond
                 else f"{args.method}") + f" failed: {value}")
            continue
        if done is child or done is cond:
            answers.offer(value, "exact" if done is child else f"exact ({cond_name})", say,
                          bound=_exact_bound(answers.model, args.task, value))
            _stop_optimal(answers, say)
            return
        answers.offer(value.value, value.how, say)
    for still in pending:
        say(("exact inference" if still is child else cond_name if still is cond
             else f"{args.method}") + " did not finish in time; stopped")


#: Seconds between two importance sampling answers (the last estimate is written at the end).
ESTIMATE_SECONDS = 1.0


def _estimate_pr(model: FactorGraph, args: Any, answers: AnswerFile, say: Any,
                 deadline: float, child: Forked | None, cond: Forked | None = None) -> None:
    """``PR`` answers of importance sampling with the weighted mini-bucket proposal
    (:func:`mrflib.inference.approx.importance.importance_estimates`, ``rng=args.seed``): the
    estimate of the latest batch, with its bounds on stderr, at most every
    :data:`ESTIMATE_SECONDS` and when the sampling ends (the deadline, or the exact child's
    answer, or the conditioning search's ``cond``). Before any sample of positive weight
    the proposal's certified upper bound is written where it is below the trivial answer's
    (:func:`trivial_answer`, also a certified bound: the mini-buckets' bound on the model
    after evidence and pruning can be the looser of the two). A bound of ``-inf`` proves
    ``Z = 0``."""
    left = deadline - time.perf_counter()
    if left <= 0:
        return
    ln10 = math.log(10.0)
    trivial = trivial_answer(model, "PR")
    bound_written, last_write, pending = False, -math.inf, None

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
    for res in importance_estimates(model, rng=args.seed, time_limit=left):
        if not res.log_upper_bound > -math.inf:
            raise ValueError("the model has Z = 0 (the weighted mini-bucket bound on log Z is "
                             "-inf)")
        if res.details.get("exact"):
            answers.add(res.log_partition / ln10)
            say(f"answer {len(answers.values)}: weighted mini-bucket without splitting a "
                f"bucket (i-bound {res.ibound}): exact; wrote {args.out}")
            return
        if res.log_partition > -math.inf:
            pending = res
            if time.perf_counter() - last_write >= ESTIMATE_SECONDS:
                write(res)
                last_write, pending = time.perf_counter(), None
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
    if pending is not None:
        write(pending)


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
    try:
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
    except TimeoutError:
        say("no weighted mini-bucket pass ended in time; stopped")
    except ValueError as err:
        # a limit so long that the budget outgrows the memory: the answers so far stand
        if _proves_zero(str(err)):
            raise
        say(f"weighted mini-bucket stopped: {' '.join(str(err).split())}")


def _approximate_mpe(model: FactorGraph, answers: AnswerFile, say: Any, deadline: float,
                     child: Forked | None, order: list[int] | None, seed: Any = 0
                     ) -> bool:
    """``MPE`` answers: where the evidence fixes variables, the model reduced for MAP
    (:func:`_reduced`: solved on its parts by max-product where they fit, the answer then
    optimal), its parts' propagated moves (:func:`_moves`) and branch and bound over the
    dual bound (:func:`_dual_parts`); elsewhere answers of max mini-bucket runs of growing
    budgets
    (:func:`mrflib.inference.approx.max_mini_bucket.growing_max_mini_bucket`): each run's decoding
    repaired and improved (:func:`_improved`), offered with the run's upper bound on the
    MAP log-weight, until the runs end, the exact child has answered, or an answer meets
    the bound (``True``: proven optimal, nothing left to do); then half the time left goes
    to :func:`_branch_and_bound` and the rest to :func:`_perturbed` (``seed``; on the
    reduced parts where the reduction fixed variables)."""
    left = deadline - time.perf_counter()
    if left <= 0:
        return False
    red = _reduced(model, answers, say, deadline)
    if red is None:
        return True
    if red is not False and red.fixed:
        # the deterministic tables the evidence makes binding block one-variable moves;
        # the propagated moves of the reduced parts find far better states than the
        # mini-buckets' decodings there, so they come first
        _moves(model, answers, say, time.perf_counter() + MOVES_SHARE
               * (deadline - time.perf_counter()), red, np.random.default_rng(seed),
               fresh=True)
        if _stop_optimal(answers, say) or _dual_parts(model, answers, say, deadline, red):
            return True
        # the mini-buckets of the whole model bound far above the parts' dual bound
        # there, and their decodings repaired are far below the moves' states: the time
        # left goes to the moves
    else:
        if order is None:
            order = elimination_order(model)[0]
        memory = _mini_bucket_answers(model, answers, say, deadline, child, order)
        if memory is None:
            return True
        if memory and (child is None or not child.done()):
            if _branch_and_bound(model, answers, say, deadline, order, memory):
                return True
    if child is None or not child.done():
        # where evidence or zeros fixed variables, the deterministic tables they make
        # binding block one-variable moves of the model: the rounds move the reduced parts
        _perturbed(model, answers, say, deadline, child, seed,
                   red if red is not False and red.fixed else None)
    return _stop_optimal(answers, say)


#: Share of the time left that the reduction for MAP may take.
REDUCTION_SHARE = 0.2
#: Share of the time left that the max-product elimination of the reduced parts may take.
EXACT_PARTS_SHARE = 0.5


def _reduced(model: FactorGraph, answers: AnswerFile, say: Any, deadline: float
             ) -> MapReduction | bool | None:
    """The model reduced for MAP (:func:`mrflib.inference.approx.map_reduction.reduce_map`):
    ``None`` when its parts were solved exactly (the answer written is optimal), ``False``
    when the model has no evidence (no variable fixed) or the reduction did not fit in
    memory or in :data:`REDUCTION_SHARE` of the time left; a proof of ``Z = 0`` raises."""
    if not _observed(model):
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
    return None if _stop_optimal(answers, say) else red


#: Share of the time left after the first propagated moves that the dual bound and the
#: branch and bound of the reduced parts may take.
DUAL_PARTS_SHARE = 0.8


def _dual_parts(model: FactorGraph, answers: AnswerFile, say: Any, deadline: float,
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
    return _stop_optimal(answers, say)


#: Share of the time left after the mini-buckets that the branch and bound may take.
BRANCH_AND_BOUND_SHARE = 0.5


def _branch_and_bound(model: FactorGraph, answers: AnswerFile, say: Any, deadline: float,
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
    return _stop_optimal(answers, say)


#: Seconds of each round of perturbations between two looks at the exact child.
PERTURB_ROUND_SECONDS = 1.0


def _perturbed(model: FactorGraph, answers: AnswerFile, say: Any, deadline: float,
               child: Forked | None, seed: Any, red: MapReduction | None = None) -> None:
    """Local search with perturbations of the last answer
    (:func:`mrflib.inference.approx.map_search.local_search`, ``rng=seed``) in rounds of
    :data:`PERTURB_ROUND_SECONDS` until the deadline or the exact child's answer, each
    round's better state offered; on the parts of ``red`` where given, the propagated moves
    of :func:`_moves` instead, in rounds of :data:`MOVES_ROUND_SECONDS`."""
    if not answers.values or not answers.log_weight > -math.inf:
        return
    rng = np.random.default_rng(seed)
    while time.perf_counter() < deadline and (child is None or not child.done()):
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


def _moves(model: FactorGraph, answers: AnswerFile, say: Any, stop: float,
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


def _mini_bucket_answers(model: FactorGraph, answers: AnswerFile, say: Any, deadline: float,
                         child: Forked | None, order: list[int]) -> float | None:
    """The max mini-bucket answers of :func:`_approximate_mpe`: ``None`` when one is
    proven optimal, else the table budget of the last run (0: none ended)."""
    left = deadline - time.perf_counter()
    memory = 0.0
    try:
        for res in growing_max_mini_bucket(model, left, order=order):
            if not res.upper_bound > -math.inf:
                raise ValueError("the model has Z = 0 (the max mini-bucket bound on the MAP "
                                 "log-weight is -inf)")
            x, how = _improved(model, res.state, deadline)
            if how == _NO_STATE:
                raise ValueError(f"the model has Z = 0 ({_NO_STATE}, proven by search)")
            answers.offer(x, f"max mini-bucket decoding (i-bound {res.ibound}), {how}", say,
                          bound=res.upper_bound)
            memory = res.memory
            if _stop_optimal(answers, say):
                return None
            if child is not None and child.done():
                return memory
    except TimeoutError:
        say("no max mini-bucket run ended in time; stopped")
    except ValueError as err:
        if _proves_zero(str(err)):
            raise
        say(f"max mini-bucket stopped: {' '.join(str(err).split())}")
    return memory
