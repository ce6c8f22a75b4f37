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

Where none of these fits, :func:`searched_order` runs the randomized greedy search of
tensor-network contraction (Gray and Kourtis, "Hyper-optimized tensor network
contraction", *Quantum* 5, 410, 2021; compiled in ``cotengrust``) over the factors' scopes,
and turns the best contraction tree into an elimination order: on the pedigrees of the UAI
2014 linkage problems its clique tables hold 4 to 2,000 times fewer entries in all than
the greedy criteria's. Where even that order means minutes of work, or slices, a second
stage refines the search's best trees by subtree reconfiguration (``cotengra``; the same
paper: every small subtree of the contraction tree is replaced by its optimal
contraction, largest costs first), which on the linkage problems takes the largest clique
table down another 2^3 to 2^9 times; the number of trees refined grows with the work the
best order so far would cost. Asked to (``anneal``, a seed: the exact engine asks only where
the refined order, sliced, would be refused), a refined order that still does not fit in memory
has its tree annealed (simulated annealing of the contraction tree: Kalachev et al.,
arXiv:2108.05665; the "TreeSA" of OMEinsumContractionOrders.jl), a minute of search that
took linkage_15's largest table from 2^34.6 to 2^26 entries. Annealing minimizes the tree's
flops, not the work of the slices an order needs: on linkage_23, whose refined order's slices
are answered in half a minute, the annealed order's marginals were refused, so annealing is
a last resort, not a stage.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import cotengrust
import numpy as np
from opt_einsum import get_symbol

from mrflib.inference.exact import _elimination_order_kernels as _kernels

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
#: :func:`searched_order`'s budget: greedy trials times factors (3-7 s of search on a
#: component of 1,000 factors on an idle machine, up to 20 s on a busy one, where the model
#: would otherwise be refused, sliced, or solved for minutes).
SEARCH_WORK = 2_000_000
#: Most trials of :func:`searched_order`, and the batches they come in: each batch draws its
#: trials' ``costmod`` and ``temperature`` from one of the ranges below, with its own seed.
SEARCH_TRIALS = 4096
SEARCH_BATCHES = 32
#: Most trees refined by the second stage of :func:`searched_order` (the best batches'
#: trees, by their flops).
REFINE_TREES = 16
#: Work (clique-table entries of the best order so far, times the slices its largest table
#: would need beyond the limit) per factor that buys the refinement of one tree. One costs
#: about 1 ms per factor (1 s on the 1,000 factors of a UAI 2014 linkage problem), the time
#: a marginal pass spends on about 15,000 clique entries, so the refinement spends at most
#: about a twentieth of the time of the pass it may shorten.
REFINE_WORK = 300_000
_COSTMODS = ((0.1, 0.5), (0.5, 1.0), (1.0, 2.0), (0.1, 4.0))
_TEMPERATURES = ((0.001, 0.01), (0.01, 0.1), (0.1, 1.0), (0.001, 1.0))


class Order(NamedTuple):
    """An elimination order and its cost (``order`` is ``None`` when none fit the limit).

    Attributes
    ----------
    order : list of int or None
        The elimination order; ``None`` when no candidate fit the limit.
    heuristic : str
        The heuristic(s) that found it.
    log_max_table : float
        Log of the largest clique table's entries (where it stopped, when stopped).
    total_entries : float
        Entries of all clique tables (``inf`` when stopped).
    width : int
        Largest clique minus one (the stopping clique's, when stopped).
    cliques : list of list of int or None
        The order's cliques (:func:`order_cliques`), kept so a plan need not eliminate
        again; ``None`` when not computed.
    """

    order: list[int] | None
    heuristic: str
    log_max_table: float  # log of the largest clique table's entries (where it stopped)
    total_entries: float  # entries of all clique tables (inf when stopped)
    width: int  # largest clique minus one (the stopping clique's, when stopped)
    # the order's cliques (:func:`order_cliques`), kept so a plan need not eliminate again
    cliques: list[list[int]] | None = None


class Plan:
    """What a junction-tree engine will do, the one plan type of both model families:
    :class:`~mrflib.inference.exact.junction_tree.JunctionTree` (the ±1 fast path) and
    :class:`~mrflib.inference.exact.elimination.EliminationPlan` (factor graphs) share it.

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
        returned to be read); a :class:`~mrflib.inference.exact.junction_tree.JunctionTree`
        that would not fit is refused instead, so every one says yes.
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
    # the defaults of a plan that exists only when it fits (the ±1 junction tree)
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


def interaction_graph(n: int, scopes: Iterable[Sequence[int]]) -> list[set[int]]:
    """Neighbour sets of the interaction (moral) graph: two variables are adjacent when
    some factor holds both.

    Parameters
    ----------
    n : int
        Number of variables.
    scopes : iterable of sequence of int
        The factors' variables.

    Returns
    -------
    list of set of int
        ``adj[v]``: the neighbours of ``v`` (never ``v`` itself).
    """
    adj: list[set[int]] = [set() for _ in range(n)]
    for s in scopes:
        for v in s:
            adj[v].update(s)
    for v in range(n):
        adj[v].discard(v)
    return adj


def components(adj: list[set[int]], nodes: Sequence[int]) -> list[list[int]]:
    """Connected components of the graph on ``nodes``.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    nodes : sequence of int
        The nodes; edges to other nodes are ignored.

    Returns
    -------
    list of list of int
        The components, each a sorted node list, ordered by smallest node.
    """
    # a plain search: the graphs are sets already, and building a sparse matrix for
    # scipy's labelling cost more than the search on the small models that call this most
    inside = set(nodes)
    seen: set[int] = set()
    out = []
    for root in sorted(inside):
        if root in seen:
            continue
        seen.add(root)
        comp, stack = [root], [root]
        while stack:
            for u in adj[stack.pop()]:
                if u in inside and u not in seen:
                    seen.add(u)
                    comp.append(u)
                    stack.append(u)
        out.append(sorted(comp))
    return out


def connect_neighbours(adj: Any, v: int) -> None:
    """Eliminate ``v`` from the neighbour sets ``adj``: its neighbours become a clique (the
    fill edges) and forget ``v``.

    Parameters
    ----------
    adj : list of set of int or dict of int to set of int
        Neighbour sets, changed in place (``adj[v]`` itself is left as it was).
    v : int
        The variable eliminated.
    """
    nb = adj[v]
    for u in nb:
        a = adj[u]
        a.discard(v)
        a |= nb
        a.discard(u)


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
    done = _kernels.greedy_keyed(dense, CRITERIA.index(criterion), lc, card, float(limit),
                                 DENSE_MAX_WORK, order)
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


#: ``log`` of the largest float: a table of more entries has a total of ``inf``.
_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def order_cliques(adj: list[set[int]], order: Sequence[int], logc: Sequence[float],
                  limit: float = math.inf) -> tuple[list[list[int]] | None, float, float]:
    """Eliminate in ``order``: its cliques, the log of its largest table and the entries of
    all tables.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    order : sequence of int
        The elimination order; neighbours outside it are ignored.
    logc : sequence of float
        ``log |X_v|`` of every variable.
    limit : float, default inf
        Log entries of a clique table past which elimination stops.

    Returns
    -------
    cliques : list of list of int or None
        ``cliques[t]`` is ``[order[t], *N_t]`` with ``N_t`` sorted by elimination position;
        ``None`` at the first clique whose log table size exceeds ``limit``.
    log_max_table : float
        The log entries of the largest table (0 for an empty order); when stopped, those
        of the clique that stopped it.
    total : float
        The entries of all tables (``inf`` past the float range); when stopped, the number
        of variables of the clique that stopped it.
    """
    pos = {v: t for t, v in enumerate(order)}
    local = {v: {u for u in adj[v] if u in pos} for v in order}
    out, biggest, total = [], -math.inf, 0.0
    for v in order:
        nb = local[v]
        size = logc[v] + sum(logc[u] for u in nb)
        biggest = max(biggest, size)
        if size > limit + 1e-9:
            return None, size, float(len(nb) + 1)
        # a table past float's range (no limit given): the total is beyond any memory
        total += math.exp(size) if size < _LOG_FLOAT_MAX else math.inf
        out.append([v, *sorted(nb, key=pos.__getitem__)])
        connect_neighbours(local, v)
    return out, (biggest if out else 0.0), total


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
    done = _kernels.rcm_dense(dense, out)
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
    _kernels.clique_sizes_dense(dense.copy(), at, len(order) + 1, sizes)
    pos = np.empty(len(order), dtype=np.int64)
    pos[at] = np.arange(len(order))
    scope = np.zeros((len(order), int(sizes.max(initial=0)) + 1), dtype=np.int64)
    _kernels.scopes_dense(dense.copy(), at, pos, scope, sizes)
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
        size, total, stop = _kernels.order_cost(dense.copy(), at, lc, float(limit))
        return float(size), float(total), int(stop)

    return cost


def contraction_order(scopes: Sequence[Sequence[int]], nodes: Sequence[int],
                      path: Sequence[Sequence[int]]) -> list[int]:
    """The elimination order of a contraction tree over the factors ``scopes``.

    A variable is eliminated at the step after which one tensor alone holds it (variables
    of one factor only come first). Every clique of the order lies within the variables of
    the step that eliminates it: a fill edge joins two variables only through variables
    eliminated inside the same subtree, whose factors the step has all merged, so the
    cliques are at most the contraction's intermediate tables.

    Parameters
    ----------
    scopes : sequence of sequence of int
        The factors' variables (the tensors' legs).
    nodes : sequence of int
        The variables to order.
    path : sequence of sequence of int
        The contraction tree in single static assignment form: step ``j`` merges the
        tensors it lists, inputs first, then the result of each earlier step, into tensor
        ``len(scopes) + j``.

    Returns
    -------
    list of int
        The order of all of ``nodes``; those the path never eliminates come last.
    """
    legs = [set(s) for s in scopes]
    held: dict[int, int] = {}
    for leg in legs:
        for v in leg:
            held[v] = held.get(v, 0) + 1
    order = [v for v in nodes if held.get(v, 0) <= 1]
    done = set(order)
    for leg in legs:
        leg -= done
    for step in path:
        merged: set[int] = set()
        for i in step:
            merged |= legs[i]
        for v in merged:
            held[v] -= sum(v in legs[i] for i in step) - 1
        gone = sorted(v for v in merged if held[v] == 1)
        order += gone
        done.update(gone)
        legs.append(merged - set(gone))
    return order + [v for v in nodes if v not in done]


def searched_order(scopes: Sequence[Sequence[int]], logc: Sequence[float],
                   nodes: Sequence[int], best: Order, limit: float = math.inf,
                   anneal: int | None = None) -> Order:
    """``best``, or a better order of ``nodes`` (one connected component) from the
    randomized greedy contraction search over the factors ``scopes`` that hold them.

    Better: a largest clique table nearer ``limit`` (log entries) while above it, then
    fewer entries in all tables (the time of a pass, and most of its memory). Trials:
    :data:`SEARCH_WORK` divided by the number of factors, at most :data:`SEARCH_TRIALS`,
    in :data:`SEARCH_BATCHES` seeded batches, so the same model always gets the same
    order. Each batch's best contraction tree is turned into an elimination order
    (:func:`contraction_order`) and scored. Then, where the best order's work calls for it
    (:func:`refine_trees`), the best batches' trees are refined (:func:`_refined`) and may
    beat it. The last few searches are remembered (a model planned again, as
    ``exact.plan`` and then an answer do, is not searched twice).

    Parameters
    ----------
    scopes : sequence of sequence of int
        The factors' variables; those whose first variable is in ``nodes`` are searched.
    logc : sequence of float
        ``log |X_v|`` of every variable.
    nodes : sequence of int
        The variables of one connected component.
    best : Order
        The best order so far (kept unless beaten).
    limit : float, default inf
        Log entries of the largest clique table that fits.
    anneal : int or None, default None
        A seed: a best order still over ``limit``, by at most :data:`ANNEAL_REACH`, has its
        refined tree annealed (:func:`_annealed`), unless no order can fit
        (:func:`table_lower_bound`: on a dense graph the annealing would take many minutes
        to find nothing), and the annealed order is kept where it is better. ``None``: no
        annealing.

    Returns
    -------
    Order
        ``best`` or the better order found.
    """
    inside = set(nodes)
    local = tuple(tuple(int(v) for v in s) for s in scopes if s and s[0] in inside)
    if len(local) < 3:
        return best
    nodes = sorted(inside)
    cards = tuple((v, int(round(math.exp(logc[v])))) for v in nodes)
    limit = round(limit, 9) if math.isfinite(limit) else math.inf
    found = _search(local, cards, limit)
    if found is not None and _better(found, best, limit):
        best = found._replace(order=list(found.order))
    trees = refine_trees(best, len(local), limit)
    found, path = _refined(local, cards, limit, trees) if trees else (None, None)
    if found is not None and _better(found, best, limit):
        best = found._replace(order=list(found.order))
    if (anneal is not None and path is not None
            and limit < best.log_max_table <= limit + ANNEAL_REACH
            and table_lower_bound(interaction_graph(nodes[-1] + 1, local), logc, nodes)
            <= limit):
        found = _annealed(local, cards, limit, tuple(map(tuple, path)), int(anneal))
        if found is not None and _better(found, best, limit):
            best = found._replace(order=list(found.order))
    return best


def minor_min_width(adj: list[set[int]], nodes: Sequence[int]) -> int:
    """A lower bound on the treewidth of the graph ``adj`` on ``nodes``: the minor-min-width
    (Gogate and Dechter, UAI 2004).

    Treewidth never grows when an edge is contracted, and is at least the smallest degree,
    so the largest smallest degree met while contracting a vertex of smallest degree into
    its neighbour of smallest degree bounds it from below (ties to the lower-numbered
    vertex).

    Parameters
    ----------
    adj, nodes
        As in :func:`components`: the interaction graph's neighbour sets, and the nodes.

    Returns
    -------
    int
        The lower bound.
    """
    inside = set(nodes)
    nbrs = {v: adj[v] & inside for v in inside}
    heap = [(len(s), v) for v, s in nbrs.items()]
    heapq.heapify(heap)
    bound = 0
    while heap and bound < len(nbrs) - 1:
        d, v = heapq.heappop(heap)
        if v not in nbrs or d != len(nbrs[v]):
            continue  # a stale entry
        bound = max(bound, d)
        near = nbrs.pop(v)
        if not near:
            continue
        u = min(near, key=lambda w: (len(nbrs[w]), w))
        for w in near:
            nbrs[w].discard(v)
            if w != u:
                nbrs[w].add(u)
                nbrs[u].add(w)
        for w in near:
            heapq.heappush(heap, (len(nbrs[w]), w))
    return bound


def table_lower_bound(adj: list[set[int]], logc: Sequence[float], nodes: Sequence[int]
                      ) -> float:
    """Log entries that the largest clique table of every order of ``nodes`` holds at
    least: a clique of :func:`minor_min_width` + 1 of them, the fewest states first.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    logc : sequence of float
        ``log |X_v|`` of every variable.
    nodes : sequence of int
        The nodes of the graph.

    Returns
    -------
    float
        The natural log of the number of entries.
    """
    width = minor_min_width(adj, nodes)
    return float(sum(sorted(logc[v] for v in nodes)[:width + 1]))


def refine_trees(best: Order, factors: int, limit: float) -> int:
    """Trees the second stage of :func:`searched_order` refines for a component of
    ``factors`` factors whose best order so far is ``best``.

    One per :data:`REFINE_WORK` entries of work per factor (its clique tables' entries,
    times ``e^(log largest table - limit)`` when that table is over ``limit``: the slices
    it would need), at most :data:`REFINE_TREES`.

    Parameters
    ----------
    best : Order
        The best order so far.
    factors : int
        Number of factors of the component.
    limit : float
        Log entries of the largest clique table that fits.

    Returns
    -------
    int
        The number of trees to refine (0 when ``best`` has no order or an infinite total).
    """
    if best.order is None or not math.isfinite(best.total_entries):
        return 0
    over = max(best.log_max_table - limit, 0.0)
    work = math.log(best.total_entries) + over - math.log(REFINE_WORK * max(factors, 1))
    # (rounded up by a hair: exp(log a + log b) can fall just short of a b)
    return REFINE_TREES if work >= math.log(REFINE_TREES) else int(math.exp(work) * (1 + 1e-12))


def _better(a: Order, b: Order, limit: float) -> bool:
    """``a``'s largest table is nearer ``limit`` while above it, or as near with fewer
    entries in all."""
    def key(o: Order) -> tuple[float, float]:
        return round(max(o.log_max_table - limit, 0.0), 9), o.total_entries
    return key(a) < key(b)


@functools.lru_cache(maxsize=8)
def _search(local: tuple, cards: tuple, limit: float) -> Order | None:
    """The best order of :func:`searched_order`'s batches on the factors ``local`` over the
    variables and cardinalities ``cards`` (``None`` when no order was scored)."""
    return _best_of((path for path, _ in _batches(local, cards)), local, cards, limit,
                    "random-greedy")[0]


@functools.lru_cache(maxsize=8)
def _refined(local: tuple, cards: tuple, limit: float, trees: int
             ) -> tuple[Order | None, tuple | None]:
    """The best order of the ``trees`` batches' trees of fewest flops (:func:`_batches`),
    each refined by ``cotengra``'s subtree reconfiguration on its flops (deterministic:
    the costliest subtrees first), scored as orders, and its tree (:func:`_best_of`)."""
    import cotengra  # (a tenth of a second to import: only where a tree is refined)

    inputs, sizes = _einsum_inputs(local, cards)
    batches = _batches(local, cards)

    def paths() -> Iterator[tuple]:
        # (ties in flops go to the earlier batch)
        for k in sorted(range(len(batches)), key=lambda k: batches[k][1])[:trees]:
            tree = cotengra.ContractionTree.from_path(inputs, (), sizes,
                                                      ssa_path=batches[k][0])
            tree.subtree_reconfigure_(minimize="flops", seed=0)
            yield tree.get_ssa_path()

    return _best_of(paths(), local, cards, limit, "reconfigured")


#: Temperature steps of :func:`_annealed`, and its most sweeps over the tree per step (about
#: a minute on the 1,042 factors of the UAI 2014 problem linkage_15's marginals).
ANNEAL_STEPS = 100
#: Tree nodes one annealing visits, at most: a larger component gets fewer sweeps per step,
#: so that no annealing takes much longer than linkage_15's.
ANNEAL_VISITS = 12_000_000
#: Most that annealing is asked to shrink the largest clique table below the refined
#: order's, in log entries: 2^12 (on linkage_15 it shrinks 2^8.6 times, from 2^34.6 entries
#: to 2^26); an order further over the limit, such as a 40x40 lattice's, is refused as it is.
ANNEAL_REACH = 12 * math.log(2)


@functools.lru_cache(maxsize=8)
def _annealed(local: tuple, cards: tuple, limit: float, path: tuple, seed: int
              ) -> Order | None:
    """The contraction tree ``path`` annealed (``cotengra``'s simulated annealing of the
    tree on its flops, seeded by ``seed``: Kalachev et al., arXiv:2108.05665, the "TreeSA"
    of OMEinsumContractionOrders.jl), scored as an order: for components whose refined
    order still does not fit, where a minute of search is worth the slices or the
    refusal. Another seed gives another order, an independent check of an answer."""
    import cotengra
    from cotengra.pathfinders.path_simulated_annealing import simulated_anneal_tree

    inputs, sizes = _einsum_inputs(local, cards)
    tree = cotengra.ContractionTree.from_path(inputs, (), sizes, ssa_path=path)
    sweeps = max(1, min(ANNEAL_STEPS, ANNEAL_VISITS // (ANNEAL_STEPS * len(local))))
    tree = simulated_anneal_tree(tree, minimize="flops", seed=seed, tsteps=ANNEAL_STEPS,
                                 numiter=sweeps)
    return _best_of([tree.get_ssa_path()], local, cards, limit, "annealed")[0]


def _best_of(paths: Iterable, local: tuple, cards: tuple, limit: float, name: str
             ) -> tuple[Order | None, tuple | None]:
    """The best order (:func:`_better`) of the contraction trees ``paths`` (single static
    assignment form) over the factors ``local``, named ``name``, and the tree it came from
    (``(None, None)`` when no order was scored); an order is dropped as soon as one of its
    cliques is larger than the best's (or ``limit``, if larger)."""
    nodes = [v for v, _ in cards]
    logc = {v: math.log(c) for v, c in cards}
    adj = interaction_graph(nodes[-1] + 1, local)
    best, won = None, None
    for path in paths:
        order = contraction_order(local, nodes, path)
        bound = math.inf if best is None else max(limit, best.log_max_table)
        cliques, size, total = order_cliques(adj, order, logc, bound)
        if cliques is None:
            continue
        found = Order(order, name, size, total, max(len(c) for c in cliques) - 1, cliques)
        if best is None or _better(found, best, limit):
            best, won = found, path
    return best, won


@functools.lru_cache(maxsize=8)
def _batches(local: tuple, cards: tuple) -> tuple[tuple[tuple, float], ...]:
    """The best contraction tree of each of :func:`searched_order`'s seeded batches of
    randomized greedy trials on the factors ``local`` over the variables and
    cardinalities ``cards``: ``(path in single static assignment form, its flops)``."""
    inputs, sizes = _einsum_inputs(local, cards)
    trials = max(1, min(SEARCH_TRIALS, SEARCH_WORK // len(local)) // SEARCH_BATCHES)
    out = []
    for batch in range(SEARCH_BATCHES):
        path, flops = cotengrust.optimize_random_greedy_track_flops(
            inputs, (), sizes, ntrials=trials, seed=batch, use_ssa=True,
            costmod=_COSTMODS[batch % 4], temperature=_TEMPERATURES[batch // 4 % 4])
        out.append((tuple(map(tuple, path)), float(flops)))
    return tuple(out)


def _einsum_inputs(local: tuple, cards: tuple) -> tuple[list[tuple[str, ...]], dict[str, int]]:
    """The factors ``local`` as einsum inputs (one symbol per variable of ``cards``, in
    its order) and the symbols' sizes."""
    symbol = {v: get_symbol(i) for i, (v, _) in enumerate(cards)}
    return [tuple(symbol[v] for v in s) for s in local], {symbol[v]: c for v, c in cards}
