"""The contraction search for elimination orders, where the greedy criteria do not fit.

:func:`searched_order` runs the randomized greedy search of tensor-network contraction (Gray
and Kourtis, "Hyper-optimized tensor network contraction", *Quantum* 5, 410, 2021; compiled
in ``cotengrust``) over the factors' scopes, and turns the best contraction tree into an
elimination order (:func:`contraction_order`): on the pedigrees of the UAI
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
import math
from collections.abc import Iterable, Iterator, Sequence

import cotengrust
from opt_einsum import get_symbol

from mrflib.inference.exact.elimination_cliques import Order, interaction_graph, order_cliques
from mrflib.inference.exact.treewidth_bounds import table_lower_bound

__all__ = ["contraction_order", "searched_order", "refine_trees", "SEARCH_WORK",
           "SEARCH_TRIALS", "SEARCH_BATCHES", "REFINE_TREES", "REFINE_WORK", "ANNEAL_STEPS",
           "ANNEAL_VISITS", "ANNEAL_REACH"]

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
        (:func:`~mrflib.inference.exact.treewidth_bounds.table_lower_bound`: on a dense
        graph the annealing would take many minutes to find nothing), and the annealed
        order is kept where it is better. ``None``: no annealing.

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

