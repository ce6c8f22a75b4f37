"""The randomized contraction search for elimination orders (used where the greedy orders
do not fit): its orders are permutations whose cliques lie within the contraction's
steps, the same model gets the same order, it never returns a worse order than it was
given, and exact answers on its orders equal enumeration."""

import math

import cotengrust
import numpy as np
import pytest
from opt_einsum import get_symbol

from mrflib import FactorGraph, graphs
from mrflib.inference._reduction import Reduced
from mrflib.inference.exact import contraction_search as cs
from mrflib.inference.exact import elimination, elimination_plan
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import enumeration as fe
from tests._random_factor_graphs import random_factor_graph

TOL = 1e-9


def _structure(model):
    red = Reduced(model, False)
    adj = eo.interaction_graph(model.n, red.scopes)
    logc = np.log(red.card.astype(np.float64)).tolist()
    return red, adj, logc


def _worst():
    return eo.Order(None, "", math.inf, math.inf, -1)


@pytest.mark.parametrize("seed", range(6))
def test_contraction_order_is_a_permutation_within_the_steps(seed):
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, n=9, n_factors=12, max_card=3)
    red, adj, logc = _structure(model)
    nodes = red.active
    symbol = {v: get_symbol(v) for v in nodes}
    inputs = [tuple(symbol[v] for v in s) for s in red.scopes]
    sizes = {symbol[v]: int(red.card[v]) for v in nodes}
    path, _ = cotengrust.optimize_random_greedy_track_flops(
        inputs, (), sizes, ntrials=4, seed=seed, use_ssa=True)
    order = eo.contraction_order(red.scopes, nodes, path)
    assert sorted(order) == sorted(nodes)
    # every clique lies within the variables of some step's merged tensors
    legs = [set(s) for s in red.scopes]
    steps = []
    for step in path:
        merged = set().union(*(legs[i] for i in step))
        legs.append(merged)
        steps.append(merged)
    cliques, _, _ = eo.order_cliques(adj, order, logc)
    for c in cliques:
        assert len(c) == 1 or any(set(c) <= m for m in steps) or \
            any(set(c) <= set(s) for s in red.scopes)


@pytest.mark.parametrize("seed", range(4))
def test_searched_order_is_reproducible_and_never_worse(seed):
    rng = np.random.default_rng(100 + seed)
    model = random_factor_graph(rng, n=10, n_factors=16, max_card=3)
    red, adj, logc = _structure(model)
    comp = max(eo.components(adj, red.active), key=len)
    greedy = eo.best_order(adj, logc, comp)
    cs._search.cache_clear()
    a = eo.searched_order(red.scopes, logc, comp, greedy)
    cs._search.cache_clear()
    b = eo.searched_order(red.scopes, logc, comp, greedy)
    assert a.order == b.order and a.heuristic == b.heuristic
    assert (round(a.log_max_table, 9), a.total_entries) <= \
        (round(greedy.log_max_table, 9), greedy.total_entries)
    assert sorted(a.order) == sorted(comp)


@pytest.mark.parametrize("seed", range(6))
def test_answers_on_a_searched_order_equal_enumeration(seed):
    rng = np.random.default_rng(200 + seed)
    model = random_factor_graph(rng, n=7, n_factors=10, evidence=seed % 3)
    red, adj, logc = _structure(model)
    order = []
    for comp in eo.components(adj, red.active):
        order += eo.searched_order(red.scopes, logc, comp, _worst()).order or comp
    jt = elimination.EliminationPlan(model, order=order)
    assert jt.heuristic == "given"
    want = fe.marginals(model)
    for got, w in zip(elimination.marginals(model, jt), want):
        np.testing.assert_allclose(got, w, atol=TOL)
    assert elimination.log_partition(model, jt) == pytest.approx(fe.log_partition(model),
                                                                 abs=TOL)


def test_plans_that_fit_keep_the_greedy_orders(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a plan that fits searched")

    monkeypatch.setattr(eo, "searched_order", refuse)
    edges = graphs.square_grid(6, 6)
    model = FactorGraph(np.full(36, 3), [tuple(e) for e in edges.tolist()],
                        [np.zeros((3, 3))] * len(edges))
    assert elimination.plan(model).fits


def test_a_plan_too_large_for_its_budget_searches_unless_told_not_to(monkeypatch):
    calls = []
    real = eo.searched_order

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(eo, "searched_order", counted)
    monkeypatch.setattr(elimination_plan, "UNCHECKED_BYTES", 0)
    monkeypatch.setattr(elimination_plan, "SEARCH_MIN_ENTRIES", 0)
    model = random_factor_graph(np.random.default_rng(7), n=8, n_factors=12)
    jt = elimination.EliminationPlan(model, check=False, memory=1.0, search=False)
    assert not calls and not jt.fits
    jt = elimination.EliminationPlan(model, check=False, memory=1.0)
    assert calls and not jt.fits
    for got, w in zip(elimination.marginals(model, jt), fe.marginals(model)):
        np.testing.assert_allclose(got, w, atol=TOL)


def test_refined_trees_grow_with_the_work():
    small = eo.Order([0], "x", math.log(10.0), 1e6, 1)
    assert eo.refine_trees(small, 100, math.inf) == 0
    big = eo.Order([0], "x", math.log(1e6), 1e12, 10)
    assert eo.refine_trees(big, 100, math.inf) == eo.REFINE_TREES
    mid = eo.Order([0], "x", math.log(1e6), 3 * eo.REFINE_WORK * 100.0, 10)
    assert eo.refine_trees(mid, 100, math.inf) == 3
    # a table over the limit multiplies the work by the slices it would need
    assert eo.refine_trees(mid, 100, math.log(1e6) - math.log(4.0)) == 12
    assert eo.refine_trees(eo.Order(None, "", math.inf, math.inf, -1), 100, 0.0) == 0


@pytest.mark.parametrize("seed", range(3))
def test_refined_orders_are_reproducible_never_worse_and_exact(seed, monkeypatch):
    rng = np.random.default_rng(300 + seed)
    model = random_factor_graph(rng, n=12, n_factors=18, max_card=3, evidence=seed % 2)
    red, adj, logc = _structure(model)
    comp = max(eo.components(adj, red.active), key=len)
    inside = set(comp)
    local = tuple(tuple(s) for s in red.scopes if s and s[0] in inside)
    cards = tuple((v, int(red.card[v])) for v in sorted(comp))
    cs._refined.cache_clear()
    a, path = cs._refined(local, cards, math.inf, 4)
    cs._refined.cache_clear()
    cs._batches.cache_clear()
    b, _ = cs._refined(local, cards, math.inf, 4)
    assert a.order == b.order and a.heuristic == "reconfigured"
    assert eo.contraction_order(local, [v for v, _ in cards], path) == a.order
    # the annealed tree: the same order twice, a permutation of the component
    monkeypatch.setattr(cs, "ANNEAL_STEPS", 8)
    c = cs._annealed.__wrapped__(local, cards, math.inf, tuple(map(tuple, path)), 0)
    d = cs._annealed.__wrapped__(local, cards, math.inf, tuple(map(tuple, path)), 0)
    assert c.order == d.order and c.heuristic == "annealed" and sorted(c.order) == sorted(comp)
    assert sorted(a.order) == sorted(comp)
    cliques, size, total = eo.order_cliques(adj, a.order, logc)
    assert (size, total) == (a.log_max_table, a.total_entries)
    # searched_order refines when the work asks for it, and never returns worse
    monkeypatch.setattr(cs, "REFINE_WORK", 1e-9)
    greedy = eo.best_order(adj, logc, comp)
    found = eo.searched_order(red.scopes, logc, comp, greedy)
    assert (round(found.log_max_table, 9), found.total_entries) <= \
        (round(greedy.log_max_table, 9), greedy.total_entries)
    order = [v for v in red.active if v not in inside] + a.order
    jt = elimination.EliminationPlan(model, order=order)
    for got, w in zip(elimination.marginals(model, jt), fe.marginals(model)):
        np.testing.assert_allclose(got, w, atol=TOL)


def _treewidth(adj, nodes):
    """The treewidth of the graph on ``nodes``, by trying every elimination order."""
    import itertools

    ones = [0.0] * (max(nodes) + 1)
    return min(len(max(eo.order_cliques(adj, list(order), ones)[0], key=len)) - 1
               for order in itertools.permutations(nodes))


@pytest.mark.parametrize("seed", range(8))
def test_minor_min_width_bounds_the_treewidth_from_below(seed):
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, n=7, n_factors=int(rng.integers(4, 10)), max_card=3)
    red, adj, logc = _structure(model)
    for comp in eo.components(adj, red.active):
        width = eo.minor_min_width(adj, comp)
        assert 0 <= width <= _treewidth(adj, comp)
        # every order's largest clique table holds at least the bound's entries
        assert eo.table_lower_bound(adj, logc, comp) <= \
            eo.best_order(adj, logc, comp).log_max_table + 1e-9


def test_minor_min_width_on_known_graphs():
    n = 8
    complete = [set(range(n)) - {v} for v in range(n)]
    cycle = [{(v - 1) % n, (v + 1) % n} for v in range(n)]
    path = [{u for u in (v - 1, v + 1) if 0 <= u < n} for v in range(n)]
    grid = eo.interaction_graph(25, [tuple(e) for e in graphs.square_grid(5, 5).tolist()])
    assert [eo.minor_min_width(g, range(len(g))) for g in (complete, cycle, path)] == \
        [n - 1, 2, 1]
    assert 2 <= eo.minor_min_width(grid, range(25)) <= 5
    assert eo.minor_min_width([set()], [0]) == 0
    assert eo.table_lower_bound(complete, [math.log(2)] * 4 + [math.log(3)] * 4,
                                range(n)) == pytest.approx(4 * math.log(2) + 4 * math.log(3))


def test_annealing_is_tried_only_where_an_order_may_fit(monkeypatch):
    """A complete graph's every order has one clique of all variables: no annealing; a
    grid's largest clique may shrink: annealing, with the seed given."""
    asked = []
    monkeypatch.setattr(cs, "_annealed", lambda *args: asked.append(args[-1]))
    monkeypatch.setattr(cs, "REFINE_WORK", 1e-12)  # every tree refined: a path to anneal
    n = 12
    scopes = [(u, v) for u in range(n) for v in range(u + 1, n)]
    logc = [math.log(2)] * n
    adj = eo.interaction_graph(n, scopes)
    best = eo.best_order(adj, logc, range(n), math.inf)
    limit = math.log(2) * 6  # below the 2^12 entries of any order's largest clique
    got = eo.searched_order(scopes, logc, range(n), best, limit, anneal=0)
    assert got.log_max_table == pytest.approx(n * math.log(2)) and asked == []
    model = random_factor_graph(np.random.default_rng(4), n=14, n_factors=16, max_card=3)
    red, adj, logc = _structure(model)
    comp = max(eo.components(adj, red.active), key=len)
    best = eo.best_order(adj, logc, comp, math.inf)
    bound = eo.table_lower_bound(adj, logc, comp)
    assert bound < best.log_max_table
    limit = (bound + best.log_max_table) / 2
    eo.searched_order(red.scopes, logc, comp, best, limit)
    assert asked == []  # not asked to
    eo.searched_order(red.scopes, logc, comp, best, limit, anneal=3)
    assert asked == [3]
    # an order further over the limit than annealing is asked to shrink is left as it is
    monkeypatch.setattr(cs, "ANNEAL_REACH", (best.log_max_table - limit) / 2)
    eo.searched_order(red.scopes, logc, comp, best, limit, anneal=4)
    assert asked == [3]


def test_order_cliques_past_float_range_totals_infinity():
    """A clique of more than ``1.8e308`` entries (three variables of ``e^400`` states) with
    no limit: its table cannot be counted in floats, so the total is ``inf``, never an
    ``OverflowError`` (a 4x1100 grid's worst candidate orders reach such cliques)."""
    adj = [{1, 2}, {0, 2}, {0, 1}]
    cliques, biggest, total = eo.order_cliques(adj, [0, 1, 2], [400.0] * 3)
    assert cliques is not None and biggest == pytest.approx(1200.0) and total == math.inf
    order = eo.best_order(adj, [400.0] * 3, [0, 1, 2])
    assert sorted(order.order) == [0, 1, 2]
