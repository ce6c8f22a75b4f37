"""The junction-tree engine of Boltzmann machines (the elimination engine on a machine's
tables, :mod:`mrflib.inference.exact._spin_plan`) against enumeration and pgmpy; its
compiled backward sampling against the Python definition; the deprecated module's names."""

import numpy as np
import pytest
import scipy.stats

import mrflib
from mrflib import BoltzmannMachine, exact, graphs
from mrflib.inference._factor_ops import draw_categorical
from mrflib.inference.exact import _compiled_passes as cp
from mrflib.inference.exact import _spin_plan as se
from mrflib.inference.exact import elimination_order as eo
from mrflib.models.boltzmann import clamp


def _tree(n, seed):
    rng = np.random.default_rng(seed)
    return graphs.from_pairs([(int(rng.integers(0, i)), i) for i in range(1, n)])


def _cycle(n):
    return graphs.from_pairs([(i, (i + 1) % n) for i in range(n)])


CASES = [
    ("grid 3x5", graphs.square_grid(3, 5), 15),
    ("grid 4x4", graphs.square_grid(4, 4), 16),
    ("grid 2x9", graphs.square_grid(2, 9), 18),
    ("tree", _tree(17, 1), 17),
    ("cycle", _cycle(13), 13),
    ("random p=0.2", graphs.random_graph(16, 0.2, rng=3), 16),
    ("random p=0.4", graphs.random_graph(14, 0.4, rng=4), 14),
    ("complete 9", graphs.complete(9), 9),
    ("complete 16", graphs.complete(16), 16),
    ("isolated nodes", np.array([[0, 3], [3, 5]]), 8),
]


@pytest.mark.parametrize("name,edges,n", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("scale", [0.4, 1.5, 200.0])
def test_equals_enumeration(name, edges, n, scale):
    bm = BoltzmannMachine.random(edges, n, bias_scale=scale, coupling_scale=scale,
                                 rng=len(name))
    lz = exact.log_partition(bm, method="enumerate")
    assert exact.log_partition(bm, method="junction-tree") == pytest.approx(lz, abs=1e-10)
    m, p = exact.moments(bm, method="enumerate")
    m2, p2 = exact.moments(bm, method="junction-tree")
    assert np.abs(m - m2).max() < 1e-10 and np.abs(p - p2).max(initial=0) < 1e-10
    data = exact.sample(bm, 50, rng=0)
    assert exact.log_likelihood(bm, data, method="junction-tree") == pytest.approx(
        exact.log_likelihood(bm, data, method="enumerate"), abs=1e-10)


@pytest.mark.parametrize("rows,cols", [(3, 7), (7, 3), (6, 6), (5, 12), (12, 5), (1, 9)])
def test_lattice_width_is_min_side(rows, cols):
    plan = se.SpinPlan(graphs.square_grid(rows, cols), rows * cols)
    assert plan.treewidth == min(rows, cols)
    assert sorted(plan.order.tolist()) == list(range(rows * cols))


def test_equals_pgmpy_on_5x5():
    from mrflib.repro import peers

    bm = BoltzmannMachine.random(graphs.square_grid(5, 5), 25, bias_scale=0.5,
                                 coupling_scale=0.8, rng=7)
    m, p = peers.junction_tree_moments(bm)
    m2, p2 = exact.moments(bm, method="junction-tree")
    assert np.abs(m - m2).max() < 1e-10 and np.abs(p - p2).max() < 1e-10


def test_samples_pass_chi_square_against_enumeration():
    bm = BoltzmannMachine.random(graphs.random_graph(8, 0.5, rng=2), 8, bias_scale=0.5,
                                 coupling_scale=0.7, rng=2)
    x = exact.sample(bm, 40_000, rng=11, method="junction-tree")
    counts = np.bincount(exact.states_to_index(x), minlength=256)
    expected = exact.probabilities(bm) * len(x)
    _, pvalue = scipy.stats.chisquare(counts, expected)
    assert pvalue > 1e-3


def test_sample_moments_on_10x10():
    bm = BoltzmannMachine.random(graphs.square_grid(10, 10), 100, bias_scale=0.2,
                                 coupling_scale=0.5, rng=3)
    N = 20_000
    x = exact.sample(bm, N, rng=4).astype(float)
    m, p = exact.moments(bm)
    e = bm.edges
    z_mean = (x.mean(0) - m) / np.sqrt((1 - m**2) / N)
    z_pair = ((x[:, e[:, 0]] * x[:, e[:, 1]]).mean(0) - p) / np.sqrt((1 - p**2) / N)
    assert np.abs(z_mean).max() < 4.5 and np.abs(z_pair).max() < 4.5


def test_same_seed_same_samples():
    bm = BoltzmannMachine.random(graphs.square_grid(5, 6), 30, rng=1)
    a = exact.sample(bm, 3000, rng=9)
    assert a.dtype == np.int8 and a.shape == (3000, 30)
    assert np.array_equal(a, exact.sample(bm, 3000, rng=np.random.default_rng(9)))
    assert not np.array_equal(a, exact.sample(bm, 3000, rng=10))


def test_refuses_wide_graphs_before_allocating():
    with pytest.raises(ValueError, match=r"treewidth 39 \(largest clique table 8.0 TiB, all "
                                         r"tables [\d.]+ TiB\) would need [\d.]+ TiB"):
        se.SpinPlan(graphs.complete(40), 40)
    grid = BoltzmannMachine.random(graphs.square_grid(5, 5), 25, rng=0)
    with pytest.raises(ValueError, match=r"n_samples = 1000000000000 samples of 25 spins"):
        exact.sample(grid, 10**12, rng=0)
    bm = BoltzmannMachine.random(graphs.complete(70), 70, rng=0)
    with pytest.raises(ValueError, match=r"treewidth >= 69: .* would need at least 8.19e\+03 EiB"):
        exact.log_partition(bm)


def test_large_couplings_stay_finite():
    bm = BoltzmannMachine.random(graphs.square_grid(6, 6), 36, bias_scale=300,
                                 coupling_scale=500, rng=2)
    lz, m, p = exact.plan(bm).calibrate(bm.bias, bm.coupling)
    assert np.isfinite(lz) and np.all(np.isfinite(m)) and np.all(np.isfinite(p))
    assert np.all(np.abs(m) <= 1 + 1e-12)


def _python_samples(jt, u, rows=None):
    """Backward sampling as the engine defines it, in Python: each step's rows of the clique
    table (``clique_rows``) drawn by ``draw_categorical`` (node-major ``u``; ``rows`` as
    :func:`~mrflib.inference.exact._compiled_passes.backward_sample` takes it)."""
    _, msgs = jt.upward()
    x = np.zeros((jt.n, u.shape[1]), dtype=np.int64)
    for t in range(len(jt.order) - 1, -1, -1):
        v = jt.cliques[t][0]
        w = u[v] if rows is None else 1.0 - u[rows[v]]
        x[v] = draw_categorical(jt.clique_rows(t, msgs, x.T), w)
    return x


@pytest.mark.parametrize("kind", ["machine", "potts", "zeros"])
def test_compiled_sampling_equals_the_python_draws(kind):
    """The compiled backward sampling draws what ``draw_categorical`` draws from the rows
    of the clique tables (only numba's and numpy's ``exp`` may differ in a last bit), with
    the cumulative weights of a step made per sample (fewer samples than rows) or per row
    (more): the same floats either way."""
    from mrflib.models import lattices

    if kind == "machine":
        bm = BoltzmannMachine.random(graphs.king_grid(4, 4), 16, rng=5)
        model, rows = mrflib.FactorGraph.from_boltzmann(bm), exact.plan(bm)._position
    else:
        model, rows = lattices.potts_lattice(3, 4, q=3, rng=2), None
        if kind == "zeros":
            tables = [t.copy() for t in model.log_tables]
            tables[-1][0, 1] = tables[-2][2, 0] = -np.inf
            model = mrflib.FactorGraph(model.cardinalities, model.scopes, tables)
    from mrflib.inference.exact import elimination

    jt = elimination.plan(model)
    _, msgs = jt.upward()
    tables = cp.sampling_tables(jt, msgs)
    u = np.random.default_rng(3).random((model.n, 3000))
    want = _python_samples(jt, u, rows)
    for chunk in (3000, 7):  # per row (3000 samples), then per sample (7)
        x = np.zeros((model.n, 3000), dtype=np.int64)
        for a in range(0, 3000, chunk):
            part = np.zeros((model.n, min(chunk, 3000 - a)), dtype=np.int64)
            cp.backward_sample(tables, np.ascontiguousarray(u[:, a:a + chunk]), part, 1.0,
                               None if rows is None else rows)
            x[:, a:a + chunk] = part
        assert np.mean(x != want) < 1e-4


def test_samples_are_the_uniforms_of_the_elimination_steps():
    """Column ``t`` of the uniforms decides the spin eliminated at step ``t``: ``+1`` when
    below its probability given the spins eliminated after it (here a chain with no
    coupling, where that is its own probability)."""
    bm = BoltzmannMachine(np.array([0.3, -0.2, 1.0, 0.0]), np.array([[0, 1], [1, 2], [2, 3]]),
                          np.zeros(3))
    plan = se.SpinPlan(bm.edges, 4, order=[2, 0, 3, 1])
    x = plan.sample(bm.bias, bm.coupling, 500, rng=4)
    u = np.random.default_rng(4).random((500, 4))
    p_up = 1.0 / (1.0 + np.exp(-2.0 * bm.bias))
    assert np.array_equal(x, np.where(u < p_up[plan.order], 1, -1)[:, np.argsort(plan.order)])


def test_condition_equals_enumerated_conditional():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 4), 12, bias_scale=0.5,
                                 coupling_scale=0.8, rng=6)
    nodes, values = np.array([5, 1]), np.array([-1, 1])
    sub, free, const = clamp(bm, nodes, values)
    X = exact.states(12)
    keep = (X[:, 5] == -1) & (X[:, 1] == 1)
    P = exact.probabilities(bm)[keep]
    P /= P.sum()
    m, _ = exact.moments(sub, method="junction-tree")
    assert np.allclose(m, X[keep][:, free].T @ P, atol=1e-12)
    log_marg = np.log(exact.probabilities(bm)[keep].sum())
    assert const + exact.log_partition(sub) - exact.log_partition(bm) == pytest.approx(log_marg)


def test_plan_exposes_order_and_is_cached():
    bm = BoltzmannMachine.random(graphs.square_grid(4, 6), 24, rng=0)
    p = exact.plan(bm)
    assert p is exact.plan(bm.edges, 24)
    assert p.treewidth == 4 and len(p.cliques) == 24 and "treewidth=4" in repr(p)
    given = se.SpinPlan(bm.edges, 24, order=np.arange(24))
    assert given.heuristic == "given" and given.treewidth == 6
    assert list(given.order) == list(range(24))
    with pytest.raises(ValueError, match="order must be a permutation"):
        se.SpinPlan(bm.edges, 24, order=np.zeros(24, int))


def _order_graphs():
    yield "grid 7x7", graphs.square_grid(7, 7), 49
    yield "grid 5x12", graphs.square_grid(5, 12), 60
    yield "king 6x6", graphs.king_grid(6, 6), 36
    yield "cubic 3", graphs.cubic(3), 27
    yield "chimera 2x2", graphs.chimera(2, 2), 32
    for seed, p in ((0, 0.05), (1, 0.1), (2, 0.3)):
        yield f"random p={p}", graphs.random_graph(40, p, rng=seed), 40
    two = np.concatenate([graphs.square_grid(3, 3), graphs.square_grid(2, 4) + 9])
    yield "two components", two, 19


@pytest.mark.parametrize("name, edges, n", list(_order_graphs()))
def test_plans_do_not_depend_on_the_compiled_order_kernels(name, edges, n, monkeypatch):
    """The plan's cliques are the set-based elimination's of its order, and the order
    search finds the same order on the sets as with the compiled kernels on an adjacency
    bit matrix, so the plan (and every seeded result) does not depend on which ran."""
    plan = se.SpinPlan(edges, n)
    nbrs = eo.interaction_graph(n, edges.tolist())
    cliques, _, _ = eo.order_cliques(nbrs, list(plan.order), [np.log(2.0)] * n)
    assert [tuple(c) for c in cliques] == list(plan.cliques)
    compiled = se.elimination_order(edges, n)
    monkeypatch.setattr(eo, "DENSE_MAX_NODES", 0)
    assert se.elimination_order(edges, n) == compiled


def test_one_order_search_for_both_model_families():
    """The ±1 junction tree orders with the factor graphs' search on two states per spin:
    the same order, heuristic and width as the factor graph of the same machine."""
    for edges, n in ((graphs.square_grid(4, 6), 24), (graphs.random_graph(30, 0.15, rng=1), 30),
                     (graphs.king_grid(5, 5), 25)):
        bm = BoltzmannMachine.random(edges, n, rng=0)
        p, q = exact.plan(bm), exact.plan(mrflib.FactorGraph.from_boltzmann(bm))
        assert list(p.order) == list(q.order)
        assert (p.heuristic, p.treewidth) == (q.heuristic, q.treewidth)


def test_plan_reports_table_bytes_like_the_factor_graph_plan():
    bm = BoltzmannMachine.random(graphs.square_grid(4, 6), 24, rng=0)
    p = exact.plan(bm)
    q = exact.plan(mrflib.FactorGraph.from_boltzmann(bm))
    assert p.treewidth == q.treewidth == 4
    assert p.max_table_bytes == 8 * 2 ** 5 == q.max_table_bytes
    assert p.total_bytes == q.total_bytes


DEPRECATED = [
    ("log_partition", {}, lambda bm: exact.log_partition(bm, method="junction-tree"),
     r'exact\.log_partition\(model, method="junction-tree"\)'),
    ("moments", {}, lambda bm: exact.plan(bm).calibrate(bm.bias, bm.coupling),
     r"exact\.plan\(model\)\.calibrate"),
    ("sample", dict(n_samples=5, rng=0),
     lambda bm: exact.sample(bm, 5, rng=0, method="junction-tree"), r"exact\.sample\("),
    ("condition", dict(nodes=[0], values=[1]), lambda bm: clamp(bm, [0], [1]),
     r"models\.boltzmann\.clamp"),
]


def _same(a, b):
    for x, y in zip(*(r if isinstance(r, tuple) else (r,) for r in (a, b))):
        if isinstance(x, BoltzmannMachine):
            x, y = x.params, y.params
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name,kwargs,new,says", DEPRECATED, ids=[r[0] for r in DEPRECATED])
def test_the_deprecated_module_forwards_to_the_new_calls(name, kwargs, new, says):
    """``junction_tree.<name>`` gives the answer of the call that replaced it, with a
    FutureWarning naming that call; the model argument's older name ``bm=`` still works,
    with a second warning naming ``model=``."""
    from mrflib.inference.exact import junction_tree

    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, rng=0)
    fn = getattr(junction_tree, name)
    with pytest.warns(FutureWarning, match=says):
        got = fn(bm, **kwargs)
    _same(got, new(bm))
    with pytest.warns(FutureWarning, match=rf"{name}\(model=\.\.\.\)"):
        old = fn(bm=bm, **kwargs)
    _same(old, new(bm))


def test_the_deprecated_plans_and_orders_forward():
    """``JunctionTree``, ``plan``, ``elimination_order`` and ``MAX_WIDTH`` of the deprecated
    module, also by the flat path ``mrflib.inference.junction_tree``: the new objects, each
    with a FutureWarning naming its replacement."""
    import importlib
    import sys

    sys.modules.pop("mrflib.inference.junction_tree", None)
    with pytest.warns(FutureWarning, match="mrflib.inference.exact.junction_tree"):
        junction_tree = importlib.import_module("mrflib.inference.junction_tree")
    edges = graphs.square_grid(3, 5)
    with pytest.warns(FutureWarning, match=r"exact\.plan\(edges, n\)"):
        p = junction_tree.JunctionTree(edges, 15)
    assert isinstance(p, se.SpinPlan) and list(p.order) == list(exact.plan(edges, 15).order)
    with pytest.warns(FutureWarning, match=r"exact\.plan\(x, n\)"):
        assert junction_tree.plan(bm_or_edges=edges, n=15) is exact.plan(edges, 15)
    with pytest.warns(FutureWarning, match=r"exact\.plan\(edges, n\) \(its order"):
        assert junction_tree.elimination_order(edges, 15) == se.elimination_order(edges, 15)
    with pytest.warns(FutureWarning, match=r"which refuses a treewidth above it"):
        assert junction_tree.MAX_WIDTH == se.MAX_WIDTH
    with pytest.raises(AttributeError):
        junction_tree.upward  # noqa: B018
