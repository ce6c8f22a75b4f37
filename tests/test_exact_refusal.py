"""Exact inference refuses a model that no elimination order can fit, before any order
search: a lower bound on the treewidth bounds every order's largest clique table."""

import itertools
import math
import time

import numpy as np
import pytest

from mrflib import approx, exact, graphs
from mrflib.inference.exact import contraction_search as cs
from mrflib.inference.exact import elimination, sliced
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import treewidth_bounds as tb
from mrflib.models import lattices
from mrflib.models.factor_graph import FactorGraph


@pytest.fixture
def no_search(monkeypatch):
    """Every expensive order search raises: a refusal that reaches one fails the test."""
    def forbidden(*args, **kwargs):
        raise AssertionError("an expensive order search was run")

    monkeypatch.setattr(eo, "searched_order", forbidden)
    monkeypatch.setattr(cs, "_search", forbidden)
    monkeypatch.setattr(cs, "_refined", forbidden)
    monkeypatch.setattr(cs, "_annealed", forbidden)


def _treewidth(adj, nodes):
    """The treewidth of a small graph, by trying every elimination order."""
    best = len(nodes)
    for order in itertools.permutations(nodes):
        cliques, _, _ = eo.order_cliques(adj, list(order), [0.0] * (max(nodes) + 1))
        best = min(best, max(len(c) for c in cliques) - 1)
    return best


# --------------------------------------------------------------------------- bounds
@pytest.mark.parametrize("rows, cols", [(30, 30), (40, 40), (50, 50), (20, 45)])
def test_a_lattice_gets_a_bound_of_its_side_minus_one(rows, cols):
    adj = eo.interaction_graph(rows * cols, graphs.square_grid(rows, cols).tolist())
    assert tb.treewidth_lower_bound(adj, range(rows * cols)) == min(rows, cols) - 1
    # the minor-min-width alone cannot see it: a planar graph's minors have degree <= 5
    assert eo.minor_min_width(adj, range(rows * cols)) <= 5


def test_the_bound_on_a_lattice_is_at_most_the_width_of_its_best_order():
    adj = eo.interaction_graph(400, graphs.square_grid(20, 20).tolist())
    found = eo.best_order(adj, [math.log(2)] * 400, range(400))
    assert tb.treewidth_lower_bound(adj, range(400)) <= found.width == 20


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_never_exceeds_the_treewidth_of_small_graphs(seed):
    rng = np.random.default_rng(seed)
    n = 7
    edges = [e for e in itertools.combinations(range(n), 2) if rng.random() < 0.4]
    adj = eo.interaction_graph(n, edges)
    for comp in eo.components(adj, range(n)):
        assert tb.treewidth_lower_bound(adj, comp) <= _treewidth(adj, comp)


@pytest.mark.parametrize("name", ["cycle", "tree", "ladder", "random"])
def test_crosses_bound_the_treewidth_of_larger_graphs_from_below(name):
    # graphs of at least CROSS_MIN_NODES nodes whose treewidth is known
    n = 100
    if name == "cycle":  # treewidth 2
        edges, width = [(i, (i + 1) % n) for i in range(n)], 2
    elif name == "tree":  # treewidth 1
        edges, width = [(i, (i - 1) // 2) for i in range(1, n)], 1
    elif name == "ladder":  # 2 x 50 lattice: treewidth 2
        edges, width = graphs.square_grid(2, 50).tolist(), 2
    else:  # a random graph: its best order's width bounds it from above
        edges = graphs.random_graph(n, 0.05, rng=3).tolist()
        adj = eo.interaction_graph(n, edges)
        width = eo.best_order(adj, [math.log(2)] * n, range(n)).width
    adj = eo.interaction_graph(n, edges)
    for comp in eo.components(adj, range(n)):
        assert tb.cross_bound(adj, comp) <= width
        assert tb.treewidth_lower_bound(adj, comp) <= width


def test_the_table_bound_takes_the_fewest_states():
    logc = np.log([5, 2, 3, 7]).tolist()
    assert tb.table_bound(logc, [0, 1, 2, 3], 1) == pytest.approx(math.log(6))


# --------------------------------------------------------------------------- refusals
def test_a_40x40_potts_lattice_is_refused_at_once(no_search):
    model = lattices.potts_lattice(40, 40, q=3, rng=0)
    start = time.process_time()
    with pytest.raises(ValueError, match=r"treewidth >= 39: every elimination order has a "
                                         r"clique table of at least [\d.]+ EiB"):
        exact.marginals(model)
    assert time.process_time() - start < 20  # a CPU-time backstop: it takes a fraction of a second


@pytest.mark.parametrize("call", ["log_partition", "marginals", "map_assignment"])
def test_every_exact_task_refuses_a_30x30_potts_lattice_without_searching(no_search, call):
    model = lattices.potts_lattice(30, 30, q=3, rng=0)
    with pytest.raises(ValueError, match=r"treewidth >= 29"):
        getattr(exact, call)(model)


def test_a_checked_plan_is_refused_without_searching(no_search):
    model = lattices.potts_lattice(30, 30, q=3, rng=0)
    with pytest.raises(ValueError, match=r"treewidth >= 29: every elimination order"):
        elimination.plan(model)


def test_a_plan_without_an_order_gives_its_treewidth_as_a_bound(no_search):
    for side in (30, 40, 50):
        p = exact.plan(lattices.potts_lattice(side, side, q=3, rng=0))
        assert p.order is None and p.treewidth is None and not p.fits
        assert p.treewidth_lower_bound == side - 1
        assert p.max_table_bytes == pytest.approx(8 * 3.0**side)
        assert f"treewidth >= {side - 1}" in repr(p)
        assert f"treewidth >= {side - 1}" in p._what()


def test_the_refusal_and_the_plan_give_one_number(no_search):
    model = lattices.potts_lattice(40, 40, q=3, rng=0)
    p = exact.plan(model)
    for call in (lambda: exact.marginals(model), lambda: elimination.plan(model),
                 lambda: approx.marginals(model, "exact", time_limit=0.2)):
        with pytest.raises(ValueError) as err:
            call()
        assert f"treewidth >= {p.treewidth_lower_bound}:" in str(err.value)
        assert "treewidth 30" not in str(err.value)


def test_a_plan_that_fits_keeps_its_order_and_computes_no_bound():
    p = exact.plan(lattices.potts_lattice(8, 8, q=3, rng=0))
    assert p.fits and p.treewidth == 8 and p.treewidth_lower_bound is None
    assert not p.hopeless and "treewidth=8" in repr(p)


def test_no_quick_refusal_where_slices_reduce_their_domains():
    # tables with zeros: each slice's domains are reduced again, so the bound on the whole
    # graph does not bound the slices' work
    model = lattices.potts_lattice(3, 3, q=3, rng=0)
    tables = [t.copy() for t in model.log_tables]
    tables[-1][0, 1] = -np.inf
    assert sliced.give_up(FactorGraph(model.cardinalities, model.scopes, tables), "MAR") \
        is None
    # and log Z, where a variable held by one factor alone may be dropped as barren
    chain = FactorGraph([2, 2, 2], [(0, 1), (1, 2)], [np.zeros((2, 2))] * 2)
    assert sliced.give_up(chain, "PR") is None
    assert sliced.give_up(chain, "MAR") is not None


# --------------------------------------------------------------------------- approx
def test_approx_exact_honours_the_time_limit(no_search):
    model = lattices.potts_lattice(30, 30, q=3, rng=0)
    start = time.process_time()
    with pytest.raises(ValueError, match=r"time_limit = 0.2 s.*treewidth >= 29"):
        approx.marginals(model, "exact", time_limit=0.2)
    assert time.process_time() - start < 20  # a CPU-time backstop: it takes a fraction of a second


def test_approx_exact_refuses_a_plan_beyond_the_time_left(no_search):
    # fits in memory, but its estimated time (3^11 entries a clique) is beyond a millisecond
    model = lattices.potts_lattice(10, 10, q=3, rng=0)
    with pytest.raises(ValueError, match=r"time_limit = 0.001 s \(exact plan: treewidth 10, "
                                         r".* about [\d.e+-]+ s, more than"):
        approx.marginals(model, "exact", time_limit=0.001)


def test_approx_exact_answers_within_its_limit_as_without_one():
    model = lattices.potts_lattice(3, 3, q=3, rng=0)
    a = approx.marginals(model, "exact", time_limit=60.0)
    b = approx.marginals(model, "exact")
    assert a.log_partition == b.log_partition
    for x, y in zip(a.marginals, b.marginals):
        np.testing.assert_array_equal(x, y)
