"""Exact reductions of a MAP problem: zeros propagated, small buckets eliminated, parts split.

::

    red = map_reduction.reduce_map(model)            # red.constant + Σ max of red.parts
    states = [solve(part) for part in red.parts]      # any MAP method on each part
    x = red.expand(states)                            # a state of model, weight:
    model.log_weight(x) == red.constant + Σ part.log_weight(state)

None of the steps changes the largest log-weight or loses a most probable state:

1. *Zeros propagated.* A value of a variable that no row of positive weight of some factor
   supports (given the values left to the factor's other variables) is in no state of
   positive weight; removing it and repeating until nothing changes is generalized arc
   consistency (Mackworth 1977). An emptied domain proves ``Z = 0``. The domains shrink to
   the values left, and a variable left with one value is fixed and sliced out of its
   factors (observed variables are such variables).
2. *Small buckets eliminated.* A variable whose bucket (the factors holding it) joins into
   a table of at most ``max_entries`` entries once the variable is maximized out is
   eliminated exactly by max-product, cheapest first (a variable of one factor, such as a
   barren unobserved leaf of a Bayesian network, costs least; a chain of degree-2
   variables folds into one factor). Its argmax given the rest of its bucket is kept, so
   any state of what is left extends to one of the whole model with the same weight.
3. *Parts split.* The factors left fall into connected components; the largest log-weight
   of a disconnected model is the sum of its components' largest log-weights, so each
   part is solved on its own (exactly where it is small enough, often the case once the
   evidence is propagated).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_instance
from mrflib.inference.approx.map_dual import dual_bound
from mrflib.inference.approx.map_moves import propagated_moves
from mrflib.inference.approx.map_search import feasible_state, local_search
from mrflib.inference.approx.max_mini_bucket import bound_meets, branch_and_bound
from mrflib.inference.approx.result import MapIncumbent
from mrflib.inference.exact import elimination
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["MapReduction", "reduce_map", "exact_parts", "local_search_parts",
           "propagated_moves_parts", "PartsSearch", "dual_branch_and_bound_parts",
           "DUAL_SHARE", "DESCENT_SHARE", "PARTS_SEARCH_MEMORY", "REDUCTION_ENTRIES",
           "EXACT_ENTRIES_PER_SECOND", "solve_reduced", "moves_on_parts", "dual_on_parts"]

#: Largest table (entries) a bucket elimination of :func:`reduce_map` may make by default.
REDUCTION_ENTRIES = 1 << 10
#: Max-product table entries per second assumed by :func:`exact_parts` (conservative).
EXACT_ENTRIES_PER_SECOND = 5e6


@dataclass(frozen=True)
class MapReduction:
    """A MAP problem reduced by :func:`reduce_map`.

    Attributes
    ----------
    n : int
        Variables of the original model.
    constant : float
        The log-weight the reduction took out of the model (fixed variables, eliminated
        buckets); ``-inf`` when it proved ``Z = 0`` (then ``parts`` is empty).
    parts : tuple of FactorGraph
        The connected parts left, over variables renumbered from 0 and domains shrunk to
        the values left: ``max_x log w(x) = constant + Σ_p max_y parts[p].log_weight(y)``.
    variables : tuple of ndarray
        For each part, the original index of each of its variables.
    fixed : int
        Variables fixed by the evidence and the zeros.
    eliminated : int
        Variables eliminated by max-product (those of no factor included).
    """

    n: int
    constant: float
    parts: tuple[FactorGraph, ...]
    variables: tuple[np.ndarray, ...]
    fixed: int
    eliminated: int
    _values: list = field(repr=False, default_factory=list)
    _trail: list = field(repr=False, default_factory=list)

    @property
    def infeasible(self) -> bool:
        """Whether the reduction proved that every state has zero weight."""
        return not self.constant > -math.inf

    def expand(self, states: Sequence[Any]) -> np.ndarray:
        """The state of the original model that extends a state of each part.

        Parameters
        ----------
        states : sequence of array_like of int
            One state per part (``parts[p].n`` values each, in the part's shrunk domains).

        Returns
        -------
        ndarray of int64, shape (n,)
            The original model's state: its log-weight is ``constant`` plus the parts'
            log-weights of ``states``.
        """
        if self.infeasible:
            raise ValueError("the model has Z = 0 (proven by the reduction): no state to "
                             "expand")
        if len(states) != len(self.parts):
            raise ValueError(f"states must hold one state per part ({len(self.parts)}), got "
                             f"{len(states)}")
        idx = np.zeros(self.n, dtype=np.int64)  # fixed variables: their one value left
        for p, (part, x) in enumerate(zip(self.parts, states)):
            x = np.asarray(x)
            if x.shape != (part.n,):
                raise ValueError(f"states[{p}] must have shape ({part.n},), got {x.shape}")
            idx[self.variables[p]] = x
        for v, scope, arg in reversed(self._trail):
            idx[v] = arg[tuple(idx[list(scope)])] if scope else arg
        return np.array([self._values[v][idx[v]] for v in range(self.n)], dtype=np.int64)

    def project(self, state: Any) -> list[np.ndarray]:
        """Each part's state of a state of the model of positive weight (its values of the
        parts' variables): :meth:`expand` of it weighs at least as much as ``state``, the
        eliminated variables being set to their best values.

        Parameters
        ----------
        state : array_like of int, shape (n,)
            A state of the original model of positive weight (its values are all left by
            the zeros' propagation).

        Returns
        -------
        list of ndarray of int64
            One state per part, in the part's shrunk domains.
        """
        x = np.asarray(state, dtype=np.int64)
        if x.shape != (self.n,):
            raise ValueError(f"state must have shape ({self.n},), got {x.shape}")
        out = []
        for vs in self.variables:
            y = np.empty(len(vs), dtype=np.int64)
            for i, v in enumerate(vs.tolist()):
                at = np.flatnonzero(self._values[v] == x[v])
                if not at.size:
                    raise ValueError(f"state gives variable {v} the value {x[v]}, which no "
                                     "state of positive weight has")
                y[i] = at[0]
            out.append(y)
        return out


#: Steps of :func:`reduce_map` between two looks at the clock.
CLOCK_STEPS = 256


class _Deadline:
    """A deadline looked at every :data:`CLOCK_STEPS` steps (``TimeoutError`` past it)."""

    def __init__(self, seconds: float | None) -> None:
        if seconds is not None and not (isinstance(seconds, (int, float, np.floating))
                                        and not isinstance(seconds, bool)
                                        and seconds >= 0):
            raise ValueError(f"deadline must be None or a non-negative number of seconds, "
                             f"got {seconds!r}")
        self.stop = math.inf if seconds is None else time.perf_counter() + float(seconds)
        self.steps = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps % CLOCK_STEPS == 0 and time.perf_counter() >= self.stop:
            raise TimeoutError("the reduction for MAP did not end within its deadline")


class _Factors:
    """The working factors: scopes, tables, and each variable's holders."""

    def __init__(self, n: int) -> None:
        self.scopes: dict[int, tuple[int, ...]] = {}
        self.tables: dict[int, np.ndarray] = {}
        self.holders: list[set[int]] = [set() for _ in range(n)]
        self.next = 0

    def add(self, scope: tuple[int, ...], table: np.ndarray) -> int:
        k = self.next
        self.next += 1
        self.scopes[k], self.tables[k] = scope, table
        for v in scope:
            self.holders[v].add(k)
        return k

    def drop(self, k: int) -> None:
        for v in self.scopes.pop(k):
            self.holders[v].discard(k)
        del self.tables[k]


def _propagate(card: np.ndarray, fs: _Factors, clock: _Deadline
               ) -> list[np.ndarray] | None:
    """The values left to each variable by arc consistency on the zeros (``None``: a
    domain emptied, ``Z = 0``)."""
    alive = [np.ones(int(c), dtype=np.bool_) for c in card]
    queue = list(fs.scopes)
    queued = set(queue)
    while queue:
        k = queue.pop()
        queued.discard(k)
        clock.tick()
        scope, table = fs.scopes[k], fs.tables[k]
        sub = table[np.ix_(*[alive[v] for v in scope])] > -np.inf
        for a, v in enumerate(scope):
            others = tuple(b for b in range(len(scope)) if b != a)
            supported = np.any(sub, axis=others) if others else sub
            if supported.all():
                continue
            alive[v][np.flatnonzero(alive[v])[~supported]] = False
            if not alive[v].any():
                return None
            sub = sub.compress(supported, axis=a)
            for j in fs.holders[v]:
                if j != k and j not in queued:
                    queued.add(j)
                    queue.append(j)
    return alive


def _shrink(fs: _Factors, alive: list[np.ndarray]) -> float:
    """Every table cut to the values left, fixed variables sliced out; the log-weight of
    the factors left with no variable."""
    constant = 0.0
    for k in list(fs.scopes):
        scope, table = fs.scopes[k], fs.tables[k]
        if not all(alive[v].all() for v in scope):
            table = table[np.ix_(*[alive[v] for v in scope])]
        keep = tuple(v for v in scope if alive[v].sum() > 1)
        if len(keep) < len(scope):
            table = table[tuple(slice(None) if v in keep else 0 for v in scope)]
        fs.drop(k)
        if keep:
            fs.add(keep, np.asarray(table, dtype=np.float64))
        else:
            constant += float(table)
    return constant


def _bucket(fs: _Factors, card: np.ndarray, v: int) -> tuple[tuple[int, ...], int]:
    """The scope a max over ``v`` leaves of its bucket, and its table's entries."""
    rest = sorted({u for k in fs.holders[v] for u in fs.scopes[k]} - {v})
    return tuple(rest), math.prod(int(card[u]) for u in rest)


def _eliminate(fs: _Factors, card: np.ndarray, v: int, rest: tuple[int, ...]
               ) -> tuple[np.ndarray, np.ndarray]:
    """The bucket of ``v`` joined and maximized over ``v`` (its factors replaced by the
    result): the max table over ``rest`` and the argmax."""
    axes = rest + (v,)
    joint = np.zeros(tuple(int(card[u]) for u in axes))
    for k in list(fs.holders[v]):
        scope, table = fs.scopes[k], fs.tables[k]
        order = sorted(range(len(scope)), key=lambda a: axes.index(scope[a]))
        shape = [1] * len(axes)
        for a in order:
            shape[axes.index(scope[a])] = int(card[scope[a]])
        joint = joint + np.transpose(table, order).reshape(shape)
        fs.drop(k)
    return joint.max(axis=-1), joint.argmax(axis=-1)


def reduce_map(model: FactorGraph | BoltzmannMachine, *,
               max_entries: int = REDUCTION_ENTRIES, deadline: float | None = None
               ) -> MapReduction:
    """The model reduced for MAP: zeros propagated, small buckets eliminated, parts split
    (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied (a Boltzmann machine is taken as its factor graph,
        state 0 is spin -1).
    max_entries : int, default REDUCTION_ENTRIES
        Largest table a bucket elimination may make (0: no elimination but of the
        variables of no factor).
    deadline : float, optional
        Seconds from the call after which the reduction stops (it looks at the clock
        every :data:`CLOCK_STEPS` factors or eliminations).

    Returns
    -------
    MapReduction
        The constant, the parts left, and how to extend their states to the model's.

    Raises
    ------
    TimeoutError
        When the deadline passes first.
    """
    fg = as_factor_graph(model)
    clock = _Deadline(deadline)
    if isinstance(max_entries, bool) or not isinstance(max_entries, (int, np.integer)) \
            or max_entries < 0:
        raise ValueError(f"max_entries must be a non-negative int, got {max_entries!r}")
    card = np.asarray(fg.cardinalities, dtype=np.int64)
    fs = _Factors(fg.n)
    constant = 0.0
    for s, t in zip(fg.scopes, fg.log_tables):
        if s:
            fs.add(tuple(s), np.asarray(t, dtype=np.float64))
        else:
            constant += float(t)
    alive = _propagate(card, fs, clock) if constant > -math.inf else None
    if alive is None:
        return MapReduction(fg.n, -math.inf, (), (), 0, 0)
    values = [np.flatnonzero(a) for a in alive]
    constant += _shrink(fs, alive)
    small = np.array([len(x) for x in values], dtype=np.int64)
    fixed = int(np.count_nonzero(small == 1))
    trail: list[tuple[int, tuple[int, ...], Any]] = []
    free = [v for v in range(fg.n) if small[v] > 1]
    heap = [(_bucket(fs, small, v)[1], v) for v in free]
    heapq.heapify(heap)
    gone = np.zeros(fg.n, dtype=np.bool_)
    while heap and constant > -math.inf:
        entries, v = heapq.heappop(heap)
        clock.tick()
        if gone[v]:
            continue
        rest, now = _bucket(fs, small, v)
        if now != entries:  # its bucket changed since it was queued
            heapq.heappush(heap, (now, v))
            continue
        if now > max_entries and fs.holders[v]:
            break  # the cheapest left is too large: so is every other
        neighbours = rest
        table, arg = _eliminate(fs, small, v, rest)
        gone[v] = True
        trail.append((v, rest, arg if rest else int(arg)))
        if rest:
            fs.add(rest, table)
        else:
            constant += float(table)
        for u in neighbours:
            heapq.heappush(heap, (_bucket(fs, small, u)[1], u))
    if not constant > -math.inf:
        return MapReduction(fg.n, -math.inf, (), (), fixed, len(trail))
    parts, variables = _split(fs, small)
    if any(not np.any(t > -np.inf) for t in fs.tables.values()):
        return MapReduction(fg.n, -math.inf, (), (), fixed, len(trail))
    return MapReduction(fg.n, constant, parts, variables, fixed, len(trail), values, trail)


def _split(fs: _Factors, card: np.ndarray) -> tuple[tuple[FactorGraph, ...],
                                                      tuple[np.ndarray, ...]]:
    """The connected parts of the factors left, each a model of its own."""
    parent = {v: v for s in fs.scopes.values() for v in s}

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for s in fs.scopes.values():
        for u in s[1:]:
            a, b = root(u), root(s[0])
            if a != b:
                parent[a] = b
    groups: dict[int, list[int]] = {}
    for v in sorted(parent):
        groups.setdefault(root(v), []).append(v)
    factors: dict[int, list[int]] = {}
    for k, s in fs.scopes.items():
        factors.setdefault(root(s[0]), []).append(k)
    parts, variables = [], []
    for r, vs in sorted(groups.items(), key=lambda g: (len(g[1]), g[1][0])):
        local = {v: i for i, v in enumerate(vs)}
        ks = factors[r]
        parts.append(FactorGraph(card[vs], [tuple(local[v] for v in fs.scopes[k]) for k in ks],
                                 [fs.tables[k] for k in ks]))
        variables.append(np.array(vs, dtype=np.int64))
    return tuple(parts), tuple(variables)


def _greedy_entries(part: FactorGraph, budget: float) -> float:
    """The clique table entries of a min-size greedy elimination of ``part``'s interaction
    graph (tables not built), counted until they pass ``budget``."""
    card = [int(c) for c in part.cardinalities]
    adj: list[set[int]] = [set() for _ in range(part.n)]
    for s in part.scopes:
        for v in s:
            adj[v].update(s)
    for v in range(part.n):
        adj[v].discard(v)
    heap = [(math.prod(card[u] for u in adj[v]) * card[v], v) for v in range(part.n)]
    heapq.heapify(heap)
    done = [False] * part.n
    total = 0.0
    while heap and total <= budget:
        size, v = heapq.heappop(heap)
        if done[v]:
            continue
        now = math.prod(card[u] for u in adj[v]) * card[v]
        if now != size:
            heapq.heappush(heap, (now, v))
            continue
        done[v] = True
        total += now
        for u in adj[v]:
            adj[u].discard(v)
            adj[u].update(w for w in adj[v] if w != u)
        for u in adj[v]:
            heapq.heappush(heap, (math.prod(card[w] for w in adj[u]) * card[u], u))
        adj[v] = set()
    return total


def _check_reduction(red: Any, refused: str | None = None, report: Any = None) -> None:
    """``red`` a :class:`MapReduction`, feasible where ``refused`` names what it cannot give
    otherwise, and ``report`` ``None`` or callable, else the error naming them."""
    if not isinstance(red, MapReduction):
        raise TypeError(f"red must be a MapReduction, got {type(red).__name__}")
    if refused is not None and red.infeasible:
        raise ValueError(f"the model has Z = 0 (proven by the reduction): {refused}")
    if report is not None and not callable(report):
        raise TypeError(f"report must be callable or None, got {type(report).__name__}")


def _starts(red: MapReduction, state: Any) -> list[np.ndarray]:
    """Each part's start: ``state`` projected, or (``None``) the state
    :func:`~mrflib.inference.approx.map_search.feasible_state` finds on the part."""
    if state is not None:
        return red.project(state)
    states = []
    for part in red.parts:
        y = feasible_state(part)
        if y is None:  # a reduction's part always has one; no search proves otherwise
            raise ValueError("a reduced part has no state of positive weight")
        states.append(y)
    return states


def _share(deadline: float | None, part: FactorGraph, total: int) -> float | None:
    """``part``'s share of ``deadline`` seconds, in proportion to its variables of ``total``."""
    return None if deadline is None else max(0.0, deadline) * part.n / total


def exact_parts(red: MapReduction, seconds: float | None = None) -> np.ndarray | None:
    """A most probable state of the reduced model by max-product elimination of each part,
    or ``None`` when some part's plan (greedy orders, no order search) does not fit in
    memory or, estimated at :data:`EXACT_ENTRIES_PER_SECOND`, in ``seconds`` for all parts.

    Parameters
    ----------
    red : MapReduction
        A feasible reduction (:func:`reduce_map`).
    seconds : float or None, default None
        Time the eliminations may take together (``None``: any).

    Returns
    -------
    ndarray of int64, shape (red.n,), or None
        A most probable state of the original model (:meth:`MapReduction.expand`).
    """
    _check_reduction(red, "no most probable state")
    plans, entries = [], 0.0
    budget = math.inf if seconds is None else seconds * EXACT_ENTRIES_PER_SECOND
    if sum(_greedy_entries(p, budget) for p in red.parts) > budget:
        return None  # planning a part far too wide takes seconds: refused at once
    for part in red.parts:
        try:
            plan = elimination.plan(part, check=False, search=False)
        except (ValueError, MemoryError):
            return None
        if not plan.fits:
            return None
        entries += plan.total_bytes / 8.0
        if seconds is not None and entries / EXACT_ENTRIES_PER_SECOND > seconds:
            return None
        plans.append(plan)
    states = [elimination.map_assignment(part, jt=plan)[0]
              for part, plan in zip(red.parts, plans)]
    return red.expand(states)


def local_search_parts(red: MapReduction, state: Any, *, deadline: float | None = None,
                       perturbations: int = 0, rng: Any = None) -> np.ndarray:
    """A state of positive weight improved by local search on the reduced parts
    (:func:`mrflib.inference.approx.map_search.local_search` on each, from its projection).

    Where the evidence and the zeros make deterministic tables binding, moving one variable
    of the original model breaks a zero (a chain of a noisy-OR fixes each link given the
    others), so its local search stays where it starts; once such chains are eliminated,
    one move of a part changes a whole chain consistently.

    Parameters
    ----------
    red : MapReduction
        A feasible reduction (:func:`reduce_map`).
    state : array_like of int, shape (red.n,)
        The start, a state of positive weight of the original model.
    deadline : float or None, default None
        Seconds the search may take, shared by the parts in proportion to their variables
        (``None``: no limit).
    perturbations : int, default 0
        Perturbations of each part's local search.
    rng : seed or Generator or None, default None
        The randomness of the perturbations (required when ``perturbations > 0``).

    Returns
    -------
    ndarray of int64, shape (red.n,)
        The improved state of the original model (never of lower weight than
        ``state``'s expansion).
    """
    _check_reduction(red)
    starts = red.project(state)
    total = max(1, sum(p.n for p in red.parts))
    states = []
    for part, y in zip(red.parts, starts):
        r = local_search(part, y, deadline=_share(deadline, part, total),
                         perturbations=perturbations, rng=rng)
        states.append(r.state)
    return red.expand(states)


def propagated_moves_parts(red: MapReduction, state: Any, *, deadline: float | None = None,
                           rng: Any = None,
                           report: Callable[[np.ndarray, float], Any] | None = None
                           ) -> np.ndarray:
    """A state of positive weight improved by the iterated local search of propagated
    moves (:func:`mrflib.inference.approx.map_moves.propagated_moves`) on each reduced part,
    from its projection; the moves of a part fix one of its variables and let the zeros
    move the rest, which the deterministic tables left after the reduction require.

    Parameters
    ----------
    red : MapReduction
        A feasible reduction (:func:`reduce_map`).
    state : array_like of int, shape (red.n,), or None
        The start, a state of positive weight of the original model; ``None``: each part
        from the state :func:`mrflib.inference.approx.map_search.feasible_state` finds on
        it without a preferred state (values by decreasing score), often a better start
        than a state near the evidence and state 0 elsewhere.
    deadline : float or None, default None
        Seconds the search may take, shared by the parts in proportion to their variables
        (``None``: each part's first descent only).
    rng : seed or Generator or None, default None
        The order of the moves and the kicks (``None``: in increasing order, no kick).
    report : callable, optional
        Called as ``report(x, log_weight)`` with each state of the original model found
        better than every one before (``log_weight`` is the original model's).

    Returns
    -------
    ndarray of int64, shape (red.n,)
        The improved state of the original model (never of lower weight than
        ``state``'s expansion).
    """
    _check_reduction(red, "no state to improve", report)
    states = _starts(red, state)
    gen = None if rng is None else as_rng(rng)
    total = max(1, sum(p.n for p in red.parts))
    values = [float(p.log_weight(y)) for p, y in zip(red.parts, states)]
    for i, part in enumerate(red.parts):
        share = _share(deadline, part, total)

        def seen(y: np.ndarray, value: float, i: int = i) -> None:
            states[i], values[i] = y, value
            report(red.expand(states), red.constant + sum(values))

        r = propagated_moves(part, states[i], deadline=share, rng=gen,
                             report=None if report is None else seen)
        states[i], values[i] = r.state, r.log_weight
    return red.expand(states)


#: Share of each part's time that :func:`dual_branch_and_bound_parts` gives the dual bound
#: (the branch and bound gets the rest).
DUAL_SHARE = 0.5
#: Share of a part's time left after its dual bound that the descent of propagated moves
#: from the dual's decoding may take.
DESCENT_SHARE = 0.25
#: Bytes of the largest mini-bucket table of the branch and bound on a reparameterized part.
PARTS_SEARCH_MEMORY = 2**20


@dataclass(frozen=True)
class PartsSearch:
    """What :func:`dual_branch_and_bound_parts` found.

    Attributes
    ----------
    state : ndarray of int64, shape (n,)
        The best state of the original model found.
    log_weight : float
        Its log-weight, the reduction's constant plus its parts'.
    upper_bound : float
        A certified upper bound on the original model's largest log-weight: the constant
        plus, for each part, its best log-weight where its search ended, else its dual
        bound.
    optimal : bool
        Whether every part's search ended (or its dual bound met its best state): then
        ``state`` is a most probable state.
    """

    state: np.ndarray
    log_weight: float
    upper_bound: float
    optimal: bool


def dual_branch_and_bound_parts(red: MapReduction, state: Any = None, *,
                                deadline: float | None = None,
                                memory: float = PARTS_SEARCH_MEMORY,
                                report: Callable[[np.ndarray, float], Any] | None = None
                                ) -> PartsSearch:
    """Each reduced part solved by a branch and bound over its model reparameterized by
    the dual bound: :func:`mrflib.inference.approx.map_dual.dual_bound` first (its decoding,
    repaired to positive weight and improved by a descent of propagated moves for
    :data:`DESCENT_SHARE` of the time left, is the incumbent when better), then
    :func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound` on the
    reparameterized part (``model`` of :class:`~mrflib.inference.approx.map_dual.DualResult`),
    whose mini-buckets start from the dual bound instead of the part's own, much looser
    where deterministic tables overlap (the reduced Promedas networks of UAI 2014: a bound
    17 to 23 nats above the optimum from the part's mini-buckets at i-bound 17, under 1
    from the dual).

    Parameters
    ----------
    red : MapReduction
        A feasible reduction (:func:`reduce_map`).
    state : array_like of int, shape (red.n,), optional
        A state of positive weight of the original model, the incumbent of each part's
        search; without it each part starts from the state
        :func:`mrflib.inference.approx.map_search.feasible_state` finds on it.
    deadline : float or None, default None
        Seconds the whole may take, shared by the parts in proportion to their variables
        (time a part leaves goes to the next), each part's share split
        :data:`DUAL_SHARE` to the dual bound and the rest to the branch and bound
        (``None``: no limit, every search complete).
    memory : float, default PARTS_SEARCH_MEMORY
        Bytes of the branch and bound's largest mini-bucket table.
    report : callable, optional
        Called as ``report(x, log_weight)`` with each state of the original model found
        better than every one before.

    Returns
    -------
    PartsSearch
        The best state, its log-weight, the bound and whether it is proven optimal.
    """
    _check_reduction(red, "no state to search", report)
    stop = math.inf if deadline is None else time.perf_counter() + max(0.0, float(deadline))
    states = _starts(red, state)
    values = [float(p.log_weight(y)) for p, y in zip(red.parts, states)]
    bounds = list(values)
    proven = True
    left_n = sum(p.n for p in red.parts)

    def offer(i: int, y: np.ndarray | None) -> None:
        if y is None:
            return
        value = float(red.parts[i].log_weight(y))
        if value > values[i]:
            states[i], values[i] = np.asarray(y, dtype=np.int64), value
            if report is not None:
                report(red.expand(states), red.constant + sum(values))

    for i, part in enumerate(red.parts):
        now = time.perf_counter()
        share = None if stop == math.inf else max(0.0, stop - now) * part.n / max(1, left_n)
        left_n -= part.n
        part_stop = math.inf if share is None else now + share
        dual = dual_bound(part, deadline=None if share is None else share * DUAL_SHARE,
                          lower=values[i])
        try:
            y = feasible_state(part, start=dual.state, deadline=None if share is None
                               else max(0.0, part_stop - time.perf_counter()))
        except TimeoutError:
            y = None
        if y is not None:
            # a descent of propagated moves from the decoding: the incumbent that lets
            # the branch and bound prune
            offer(i, propagated_moves(part, y, deadline=None if share is None else max(
                0.0, part_stop - time.perf_counter()) * DESCENT_SHARE).state)
        bounds[i] = max(values[i], dual.upper_bound)
        if bound_meets(bounds[i], values[i]):
            continue
        bb = branch_and_bound(dual.model, memory=memory, lower=values[i],
                              deadline=None if share is None
                              else max(0.0, part_stop - time.perf_counter()))
        offer(i, bb.state)
        if bb.complete:
            bounds[i] = values[i]
        else:
            proven = False
    x = red.expand(states)
    value = red.constant + sum(values)
    return PartsSearch(x, value, max(value, red.constant + sum(bounds)), proven)


# ------------------------------------------------- steps of approx.map_assignment
def _check_step(red: Any, best: Any, left: Any) -> None:
    if red is not None:
        _check_reduction(red)
    if not isinstance(best, MapIncumbent):
        raise TypeError(f"best must be a MapIncumbent, got {type(best).__name__}")
    if not callable(left):
        raise TypeError(f"left must be callable, got {type(left).__name__}")


def solve_reduced(model: FactorGraph, best: MapIncumbent,
                  left: Callable[[float], float | None], share: float) -> MapReduction | None:
    """``model`` reduced (:func:`reduce_map`, in ``share`` of the time left), its parts
    solved by max-product where they fit half the time left (:func:`exact_parts`).

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    best, left, share
        The incumbent, given the optimum and the notes; ``left(share)``, the seconds left
        times ``share`` (``None``: no limit), asked as the step starts; the reduction's share.

    Returns
    -------
    MapReduction or None
        ``None`` when ``best`` holds the optimum, else the reduction (one that fixes
        nothing when it did not end in time); ``Z = 0`` proven raises a ``ValueError``.
    """
    check_instance(model, FactorGraph, "model")
    _check_step(None, best, left)
    try:
        red = reduce_map(model, deadline=left(share))
    except TimeoutError:
        best.details["reduction"] = "did not end in its share of the time"
        return MapReduction(model.n, 0.0, (), (), 0, 0)  # fixes nothing: unused
    if red.infeasible:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): the zeros' propagation emptied a domain")
    best.details["reduction"] = {"fixed": red.fixed, "eliminated": red.eliminated,
                                 "parts": [p.n for p in red.parts]}
    x = exact_parts(red, left(0.5))
    if x is None:
        return red
    best.offer(x, "exact on the reduced parts")
    best.upper = best.value  # the maximum itself
    return None


def moves_on_parts(red: MapReduction, best: MapIncumbent,
                   left: Callable[[float], float | None], share: float, rng: Any) -> None:
    """:func:`propagated_moves_parts` (with ``rng``, kicks too) from each part's state by
    score, then from the best state, each run for ``share`` of the time left.

    Parameters
    ----------
    red, best, left, share
        A feasible reduction of ``best``'s model; the rest as in :func:`solve_reduced`.
    rng : numpy.random.Generator or None
        The moves' order and kicks (``None``: increasing order, no kick).

    Returns
    -------
    None
    """
    _check_step(red, best, left)
    for start in (None, best.state):
        if start is None or best.value > -math.inf:
            x = propagated_moves_parts(red, start, deadline=left(share), rng=rng)
            best.offer(x, "propagated moves on the reduced parts")


def dual_on_parts(red: MapReduction, best: MapIncumbent,
                  left: Callable[[float], float | None], share: float) -> None:
    """:func:`dual_branch_and_bound_parts` from the best state for ``share`` of the time
    left, offering ``best`` its state and bound; nothing without a state of positive weight.

    Parameters
    ----------
    red, best, left, share
        As in :func:`moves_on_parts`.

    Returns
    -------
    None
    """
    _check_step(red, best, left)
    if not best.value > -math.inf:
        return
    r = dual_branch_and_bound_parts(red, best.state, deadline=left(share))
    best.offer(r.state, "dual branch and bound on the reduced parts", r.upper_bound)
    if r.optimal:
        best.upper = min(best.upper, max(best.value, r.log_weight))
