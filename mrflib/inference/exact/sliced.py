"""Exact inference beyond the memory of one junction tree: zeros, then slicing.

:mod:`mrflib.inference.exact.elimination` answers a model whose plan fits in memory. Two exact
reductions make the work smaller:

1. **domains**: the states of zero probability are removed by arc consistency on the
   tables' zeros (:func:`mrflib.inference.exact.domains.reduce_domains`), which shrinks the clique
   tables
   of models full of deterministic factors; answers are mapped back (removed states get
   probability 0). Tried when the plan does not fit, and also, for ``log Z`` and the
   marginals, when it fits but its clique tables hold at least :data:`REDUCE_ABOVE` times
   the entries of the model's own tables (then the reduction, which reads each table a few
   times, costs little next to the pass); the reduced plan is kept when its tables hold
   fewer entries. On the UAI 2014 pedigrees the tables shrink 50-90 times and the
   marginals come 3-10 times sooner.
2. **slicing**, when even the reduced plan does not fit (conditioning; Darwiche,
   *Modeling and Reasoning with Bayesian Networks*, sec. 8.5, "recursive conditioning";
   the slicing of tensor-network contraction): a few variables ``S`` are clamped and the
   model is solved once per joint state ``s`` of ``S``, on the order of the whole model
   with ``S`` removed, whose cliques are those of the whole model minus ``S``. The
   slices' answers are combined in log space:

   .. math:: \\log Z &= \\log \\sum_s Z_s,\\\\
             P(x_i) &= \\sum_s \\frac{Z_s}{Z} P_s(x_i),\\\\
             \\max_x w(x) &= \\max_s \\max_{x: x_S = s} w(x),

   with ``Z_s`` the partition function of slice ``s`` (a slice with ``Z_s = 0`` adds
   nothing). ``S`` is chosen greedily: while the sliced plan does not fit, the variable of
   the largest clique that takes part in the most clique entries is added. Work grows by
   the number of slices, so a model is refused when the estimated time (entries of the
   sliced tree times :data:`SECONDS_PER_ENTRY`, times the number of slices; where that
   bound passes the limit and there are at most :data:`MAX_SCANNED` slices, the entries of
   each slice's own plan on its reduced domains, counted one slice at a time) passes
   ``time_limit``, with that estimate in the message.
3. **annealing**, when the slices would be refused: the order's contraction tree is
   annealed (:func:`mrflib.inference.exact.elimination_order.searched_order` with a seed,
   :data:`ANNEAL_SEED`; about a minute on a pedigree of a thousand factors) and the model
   is answered on that order, whole if it fits, else sliced. Annealing minimizes a tree's
   flops, not its slices' work (on the UAI 2014 problem linkage_23 the annealed order's
   marginals were refused where the searched order's slices answer in half a minute), so
   it comes last: a model whose slices are accepted keeps its order and its answer.

Where a lower bound on the treewidth (:mod:`mrflib.inference.exact.treewidth_bounds`) shows that
every order's largest clique table is beyond memory and every slicing's work beyond the
time limit (:func:`give_up`), the model is refused at once, before any order search.

The same reductions are done in each slice (a slice's clamped values often make more states
impossible). ``progress`` (a callable taking a line of text) hears of each slice.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib._support.validation import (
    available_memory,
    check_instance,
    check_positive,
    format_bytes,
)
from mrflib.inference.exact import elimination
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact.domains import Domains, reduce_domains
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.precision import checked

__all__ = ["log_partition", "marginals", "map_assignment", "factor_marginals", "sample",
           "choose_slices", "give_up", "SECONDS_PER_ENTRY", "MAX_SECONDS", "MAX_SCANNED",
           "ANNEAL_SEED", "ANNEALING", "TASKS", "REDUCE_ABOVE", "REDUCE_SHRINK"]

TASKS = ("PR", "MAR", "MPE")
#: Seconds per clique-table entry of one slice: the upward pass (with the downward one for
#: MAR), as measured on linkage problems of the UAI 2014 set on a 2-core machine with the
#: other core busy (the upward pass of log Z: 8.9e-9 and 9.5e-9 s on linkage_27 and
#: linkage_22; marginals: 2.9e-8 to 4.8e-8 s on linkage_18, 22 and 27), with half as much
#: again for a busier machine; MPE not measured (kept at an earlier, slower machine's
#: figure).
SECONDS_PER_ENTRY = {"PR": 1.5e-8, "MAR": 7e-8, "MPE": 8e-8}
#: Default limit on the estimated time of a sliced computation (seconds).
MAX_SECONDS = 600.0
#: Most variables sliced (beyond that the slices' count alone refuses the model).
MAX_SLICED = 24
#: Most slices whose domains are reduced one by one to count their work, when the upper
#: bound (every slice as large as the unreduced one) passes the time limit: each costs a
#: domain reduction and a plan on the given order, a fraction of a second on a UAI 2014
#: linkage problem, and a slice's clamped values often empty most of its states.
MAX_SCANNED = 256
#: Default seed of the annealed order tried where the slices of the searched one are refused.
ANNEAL_SEED = 0
#: The progress line's words when that order is tried (a caller's record of how an answer
#: was reached can look for them).
ANNEALING = "trying an annealed contraction tree"
#: A plan that fits has its domains reduced (``log Z`` and marginals) when its clique
#: tables hold at least this many times the entries (and factors) of the model's tables:
#: the reduction visits each table a few times in Python (3-10 µs per factor), the pass
#: costs 10-40 ns per clique entry, so the reduction then costs a few percent at most.
REDUCE_ABOVE = 1000
#: ... and is replanned only when the plan's own cliques on the kept states would hold at
#: most this fraction of its entries (removed states in small cliques do not pay a plan).
REDUCE_SHRINK = 0.8

Progress = Callable[[str], None] | None
factor_marginals = elimination.factor_marginals
sample = elimination.sample


def _plan(model: FactorGraph, task: str, order: list[int] | None = None,
          check: bool = False, memory: float | None = None, anneal: int | None = None,
          give_up: float | None = None) -> elimination.EliminationPlan:
    return elimination.EliminationPlan(model, barren=task == "PR", check=check,
                                       upward_only=task == "PR", order=order, memory=memory,
                                       anneal=anneal, give_up=give_up)


@renamed_argument("max_seconds", "time_limit")
def give_up(model: FactorGraph, task: str, time_limit: float = MAX_SECONDS) -> float | None:
    """Log entries of a largest clique table past which no order of ``model`` can be
    answered, even sliced, within ``time_limit`` (``None`` where that cannot be known in
    advance).

    Slicing ``S`` leaves the graph without ``S``, whose treewidth is at least the whole
    graph's minus ``|S|``, so the slices' tables and their number multiply to at least the
    largest table that the treewidth's lower bound guarantees: the work of every slicing is
    at least that table's entries times :data:`SECONDS_PER_ENTRY`. That holds where a
    slice's graph is the model's without the sliced variables: not where tables have zeros
    (each slice's domains are reduced again) nor, for ``log Z``, where a variable is held
    by one factor only (a slice may drop it as a barren table).

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    task : str
        One of :data:`TASKS`.
    time_limit : float, default 600.0
        The seconds the sliced work may take (:data:`MAX_SECONDS`).

    Returns
    -------
    float or None
        The natural log of the number of entries, or ``None``.
    """
    check_instance(model, FactorGraph, "model")
    if _has_zeros(model):
        return None
    if task == "PR" and model.scopes:
        held = np.bincount(np.concatenate([np.asarray(s, dtype=np.int64)
                                           for s in model.scopes]), minlength=model.n)
        if np.any(held == 1):
            return None
    return math.log(time_limit / SECONDS_PER_ENTRY[task])


def _refuse_hopeless(jt: elimination.EliminationPlan, task: str, time_limit: float,
                     budget: float) -> None:
    """Refuse a model none of whose orders fits in memory or would be sliced within
    ``time_limit`` (:func:`give_up`), before any order search or slicing."""
    least = math.exp(jt.log_table_lower_bound)
    raise ValueError(
        f"exact inference (treewidth >= {jt.treewidth_lower_bound}: every elimination order "
        f"has a clique table of at least {format_bytes(8.0 * least)}) does not fit in "
        f"{format_bytes(budget)}, and slicing it would take at least "
        f"{least * SECONDS_PER_ENTRY[task]:.3g} s, beyond the limit of {time_limit:.0f} s")


def _answer(model: FactorGraph, jt: elimination.EliminationPlan, task: str) -> tuple:
    """``(log Z or the best log-weight, marginals / state / None)`` of a fitting plan;
    ``Z = 0`` gives ``(-inf, None)``."""
    if task == "PR":
        return elimination.log_partition(model, jt), None
    if task == "MAR":
        out, logz = elimination.marginals_and_log_partition(model, jt, zero_ok=True)
        return logz, out
    x, best = elimination.map_assignment(model, jt, zero_ok=True)
    return best, x


def _expand(dom: Domains | None, task: str, value: float, out: Any) -> tuple:
    """An answer on the reduced domains on the original states (``dom`` ``None``: not
    reduced)."""
    if out is None or dom is None or dom.removed == 0:
        return value, out
    if task == "MAR":
        return value, [dom.expand(v, p) for v, p in enumerate(out)]
    return value, dom.states(out)


def _fits(jt: elimination.EliminationPlan, memory: float | None) -> bool:
    if memory is None:
        return jt.fits
    return jt.order is not None and jt.memory_bytes() <= memory


def _slice_answer(model: FactorGraph, task: str, order: list[int]) -> tuple:
    """``(value, answer)`` of one slice: domains reduced, then planned on ``order``
    (refused if it does not fit); ``Z = 0`` gives ``(-inf, None)``."""
    dom, jt = _slice_plan(model, task, order, check=True)
    if jt is None:
        return -math.inf, None
    return _expand(dom, task, *_answer(dom.model, jt, task))


def _slice_plan(model: FactorGraph, task: str, order: list[int], check: bool = False
                ) -> tuple[Domains, elimination.EliminationPlan | None]:
    """One slice's reduced domains and its plan on them and ``order`` (``None`` when
    ``Z = 0``)."""
    dom = reduce_domains(model)
    return dom, None if dom.empty else _plan(dom.model, task, order, check=check)


def _slices(model: FactorGraph, card: Any, sliced: list[int]
            ) -> Iterator[tuple[dict[int, int], FactorGraph]]:
    """``(clamped values, model conditioned on them)`` of every joint state of ``sliced``."""
    for state in itertools.product(*(range(int(card[v])) for v in sliced)):
        at = dict(zip(sliced, state))
        yield at, model.condition(at)


def _check_positive_number(value: Any, name: str, what: str) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a real number above 0 (``inf``
    allowed: no limit); text, ``None`` and ``bool`` are not numbers here."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not value > 0):
        raise ValueError(f"{name} must be {what}, got {value!r}")


@renamed_argument("max_seconds", "time_limit")
@checked
def solve(model: FactorGraph, task: str, *, time_limit: float = MAX_SECONDS,
          memory: float | None = None, progress: Progress = None,
          anneal: int = ANNEAL_SEED) -> tuple:
    """The value and answer of ``task`` on ``model``, within memory and a time estimate.

    Tries the plain plan, then reduced domains, then slicing, each plan held to ``memory``
    bytes; where the slices would be refused, the plan on an order annealed with the seed
    ``anneal``.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied (a ``TypeError`` naming ``model`` otherwise).
    task : {"PR", "MAR", "MPE"}
        One of :data:`TASKS`: the partition function, the marginals or a most probable
        state.
    time_limit : float, default 600.0
        Limit, in seconds, on the *estimated* time of a sliced computation
        (:data:`MAX_SECONDS`, 600 s): a positive number (``inf``: no limit). It is checked
        against the estimate before any slice is solved, not against the wall clock.
    memory : float or None, default None
        Bytes each plan is held to (a positive number); ``None``: the memory available.
    progress : callable or None, default None
        Called with a line of text when the model is sliced or annealed, and at each
        slice (``None``: silent).
    anneal : int, default 0
        Seed (a non-negative int) of the annealed order tried where the slices would be
        refused (:data:`ANNEAL_SEED`, 0); another seed, another order: an independent check of an
        answer.

    Returns
    -------
    tuple
        ``PR`` gives ``(log Z, None)``, ``MAR`` ``(log Z, marginals)`` (a list of one
        ``(|X_i|,)`` array per variable), ``MPE`` ``(best log-weight, state)`` (``int64``
        states, shape ``(n,)``); ``Z = 0`` gives ``(-inf, None)``.

    Raises
    ------
    ValueError
        When the slices' estimated time exceeds ``time_limit`` (with the estimate), or no
        order with clique tables of at most ``2^48`` entries is found; at once, before any
        order search, where a lower bound on the treewidth shows that no order fits in
        memory and none would be sliced in time (:func:`give_up`).
    """
    check_instance(model, FactorGraph, "model")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    _check_positive_number(time_limit, "time_limit", "a positive number of seconds")
    if memory is not None:
        _check_positive_number(memory, "memory", "a positive number of bytes")
    anneal = int(check_positive(anneal, "anneal", allow_zero=True, integer=True))
    hopeless = give_up(model, task, float(time_limit))
    jt = _plan(model, task, memory=memory, give_up=hopeless)
    if not _fits(jt, memory) and jt.hopeless:
        _refuse_hopeless(jt, task, float(time_limit),
                         0.9 * available_memory() if memory is None else float(memory))
    if _fits(jt, memory):
        smaller = _reduced_plan(model, jt, task, memory)
        if smaller is None:
            return _answer(model, jt, task)
        dom, red_jt = smaller
        if dom.empty:
            return -math.inf, None
        return _expand(dom, task, *_answer(dom.model, red_jt, task))
    dom = reduce_domains(model) if _has_zeros(model) else None
    if dom is not None and dom.empty:
        return -math.inf, None
    reduced = model if dom is None else dom.model
    red_jt = _plan(reduced, task, memory=memory) if dom is not None and dom.removed else jt
    if _fits(red_jt, memory):
        return _expand(dom, task, *_answer(reduced, red_jt, task))
    budget = 0.9 * available_memory() if memory is None else float(memory)
    say = progress or (lambda _: None)
    say(f"{red_jt._what()} does not fit in {format_bytes(budget)}; slicing")
    answer = _sliced_or_annealed(reduced, red_jt, task, float(time_limit), budget, memory,
                                 anneal, say)
    return _expand(dom, task, *answer)


def _sliced_or_annealed(model: FactorGraph, jt: elimination.EliminationPlan, task: str,
                        time_limit: float, budget: float, memory: float | None,
                        anneal: int, say: Callable[[str], None]) -> tuple:
    """The answer of ``jt``'s slices; where they are refused, of the plan on an order
    annealed with the seed ``anneal``, whole if it fits, else sliced; if that is refused
    too, the first refusal with the second (see the module's notes)."""
    try:
        return _sliced(model, jt, task, time_limit, budget, say)
    except ValueError as exc:
        refused = str(exc)
    say(f"{refused}; {ANNEALING}")
    annealed = _plan(model, task, memory=memory, anneal=anneal)
    if annealed.order is None or annealed.order == jt.order:
        raise ValueError(f"{refused}; annealing gave no other order")
    if _fits(annealed, memory):
        say(f"{annealed._what()} fits")
        return _answer(model, annealed, task)
    try:
        return _sliced(model, annealed, task, time_limit, budget, say)
    except ValueError as exc:
        raise ValueError(f"{refused}; on the annealed order: {exc}") from None


def _has_zeros(model: FactorGraph) -> bool:
    """Some table has a zero entry: only then can :func:`reduce_domains` remove a state
    (without one, its state lists would cost a pass over every domain for nothing)."""
    return any(np.isneginf(t).any() for t in model.log_tables)


def _reduced_plan(model: FactorGraph, jt: elimination.EliminationPlan, task: str,
                  memory: float | None
                  ) -> tuple[Domains, elimination.EliminationPlan | None] | None:
    """``(domains, plan on them)`` when reducing the domains of a model whose plan ``jt``
    fits makes its clique tables smaller (plan ``None`` when ``Z = 0``); ``None`` when it
    does not or would not pay (:data:`REDUCE_ABOVE`). Not for MPE, whose ties keep the
    state they always had."""
    entries = jt.total_bytes / 8
    if (task == "MPE" or entries < REDUCE_ABOVE * (model.n_factors + model.table_bytes() / 8)
            or float(np.sum(model.cardinalities, dtype=np.float64)) > entries
            or not _has_zeros(model)):
        return None  # not worth it, a state list longer than the tables, or no zeros
    dom = reduce_domains(model)
    if dom.empty:
        return dom, None
    if not dom.removed:
        return None
    kept = [len(k) for k in dom.kept]
    if sum(math.prod(kept[v] for v in c) for c in jt.cliques) > REDUCE_SHRINK * entries:
        return None
    red_jt = _plan(dom.model, task, memory=memory)
    if not _fits(red_jt, memory) or red_jt.total_bytes >= jt.total_bytes:
        return None
    return dom, red_jt


def _sliced_cost(jt: elimination.EliminationPlan, sliced: list[int],
                 task: str) -> tuple[float, float]:
    """``(bytes, entries)`` of one slice: the plan's order with ``sliced`` clamped."""
    gone = set(sliced)
    card = jt.red.card
    adj = eo.interaction_graph(len(card), [tuple(v for v in s if v not in gone)
                                           for s in jt.red.scopes])
    order = [v for v in jt.order if v not in gone]
    logc = np.log(card.astype(np.float64)).tolist()
    cliques, _, total = eo.order_cliques(adj, order, logc)
    cliques = [tuple(c) for c in cliques]
    if not cliques:
        return 0.0, 0.0
    _, children, shapes = elimination.clique_tree(cliques, card)
    if task == "PR":
        return elimination.upward_peak_bytes(shapes, children), total
    sizes = [8.0 * math.prod(s) for s in shapes]
    messages = sum(z / s[0] for z, s in zip(sizes, shapes))
    return 2.0 * messages + 4.0 * max(sizes), total


def choose_slices(jt: elimination.EliminationPlan, task: str, budget: float
                  ) -> tuple[list[int], float, float]:
    """Variables to slice so that one slice of ``jt`` fits in ``budget`` bytes.

    Greedy: the variable of the largest clique left whose cliques hold the most entries.
    At most :data:`MAX_SLICED`.

    Parameters
    ----------
    jt : EliminationPlan
        A plan with an order (:class:`~mrflib.inference.exact.elimination_plan.EliminationPlan`).
    task : str
        One of :data:`TASKS` (``PR`` sizes one upward pass, the others a calibration).
    budget : float
        Bytes one slice may use.

    Returns
    -------
    variables : list of int
        The variables to slice, in the order chosen (empty when the whole plan fits).
    bytes : float
        Peak bytes of one slice; above ``budget`` when :data:`MAX_SLICED` variables did
        not suffice.
    entries : float
        Clique-table entries of one slice.
    """
    card = jt.red.card
    sliced: list[int] = []
    need, entries = _sliced_cost(jt, sliced, task)
    while need > budget and len(sliced) < MAX_SLICED:
        gone = set(sliced)
        left = [tuple(v for v in c if v not in gone) for c in jt.cliques]
        sizes = [math.prod(int(card[v]) for v in c) for c in left]
        weight: dict[int, float] = {}
        for c, z in zip(left, sizes):
            for v in c:
                weight[v] = weight.get(v, 0.0) + z
        largest = left[int(np.argmax(sizes))]
        sliced.append(max(largest, key=lambda v: (weight[v] * (1 - 1 / card[v]), -v)))
        need, entries = _sliced_cost(jt, sliced, task)
    return sliced, need, entries


def _sliced(model: FactorGraph, jt: elimination.EliminationPlan, task: str,
            time_limit: float, budget: float, say: Callable[[str], None]) -> tuple:
    if jt.order is None:
        raise ValueError(f"{jt._what()} does not fit in memory, and no order to slice "
                         "was found")
    sliced, need, entries = choose_slices(jt, task, budget)
    card = jt.red.card
    count = math.prod(int(card[v]) for v in sliced)
    estimate = count * entries * SECONDS_PER_ENTRY[task]
    what = (f"{jt._what()} sliced over {len(sliced)} variables ({count} slices of "
            f"{format_bytes(need)} each, {entries:.3g} table entries per slice)")
    if need > budget:
        raise ValueError(f"{what} still does not fit in {format_bytes(budget)}")
    if estimate > time_limit and count <= MAX_SCANNED:
        say(f"{what}: at most {estimate:.0f} s; counting each slice's entries on its "
            "reduced domains")
        scanned = _scanned_entries(model, jt, task, sliced)
        estimate = scanned * SECONDS_PER_ENTRY[task]
        what += f", {scanned:.3g} table entries in all on the slices' reduced domains"
    if estimate > time_limit:
        raise ValueError(f"{what} would take about {estimate:.0f} s, beyond the limit of "
                         f"{time_limit:.0f} s")
    say(f"{what}: about {estimate:.0f} s")
    values, answers = [], []
    for i, (at, part) in enumerate(_slices(model, card, sliced)):
        value, out = _slice_answer(part, task, jt.order)
        values.append(value)
        answers.append(out)
        say(f"slice {i + 1}/{count} {at}: {value:.6g}")
    return _combine(task, values, answers)


def _scanned_entries(model: FactorGraph, jt: elimination.EliminationPlan, task: str,
                     sliced: list[int]) -> float:
    """Clique-table entries of every slice of ``model`` over ``sliced``, each planned on
    its reduced domains and ``jt``'s order as :func:`_slice_answer` plans it (a slice with
    ``Z = 0`` counts nothing): the work of the sliced computation."""
    plans = (_slice_plan(part, task, jt.order)[1] for _, part in _slices(model, jt.red.card,
                                                                         sliced))
    return float(sum(p.total_bytes / 8.0 for p in plans if p is not None))


def _combine(task: str, values: list[float], answers: list) -> tuple:
    """The slices' answers as one: ``log Σ exp``, the ``Z_s``-weighted marginals, or the
    best state."""
    v = np.asarray(values)
    if task == "MPE":
        best = int(np.argmax(v))
        return float(v[best]), answers[best]
    if np.all(v == -np.inf):
        return -math.inf, None
    top = float(np.max(v))
    logz = top + math.log(float(np.sum(np.exp(v - top))))
    if task == "PR":
        return logz, None
    weights = np.exp(v - logz)
    out = None
    for w, a in zip(weights.tolist(), answers):
        if a is not None and w > 0:
            out = [w * p for p in a] if out is None else [o + w * p for o, p in zip(out, a)]
    return logz, [p / p.sum() for p in out]


@renamed_argument("max_seconds", "time_limit")
@checked
def log_partition(model: FactorGraph, *, time_limit: float = MAX_SECONDS,
                  memory: float | None = None, progress: Progress = None,
                  anneal: int = ANNEAL_SEED) -> float:
    """``log Z`` (:func:`mrflib.inference.exact.elimination.log_partition` when its plan fits, else
    with reduced domains, else sliced).

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied (a ``TypeError`` naming ``model`` otherwise).
    time_limit : float, default 600.0
        Limit, in seconds, on the *estimated* time of a sliced computation
        (:data:`MAX_SECONDS`, 600 s): a positive number (``inf``: no limit). It is checked
        against the estimate before any slice is solved, not against the wall clock.
    memory : float or None, default None
        Bytes each plan is held to (a positive number); ``None``: the memory available.
    progress : callable or None, default None
        Called with a line of text when the model is sliced or annealed, and at each
        slice (``None``: silent).
    anneal : int, default 0
        Seed (a non-negative int) of the annealed order tried where the slices would be
        refused (:data:`ANNEAL_SEED`, 0); another seed, another order: an independent check
        of an answer.

    Returns
    -------
    float
        The natural log of the partition function; ``-inf`` when ``Z = 0``.

    Raises
    ------
    ValueError
        When the slices' estimated time exceeds ``time_limit`` (with the estimate), or no
        order with clique tables of at most ``2^48`` entries is found; at once, before any
        order search, where a lower bound on the treewidth shows that no order fits in
        memory and none would be sliced in time (:func:`give_up`).
    """
    return solve(model, "PR", time_limit=time_limit, memory=memory,
                 progress=progress, anneal=anneal)[0]


@renamed_argument("max_seconds", "time_limit")
@checked
def marginals(model: FactorGraph, *, time_limit: float = MAX_SECONDS,
              memory: float | None = None, progress: Progress = None,
              anneal: int = ANNEAL_SEED) -> list[np.ndarray]:
    """``P(x_i)`` for every variable, as :func:`mrflib.inference.exact.elimination.marginals`,
    beyond memory too.

    Parameters
    ----------
    model, time_limit, memory, progress, anneal
        As in :func:`log_partition`.

    Returns
    -------
    list of ndarray of float64
        One ``(|X_i|,)`` array per variable (an observed variable: a point mass).

    Raises
    ------
    ValueError
        As :func:`log_partition` raises it.
        Also when ``Z = 0`` (e.g. impossible evidence): the marginals are undefined.
    """
    logz, out = solve(model, "MAR", time_limit=time_limit, memory=memory,
                 progress=progress, anneal=anneal)
    if out is None:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): its marginals are undefined")
    return out


@renamed_argument("max_seconds", "time_limit")
@checked
def map_assignment(model: FactorGraph, *, time_limit: float = MAX_SECONDS,
                   memory: float | None = None, progress: Progress = None,
                   anneal: int = ANNEAL_SEED) -> tuple[np.ndarray, float]:
    """A most probable state and its log-weight, as
    :func:`mrflib.inference.exact.elimination.map_assignment`, beyond memory too.

    Parameters
    ----------
    model, time_limit, memory, progress, anneal
        As in :func:`log_partition`.

    Returns
    -------
    x : ndarray of int64, shape (n,)
        A most probable state.
    log_weight : float
        Its log-weight ``Σ_k θ_k(x_{S_k})``.

    Raises
    ------
    ValueError
        As :func:`log_partition` raises it.
        Also when ``Z = 0`` (e.g. impossible evidence): there is no most probable state.
    """
    best, x = solve(model, "MPE", time_limit=time_limit, memory=memory,
                 progress=progress, anneal=anneal)
    if x is None:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): it has no most probable state")
    return x, best
