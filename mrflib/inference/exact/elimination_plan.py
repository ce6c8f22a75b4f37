"""The plan of variable elimination on a factor graph, and its passes.

A plan holds what the engine of :mod:`mrflib.inference.exact.elimination` does to a model
before any sum: the model reduced (evidence clamped, barren tables dropped:
:class:`mrflib.inference._reduction.Reduced`), an elimination order per connected component
(:mod:`mrflib.inference.exact.elimination_order`, refused before anything is allocated when
it does not fit), and the junction tree of the order's cliques: step ``t`` sums ``v_t`` out of
``ψ_t(x_{C_t}) = Σ_{k → t} θ_k + Σ_{c → t} m_c`` (the LAP paper's eq. (1) in log space) and
sends the message ``m_t(x_{N_t})`` to the step of the first-eliminated variable of ``N_t``.
Its passes, the upward sums (or maxima) and the downward (Hugin) pass of the beliefs, are
methods: the tasks of :mod:`mrflib.inference.exact.elimination` and
:mod:`mrflib.inference.exact`'s pairwise binary backend run them, or their compiled twins
(:mod:`mrflib.inference.exact._compiled_passes`), on it. The plan depends on the model's
scopes and on what its tables reduce; :meth:`EliminationPlan.with_tables` gives the plan of
other tables that reduce alike (a learner's parameters at each step) without planning again.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterator

import numpy as np

from mrflib._support.progress import ticker
from mrflib._support.validation import (
    UNCHECKED_BYTES,
    available_memory,
    check_instance,
    check_positive,
    format_bytes,
    require_memory,
)
from mrflib.inference import _reduction
from mrflib.inference._factor_ops import (
    Scaled,
    as_log,
    clique_eliminate,
    clique_sum,
    divide,
    eliminate,
    marginals_onto,
    scaled,
)
from mrflib.inference.exact import _compiled_passes
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import treewidth_bounds as tb
from mrflib.models.factor_graph import FactorGraph

__all__ = ["EliminationPlan", "upward_peak_bytes", "clique_tree", "REPORT_LOG_ENTRIES",
           "SEARCH_MIN_ENTRIES", "SEARCH_LARGE_ENTRIES"]

#: Log entries of the largest clique table a plan that does not fit is still searched for
#: (2^48, two PiB), so that it reports its treewidth and sizes.
REPORT_LOG_ENTRIES = 48 * math.log(2.0)
#: A plan too large for memory searches again the orders of components whose clique tables
#: hold more entries than this (smaller ones cost little whatever their order).
SEARCH_MIN_ENTRIES = 2.0**20
#: A plan that fits but whose clique tables hold more entries than this (16 GiB: a minute
#: or more of marginals, 20 s or more of log Z) searches too (seconds: see
#: :func:`~mrflib.inference.exact.elimination_order.searched_order`).
SEARCH_LARGE_ENTRIES = 2.0**31


# --------------------------------------------------------------------------- plan
class EliminationPlan(eo.Plan):
    """The reduced model, its elimination order and junction tree.

    A plan whose calibration would not fit in ``memory`` bytes (default: the memory
    available), or whose tables hold more than :data:`SEARCH_LARGE_ENTRIES` entries,
    searches its order again with the randomized contraction search and, where the work
    calls for it, its trees' refinement
    (:func:`mrflib.inference.exact.elimination_order.searched_order`, seconds of work; unless
    ``search`` is false, for callers that cannot spend them, such as a time-limited
    approximation deciding whether exact inference fits) before it is refused (``check``)
    or returned with ``fits`` false; smaller plans that fit keep the greedy orders. With
    ``anneal`` (a seed), a searched order that still does not fit has its contraction tree
    annealed too (about a minute on a pedigree of a thousand factors): the last resort of
    :mod:`mrflib.inference.exact.sliced`, whose slices of the refined order would be refused.

    Before any search, where the greedy orders do not fit, a lower bound on the treewidth
    (:mod:`mrflib.inference.exact.treewidth_bounds`, well under a second on a ``50 x 50``
    lattice) bounds the largest clique table of every order: beyond the memory, the plan
    is refused at once (``check``); beyond ``give_up`` too (log entries of the largest
    table past which the caller would refuse even the order's slices), no order is
    searched (``hopeless``).

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    barren : bool, default False
        Drop barren conditional probability tables (for ``log Z`` and sampling).
    check : bool, default True
        Refuse (``ValueError`` with the sizes) a plan that does not fit in memory; without,
        return it with ``fits`` false.
    upward_only : bool, default False
        Size the plan for one upward pass that frees its messages (``log Z``).
    order : list of int or None, default None
        An elimination order to use; used only when it holds every variable left after
        reduction (its other variables are skipped), else an order is searched.
    memory : float or None, default None
        Bytes the calibration may use (``None``: the memory available).
    search : bool, default True
        Allow the randomized order search and its refinement (seconds of work).
    anneal : int or None, default None
        Seed (a non-negative int) of the annealing of a searched order that still does
        not fit; ``None``: no annealing.
    give_up : float or None, default None
        Log entries of the largest clique table past which the caller would refuse even
        the order's slices (:func:`mrflib.inference.exact.sliced.give_up`); ``None``: no
        such limit.

    Attributes
    ----------
    n : int
        Variables of the model.
    red : object
        The reduced model: scopes, tables, clamped and free variables, dropped tables.
    order : list of int
        Elimination order of the variables left after reduction.
    heuristic : str
        The ordering heuristic(s) that won (one per connected component).
    treewidth : int or None
        Largest clique of the order minus one (``-1`` when nothing is left to eliminate);
        ``None`` when no order was found (``order`` ``None``): see
        ``treewidth_lower_bound``.
    treewidth_lower_bound : int or None
        A proved lower bound on the treewidth (of the component whose bound is the
        largest; :mod:`mrflib.inference.exact.treewidth_bounds`), computed where the greedy orders
        do not fit in memory, else ``None``.
    log_table_lower_bound : float or None
        Log entries that the largest clique table of every order holds at least, from that
        bound (``None`` with it).
    cliques : list of tuple of int
        ``(order[t], *N_t)`` for each step ``t``.
    parent, children, shapes : list
        The junction tree (:func:`clique_tree`): each step's parent (``-1`` for a root),
        its children and its clique table's shape.
    assigned : list of list of int
        The reduced factors each step multiplies in (those whose first-eliminated
        variable is its own).
    max_table_bytes, total_bytes : int
        Bytes of the largest clique table and of all of them (float64); when no order was
        found, the lower bound on the largest table, and ``inf``.
    message_bytes : int
        Bytes of all messages (float64).
    observed : dict
        The variables clamped by evidence, ``{variable: value}``.
    n_pruned : int
        Barren conditional probability tables dropped.
    upward_only, search, anneal
        The constructor's arguments.
    fits : bool
        The calibration fits in ``memory``.
    """

    def __init__(self, model: FactorGraph, *, barren: bool = False, check: bool = True,
                 upward_only: bool = False, order: list[int] | None = None,
                 memory: float | None = None, search: bool = True,
                 anneal: int | None = None, give_up: float | None = None) -> None:
        check_instance(model, FactorGraph, "model")
        if anneal is not None:
            anneal = int(check_positive(anneal, "anneal", allow_zero=True, integer=True))
        self.n = model.n
        self.red = _reduction.Reduced(model, barren)
        self.observed = dict(self.red.observed)
        self.n_pruned = len(self.red.pruned)
        self.upward_only = upward_only
        self.search = search
        self.anneal = anneal
        self._scaled: list[Scaled | None] | None = None
        self.treewidth_lower_bound: int | None = None
        self.log_table_lower_bound: float | None = None
        given = order is not None and set(self.red.active) <= set(order)
        # one reading of the machine's memory serves the whole plan: reading it costs
        # about as much as planning a small model
        self._available = available_memory()
        budget = self._available if memory is None else memory
        # past these log entries of its largest clique table no order is of use: none
        # fits in memory (a calibration holds four tables of 8-byte entries), nor would
        # its slices be answered (the caller's ``give_up``)
        self._hopeless = math.inf if give_up is None else max(
            math.log(max(self._available, 1) / 16.0),
            math.log(max(budget, UNCHECKED_BYTES) / 32.0), give_up)
        if given:
            active = set(self.red.active)
            self._given_order(model, [v for v in order if v in active])
        else:
            self._order(model, check)
        if self.order is None:
            self.fits = False
            return
        self._tree()
        self.fits = bool(self.memory_bytes() <= max(UNCHECKED_BYTES, budget))
        if not given and search and (not self.fits or self.total_bytes > 8 * SEARCH_LARGE_ENTRIES):
            # too large for memory, or minutes of work: the randomized search may find an
            # order that fits, or one that saves more time than its seconds
            self._order(model, check, every=True)
            self._tree()
            self.fits = bool(self.memory_bytes() <= max(UNCHECKED_BYTES, budget))
        if check:
            require_memory(self.memory_bytes(), self._what())

    # ------------------------------------------------------------------ construction
    def _order(self, model: FactorGraph, check: bool, every: bool = False) -> None:
        """The best candidate order of each component. Where none fits, the candidates are
        scored again up to :data:`REPORT_LOG_ENTRIES`, and if one is within that, the
        randomized contraction search
        (:func:`~mrflib.inference.exact.elimination_order.searched_order`)
        tries to beat it; an order that still does not fit is refused (``check``) or kept,
        so that the plan says how far it is from fitting (``order`` ``None`` when nothing
        is within :data:`REPORT_LOG_ENTRIES`). With ``every`` (a plan whose tables fit one
        by one but not together) every component of more than :data:`SEARCH_MIN_ENTRIES`
        table entries is searched too."""
        red = self.red
        adj = eo.interaction_graph(model.n, red.scopes)
        logc = np.log(red.card.astype(np.float64)).tolist()
        limit = math.log(max(self._available, 1) / 16.0)
        order: list[int] | None = []
        names: list[str] = []
        cliques: list[list[int]] | None = []
        comps = eo.components(adj, red.active)
        # (repeated components are planned once: a key per component, for several)
        memo: dict | None = {} if len(comps) > 1 else None
        for comp in comps:
            found = eo.best_order(adj, logc, comp, limit, memo)
            if found.order is None:
                # (a bound first: where no order can fit, the searches below are wasted)
                width, least = self._lower_bound(adj, logc, comp)
                if check and least > limit + 1e-9:
                    _refuse_bound(width, least, len(comp))
                if least > REPORT_LOG_ENTRIES + 1e-9:  # no order within the report's reach
                    self._unplanned()
                    return
                wide = eo.best_order(adj, logc, comp, max(limit, REPORT_LOG_ENTRIES), memo)
                # (annealing starts from the search's own trees: it needs no greedy order,
                # only room for an order that fits)
                if self.search and least <= self._hopeless and (wide.order is not None or (
                        self.anneal is not None
                        and eo.table_lower_bound(adj, logc, comp) <= limit)):
                    wide = eo.searched_order(red.scopes, logc, comp, wide, limit, self.anneal)
                if wide.order is not None or not check:
                    found = wide
                if found.order is not None and check and found.log_max_table > limit + 1e-9:
                    _refuse(found, len(comp))
            elif every and found.total_entries > SEARCH_MIN_ENTRIES:
                found = eo.searched_order(red.scopes, logc, comp, found, limit, self.anneal)
            if found.order is None:
                if check:
                    _refuse_unfound(width, least, len(comp))
                self._unplanned()
                return
            order += found.order
            names.append(found.heuristic)
            # components share no variable: the whole order's cliques are theirs in turn
            cliques = None if cliques is None or found.cliques is None else cliques + found.cliques
        self._set_order(adj, logc, order, "+".join(sorted(set(names))) or "none", cliques)

    def _given_order(self, model: FactorGraph, order: list[int]) -> None:
        adj = eo.interaction_graph(model.n, self.red.scopes)
        logc = np.log(self.red.card.astype(np.float64)).tolist()
        self._set_order(adj, logc, list(order), "given")

    def _set_order(self, adj: list[set[int]], logc: list[float], order: list[int],
                   heuristic: str, cliques: list[list[int]] | None = None) -> None:
        self.order, self.heuristic = order, heuristic
        if cliques is None:
            cliques, _, _ = eo.order_cliques(adj, order, logc)
        self.cliques = [tuple(c) for c in cliques]

    def _lower_bound(self, adj: list[set[int]], logc: list[float], comp: list[int]
                     ) -> tuple[int, float]:
        """A lower bound on the treewidth of the component ``comp`` and on the log entries
        of its largest clique table in every order (:mod:`mrflib.inference.exact.treewidth_bounds`),
        kept for the plan (the largest over its components)."""
        width = tb.treewidth_lower_bound(adj, comp)
        least = tb.table_bound(logc, comp, width)
        if self.log_table_lower_bound is None or least > self.log_table_lower_bound:
            self.treewidth_lower_bound, self.log_table_lower_bound = width, least
        return width, least

    def _unplanned(self) -> None:
        """No order found: the plan reports the lower bounds of every order, its treewidth
        unknown (``None``)."""
        self.order, self.heuristic, self.cliques = None, "none", []
        self.treewidth = None
        self.max_table_bytes = 8.0 * math.exp(self.log_table_lower_bound)
        self.total_bytes = self.message_bytes = math.inf

    def _tree(self) -> None:
        pos = {v: t for t, v in enumerate(self.order)}
        self.parent, self.children, self.shapes = clique_tree(self.cliques, self.red.card)
        self.assigned: list[list[int]] = [[] for _ in self.order]
        at = pos.__getitem__
        for k, s in enumerate(self.red.scopes):
            self.assigned[min(map(at, s))].append(k)
        sizes = [math.prod(s) for s in self.shapes]
        self.treewidth = max((len(c) for c in self.cliques), default=0) - 1
        self.max_table_bytes = 8 * max(sizes, default=1)
        self.total_bytes = 8 * sum(sizes)
        self.message_bytes = 8 * sum(z // s[0] for z, s in zip(sizes, self.shapes))

    def memory_bytes(self, upward_only: bool | None = None) -> float:
        """Peak bytes of a calibration: the upward and downward messages, one clique table
        and its temporaries (``opt_einsum``'s intermediates are at most a clique table
        each, a pairwise product holding up to three).

        Parameters
        ----------
        upward_only : bool or None, default None
            Count one upward pass that frees each message once its parent has used it: the
            largest, over the steps, of the messages alive then and the step's clique table
            with its temporaries. ``None``: the plan's own ``upward_only`` (set for ``log Z``).

        Returns
        -------
        float
            The bytes; ``inf`` when no order was found.
        """
        if self.order is None:
            return math.inf
        if upward_only if upward_only is not None else self.upward_only:
            return upward_peak_bytes(self.shapes, self.children)
        return 2.0 * self.message_bytes + 4.0 * self.max_table_bytes

    def with_tables(self, tables: list[np.ndarray], flat: np.ndarray | None = None
                    ) -> EliminationPlan:
        """This plan over other tables of the reduced model: the same order, tree and
        compiled layout, none of them made again.

        For tables that reduce as the plan's do: the same scopes and shapes, none with a
        single finite entry (evidence) nor a conditional probability table the reduction
        would drop. A Boltzmann machine's finite tables of two states never reduce, so a
        learner plans its graph once and gives each step's parameters this way.

        Parameters
        ----------
        tables : list of ndarray of float64
            The log tables of the reduced factors, in the order and shapes of
            ``red.tables``.
        flat : ndarray of float64 or None, default None
            ``tables`` concatenated in that order (C order), where the caller has them;
            ``None``: concatenated here when a compiled pass needs them.

        Returns
        -------
        EliminationPlan
            A copy of the plan, sharing everything but the tables and what is made of them.
        """
        if len(tables) != len(self.red.tables):
            raise ValueError(f"tables must hold {len(self.red.tables)} tables (the plan's "
                             f"reduced factors), got {len(tables)}")
        new = copy.copy(self)
        new.red = copy.copy(self.red)
        new.red.tables = list(tables)
        new._scaled = None
        _compiled_passes.retable(self, new, flat)
        return new

    @property
    def hopeless(self) -> bool:
        """No order of the model is of use: the lower bound on the largest clique table
        of every order (``log_table_lower_bound``) is beyond the memory, and beyond the
        plan's ``give_up`` (false without ``give_up``, or where no bound was computed)."""
        return (self.log_table_lower_bound is not None
                and self.log_table_lower_bound > self._hopeless)

    def _what(self) -> str:
        if self.order is None:
            return (f"exact inference (treewidth >= {self.treewidth_lower_bound}: every "
                    f"elimination order has a clique table of at least "
                    f"{format_bytes(self.max_table_bytes)})")
        return (f"the junction tree of treewidth {self.treewidth} (largest clique table "
                f"{format_bytes(self.max_table_bytes)}, all tables "
                f"{format_bytes(self.total_bytes)})")

    def __repr__(self) -> str:
        eliminated = "?" if self.order is None else len(self.order)
        width = (f"treewidth >= {self.treewidth_lower_bound}, max_table >= "
                 if self.order is None else f"treewidth={self.treewidth}, max_table=")
        return (f"EliminationPlan(n={self.n}, eliminated={eliminated}, "
                f"observed={len(self.observed)}, pruned={self.n_pruned}, "
                f"{width}{format_bytes(self.max_table_bytes)}, "
                f"total={format_bytes(self.total_bytes)}, heuristic={self.heuristic!r}, "
                f"fits={self.fits})")

    # ------------------------------------------------------------------ passes
    def _ticker(self, what: str) -> tuple[Callable[[float], None], list[int]]:
        """A progress ticker of a pass (:mod:`mrflib._support.progress`) and the clique table
        entries before each step (work is in proportion to them)."""
        done = [0, *itertools.accumulate(math.prod(s) for s in self.shapes)]
        return ticker(what, done[-1]), done

    def _inputs(self, t: int, msgs: list, linear: bool = False) -> tuple[list, list]:
        """The tables multiplying to ``ψ_t`` and their scopes: the factors assigned to step
        ``t`` (log tables, or with ``linear`` their :class:`~mrflib.inference._factor_ops.Scaled`
        forms where they have one) and its children's messages."""
        red = self.red
        if linear:
            if self._scaled is None:  # shared by the upward and downward passes
                self._scaled = [scaled(x) for x in red.tables]
            tables = [self._scaled[k] if self._scaled[k] is not None else red.tables[k]
                      for k in self.assigned[t]]
        else:
            tables = [red.tables[k] for k in self.assigned[t]]
        tables += [msgs[c] if linear else as_log(msgs[c]) for c in self.children[t]]
        scopes = [red.scopes[k] for k in self.assigned[t]]
        scopes += [self.cliques[c][1:] for c in self.children[t]]
        return tables, scopes

    def clique_table(self, t: int, msgs: list) -> np.ndarray:
        """``ψ_t``: the factors assigned to step ``t`` plus its children's messages.

        Parameters
        ----------
        t : int
            The step.
        msgs : list
            The upward messages (:meth:`upward`).

        Returns
        -------
        ndarray of float64
            The log clique table, shaped ``shapes[t]`` (axes in the order of ``cliques[t]``).
        """
        tables, scopes = self._inputs(t, msgs)
        return clique_sum(tables, scopes, self.cliques[t], self.shapes[t])

    def clique_rows(self, t: int, msgs: list, x: np.ndarray) -> np.ndarray:
        """``ψ_t(·, x_{N_t})`` for each row of the states ``x``.

        The rows of the clique table at the other variables' values, summed from the inputs
        without making the table (``clique_table(t, msgs)[:, x_{N_t}]``).

        Parameters
        ----------
        t : int
            The step.
        msgs : list
            The upward messages (:meth:`upward`).
        x : ndarray of int64, shape (M, n)
            States; only the variables of ``N_t`` are read.

        Returns
        -------
        ndarray of float64, shape (M, |X_v|)
            Row ``s``: the log clique table over the states of ``v = cliques[t][0]``, at
            ``x[s]``.
        """
        v = self.cliques[t][0]
        out = np.zeros((len(x), self.shapes[t][0]))
        for table, scope in zip(*self._inputs(t, msgs)):
            if v in scope:
                a = scope.index(v)
                moved = np.moveaxis(table, a, -1)
                out += moved[tuple(x[:, w] for w in scope if w != v)]
            else:
                out += table[tuple(x[:, w] for w in scope)][:, None]
        return out

    def upward(self, maximize: bool = False, keep: bool = True) -> tuple[float, list]:
        """The messages ``m_t`` and the value they give.

        Clique tables are rebuilt from the messages when needed, so only the messages are
        kept. Sum-product messages are :class:`~mrflib.inference._factor_ops.Scaled` where they
        fit, else log tables (:func:`~mrflib.inference._factor_ops.as_log` gives the log table of
        either); max-product messages are log tables.

        Parameters
        ----------
        maximize : bool, default False
            Max-product instead of sum-product.
        keep : bool, default True
            Keep every message; without, each message is freed (``None``) once its parent has
            used it.

        Returns
        -------
        value : float
            ``log Z`` (sum-product), or the largest log-weight (max-product).
        msgs : list
            The message of each step.
        """
        red = self.red
        msgs: list = []
        value = red.const + (0.0 if maximize else red.free_log)
        tick, done = self._ticker("max-product pass" if maximize else "upward pass")
        for t in range(len(self.cliques)):
            tick(done[t])
            tables, scopes = self._inputs(t, msgs, not maximize)
            if not keep:  # ``tables`` holds them until this step's message is made
                for c in self.children[t]:
                    msgs[c] = None
            if maximize:
                msgs.append(clique_eliminate(tables, scopes, self.cliques[t],
                                             self.shapes[t], True))
            else:
                msgs.append(eliminate(tables, scopes, self.cliques[t], self.shapes[t]))
            del tables, scopes
            if self.parent[t] < 0:
                value += float(as_log(msgs[t]))
        return value, msgs

    def beliefs(self, msgs: list, targets: Callable[[int], list]
                ) -> Iterator[tuple[int, list[np.ndarray]]]:
        """The log marginals of every clique, from the roots down (Hugin pass).

        A clique's belief gives its children's downward messages and the marginals asked
        for in one pass (:func:`~mrflib.inference._factor_ops.marginals_onto`), so the pass holds
        the messages and at most one clique table at a time.

        Parameters
        ----------
        msgs : list
            The upward sum-product messages (:meth:`upward` with ``keep``).
        targets : callable
            ``targets(t)``: the scopes wanted of step ``t``, each a subset of clique ``t``.

        Yields
        ------
        t : int
            The step, in reverse elimination order.
        beliefs : list of ndarray of float64
            ``log P(x_s)`` for each ``s`` in ``targets(t)``, axes in its order.
        """
        down: list = [None] * len(msgs)
        tick, done = self._ticker("downward pass")
        for t in range(len(msgs) - 1, -1, -1):
            tick(done[-1] - done[t + 1])
            tables, scopes = self._inputs(t, msgs, True)
            if self.parent[t] >= 0:
                tables.append(down[t])
                scopes.append(self.cliques[t][1:])
            seps = [self.cliques[c][1:] for c in self.children[t]]
            wanted = list(targets(t))
            out = marginals_onto(tables, scopes, self.cliques[t], self.shapes[t],
                                 seps + wanted)
            shift = float(as_log(msgs[t])) if self.parent[t] < 0 else 0.0
            for c, m in zip(self.children[t], out):
                down[c] = divide(m, msgs[c], shift)
            down[t] = None
            yield t, [as_log(m) - shift for m in out[len(seps):]]


def upward_peak_bytes(shapes: list[tuple], children: list[list[int]]) -> float:
    """Peak bytes of one upward pass that frees each message once its parent has used it.

    The largest, over the steps ``t``, of the messages alive at ``t`` (made, parent not yet
    done, ``t``'s own included) plus four clique tables of ``t`` (the table and its
    temporaries, as in :meth:`EliminationPlan.memory_bytes`).

    Parameters
    ----------
    shapes : list of tuple of int
        Each step's clique table shape, the eliminated variable first.
    children : list of list of int
        Each step's children (:func:`clique_tree`).

    Returns
    -------
    float
        The bytes.
    """
    alive, peak = 0.0, 0.0
    for t, shape in enumerate(shapes):
        size = 8.0 * math.prod(shape)
        alive += size / shape[0]
        peak = max(peak, alive + 4.0 * size)
        alive -= sum(8.0 * math.prod(shapes[c]) / shapes[c][0] for c in children[t])
    return peak


def _refuse(found: eo.Order, size: int) -> None:
    """Refuse a component whose best order found does not fit (before anything is
    allocated)."""
    _refuse_table(f"the best elimination order found has treewidth {found.width}: a clique "
                  "table of", found.log_max_table, size)


def _refuse_bound(width: int, log_entries: float, size: int) -> None:
    """Refuse a component whose every order has a clique table of at least
    ``exp(log_entries)`` entries, its treewidth being at least ``width`` (before any
    order search)."""
    _refuse_table(f"treewidth >= {width}: every elimination order has a clique table of at "
                  "least", log_entries, size)


def _refuse_table(why: str, log_entries: float, size: int) -> None:
    """Refuse a component of ``size`` variables whose clique table of ``exp(log_entries)``
    entries (``why`` says whose) and its temporaries do not fit in memory."""
    table = 8.0 * math.exp(log_entries)
    what = (f"exact inference on a component of {size} variables ({why} "
            f"{format_bytes(table)}, twice that with its temporaries)")
    require_memory(2.0 * table, what)
    raise ValueError(f"{what} does not fit: its tables may use at most "
                     f"{format_bytes(available_memory() / 2)}")  # pragma: no cover


def _refuse_unfound(width: int, log_entries: float, size: int) -> None:
    """Refuse a component for which no order with a clique table of at most
    :data:`REPORT_LOG_ENTRIES` entries was found, though the lower bounds do not exclude
    one."""
    raise ValueError(
        f"exact inference on a component of {size} variables does not fit: no elimination "
        f"order with a clique table of at most {format_bytes(8.0 * math.exp(REPORT_LOG_ENTRIES))} "
        f"was found (treewidth >= {width}: every order has a clique table of at least "
        f"{format_bytes(8.0 * math.exp(log_entries))})")


def clique_tree(cliques: list[tuple], card: np.ndarray) -> tuple[list[int], list[list[int]],
                                                                list[tuple]]:
    """The junction tree of an elimination order's cliques.

    Parameters
    ----------
    cliques : list of tuple of int
        ``(order[t], *N_t)`` for each step, ``N_t`` sorted by elimination position.
    card : ndarray of int64
        Number of states of each variable.

    Returns
    -------
    parent : list of int
        The parent step of each step (``-1`` for a root).
    children : list of list of int
        The children of each step.
    shapes : list of tuple of int
        The shape of each step's clique table.
    """
    pos = {c[0]: t for t, c in enumerate(cliques)}
    parent = [pos[c[1]] if len(c) > 1 else -1 for c in cliques]
    children: list[list[int]] = [[] for _ in cliques]
    for t, p in enumerate(parent):
        if p >= 0:
            children[p].append(t)
    states = card.tolist()  # a list indexes ten times faster than an array
    return parent, children, [tuple([states[v] for v in c]) for c in cliques]


