"""Elimination orders for exact inference on discrete graphical models.

Summing the variables of ``P(x) ∝ Π_k ψ_k(x_{S_k})`` out one at a time in an order
``v_1, v_2, ...`` builds, at step ``t``, a table over the clique ``C_t = {v_t} ∪ N_t``
(``N_t``: the neighbours of ``v_t`` in the interaction graph not yet eliminated, fill edges
included). Time and memory grow with the clique tables ``Π_{u ∈ C_t} |X_u|``; the largest
clique minus one is the order's *width* (an upper bound on the treewidth). Finding the best
order is NP-hard; exact solvers take the best of a few greedy heuristics (Koller and
Friedman, *Probabilistic Graphical Models*, sec. 9.4.3):

* ``min-degree``: eliminate the variable with the fewest neighbours;
* ``min-weight``: the smallest clique table ``Π_{u ∈ C} |X_u|``;
* ``min-fill``: the fewest fill edges added;
* ``weighted-min-fill``: the smallest sum of ``|X_a| |X_b|`` over the fill edges;

and cheap sweeps (the variables' own order, reverse Cuthill-McKee), which are optimal on
lattices. Each candidate is scored by its largest clique table, then by the total size of
all tables; a candidate is abandoned as soon as one of its cliques exceeds the best so far.
Components of up to :data:`DENSE_MAX_NODES` variables are ordered by a numba kernel on an
adjacency matrix of bits that recomputes only the keys whose neighbourhood changed (a
10x10 grid in well under a millisecond); larger ones by the set-based
:func:`greedy_order_sets`, which keeps its keys in a heap with lazy deletion. Both give the
same orders.

Where none of these fits, :func:`searched_order`
(:mod:`mrflib.inference.exact.contraction_search`) searches the contraction trees of the
factors instead. The interaction graph, the cliques an order makes and the record of an
order found are in :mod:`mrflib.inference.exact.elimination_cliques`; the lower bounds on the
width of every order, in :mod:`mrflib.inference.exact.treewidth_bounds`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mrflib._support.interpreted import run_small
from mrflib.inference.exact import _elimination_order_kernels as _kernels
from mrflib.inference.exact.contraction_search import (
    ANNEAL_REACH,
    ANNEAL_STEPS,
    ANNEAL_VISITS,
    REFINE_TREES,
    REFINE_WORK,
    SEARCH_WORK,
    contraction_order,
    refine_trees,
    searched_order,
)
from mrflib.inference.exact.elimination_cliques import (
    Order,
    components,
    connect_neighbours,
    interaction_graph,
    order_cliques,
)
from mrflib.inference.exact.treewidth_bounds import minor_min_width, table_lower_bound

__all__ = ["CRITERIA", "Order", "Plan", "connect_neighbours", "interaction_graph", "greedy_order",
           "greedy_order_sets", "greedy_key", "order_cliques", "best_order", "components",
           "contraction_order", "searched_order", "refine_trees", "minor_min_width",
           "table_lower_bound", "SEARCH_WORK", "REFINE_TREES", "REFINE_WORK", "ANNEAL_STEPS",
           "ANNEAL_VISITS", "ANNEAL_REACH"]

#: The greedy criteria of :func:`greedy_order`.
CRITERIA = ("min-fill", "weighted-min-fill", "min-weight", "min-degree")
#: Components larger than this skip the fill-based criteria (their keys cost ``O(degree^2)``).
FILL_MAX_NODES = 5_000
#: A fill-based search stops (no order) after this many neighbour-set operations, so dense
#: or wide graphs, which do not fit anyway, are planned in well under a second.
FILL_MAX_WORK = 3_000_000
#: Components larger than this skip the quadratic-free criteria too (sweeps only).
GREEDY_MAX_NODES = 50_000
#: Components of at most this many nodes are ordered on an adjacency bit matrix (numba).
DENSE_MAX_NODES = 4_000
#: The dense kernel's budget of fill pair checks (each far cheaper than a set operation).
DENSE_MAX_WORK = 30 * FILL_MAX_WORK



class Plan:
    """What the junction-tree engine will do, the one plan type of both model families:
    :class:`~mrflib.inference.exact.elimination_plan.EliminationPlan`, of a factor graph or
    of a Boltzmann machine's graph.

    Attributes
    ----------
    n : int
        Variables of the model.
    order : sequence of int
        Elimination order (variable ``order[t]`` is summed out at step ``t``).
    heuristic : str
        The ordering heuristic(s) that won (one per connected component, ``+``-joined).
    treewidth : int or None
        Largest clique minus one (``None``: no order was found, and a factor graph's plan
        gives a lower bound, ``treewidth_lower_bound``).
    cliques : list
        ``(order[t], N_t)`` for each step.
    max_table_bytes, total_bytes : int
        Bytes of the largest clique table and of all of them (float64).
    fits : bool
        Whether a calibration fits in memory. A factor graph's plan may say no (it is
        returned to be read); a Boltzmann machine's that
        would not fit is refused instead, so every one says yes.
    treewidth_lower_bound : int or None
        A proved lower bound on the treewidth where no order was found, else ``None``.
    """

    n: int
    order: Any
    heuristic: str
    treewidth: int | None
    cliques: list
    max_table_bytes: int
    total_bytes: int
    # the defaults of a plan that exists only when it fits
    fits: bool = True
    treewidth_lower_bound: int | None = None

    def memory_bytes(self) -> float:  # pragma: no cover - every plan defines it
        """Peak bytes of one calibration.

        Returns
        -------
        float
            The bytes.
        """
        raise NotImplementedError


def _work(dense: np.ndarray) -> int:
    """The work of an order kernel on the bit matrix ``dense`` (a row of words per
    variable): its variables times its words, for :func:`~mrflib._support.interpreted.
    run_small`."""
    return int(dense.shape[0]) * int(dense.size)


def greedy_key(criterion: str, v: int, adj: dict[int, set[int]], logc: Sequence[float],
               card: Sequence[float]) -> float:
    """The key of ``v`` by ``criterion`` on the neighbour sets ``adj``, summed over the
    neighbours in increasing order (so the numba kernel's floats are the same).

    Parameters
    ----------
    criterion : str
        One of :data:`CRITERIA`.
    v : int
        The variable.
    adj : dict of int to set of int
        Neighbour sets of the variables not yet eliminated.
    logc : sequence of float
        ``log |X_v|`` of every variable.
    card : sequence of float
        ``|X_v|`` of every variable (for ``weighted-min-fill``).

    Returns
    -------
    float
        The key: smaller is eliminated first.
    """
    nb = sorted(adj[v])
    if criterion == "min-degree":
        return float(len(nb))
    if criterion == "min-weight":
        return logc[v] + sum(logc[u] for u in nb)
    if criterion == "min-fill":  # pairs of neighbours not yet adjacent
        return float(sum(len(nb) - 1 - len(adj[v] & adj[u]) for u in nb) // 2)
    # weighted-min-fill: Σ over those pairs (a, b) of |X_a| |X_b|
    total = sum(card[u] for u in nb)
    return sum(card[u] * (total - card[u] - sum(card[w] for w in nb if w in adj[u]))
               for u in nb) / 2


def greedy_order(adj: list[set[int]], logc: Sequence[float], nodes: Sequence[int],
                 criterion: str, limit: float = math.inf, dense: np.ndarray | None = None
                 ) -> list[int] | None:
    """A greedy elimination order of ``nodes`` by ``criterion`` (see :data:`CRITERIA`).

    Ties go to the smallest variable index.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    logc : sequence of float
        ``log |X_v|`` of every variable.
    nodes : sequence of int
        The variables to order.
    criterion : str
        One of :data:`CRITERIA` (a ``ValueError`` otherwise).
    limit : float, default inf
        Log entries of a clique table past which the search stops.
    dense : ndarray or None, default None
        The adjacency bit matrix of the sorted ``nodes`` (row ``i``: ``nodes[i]``; left
        unchanged), made once for several criteria; ``None`` makes it.

    Returns
    -------
    list of int or None
        The order; ``None`` as soon as a clique's ``log`` table size exceeds ``limit``, or,
        for the fill criteria, once updating their keys has cost too much
        (:data:`DENSE_MAX_WORK` pair checks, or :data:`FILL_MAX_WORK` set operations beyond
        :data:`DENSE_MAX_NODES` nodes).
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    nodes = sorted(nodes)
    if len(nodes) > DENSE_MAX_NODES:
        return greedy_order_sets(adj, logc, nodes, criterion, limit)
    dense = _dense_adjacency(adj, nodes) if dense is None else dense.copy()
    lc = np.asarray([logc[v] for v in nodes], dtype=np.float64)
    card = np.asarray([math.exp(logc[v]) for v in nodes], dtype=np.float64)
    order = np.empty(len(nodes), dtype=np.int64)
    done = run_small(_kernels.greedy_keyed, _work(dense), dense, CRITERIA.index(criterion), lc,
                     card, float(limit), DENSE_MAX_WORK, order)
    return [nodes[i] for i in order.tolist()] if done == 0 else None


def _dense_adjacency(adj: list[set[int]], nodes: list[int]) -> np.ndarray:
    """The adjacency of the sorted ``nodes`` as a bit matrix (row ``i``: ``nodes[i]``;
    :func:`~mrflib.inference.exact._elimination_order_kernels.bit_matrix`), what the compiled
    kernels walk."""
    local = {v: i for i, v in enumerate(nodes)}
    degree = [len(adj[v]) for v in nodes]
    rows = np.repeat(np.arange(len(nodes), dtype=np.int64), degree)
    try:  # a connected component: every neighbour is one of the nodes
        cols = np.fromiter(map(local.__getitem__, itertools.chain.from_iterable(
            adj[v] for v in nodes)), dtype=np.int64, count=len(rows))
    except KeyError:
        pairs = [(i, local[u]) for i, v in enumerate(nodes) for u in adj[v] if u in local]
        at = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        rows, cols = at[:, 0], at[:, 1]
    return _kernels.bit_matrix(len(nodes), rows, cols)


def greedy_order_sets(adj: list[set[int]], logc: Sequence[float], nodes: Sequence[int],
                      criterion: str, limit: float = math.inf) -> list[int] | None:
    """:func:`greedy_order` on neighbour sets with a heap (any size; the reference of the
    dense kernel), stopping after :data:`FILL_MAX_WORK` set operations.

    Parameters
    ----------
    adj, logc, nodes, criterion, limit
        As in :func:`greedy_order`.

    Returns
    -------
    list of int or None
        The order, or ``None`` when a clique passes ``limit`` or the fill criteria's work
        passes :data:`FILL_MAX_WORK`.
    """
    keep = set(nodes)
    adj = {v: adj[v] & keep for v in nodes}
    card = [math.exp(c) for c in logc]
    key = {v: greedy_key(criterion, v, adj, logc, card) for v in nodes}
    work = 0
    heap = [(k, v) for v, k in key.items()]
    heapq.heapify(heap)
    done: set[int] = set()
    order = []
    fill = criterion in ("min-fill", "weighted-min-fill")
    while heap:
        k, v = heapq.heappop(heap)
        if v in done or k != key[v]:
            continue
        nb = adj[v]
        if logc[v] + sum(logc[u] for u in nb) > limit + 1e-9:
            return None
        done.add(v)
        order.append(v)
        touched = set(nb)
        connect_neighbours(adj, v)
        if fill:
            for u in nb:
                touched |= adj[u]
            touched -= done
        if fill:  # a fill key costs O(degree^2): bound the whole search
            work += sum(len(adj[u]) ** 2 for u in touched)
            if work > FILL_MAX_WORK:
                return None
        for u in touched:
            ku = greedy_key(criterion, u, adj, logc, card)
            if ku != key[u]:
                key[u] = ku
                heapq.heappush(heap, (ku, u))
    return order



def _rcm(adj: list[set[int]], nodes: list[int]) -> list[int]:
    """Reverse Cuthill-McKee order of ``nodes`` (one connected component): breadth-first
    from the lowest-numbered node of least degree, each node's unvisited neighbours
    appended by increasing degree (ties by number), the whole sequence reversed.

    scipy's ``reverse_cuthill_mckee`` does the same but picks the start among nodes of
    least degree with numpy's unstable ``argsort``, whose order of ties depends on the
    CPU's vector instructions (AVX2 and AVX-512 machines chose different corners of a
    20x20 lattice): every tie is broken here by number, so a plan, and every seeded result
    that follows from it, is the same on every machine.
    """
    local = {v: i for i, v in enumerate(nodes)}
    rows = [sorted(local[u] for u in adj[v] if u in local) for v in nodes]
    degree = [len(r) for r in rows]
    start = min(range(len(nodes)), key=degree.__getitem__)
    order, seen, head = [start], [False] * len(nodes), 0
    seen[start] = True
    while head < len(order):
        fresh = [j for j in rows[order[head]] if not seen[j]]
        head += 1
        for j in fresh:
            seen[j] = True
        order += sorted(fresh, key=degree.__getitem__)
    return [nodes[i] for i in reversed(order)]


def _rcm_dense(dense: np.ndarray, nodes: list[int]) -> list[int]:
    """:func:`_rcm` of the sorted ``nodes``, whose adjacency bit matrix is ``dense``, by the
    compiled kernel (of several components, the sweep of the first one's, as there)."""
    out = np.empty(len(nodes), dtype=np.int64)
    done = run_small(_kernels.rcm_dense, _work(dense), dense, out)
    return np.asarray(nodes, dtype=np.int64)[out[:done]].tolist()


def _candidates(adj: list[set[int]], logc: Sequence[float], nodes: list[int],
                bound: list[float], dense: np.ndarray | None = None):
    """Cheap sweeps first, then the greedy criteria (bounded by size), pruned at ``bound``."""
    yield "natural", nodes
    if len(nodes) > 2:
        rcm = _rcm(adj, nodes) if dense is None else _rcm_dense(dense, nodes)
        yield "reverse-cuthill-mckee", rcm
        yield "cuthill-mckee", rcm[::-1]
    # with one cardinality the weighted keys are the plain ones scaled (min-weight is
    # min-degree, weighted-min-fill min-fill): the same orders, and the first one wins ties
    uniform = len({logc[v] for v in nodes}) <= 1
    if len(nodes) <= GREEDY_MAX_NODES:
        for criterion in ("min-weight",) if uniform else ("min-weight", "min-degree"):
            yield criterion, greedy_order(adj, logc, nodes, criterion, bound[0], dense)
    if len(nodes) <= FILL_MAX_NODES:
        for criterion in ("min-fill",) if uniform else ("min-fill", "weighted-min-fill"):
            yield criterion, greedy_order(adj, logc, nodes, criterion, bound[0], dense)


def best_order(adj: list[set[int]], logc: Sequence[float], nodes: Sequence[int],
               limit: float = math.inf, memo: dict | None = None) -> Order:
    """The best candidate :class:`Order` of ``nodes`` (one connected component, or several),
    scored by the largest clique table, then the total of all tables.

    Several components are ordered one by one (:func:`_joined`): the order is theirs
    concatenated, by smallest node, and covers every one of ``nodes``; its largest table
    and width are the largest of theirs, its total their sum, and its heuristic theirs,
    ``+``-joined.

    Every candidate breaks ties by the nodes' rank, so the order is the one the search
    would find, unless two candidates' totals differ only by rounding (a total sums over
    sets, in an order that follows the numbers).

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    logc : sequence of float
        ``log |X_v|`` of every variable.
    nodes : sequence of int
        The variables to order.
    limit : float, default inf
        Log entries of a clique table past which a candidate is abandoned.
    memo : dict or None, default None
        A dict kept by the caller across the components of one model that remembers the
        orders found: nodes whose graph and numbers of states are another's, node for node
        in increasing order, get that one's order relabelled (grounded Markov logic
        networks repeat one small network hundreds of times).

    Returns
    -------
    Order
        The best order. When every candidate of a component exceeds ``limit``, ``order``
        is ``None`` and the cost is that of the smallest clique at which a candidate of
        that component stopped.
    """
    nodes = sorted(nodes)
    comps = components(adj, nodes)
    if len(comps) > 1:
        # a candidate sweeps (and is scored on) one component at a time: on the whole of
        # several it would stop at the end of the first
        return _joined([best_order(adj, logc, comp, limit, memo) for comp in comps])
    if memo is None or len(nodes) > DENSE_MAX_NODES:
        return _best_order(adj, logc, nodes, limit)
    local = {v: i for i, v in enumerate(nodes)}
    key = (limit, tuple(logc[v] for v in nodes), _local_rows(adj, nodes, local))
    if key not in memo:
        memo[key] = (_best_order(adj, logc, nodes, limit), nodes)
        return memo[key][0]
    found, first = memo[key]
    if found.order is None:
        return found
    to = dict(zip(first, nodes)).__getitem__
    return found._replace(order=list(map(to, found.order)),
                          cliques=[list(map(to, c)) for c in found.cliques])


def _joined(found: list[Order]) -> Order:
    """The :class:`Order` of several components from theirs, ``found`` (in order): their
    orders and cliques concatenated (components share no variable, so each clique is the
    same in the whole graph), the largest table and width the largest, the total the sum;
    the first component with no order, if any, alone (no order of the whole fits)."""
    for f in found:
        if f.order is None:
            return f
    return Order([v for f in found for v in f.order],
                 "+".join(sorted({f.heuristic for f in found})),
                 max(f.log_max_table for f in found),
                 math.fsum(f.total_entries for f in found),
                 max(f.width for f in found),
                 [c for f in found for c in f.cliques])


def _local_rows(adj: list[set[int]], nodes: list[int], local: dict[int, int]) -> tuple:
    """The neighbours of each of ``nodes`` among them, by their ranks ``local``, sorted."""
    at = local.__getitem__
    try:  # a connected component: every neighbour is one of the nodes
        return tuple(tuple(sorted(map(at, adj[v]))) for v in nodes)
    except KeyError:
        return tuple(tuple(sorted(local[u] for u in adj[v] if u in local)) for v in nodes)


def _best_order(adj: list[set[int]], logc: Sequence[float], nodes: list[int],
                limit: float) -> Order:
    """:func:`best_order` of the sorted ``nodes``, searched."""
    best = Order(None, "", math.inf, math.inf, -1)
    stopped = (math.inf, 0)
    bound = [limit]
    # an order a candidate before it gave scores the same and cannot win (ties go to the
    # first), nor stop sooner (the bound only tightens once a candidate wins): the greedy
    # criteria often agree on small components
    seen: set[tuple[int, ...]] = set()
    dense = _dense_adjacency(adj, nodes) if len(nodes) <= DENSE_MAX_NODES else None
    score = _compiled_cost(dense, logc, nodes)
    for name, order in _candidates(adj, logc, nodes, bound, dense):
        if order is None or tuple(order) in seen:
            continue
        seen.add(tuple(order))
        if score is None:
            cliques, size, total = order_cliques(adj, order, logc, bound[0])
            if cliques is None:
                stopped = min(stopped, (size, int(total)))
                continue
        else:
            cliques = None
            size, total, stop = score(order, bound[0])
            if stop:
                stopped = min(stopped, (size, stop))
                continue
        if (round(size, 9), total) < (round(best.log_max_table, 9), best.total_entries):
            best = Order(order, name, size, total, -1, cliques)
            bound[0] = size
    if best.order is None:
        return Order(None, "", stopped[0], math.inf, stopped[1] - 1)
    # (the dense kernels list the cliques of a whole order; the sets serve the rest)
    cliques = best.cliques or (_dense_cliques(dense, nodes, best.order)
                               if dense is not None and len(best.order) == len(nodes)
                               else order_cliques(adj, best.order, logc)[0])
    return best._replace(width=max(len(c) for c in cliques) - 1, cliques=cliques)


def _dense_cliques(dense: np.ndarray, nodes: list[int], order: list[int]) -> list[list[int]]:
    """:func:`order_cliques`' cliques of ``order`` (all of the sorted ``nodes``, whose
    adjacency matrix is ``dense``), eliminated by the compiled kernels: the clique sizes
    first, which give the table's width, then the cliques."""
    local = {v: i for i, v in enumerate(nodes)}
    at = np.fromiter((local[v] for v in order), dtype=np.int64, count=len(order))
    sizes = np.empty(len(order), dtype=np.int64)
    run_small(_kernels.clique_sizes_dense, _work(dense), dense.copy(), at, len(order) + 1,
              sizes)
    pos = np.empty(len(order), dtype=np.int64)
    pos[at] = np.arange(len(order))
    scope = np.zeros((len(order), int(sizes.max(initial=0)) + 1), dtype=np.int64)
    run_small(_kernels.scopes_dense, _work(dense), dense.copy(), at, pos, scope, sizes)
    # the cliques' nodes in one flat list, cut at their sizes (a list per row of the whole
    # scope matrix would cost a list of its width per clique)
    flat = np.asarray(nodes, dtype=np.int64)[scope[np.arange(scope.shape[1]) < sizes[:, None]]]
    ends = np.cumsum(sizes).tolist()
    items = flat.tolist()
    return [items[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def _compiled_cost(dense: np.ndarray | None, logc: Sequence[float], nodes: list[int]
                   ) -> Callable[[list[int], float], tuple[float, float, int]] | None:
    """A function giving ``(log largest table, total entries, 0)`` of an order of
    ``nodes``, or ``(log size, 0, variables)`` of the clique where it passes a limit, the
    numbers :func:`order_cliques` gives, by the compiled
    :func:`~mrflib.inference.exact._elimination_order_kernels.order_cost` on ``dense`` (the
    adjacency bit matrix of the sorted ``nodes``); ``None`` (use :func:`order_cliques`)
    unless every variable of ``nodes`` has the same number of states and they fit a dense
    matrix. With one cardinality every clique's log size is a sum of one number, the same
    floats whatever the order of the sum, so the plans are those of :func:`order_cliques`
    bit for bit."""
    if dense is None or len(nodes) < 2 or len({logc[v] for v in nodes}) > 1:
        return None
    local = {v: i for i, v in enumerate(nodes)}
    lc = np.asarray([logc[v] for v in nodes], dtype=np.float64)

    def cost(order: list[int], limit: float) -> tuple[float, float, int]:
        at = np.fromiter((local[v] for v in order), dtype=np.int64, count=len(order))
        size, total, stop = run_small(_kernels.order_cost, _work(dense), dense.copy(), at,
                                      lc, float(limit))
        return float(size), float(total), int(stop)

    return cost

