"""The junction-tree engine against enumeration, pgmpy and its own plain-Python kernels."""

import numpy as np
import pytest
import scipy.stats

import mrflib
from mrflib import BoltzmannMachine, exact, graphs
from mrflib.inference.exact import _junction_tree_kernels as _k
from mrflib.inference.exact import junction_tree as jt


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
    plan = jt.JunctionTree(graphs.square_grid(rows, cols), rows * cols)
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
    with pytest.raises(ValueError, match=r"treewidth 39 \(largest clique table 2\^40 "
                                         r"entries\) would need [\d.]+ TiB"):
        jt.JunctionTree(graphs.complete(40), 40)
    grid = BoltzmannMachine.random(graphs.square_grid(5, 5), 25, rng=0)
    with pytest.raises(ValueError, match=r"n_samples = 1000000000000 samples of 25 spins"):
        exact.sample(grid, 10**12, rng=0)
    bm = BoltzmannMachine.random(graphs.complete(70), 70, rng=0)
    with pytest.raises(ValueError, match=r"treewidth >= 69: .* would need at least 8.19e\+03 EiB"):
        exact.log_partition(bm)


def test_large_couplings_stay_finite():
    bm = BoltzmannMachine.random(graphs.square_grid(6, 6), 36, bias_scale=300,
                                 coupling_scale=500, rng=2)
    lz, m, p = jt.moments(bm)
    assert np.isfinite(lz) and np.all(np.isfinite(m)) and np.all(np.isfinite(p))
    assert np.all(np.abs(m) <= 1 + 1e-12)


def test_kernels_equal_plain_python():
    bm = BoltzmannMachine.random(graphs.random_graph(9, 0.4, rng=5), 9, rng=5)
    plan = jt.JunctionTree(bm.edges, bm.n)
    ref = {}
    for name in ("upward", "downward", "sample"):
        ref[name] = getattr(_k, name)
    try:
        for name in ref:
            setattr(_k, name, ref[name].py_func)
        lz0, m0, p0 = plan.calibrate(bm.bias, bm.coupling)
        s0 = plan.sample(bm.bias, bm.coupling, 50, rng=1)
    finally:
        for name in ref:
            setattr(_k, name, ref[name])
    lz, m, p = plan.calibrate(bm.bias, bm.coupling)
    assert lz == pytest.approx(lz0, abs=1e-12)
    assert np.allclose(m, m0, atol=1e-12) and np.allclose(p, p0, atol=1e-12)
    assert np.array_equal(plan.sample(bm.bias, bm.coupling, 50, rng=1), s0)


def test_condition_equals_enumerated_conditional():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 4), 12, bias_scale=0.5,
                                 coupling_scale=0.8, rng=6)
    nodes, values = np.array([5, 1]), np.array([-1, 1])
    sub, free, const = jt.condition(bm, nodes, values)
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
    given = jt.JunctionTree(bm.edges, 24, order=np.arange(24))
    assert given.heuristic == "given" and given.treewidth == 6
    with pytest.raises(ValueError, match="order must be a permutation"):
        jt.JunctionTree(bm.edges, 24, order=np.zeros(24, int))


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
def test_compiled_cliques_equal_the_set_based_ones(name, edges, n, monkeypatch):
    """The compiled clique sizes are those of the set-based elimination, so the plan (and
    every seeded result) does not depend on which ran."""
    nbrs = jt._neighbour_sets(edges, n)
    dense = jt._dense_of_edges(edges, n)
    nodes = list(range(n))
    for order in (nodes, jt.elimination_order(edges, n)[0], nodes[::-1]):
        for limit in (jt.MAX_WIDTH + 1, 4):
            cliques, size = jt._eliminate(nbrs, order, limit)
            sizes, size2 = jt._clique_sizes(nbrs, dense, order, limit)
            assert size2 == size
            assert sizes == (None if cliques is None else [len(c) for c in cliques])
    compiled = jt.elimination_order(edges, n)
    monkeypatch.setattr(jt, "_DENSE_MAX_NODES", -1)
    assert compiled == jt.elimination_order(edges, n)


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
    assert p.total_bytes == 8 * p.table_entries


RENAMED = [
    ("log_partition", {}),
    ("moments", {}),
    ("sample", dict(n_samples=5, rng=0)),
    ("condition", dict(nodes=[0], values=[1])),
]


@pytest.mark.parametrize("name,kwargs", RENAMED, ids=[r[0] for r in RENAMED])
def test_model_argument_renamed(name, kwargs):
    """The model argument is ``model=``; the old ``bm=`` gives the same answer with a
    FutureWarning naming the new call."""
    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, rng=0)
    fn = getattr(jt, name)
    want = fn(bm, **kwargs)
    got = fn(model=bm, **kwargs)
    with pytest.warns(FutureWarning, match=rf"{name}\(model=\.\.\.\)"):
        old = fn(bm=bm, **kwargs)
    for a, b, c in zip(*(r if isinstance(r, tuple) else (r,) for r in (want, got, old))):
        if isinstance(a, BoltzmannMachine):
            a, b, c = a.params, b.params, c.params
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c, a)
