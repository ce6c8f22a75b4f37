"""Exact ``log Z`` by conditioning, with propagation of the zeros and component caching.

For models full of determinism (clauses of a satisfiability problem, deterministic
conditional probability tables, evidence) whose treewidth is beyond the junction tree,
the partition function is summed over the states of one variable at a time,

.. math::  Z = \\sum_a Z(x_v = a),

as model counters do (sharpSAT, c2d; AND/OR search with caching, Dechter and Mateescu
2007):

1. after each assignment the zeros are propagated (generalized arc consistency,
   :func:`mrflib.inference.exact._domains_kernels.propagate`, as
   :func:`mrflib.inference.exact.domains.reduce_domains` does at the root): a variable
   left with one state is fixed, and its factors become smaller tables or constants;
2. the variables not fixed split into connected components, whose ``Z`` multiply;
3. a component whose interaction graph has a greedy (min-degree) elimination order with
   clique tables of at most ``max_table_entries`` entries is summed by variable
   elimination (:mod:`mrflib.inference.exact.elimination`) on its conditioned factors;
   otherwise the search branches again, on the variable with the most neighbours;
4. each component's ``log Z`` is cached under its variables, their states left and the
   states of the fixed variables of its factors, which together determine it: a
   component met again on another branch costs a lookup.

Everything is in log space (``log Σ exp`` over the branches); a model with ``Z = 0``
gives ``-inf``. The search polls a deadline before each component and gives up
(``TimeoutError``) when it passes: its answer is exact or none. An elimination, once
started, runs to its end; ``max_table_entries`` keeps it short (a larger budget trades
branches for eliminations that may outlast the deadline: at ``2^20`` one component of the
UAI 2014 problem ``rb.cnf`` ran for over a minute).

Where it stops: a model whose zeros propagate little after an assignment. On the SAT
encodings of planning problems in the UAI 2014 PR set (``log-5.cnf``: 2,650 binary
variables after propagation, min-fill width 472; ``prob012.pddl.cnf``: 2,259, min-degree
width 628) an assignment fixes about one variable, no component splits off for thousands
of levels, and the search gives up; circuits (``c432.isc.cnf``, 6 s) and ``ra.cnf`` (13 s)
are counted exactly.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.validation import check_positive, require_memory
from mrflib.inference.exact import _conditioning_kernels as _k
from mrflib.inference.exact import _elimination_order_kernels as _eok
from mrflib.inference.exact import elimination
from mrflib.inference.exact._domains_kernels import TOP, propagate, undo, workspace
from mrflib.inference.exact._search_arguments import conditioned_model
from mrflib.models.factor_graph import FactorGraph

__all__ = ["Conditioning", "conditioned_log_partition", "MAX_TABLE_ENTRIES"]

#: Default largest clique table (entries) of a component summed by elimination.
MAX_TABLE_ENTRIES = 2**16
#: Bytes of keys the cache holds at most (a key is some words per variable of its
#: component); past them, components are solved without being kept.
MAX_CACHE_BYTES = 2**28
#: Bytes a cache entry costs besides its key (the dict slot, the bytes and float objects).
CACHE_ENTRY_BYTES = 120
#: Greedy criterion of a component's order (min-degree: its keys cost nothing to update; a
#: min-fill order costs 76 ms on a component of 2,650 variables, at every branch).
ORDER_CRITERION = 3
#: Work bound of the greedy order (counted only by the fill criteria).
MAX_ORDER_WORK = 4_000_000


class Conditioning(NamedTuple):
    """The answer of :func:`conditioned_log_partition` and what the search did.

    Attributes
    ----------
    log_partition : float
        ``log Z`` (natural log; ``-inf`` when ``Z = 0``).
    branches : int
        Assignments ``x_v = a`` tried.
    cache_hits : int
        Components whose ``log Z`` came from the cache.
    components : int
        Components solved (not from the cache), of more than one variable.
    eliminations : int
        Components summed by variable elimination.
    seconds : float
        Wall-clock time of the search.
    """

    log_partition: float
    branches: int
    cache_hits: int
    components: int
    eliminations: int
    seconds: float


def _logsumexp(terms: list[float]) -> float:
    best = max(terms, default=-math.inf)
    if best == -math.inf:
        return best
    return best + math.log(sum(math.exp(t - best) for t in terms))


class _Search:
    """The packed model, its domains and trail, and the cache of one search."""

    def __init__(self, model: FactorGraph, max_table_entries: int, deadline: float) -> None:
        self.model = model
        self.deadline = deadline
        self.limit = math.log(max_table_entries) + 1e-9
        card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
        n = len(card)
        self.card = card
        self.const = 0.0
        held = [k for k, s in enumerate(model.scopes) if s]
        for s, t in zip(model.scopes, model.log_tables):
            if not s:
                self.const += float(t)
        # factors renumbered over those with a scope
        self.factors = held
        scopes = [model.scopes[k] for k in held]
        tabs = [np.ravel(model.log_tables[k]) for k in held]
        sizes = np.fromiter((t.size for t in tabs), dtype=np.int64, count=len(tabs))
        width = np.fromiter((len(s) for s in scopes), dtype=np.int64, count=len(scopes))
        require_memory(2.0 * 9 * float(sizes.sum()) + 64.0 * float(card.sum())
                       + 48.0 * float(width.sum()), f"the conditioning search of {n} variables")
        self.tables = np.concatenate(tabs) if tabs else np.zeros(0)
        self.off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.fptr = np.concatenate([[0], np.cumsum(width)]).astype(np.int64)
        self.fvars = np.fromiter((v for s in scopes for v in s), dtype=np.int64,
                                 count=int(width.sum()))
        self.vptr, self.vfac = _holders(self.fvars, self.fptr, n)
        # the constraints: the factors with a zero, numbered among themselves
        pos = self.tables > -np.inf
        zero = np.zeros(len(held), dtype=bool)
        if len(held):
            zero = ~np.logical_and.reduceat(pos, self.off[:-1]) if pos.size else zero
        zk = np.flatnonzero(zero)
        zsizes, zwidth = sizes[zk], width[zk]
        self.zpos = np.concatenate([pos[self.off[k]:self.off[k + 1]] for k in zk]) \
            if len(zk) else np.zeros(0, dtype=bool)
        self.zoff = np.concatenate([[0], np.cumsum(zsizes)]).astype(np.int64)
        self.zfptr = np.concatenate([[0], np.cumsum(zwidth)]).astype(np.int64)
        self.zfvars = np.fromiter((v for k in zk.tolist() for v in scopes[k]), dtype=np.int64,
                                  count=int(zwidth.sum()))
        self.cvptr, self.cvfac = _holders(self.zfvars, self.zfptr, n)
        self.soff, self.sup, self.idx = workspace(self.zfptr, self.zfvars, card)
        self.queue = np.arange(len(zk), dtype=np.int64)
        self.queued = np.zeros(len(zk), dtype=np.bool_)
        self.sptr = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
        self.alive = np.ones(int(self.sptr[-1]), dtype=np.bool_)
        self.size = card.copy()
        self.svar = np.repeat(np.arange(n, dtype=np.int64), card)
        self.trail = np.empty(int(self.sptr[-1]), dtype=np.int64)
        self.regs = np.zeros(TOP + 1, dtype=np.int64)
        self.mark = np.zeros(n, dtype=np.int64)
        self.fmark = np.zeros(len(held), dtype=np.int64)
        self.local = np.zeros(n, dtype=np.int64)
        self.stamp = 0
        self.cache: dict[bytes, float] = {}
        self.cache_bytes = 0
        self.branches = self.cache_hits = self.components = self.eliminations = 0

    # ------------------------------------------------------------------ search
    def run(self) -> float:
        if self.const == -math.inf:
            return -math.inf
        m = len(self.queue)
        self.queued[:] = True
        ok, _ = propagate(m, self.queue, self.queued, self.zpos, self.zoff, self.zfptr,
                          self.zfvars, self.cvptr, self.cvfac, self.card, self.alive,
                          self.size, self.sptr, self.svar, self.trail, self.regs, self.soff,
                          self.sup, self.idx)
        if not ok:
            return -math.inf
        return self.const + self._split(np.arange(len(self.card), dtype=np.int64))

    def _split(self, comp: np.ndarray) -> float:
        """``log Z`` of the factors holding a variable of ``comp``, after conditioning:
        the constant of those now fixed plus the components' ``log Z``."""
        self.stamp += 1
        out = np.empty(len(comp), dtype=np.int64)
        starts = np.empty(len(comp) + 1, dtype=np.int64)
        n_comp, total = _k.split(comp, self.tables, self.off, self.fptr, self.fvars, self.vptr,
                                 self.vfac, self.card, self.sptr, self.alive, self.size,
                                 self.mark, self.fmark, self.stamp, out, starts)
        for i in range(n_comp):
            if total == -math.inf:
                break
            total += self._count(out[starts[i]:starts[i + 1]])
        return total

    def _count(self, comp: np.ndarray) -> float:
        """``log Z`` of one component, from the cache or solved."""
        if time.perf_counter() > self.deadline:
            raise TimeoutError(f"the conditioning search did not finish in time "
                               f"({self.branches} branches, {self.cache_hits} cache hits)")
        if len(comp) == 1:
            return float(_k.single(int(comp[0]), self.tables, self.off, self.fptr, self.fvars,
                                   self.vptr, self.vfac, self.card, self.sptr, self.alive))
        self.stamp += 1
        held = int((self.vptr[comp + 1] - self.vptr[comp]).sum())
        buf = np.empty(held, dtype=np.int64)
        nf = _k.factors_of(comp, self.fptr, self.fvars, self.vptr, self.vfac, self.mark,
                           self.fmark, self.stamp, buf)
        factors = buf[:nf]
        key = _k.key(comp, factors, self.fptr, self.fvars, self.card, self.sptr, self.alive,
                     self.mark, self.stamp).tobytes()
        got = self.cache.get(key)
        if got is not None:
            self.cache_hits += 1
            return got
        self.components += 1
        order = self._order(comp, factors)
        value = self._eliminate(comp, factors, order) if order is not None else None
        if value is None:
            value = self._branch(comp)
        if self.cache_bytes + len(key) <= MAX_CACHE_BYTES:
            self.cache[key] = value
            self.cache_bytes += len(key) + CACHE_ENTRY_BYTES
        return value

    def _branch(self, comp: np.ndarray) -> float:
        """``log Σ_a Z(x_v = a)`` over the states left of the variable with the most
        neighbours."""
        v = int(_k.branch_variable(comp, self.fptr, self.fvars, self.vptr, self.vfac,
                                   self.size))
        terms = []
        for x in np.flatnonzero(self.alive[self.sptr[v]:self.sptr[v + 1]]).tolist():
            self.branches += 1
            top = int(self.regs[TOP])
            try:
                ok = _k.condition(v, x, self.zpos, self.zoff, self.zfptr, self.zfvars,
                                  self.cvptr, self.cvfac, self.card, self.alive, self.size,
                                  self.sptr, self.svar, self.trail, self.regs, self.queue,
                                  self.queued, self.soff, self.sup, self.idx)
                terms.append(self._split(comp) if ok else -math.inf)
            finally:
                undo(top, self.alive, self.size, self.svar, self.trail, self.regs)
        return _logsumexp(terms)

    # ------------------------------------------------------------------ elimination
    def _order(self, comp: np.ndarray, factors: np.ndarray) -> np.ndarray | None:
        """A min-degree order of the component whose clique tables stay within the budget,
        or ``None``."""
        k = len(comp)
        logc = np.log(self.size[comp].astype(np.float64))
        if logc.sum() <= self.limit:  # every table is within the joint states
            return np.arange(k, dtype=np.int64)
        self.local[comp] = np.arange(k)
        rows, cols = _k.local_edges(comp, factors, self.fptr, self.fvars, self.size,
                                    self.local)
        bits = _eok.bit_matrix(k, rows, cols)
        order = np.empty(k, dtype=np.int64)
        found = _eok.greedy_keyed(bits, ORDER_CRITERION, logc, self.size[comp], self.limit,
                                  MAX_ORDER_WORK, order)
        return order if found == 0 else None

    def _eliminate(self, comp: np.ndarray, factors: np.ndarray, order: np.ndarray
                   ) -> float | None:
        """``log Z`` of the component by variable elimination in ``order`` (local
        indices) on its conditioned factors; ``None`` when the plan does not fit."""
        model, alive, sptr, size = self.model, self.alive, self.sptr, self.size
        self.local[comp] = np.arange(len(comp))
        kept = {}
        scopes, tables = [], []
        for f in factors.tolist():
            k = self.factors[f]
            s, t = model.scopes[k], model.log_tables[k]
            at = tuple(slice(None) if size[u] > 1 else
                       int(np.flatnonzero(alive[sptr[u]:sptr[u + 1]])[0]) for u in s)
            free = [u for u in s if size[u] > 1]
            t = t[at]
            if any(size[u] < self.card[u] for u in free):
                for u in free:
                    if u not in kept:
                        kept[u] = np.flatnonzero(alive[sptr[u]:sptr[u + 1]])
                t = t[np.ix_(*(kept[u] for u in free))]
            t = np.ascontiguousarray(t, dtype=np.float64)
            t.flags.writeable = False
            scopes.append(tuple(int(self.local[u]) for u in free))
            tables.append(t)
        card = np.ascontiguousarray(size[comp], dtype=np.int64)
        card.flags.writeable = False
        part = FactorGraph._from_checked(card, tuple(scopes), tuple(tables))
        jt = elimination.EliminationPlan(part, order=order.tolist(), check=False,
                                         upward_only=True, search=False)
        if not jt.fits:
            return None
        self.eliminations += 1
        return float(elimination.log_partition(part, jt))


def _holders(fvars: np.ndarray, fptr: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The factors holding each variable in CSR form (increasing factor order)."""
    width = np.diff(fptr)
    order = np.argsort(fvars, kind="stable")
    vfac = np.repeat(np.arange(len(width), dtype=np.int64), width)[order]
    vptr = np.concatenate([[0], np.cumsum(np.bincount(fvars, minlength=n))]).astype(np.int64)
    return vptr, np.ascontiguousarray(vfac, dtype=np.int64)


def conditioned_log_partition(model: Any, *, evidence: Mapping[Any, Any] | None = None,
                              time_limit: float | None = None,
                              max_table_entries: int = MAX_TABLE_ENTRIES) -> Conditioning:
    """Exact ``log Z`` by conditioning on variables, propagating the zeros, splitting
    into components and caching them (see the module text).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise).
    evidence : mapping or None, default None
        ``{variable: value}``: the answer is ``log Z`` of the model conditioned on it
        (:func:`~mrflib.models.factor_graph.with_evidence`).
    time_limit : float or None, default None
        Seconds the search may take (``None``: no limit); it gives up past them.
    max_table_entries : int, default MAX_TABLE_ENTRIES
        Largest clique table of a component summed by variable elimination; wider
        components are conditioned on.

    Returns
    -------
    Conditioning
        ``log Z`` and the search's counts.

    Raises
    ------
    TimeoutError
        When the search does not finish within ``time_limit``.
    """
    start = time.perf_counter()
    model, _, deadline = conditioned_model(model, evidence, time_limit)
    max_table_entries = check_positive(max_table_entries, "max_table_entries", integer=True)
    search = _Search(model, int(max_table_entries), deadline)
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth, 4 * model.n + 1000))
    try:
        value = search.run()
    finally:
        sys.setrecursionlimit(depth)
    return Conditioning(float(value), search.branches, search.cache_hits, search.components,
                        search.eliminations, time.perf_counter() - start)
