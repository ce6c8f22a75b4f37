"""A MAP local search whose moves respect the zeros: fix one variable, propagate, repair.

::

    r = map_moves.propagated_moves(part, y, deadline=5.0, rng=0)   # r.state, r.log_weight

Where deterministic tables bind (a noisy-OR network given its findings, once
:func:`mrflib.inference.approx.map_reduction.reduce_map` has propagated the evidence), every
change of one variable breaks a zero, so the one-variable moves of iterated conditional
modes (:func:`mrflib.inference.approx.map_search.local_search`) never leave their start. A
*propagated move* sets one variable ``v`` to another value ``a`` and lets the zeros decide
the rest: generalized arc consistency from ``x_v = a`` removes the values no state of
positive weight keeps, each variable keeps its value where the propagation leaves it (else
takes its first value left), and where that state still breaks a zero the depth-first
search of :func:`mrflib.inference.approx.map_search.feasible_state` repairs it from the
domains left, each variable's current value tried first, within :data:`REPAIR_WORK` (a
move whose repair costs more is given up), so the move changes as little as the zeros
allow. Iterated conditional modes then climb from the repaired state, and the move
is kept when the result weighs strictly more.

The search is an iterated local search (Lourenço, Martin and Stützle 2003):

1. *descent*: passes over the moves ``(v, a)`` in a random order, each improving move kept
   at once, until a pass improves nothing (a local maximum for these moves);
2. *kick*: from the best state, :data:`KICK_MOVES` random propagated moves kept whatever
   their weight, then a descent; the result replaces the best state when it weighs more.

The state's weight is never below the start's, and every state visited has positive weight.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive
from mrflib.inference.approx import _map_search_kernels as _k
from mrflib.inference.approx._map_search_kernels import CHOOSE, PHASE
from mrflib.inference.approx._state_search import Ascent, Search, check_state, stop_time
from mrflib.inference.approx.map_search import LocalSearchResult
from mrflib.inference.exact._domains_kernels import TOP, propagate, remove, workspace
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["propagated_moves", "KICK_MOVES", "REPAIR_WORK"]

#: Random propagated moves of a kick of the iterated local search.
KICK_MOVES = 2
#: Table entries the search of one move's repair may read before the move is given up.
REPAIR_WORK = 1 << 16


class _Repair:
    """The repair of a move, packed once: the zeros propagated from ``x_v = a`` on the
    domains arc consistency leaves at the root, each variable keeping its value where
    still allowed (else its first value left); where that state breaks a zero, the
    depth-first search of :func:`~mrflib.inference.approx.map_search.feasible_state` from
    those domains, the state's values tried first."""

    def __init__(self, model: FactorGraph, plan: tuple) -> None:
        s = self.search = Search(model, np.full(model.n, -1, dtype=np.int64))
        self.card = s.card
        self.work = workspace(s.fptr, s.fvars, s.card)
        self.feasible = True
        if s.constraints.size:
            s.queue[:s.constraints.size] = s.constraints
            s.queued[s.constraints] = True
            self.feasible = bool(self._propagate(s.constraints.size))
        self.root_alive, self.root_size = s.alive.copy(), s.size.copy()
        self.root_top = int(s.regs[TOP])
        # each entry of a scope: its factor and its C-order stride, to index every
        # factor's row of a state at once
        _, _, _, _, fptr, _, fstride, _ = plan
        self.entry_factor = np.repeat(np.arange(len(fptr) - 1, dtype=np.int64), np.diff(fptr))
        self.fstride = fstride

    def _propagate(self, top: int) -> bool:
        s = self.search
        ok, _ = propagate(top, s.queue, s.queued, s.pos, s.off, s.fptr, s.fvars, s.cvptr,
                          s.cvfac, s.card, s.alive, s.size, s.sptr, s.svar, s.trail, s.regs,
                          *self.work)
        return bool(ok)

    def rows(self, z: np.ndarray) -> np.ndarray:
        """Each factor's flat index of its row at state ``z`` (into the packed tables)."""
        s = self.search
        at = np.bincount(self.entry_factor, weights=z[s.fvars] * self.fstride,
                         minlength=len(s.off) - 1)
        return s.off[:-1] + at.astype(np.int64)

    def state(self, x: np.ndarray, v: int, a: int) -> np.ndarray | None:
        """A state of positive weight with ``x_v = a``, near ``x``; ``None`` when none
        exists or the search needs more than :data:`REPAIR_WORK` to find one."""
        s = self.search
        if not self.feasible:
            return None
        s.queued[:] = False
        np.copyto(s.alive, self.root_alive)
        np.copyto(s.size, self.root_size)
        s.regs[:] = 0
        s.regs[TOP] = self.root_top
        lo = s.sptr[v]
        if not s.alive[lo + a]:
            return None
        for b in range(int(self.card[v])):
            if b != a and s.alive[lo + b]:
                remove(lo + b, s.alive, s.size, s.svar, s.trail, s.regs)
        held = s.cvfac[s.cvptr[v]:s.cvptr[v + 1]]
        s.queue[:held.size] = held
        s.queued[held] = True
        if not self._propagate(held.size):
            return None
        z = np.array(x, dtype=np.int64)
        z[v] = a
        dead = np.flatnonzero(~s.alive[s.sptr[:-1] + z])
        for u in dead.tolist():
            z[u] = int(np.argmax(s.alive[s.sptr[u]:s.sptr[u + 1]]))
        if s.pos[self.rows(z)].all():
            return z
        s.prefer[:] = z  # a zero broken: search from the domains left, z's values first
        s.regs[PHASE] = CHOOSE
        phase = _k.search(s.tables, s.off, s.fptr, s.fvars, s.vptr, s.vfac, s.card, s.pos,
                          s.cvptr, s.cvfac, s.constraints, s.searched, s.degree, s.prefer,
                          s.alive, s.size, s.sptr, s.svar, s.trail, s.regs, *s.lvl, s.order,
                          s.queue, s.queued, REPAIR_WORK)
        if phase != _k.FOUND:  # none, or a repair too costly for one move
            return None
        _k.complete(s.tables, s.off, s.fptr, s.fvars, s.vptr, s.vfac, s.card, s.prefer,
                    s.alive, s.size, s.sptr)
        return _k.states(s.alive, s.sptr, s.card)

    def log_weight(self, z: np.ndarray) -> float:
        """``z``'s log-weight from the packed tables."""
        return float(self.search.tables[self.rows(z)].sum())


class _Moves:
    """The propagated moves of one model: a move repaired, then climbed by conditional
    modes."""

    def __init__(self, model: FactorGraph, stop: float, report: Any) -> None:
        self.model, self.stop, self.report = model, stop, report
        self.ascent = Ascent(model)
        self.repair = _Repair(model, self.ascent.plan)
        self.moves = self.better = 0

    def move(self, x: np.ndarray, v: int, a: int) -> tuple[np.ndarray | None, float]:
        """``x`` moved to ``x_v = a``, repaired and climbed, and its log-weight (``None``,
        ``-inf``: no state of positive weight has ``x_v = a``, or the time ran out)."""
        self.moves += 1
        z = self.repair.state(x, v, a)
        if z is None:
            return None, -math.inf
        y = z[None, :].copy()
        self.ascent.climb(y, 1000, self.stop)
        return y[0], self.repair.log_weight(y[0])

    def over(self) -> bool:
        return time.perf_counter() >= self.stop

    def descent(self, x: np.ndarray, value: float, gen: np.random.Generator | None,
                floor: float) -> tuple[np.ndarray, float]:
        """Passes of first-improvement moves in a random order (without ``gen``, in
        increasing order) until one improves nothing or the time runs out; each state
        better than ``floor`` (the best so far) is reported."""
        card = self.repair.card
        pairs = np.array([(v, a) for v in range(self.model.n) for a in range(int(card[v]))],
                         dtype=np.int64).reshape(-1, 2)
        improved = True
        while improved and not self.over():
            improved = False
            order = pairs if gen is None else pairs[gen.permutation(len(pairs))]
            for v, a in order.tolist():
                if x[v] == a:
                    continue
                y, y_value = self.move(x, v, a)
                if y_value > value:
                    x, value, improved = y, y_value, True
                    self.better += 1
                    if value > floor and self.report is not None:
                        self.report(x.copy(), value)
                if self.over():
                    break
        return x, value

    def kick(self, x: np.ndarray, gen: np.random.Generator) -> tuple[np.ndarray, float]:
        """``x`` after :data:`KICK_MOVES` random propagated moves, whatever their weight
        (a move with no state of positive weight is skipped); not reported, since only a
        descent from it may lift it above the best."""
        card = self.repair.card
        value = float(self.model.log_weight(x))
        for _ in range(KICK_MOVES):
            movable = np.flatnonzero(card > 1)
            if not movable.size or self.over():
                break
            v = int(movable[gen.integers(movable.size)])
            a = int((x[v] + 1 + gen.integers(int(card[v]) - 1)) % card[v])
            y, y_value = self.move(x, v, a)
            if y is not None:
                x, value = y, y_value
        return x, value


def propagated_moves(model: FactorGraph | BoltzmannMachine, init: Any, *,
                     deadline: float | None = None, kicks: int | None = None,
                     rng: Any = None, report: Callable[[np.ndarray, float], Any] | None = None
                     ) -> LocalSearchResult:
    """An iterated local search of propagated moves from a state of positive weight (see
    the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied (a Boltzmann machine is taken as its factor graph,
        state 0 is spin -1).
    init : array_like of int, shape (n,)
        The start, a state of positive weight
        (:func:`mrflib.inference.approx.map_search.feasible_state` gives one).
    deadline : float, optional
        Seconds from the call after which no further move starts. Without it the search
        ends after ``kicks`` kicks.
    kicks : int, optional
        Kicks after the first descent (default: none without a ``deadline``, as many as
        the deadline allows with one).
    rng : seed or Generator or None, default None
        The order of the moves and the kicks; without it the moves are tried in increasing
        order of variable and value and no kick is made (nothing is drawn).
    report : callable, optional
        Called as ``report(state, log_weight)`` with each state found better than every
        one before (for anytime answers).

    Returns
    -------
    LocalSearchResult
        The best state found (its log-weight never below ``init``'s); ``perturbations``
        counts the kicks, ``improvements`` the moves and kicks that led to a better state,
        ``sweeps`` the sweeps of conditional modes, and ``local_maximum`` whether no
        propagated move improves the state (the last descent ended on it).
    """
    fg = as_factor_graph(model)
    x = check_state(fg, init, "init")
    stop = stop_time(deadline)
    if kicks is None:
        kicks = 0 if deadline is None else 2**62
    kicks = check_positive(kicks, "kicks", integer=True, allow_zero=True)
    if report is not None and not callable(report):
        raise TypeError(f"report must be callable or None, got {type(report).__name__}")
    gen = None if rng is None else as_rng(rng)
    if gen is None:
        kicks = 0
    value = float(fg.log_weight(x))
    if not value > -math.inf:
        raise ValueError("init must be a state of positive weight (feasible_state gives one)")
    moves = _Moves(fg, stop, report)
    best, best_value = moves.descent(x, value, gen, value)
    local = not moves.over()
    done = 0
    while done < kicks and not moves.over():
        done += 1
        y, y_value = moves.kick(best.copy(), gen)
        y, y_value = moves.descent(y, y_value, gen, best_value)
        if y_value > best_value:
            best, best_value, local = y, y_value, not moves.over()
            moves.better += 1
    return LocalSearchResult(np.asarray(best, dtype=np.int64).copy(), best_value,
                             moves.ascent.sweeps, local, done, moves.better)
