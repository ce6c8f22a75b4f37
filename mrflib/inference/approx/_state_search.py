"""The search for a state of positive weight and the ascent of conditional modes, shared
by :mod:`mrflib.inference.approx.map_search` (where both are described) and the iterated
local search of :mod:`mrflib.inference.approx.map_moves`.

:class:`Search` packs a model for the search kernel
(:func:`mrflib.inference.approx._map_search_kernels.search`) and runs it by chunks of
:data:`SEARCH_CHUNK` table entries until a deadline; :class:`Ascent` makes sweeps of
conditional modes and perturbations on a packed model; :func:`check_state` checks one
state and :func:`stop_time` turns a deadline in seconds into a clock time.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, require_memory
from mrflib.inference.approx import _map_search_kernels as _k
from mrflib.inference.approx import _point_estimates_kernels as _icm
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.sampling._chains_kernels import conditional_scores
from mrflib.models._checks import check_states
from mrflib.models.factor_graph import FactorGraph

__all__ = ["SEARCH_CHUNK", "stop_time", "check_state", "Search", "Ascent"]

#: Work of one call of the search kernel (table entries read) between two looks at the clock.
SEARCH_CHUNK = 1 << 20


def stop_time(deadline: Any) -> float:
    """The :func:`time.perf_counter` time ``deadline`` seconds from now (``inf``: none)."""
    if deadline is None:
        return math.inf
    return time.perf_counter() + check_positive(deadline, "deadline", allow_zero=True)


def check_state(model: FactorGraph, state: Any, name: str) -> np.ndarray:
    """One state of ``model`` (shape ``(n,)``, integers in range), as a fresh ``int64``
    array the searches may write into; a ``ValueError`` naming ``name`` otherwise."""
    if np.ndim(state) != 1:
        raise ValueError(f"{name} must be one state of shape ({model.n},), got shape "
                         f"{np.shape(state)}")
    x = check_states(state, model.cardinalities, name)
    return np.array(x[0], dtype=np.int64)  # a copy: the searches write into it


class Search:
    """The model packed for :func:`mrflib.inference.approx._map_search_kernels.search`, and the
    search's state (domains, trail, stack)."""

    def __init__(self, model: FactorGraph, prefer: np.ndarray) -> None:
        card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
        entries = sum(t.size for t in model.log_tables)
        states = int(card.sum())
        # the packed tables and flags, and per state a flag, its variable, trail and order
        require_memory(9.0 * entries + 8.0 * 6 * model.n_factors + 25.0 * states
                       + 8.0 * 8 * model.n,
                       f"the search state of {model.n} variables ({entries} table entries)")
        tables, vptr, vfac, _, fptr, fvars, _, offsets = factor_gibbs.pack(model)
        self.off = np.append(offsets, tables.size).astype(np.int64)
        self.pos = tables > -np.inf
        sizes = np.diff(self.off)
        arity = np.diff(fptr)
        zero = np.zeros(model.n_factors, dtype=np.bool_)
        if model.n_factors:
            zero = ~np.logical_and.reduceat(self.pos, offsets) & (arity > 0) & (sizes > 0)
        held = zero[vfac]
        holder = np.repeat(np.arange(model.n, dtype=np.int64), np.diff(vptr))
        degree = np.bincount(holder[held], minlength=model.n).astype(np.int64)
        self.tables, self.vptr, self.vfac, self.fptr, self.fvars = tables, vptr, vfac, fptr, fvars
        self.card, self.prefer, self.degree = card, prefer, degree
        self.cvptr = np.concatenate([[0], np.cumsum(degree)]).astype(np.int64)
        self.cvfac = np.ascontiguousarray(vfac[held], dtype=np.int64)
        self.constraints = np.flatnonzero(zero).astype(np.int64)
        self.searched = np.flatnonzero(degree > 0).astype(np.int64)
        self.sptr = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
        self.svar = np.repeat(np.arange(model.n, dtype=np.int64), card)
        self.alive = np.ones(states, dtype=np.bool_)
        self.size = card.copy()
        self.trail = np.empty(states, dtype=np.int64)
        self.order = np.empty(states, dtype=np.int64)
        self.regs = np.zeros(3, dtype=np.int64)
        self.lvl = [np.zeros(model.n, dtype=np.int64) for _ in range(3)]
        self.queue = np.empty(model.n_factors, dtype=np.int64)
        self.queued = np.zeros(model.n_factors, dtype=np.bool_)

    def run(self, stop: float) -> bool:
        """Search until it ends (``True``: found, ``False``: none exists) or ``stop``
        passes after a chunk of work (:class:`TimeoutError`)."""
        while True:
            phase = _k.search(self.tables, self.off, self.fptr, self.fvars, self.vptr,
                              self.vfac, self.card, self.pos, self.cvptr, self.cvfac,
                              self.constraints, self.searched, self.degree, self.prefer,
                              self.alive, self.size, self.sptr, self.svar, self.trail,
                              self.regs, *self.lvl, self.order, self.queue, self.queued,
                              SEARCH_CHUNK)
            if phase in (_k.FOUND, _k.NONE):
                return phase == _k.FOUND
            if time.perf_counter() >= stop:
                raise TimeoutError("the search for a state of positive weight did not end "
                                   "within its deadline")

    def state(self) -> np.ndarray:
        _k.complete(self.tables, self.off, self.fptr, self.fvars, self.vptr, self.vfac,
                    self.card, self.prefer, self.alive, self.size, self.sptr)
        return _k.states(self.alive, self.sptr, self.card)


class Ascent:
    """Sweeps of conditional modes on a packed model, and its perturbations."""

    def __init__(self, model: FactorGraph) -> None:
        self.model = model
        self.plan = factor_gibbs.pack(model)
        self.card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
        self.score = np.empty((1, int(self.card.max())))
        self.base = np.empty(1, dtype=np.int64)
        self.sweeps = 0

    def climb(self, x: np.ndarray, max_sweeps: int, stop: float) -> bool:
        """Sweeps on ``x (1, n)`` in place until one changes nothing (``True``: a local
        maximum) or ``max_sweeps`` or ``stop`` is reached."""
        for _ in range(max_sweeps):
            self.sweeps += 1
            if _icm.icm_sweep(x, *self.plan, self.card) == 0:
                return True
            if time.perf_counter() >= stop:
                break
        return False

    def neighbours(self, v: int) -> np.ndarray:
        tables, vptr, vfac, _, fptr, fvars, _, _ = self.plan
        ks = vfac[vptr[v]:vptr[v + 1]]
        if not len(ks):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([fvars[fptr[k]:fptr[k + 1]] for k in ks])

    def perturb(self, x: np.ndarray, size: int, rng: np.random.Generator) -> None:
        """Move a connected block of up to ``size`` variables (breadth first from a random
        one), each to a random state of positive weight given the others, in place."""
        seen = {int(rng.integers(self.model.n))}
        block = list(seen)
        i = 0
        while i < len(block) and len(block) < size:
            for u in self.neighbours(block[i]).tolist():
                if u not in seen and len(block) < size:
                    seen.add(u)
                    block.append(u)
            i += 1
        for v in block:
            conditional_scores(x, 0, 1, v, self.score, self.base, *self.plan, self.card)
            ok = np.flatnonzero(self.score[0, :self.card[v]] > -np.inf)
            x[0, v] = ok[int(rng.integers(len(ok)))]
