"""Exact inference on discrete factor graphs by variable elimination on a junction tree.

For ``P(x) = (1/Z) Π_k ψ_k(x_{S_k})`` (the LAP paper's eq. (1); natural-log tables
``θ_k = log ψ_k`` of a :class:`~mrflib.models.factor_graph.FactorGraph`) the engine

1. **reduces** the model as exact solvers do: an *observed* variable (one whose unary factor
   has a single finite entry, as :meth:`~mrflib.models.factor_graph.FactorGraph.condition` makes,
   or a variable with one
   state) is clamped and sliced out of every factor; for ``log Z`` and sampling, a factor
   normalized over a variable that no other factor holds (a conditional probability table
   of an unobserved leaf: ``log Σ_{x_c} ψ = 0`` for every configuration of the others) sums
   to one and is dropped, recursively (barren variables); a variable left without factors
   contributes ``log |X_v|`` (:class:`mrflib.inference._reduction.Reduced`, the first step of
   the approximations too);
2. **plans** an elimination order (:mod:`mrflib.inference.exact.elimination_order`) on what is left,
   one
   tree per connected component, and refuses before allocating a plan that does not fit;
3. **eliminates**: step ``t`` sums (or maximizes) ``v_t`` out of the clique table
   ``ψ_t(x_{C_t}) = Σ_{k → t} θ_k + Σ_{c → t} m_c``, the factors assigned to it (those whose
   first-eliminated variable is ``v_t``) plus its children's messages, and sends
   ``m_t(x_{N_t}) = log Σ_{x_{v_t}} exp ψ_t`` to its parent, the step of the first-eliminated
   variable of ``N_t``. The roots' messages add up to ``log Z`` (sum-product) or the largest
   log-weight (max-product, then back-tracking gives the MAP state). A downward (Hugin) pass
   gives every clique its marginal; forward filtering then backward sampling of
   ``P(x_{v_t} | x_{N_t}) ∝ exp ψ_t`` in reverse order gives exact samples.

Tables are in log space. A clique is never made for a message or a marginal: its entries
are summed from the inputs onto the outputs (:mod:`mrflib.inference._factor_ops`), in linear space
when no product of the inputs, each scaled to largest entry one, can underflow (their
spans add up to at most 700 nats), otherwise by a log-sum-exp with a shift. Messages stay in
linear space with a log scale (:class:`~mrflib.inference._factor_ops.Scaled`) from step to step
while
they can: a numba kernel walks a clique in one pass, ``opt_einsum`` contracts a large one
with a matrix-product structure. So ``log Z = ±4600`` and tables full of ``-inf`` are
exact; a model with ``Z = 0`` gives ``log Z = -inf`` (never NaN).

Precision: exact within the limit :mod:`mrflib.models.precision` states (and argues once
for every engine); beyond it :mod:`mrflib.inference.exact` warns before calling this engine.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mrflib._support.pages import small_pages
from mrflib._support.progress import ticker
from mrflib._support.validation import (
    UNCHECKED_BYTES,
    as_rng,
    available_memory,
    check_instance,
    check_positive,
    format_bytes,
    require_memory,
)
from mrflib.inference import _reduction
from mrflib.inference._factor_ops import (
    RENORMALIZE_LOG_Z,
    Scaled,
    as_log,
    clique_eliminate,
    clique_sum,
    divide,
    draw_categorical,
    eliminate,
    marginals_onto,
    renormalize,
    renormalize_all,
    scaled,
)
from mrflib.inference.exact import _compiled_passes
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import treewidth_bounds as tb
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.precision import checked, magnitude

__all__ = ["EliminationPlan", "plan", "log_partition", "upward_peak_bytes", "marginals",
           "marginals_and_log_partition", "factor_marginals", "clique_tree",
           "map_assignment", "sample", "CPT_TOLERANCE"]

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

#: A factor counts as a conditional probability table over ``c`` when ``|log Σ_{x_c} ψ| <=``
#: this for every configuration of its other variables (the reduction's test of a barren
#: table, :mod:`mrflib.inference._reduction`).
CPT_TOLERANCE = _reduction.CPT_TOLERANCE


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


# --------------------------------------------------------------------------- tasks
def plan(model: FactorGraph, *, barren: bool = False, check: bool = True,
         upward_only: bool = False, search: bool = True,
         anneal: int | None = None, give_up: float | None = None) -> EliminationPlan:
    """The :class:`EliminationPlan` of ``model``.

    With ``check`` a plan that does not fit in the available memory is refused
    (``ValueError`` with its sizes); without, it is returned with ``fits`` false, its
    treewidth and table sizes (lower bounds, and ``order`` ``None``, when no order with a
    clique table below :data:`REPORT_LOG_ENTRIES` entries was found).

    Parameters
    ----------
    model : FactorGraph
        The model.
    barren : bool, default False
        Drop barren CPTs, as :func:`log_partition` and :func:`sample` do.
    check : bool, default True
        Refuse a plan that does not fit in memory.
    upward_only : bool, default False
        Size the plan for one upward pass, as :func:`log_partition` needs.
    search : bool, default True
        A plan that does not fit, or holds more than :data:`SEARCH_LARGE_ENTRIES` table
        entries, tries the randomized order search and its refinement, seconds of work,
        before it is refused or returned.
    anneal : int or None, default None
        A seed: an order that still does not fit has its contraction tree annealed too,
        about a minute more.
    give_up : float or None, default None
        Log entries of a largest clique table past which no order is searched
        (:func:`mrflib.inference.exact.sliced.give_up`).

    Returns
    -------
    EliminationPlan
        The plan.
    """
    return EliminationPlan(model, barren=barren, check=check, upward_only=upward_only,
                           search=search, anneal=anneal, give_up=give_up)


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


@checked
@small_pages()
def log_partition(model: FactorGraph, jt: EliminationPlan | None = None) -> float:
    """``log Z``: evidence clamped, barren CPTs dropped, one upward sum-product pass that
    frees each message once it is used.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one (barren CPTs dropped, sized for one
        upward pass).

    Returns
    -------
    float
        The natural log of the partition function; ``-inf`` when ``Z = 0``.
    """
    if jt is None:
        jt = plan(model, barren=True, upward_only=True)
    fast = _compiled_passes.log_partition(jt)
    return jt.upward(keep=False)[0] if fast is None else fast


def _calibrated(model: FactorGraph, jt: EliminationPlan | None = None,
                zero_ok: bool = False) -> tuple[EliminationPlan, list, float, float]:
    """The plan, its upward messages, ``log Z`` and the magnitude of the log values the
    beliefs went through (the largest ``|log Z|`` of a component, or the sum of the tables'
    largest ``|log-weight|``, which bounds every message), for :func:`renormalize`.
    ``Z = 0`` is refused unless ``zero_ok``."""
    jt = plan(model) if jt is None else jt
    logz, msgs = jt.upward()
    if logz == -np.inf and not zero_ok:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): its marginals are undefined")
    roots = [abs(float(as_log(m))) for t, m in enumerate(msgs) if jt.parent[t] < 0]
    tables = magnitude(jt.red.tables)
    return jt, msgs, logz, max(roots + [tables])


def _point_mass(card: int, value: int) -> np.ndarray:
    out = np.zeros(card)
    out[value] = 1.0
    return out


@checked
def marginals(model: FactorGraph, jt: EliminationPlan | None = None) -> list[np.ndarray]:
    """``P(x_i)`` for every variable.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one.

    Returns
    -------
    list of ndarray of float64
        One ``(|X_i|,)`` array per variable (observed: a point mass; in no factor:
        uniform).

    Raises
    ------
    ValueError
        When ``Z = 0`` (e.g. impossible evidence): the marginals are undefined.
    """
    return marginals_and_log_partition(model, jt)[0]


@checked
@small_pages()
def marginals_and_log_partition(model: FactorGraph, jt: EliminationPlan | None = None,
                                zero_ok: bool = False) -> tuple[list[np.ndarray] | None, float]:
    """:func:`marginals` and ``log Z`` from the same calibration.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one.
    zero_ok : bool, default False
        A model with ``Z = 0`` gives ``(None, -inf)`` instead of a ``ValueError``.

    Returns
    -------
    marginals : list of ndarray of float64 or None
        One ``(|X_i|,)`` array per variable; ``None`` when ``Z = 0`` and ``zero_ok``.
    log_z : float
        The natural log of the partition function.
    """
    card = check_instance(model, FactorGraph, "model").cardinalities
    require_memory(8 * sum(card.tolist()), f"the marginals of {model.n} variables "
                   f"({sum(card.tolist())} states in all)")
    jt = plan(model) if jt is None else jt
    fast = _compiled_passes.marginals(jt)
    if fast is None:
        jt, msgs, logz, scale = _calibrated(model, jt, zero_ok)
        if logz == -np.inf:
            return None, logz
        found = ((jt.order[t], np.exp(b))
                 for t, (b,) in jt.beliefs(msgs, lambda t: [jt.cliques[t][:1]]))
    else:
        logz, roots, found = fast
        scale = max([abs(r) for r in roots], default=0.0)
        if scale <= RENORMALIZE_LOG_Z:  # only past it does the scale change an answer
            scale = max(scale, magnitude(jt.red.tables))
    out: list = [None] * model.n
    for v, x in jt.observed.items():
        out[v] = _point_mass(int(card[v]), x)
    found = list(found)
    for (v, _), p in zip(found, renormalize_all([p for _, p in found], scale)):
        out[v] = p
    for v, c in enumerate(card.tolist()):
        if out[v] is None:  # in no factor: uniform
            out[v] = np.full(c, 1.0 / c)
    return out, logz


@checked
@small_pages()
def factor_marginals(model: FactorGraph) -> list[np.ndarray]:
    """``P(x_{S_k})`` for every factor.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    list of ndarray of float64
        One array per factor, shaped like ``model.log_tables[k]`` (axes in scope order).

    Raises
    ------
    ValueError
        When ``Z = 0`` (e.g. impossible evidence).
    """
    jt, msgs, _, scale = _calibrated(model)
    wanted = lambda t: [jt.red.scopes[k] for k in jt.assigned[t]]  # noqa: E731
    return jt.red.factor_tables(model, ((k, renormalize(np.exp(m), scale))
                                        for t, ms in jt.beliefs(msgs, wanted)
                                        for k, m in zip(jt.assigned[t], ms)))


@checked
@small_pages()
def map_assignment(model: FactorGraph, jt: EliminationPlan | None = None,
                   zero_ok: bool = False) -> tuple[np.ndarray | None, float]:
    """A most probable state (max-product on the same tree, then back-tracking) and its
    log-weight.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one.
    zero_ok : bool, default False
        A model whose every state has zero weight gives ``(None, -inf)`` instead of a
        ``ValueError``.

    Returns
    -------
    x : ndarray of int64, shape (n,) or None
        A most probable state; ``None`` when ``Z = 0`` and ``zero_ok``.
    log_weight : float
        Its log-weight ``Σ_k θ_k(x_{S_k})``.
    """
    jt = plan(model) if jt is None else jt
    best, msgs = jt.upward(maximize=True)
    if best == -np.inf and zero_ok:
        return None, best
    if best == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): it has no most probable state")
    x = np.zeros(model.n, dtype=np.int64)
    for v, val in jt.observed.items():
        x[v] = val
    for t in range(len(jt.order) - 1, -1, -1):
        clique = jt.cliques[t]
        x[clique[0]] = int(np.argmax(jt.clique_rows(t, msgs, x[None])[0]))
    return x, float(best)


@checked
@small_pages()
def sample(model: FactorGraph, n_samples: int, *, rng: Any) -> np.ndarray:
    """Exact i.i.d. samples: forward filtering (the upward pass), backward sampling in
    reverse elimination order, then the dropped CPTs forward.

    Uniforms come from ``rng`` in blocks of ``(rows, n)`` (column ``i`` decides variable
    ``i``): the same seed gives the same samples.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    n_samples : int
        Number of samples, at least 1.
    rng : int or numpy.random.Generator
        Seed or generator of the uniforms.

    Returns
    -------
    ndarray of int64, shape (n_samples, n)
        The samples, states ``0..|X_i|-1``.

    Raises
    ------
    ValueError
        When ``Z = 0`` (the model cannot be sampled), or the plan and the samples do not
        fit in memory.
    """
    check_instance(model, FactorGraph, "model")
    n_samples = int(check_positive(n_samples, "n_samples", integer=True))
    rng = as_rng(rng)
    jt = plan(model, barren=True)
    require_memory(jt.memory_bytes() + 24.0 * n_samples * model.n,
                   f"n_samples = {n_samples} samples of {model.n} variables with "
                   f"{jt._what()}")
    logz, msgs = jt.upward()
    if logz == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): it cannot be sampled")
    msgs = [as_log(m) for m in msgs]  # the rows are read in log space
    out = np.empty((n_samples, model.n), dtype=np.int64)
    block = max(1, min(n_samples, 2**22 // model.n))  # clique tables are rebuilt per block
    for start in range(0, n_samples, block):
        u = rng.random((min(block, n_samples - start), model.n))
        out[start:start + len(u)] = _backward_sample(jt, msgs, u)
    return out


def _backward_sample(jt: EliminationPlan, msgs: list, u: np.ndarray) -> np.ndarray:
    red = jt.red
    x = np.zeros(u.shape, dtype=np.int64)
    for v, val in jt.observed.items():
        x[:, v] = val
    for v in red.free:
        x[:, v] = np.minimum((u[:, v] * red.card[v]).astype(np.int64), red.card[v] - 1)
    for t in range(len(jt.order) - 1, -1, -1):
        clique = jt.cliques[t]
        x[:, clique[0]] = draw_categorical(jt.clique_rows(t, msgs, x), u[:, clique[0]])
    for scope, table, child in reversed(red.pruned):
        a = scope.index(child)
        moved = np.moveaxis(table, a, -1)
        logits = moved[tuple(x[:, w] for w in scope if w != child)]
        logits = np.broadcast_to(logits, (len(x), table.shape[a]))
        x[:, child] = draw_categorical(logits, u[:, child])
    return x
