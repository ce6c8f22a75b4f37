"""The factor-graph junction-tree engine against brute-force enumeration."""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrflib import BoltzmannMachine, FactorGraph, exact, graphs
from mrflib.inference._reduction import Reduced, observed_states
from mrflib.inference.exact import elimination
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import enumeration as fe
from tests._random_factor_graphs import random_factor_graph

TOL = 1e-10


def random_model(rng, n=7, n_factors=8, zeros=0.2, max_card=5, max_scope=4):
    card = rng.integers(1, max_card + 1, n)
    scopes, tables = [], []
    for _ in range(n_factors):
        k = int(rng.integers(1, max_scope + 1))
        s = tuple(rng.choice(n, size=min(k, n), replace=False).tolist())
        t = rng.normal(scale=1.5, size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < zeros] = -np.inf
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    if rng.random() < 0.5:
        chosen = rng.choice(n, size=2, replace=False).tolist()
        model = model.condition({v: int(rng.integers(card[v])) for v in chosen})
    return model


def random_bayes_net(rng, n=8, evidence=2):
    """A random Bayesian network (parents among earlier variables), CPTs as factors."""
    card = rng.integers(2, 4, n)
    scopes, tables = [], []
    for v in range(n):
        parents = sorted(rng.choice(v, size=min(v, int(rng.integers(0, 3))),
                                    replace=False).tolist()) if v else []
        p = rng.dirichlet(np.ones(card[v]), size=[card[u] for u in parents])
        p[rng.random(p.shape) < 0.1] = 0.0
        p /= p.sum(axis=-1, keepdims=True).clip(min=1e-300)
        p[np.all(p == 0, axis=-1)] = 1.0 / card[v]
        with np.errstate(divide="ignore"):
            tables.append(np.log(p))
        scopes.append((*parents, v))
    model = FactorGraph(card, scopes, tables)
    chosen = rng.choice(n, size=evidence, replace=False).tolist()
    return model.condition({v: int(rng.integers(card[v])) for v in chosen})


def assert_same(model):
    """Every task of the junction tree equals enumeration (or both refuse Z = 0)."""
    ref = fe.log_partition(model)
    logz = elimination.log_partition(model)
    if ref == -np.inf:
        assert logz == -np.inf
        with pytest.raises(ValueError, match="Z = 0"):
            elimination.marginals(model)
        return
    assert abs(logz - ref) < TOL
    for a, b in zip(fe.marginals(model), elimination.marginals(model)):
        np.testing.assert_allclose(b, a, atol=TOL, rtol=0)
    fa, fb = fe.factor_marginals(model), elimination.factor_marginals(model)
    assert len(fa) == len(fb) == model.n_factors
    for a, b, t in zip(fa, fb, model.log_tables):
        assert b.shape == t.shape
        np.testing.assert_allclose(b, a, atol=TOL, rtol=0)
    x_ref, lw_ref = fe.map_assignment(model)
    x, lw = elimination.map_assignment(model)
    assert abs(lw - lw_ref) < TOL
    assert abs(model.log_weight(x) - lw) < TOL


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_random_factor_graphs_equal_enumeration(seed):
    assert_same(random_model(np.random.default_rng(seed)))


@pytest.mark.parametrize("seed", range(40))
def test_einsum_contraction_of_every_clique_equals_enumeration(seed, monkeypatch):
    """With every linear-space clique contracted by opt_einsum (not only the large ones
    with a BLAS product), every task still equals enumeration."""
    from mrflib.inference import _factor_ops as fo

    monkeypatch.setattr(fo, "EINSUM_MIN_SIZE", 1)
    monkeypatch.setattr(fo, "EINSUM_MIN_WIDTH", 1)
    rng = np.random.default_rng(seed)
    assert_same(random_model(rng) if seed % 2 else random_bayes_net(rng))


@pytest.mark.parametrize("seed", range(30))
def test_random_bayes_nets_equal_enumeration(seed):
    model = random_bayes_net(np.random.default_rng(seed))
    assert_same(model)
    jt = elimination.plan(model, barren=True)
    if model.n - 1 not in jt.observed:  # the last variable is a leaf: its CPT is barren
        assert jt.n_pruned >= 1 and model.n - 1 not in jt.order


def test_bayes_net_without_evidence_is_trivial():
    model = random_bayes_net(np.random.default_rng(1), n=12, evidence=0)
    jt = elimination.plan(model, barren=True)
    assert jt.order == [] and jt.n_pruned + len(jt.observed) == 12  # a CPT of one 0 is
    assert exact.log_partition(model, method="junction-tree") == pytest.approx(0.0, abs=1e-12)
    for a, b in zip(fe.marginals(model), exact.marginals(model, method="junction-tree")):
        np.testing.assert_allclose(b, a, atol=TOL)


def test_log_likelihood_equals_enumeration():
    rng = np.random.default_rng(3)
    model = random_model(rng, zeros=0.0)
    data = fe.sample(model, 50, rng=0)
    ref = np.mean(model.log_weight(data)) - fe.log_partition(model)
    for method in ("enumerate", "junction-tree", "auto"):
        assert abs(exact.log_likelihood(model, data, method=method) - ref) < TOL


def _free_and_barren_model():
    """A Bayesian network with evidence, plus a variable without factors and one of a
    single state: barren CPTs, free and fixed variables all reach the sampler."""
    net = random_bayes_net(np.random.default_rng(5), n=6, evidence=1)
    card = [*net.cardinalities.tolist(), 3, 1]
    return FactorGraph(card, [*net.scopes, (7,)], [*net.log_tables, np.zeros(1)])


@pytest.mark.parametrize("make", [
    lambda: random_bayes_net(np.random.default_rng(5), n=6, evidence=1),
    lambda: random_model(np.random.default_rng(18), n=6, n_factors=6, zeros=0.3),
    _free_and_barren_model])
def test_exact_samples_match_enumeration_chi_square(make):
    scipy_stats = pytest.importorskip("scipy.stats")
    model = make()
    lw = fe.joint_log_table(model)
    p = np.exp(lw - fe.log_partition(model)).ravel()
    M = 40_000
    x = exact.sample(model, M, rng=7, method="junction-tree")
    assert x.dtype == np.int64 and x.shape == (M, model.n)
    assert np.all(np.isfinite(model.log_weight(x)))
    idx = np.ravel_multi_index(x.T, lw.shape)
    counts = np.bincount(idx, minlength=p.size)
    keep = p * M >= 5
    assert counts[~keep].sum() <= max(30, 5 * p[~keep].sum() * M)
    expected = p[keep] * M
    observed = counts[keep]
    stat = ((observed - expected) ** 2 / expected).sum()
    assert scipy_stats.chi2.sf(stat, keep.sum() - 1) > 1e-4
    np.testing.assert_array_equal(x, exact.sample(model, M, rng=7, method="junction-tree"))


def test_boltzmann_machine_through_factor_graph_equals_fast_path():
    bm = BoltzmannMachine.random(graphs.square_grid(5, 5), 25, rng=2)
    fg = FactorGraph.from_boltzmann(bm)
    assert abs(elimination.log_partition(fg) - exact.log_partition(bm)) < TOL
    mean, pair = exact.moments(bm, method="junction-tree")
    marg = elimination.marginals(fg)
    np.testing.assert_allclose([m[1] - m[0] for m in marg], mean, atol=TOL)
    fm = elimination.factor_marginals(fg)[bm.n:]
    np.testing.assert_allclose([f[0, 0] + f[1, 1] - f[0, 1] - f[1, 0] for f in fm], pair,
                               atol=TOL)


def test_extreme_log_partition():
    for sign in (1.0, -1.0):
        n = 40
        target = sign * 2000 * math.log(10)
        scopes = [(i,) for i in range(n)] + [(i, i + 1) for i in range(n - 1)]
        tables = [np.full(3, target / n - math.log(3))] * n
        tables += [np.zeros((3, 3))] * (n - 1)
        model = FactorGraph(np.full(n, 3), scopes, tables)
        logz = exact.log_partition(model, method="junction-tree")
        assert abs(logz - target) < 1e-9 * abs(target)
        for m in exact.marginals(model, method="junction-tree"):
            np.testing.assert_allclose(m, 1 / 3, atol=1e-12)


@pytest.mark.parametrize("tables", [
    [np.array([1e308, 1e308]), np.array([1e308, 1e308])],  # the sum overflows to +inf
    [np.array([-1e308, -1e308]), np.array([-1e308, -1e308])],  # to -inf: a false Z = 0
    [np.array([1e300, 0.0]), np.array([-np.inf, 2e300])],
])
def test_log_weights_whose_sums_overflow_are_refused(tables):
    """Log-weights of 1e308 would give log Z = +inf, NaN marginals or a false Z = 0: the
    model is refused at construction, naming log_tables and the bound."""
    with pytest.raises(ValueError, match=r"log_tables: the largest \|log-weight\|.*1e\+300"):
        FactorGraph([2], [(0,), (0,)], tables)
    huge = BoltzmannMachine(np.array([1e308, 1e308]), np.array([[0, 1]]), np.array([1e308]))
    with pytest.raises(ValueError, match=r"model \(its biases and couplings\)"):
        exact.marginals(huge)


def test_the_largest_allowed_log_weights_give_finite_answers():
    model = FactorGraph([2, 3], [(0,), (0, 1)], [np.array([5e299, 0.0]),
                                                 np.array([[4e299, 0, 1], [-np.inf, 0, 0]])])
    for method in ("enumerate", "junction-tree"):
        assert exact.log_partition(model, method=method) == pytest.approx(9e299, rel=1e-15)
        for m in exact.marginals(model, method=method) + exact.factor_marginals(
                model, method=method):
            assert np.all(np.isfinite(m)) and abs(m.sum() - 1) < 1e-12
        x, best = exact.map_assignment(model, method=method)
        assert x.tolist() == [0, 0] and best == pytest.approx(9e299, rel=1e-15)


def test_zero_evidence_warns_and_refuses():
    with np.errstate(divide="ignore"):
        t = np.log(np.array([[0.5, 0.5], [1.0, 0.0]]))
        model = FactorGraph([2, 2], [(0,), (0, 1)], [np.log([0.0, 1.0]), t]).condition({1: 1})
    for method in ("enumerate", "junction-tree"):
        with pytest.warns(RuntimeWarning, match="Z = 0"):
            assert exact.log_partition(model, method=method) == -np.inf
        for f in (exact.marginals, exact.factor_marginals, exact.map_assignment):
            with pytest.raises(ValueError, match="Z = 0"):
                f(model, method=method)
        with pytest.raises(ValueError, match="Z = 0"):
            exact.sample(model, 3, rng=0, method=method)


def test_huge_treewidth_is_refused_before_allocation():
    edges = graphs.square_grid(60, 60)
    model = FactorGraph(np.full(3600, 10), [tuple(e) for e in edges.tolist()],
                        [np.zeros((10, 10))] * len(edges))
    with pytest.raises(ValueError, match=r"treewidth >= \d+: .* \d+\.\d [GTPE]iB"):
        exact.log_partition(model)
    edges = graphs.square_grid(30, 30)
    model = FactorGraph(np.full(900, 10), [tuple(e) for e in edges.tolist()],
                        [np.zeros((10, 10))] * len(edges))
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"treewidth >= \d+: .* \d+\.\d [GTPE]iB"):
        exact.marginals(model)
    assert not exact.plan(model).fits  # a plan says so instead of refusing
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20  # refused before any table was allocated


def test_lattice_gets_width_of_its_side():
    edges = graphs.square_grid(20, 20)
    adj = eo.interaction_graph(400, edges.tolist())
    found = eo.best_order(adj, [math.log(2)] * 400, range(400))
    assert found.width == 20


def test_disconnected_components_and_free_variables():
    rng = np.random.default_rng(9)
    scopes = [(0, 1), (2, 3), (3, 4)]
    tables = [rng.normal(size=(2, 3)), rng.normal(size=(2, 2)), rng.normal(size=(2, 4))]
    model = FactorGraph([2, 3, 2, 2, 4, 5], scopes, tables)  # variable 5: no factor
    assert_same(model)
    assert elimination.marginals(model)[5] == pytest.approx(np.full(5, 0.2))


def test_plan_reports_sizes():
    model = random_model(np.random.default_rng(4))
    p = exact.plan(model)
    assert sorted(p.order) == sorted(set(v for s in p.red.scopes for v in s))
    assert p.max_table_bytes <= p.total_bytes
    assert "treewidth" in repr(p)


def test_boundary_validation():
    model = random_model(np.random.default_rng(0))
    with pytest.raises(ValueError, match="method"):
        exact.log_partition(model, method="magic")
    with pytest.raises(ValueError, match="n_samples"):
        exact.sample(model, 0, rng=0)
    with pytest.raises(ValueError, match="rng"):
        exact.sample(model, 3, rng=None)
    with pytest.raises(ValueError, match="data"):
        exact.log_likelihood(model, np.zeros((2, model.n + 1), dtype=int))
    with pytest.raises(TypeError, match="model"):
        exact.marginals("model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact.marginals(BoltzmannMachine.random(graphs.square_grid(2, 2), 4, rng=0))


# ----------------------------------------------------------------------------- pgmpy
def expert_factor_graph(name):
    """A bundled expert Bayesian network as a factor graph (one CPT per variable)."""
    from mrflib import datasets

    net = datasets.expert_network(name)
    card = list(net.cardinalities)
    scopes, tables = [], []
    for v, (parents, cpd) in enumerate(zip(net.parents, net.cpds)):
        scope = (*reversed(parents), v)  # the first parent is the fastest digit of a row
        with np.errstate(divide="ignore"):
            tables.append(np.log(cpd).reshape([card[u] for u in scope]))
        scopes.append(scope)
    return net, FactorGraph(card, scopes, tables)


@pytest.mark.parametrize("name, evidence", [("asia", {0: 1, 5: 0}), ("alarm", {3: 1, 20: 0,
                                                                              30: 2})])
def test_bayes_net_evidence_equals_pgmpy_variable_elimination(name, evidence):
    from pgmpy.inference import VariableElimination

    from mrflib import datasets

    net, model = expert_factor_graph(name)
    evidence = {v: min(x, net.cardinalities[v] - 1) for v, x in evidence.items()}
    ve = VariableElimination(datasets.pgmpy_model(name))
    names = net.variables
    cond = model.condition(evidence)
    # P(evidence) = Z of the conditioned network
    joint = ve.query([names[v] for v in evidence], joint=True, show_progress=False)
    p_e = joint.get_value(**{names[v]: net.states[v][x] for v, x in evidence.items()})
    assert abs(exact.log_partition(cond, method="junction-tree") - math.log(p_e)) < 1e-10
    ours = exact.marginals(cond, method="junction-tree")
    pg_ev = {names[v]: net.states[v][x] for v, x in evidence.items()}
    for v in range(len(names)):
        if v in evidence:
            continue
        q = ve.query([names[v]], evidence=pg_ev, show_progress=False)
        ref = [q.get_value(**{names[v]: s}) for s in net.states[v]]
        np.testing.assert_allclose(ours[v], ref, atol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_markov_network_equals_pgmpy_variable_elimination(seed):
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteMarkovNetwork

    model = random_model(np.random.default_rng(100 + seed), n=8, n_factors=9, zeros=0.1)
    model = FactorGraph(np.maximum(model.cardinalities, 2), *_lift(model))
    net = DiscreteMarkovNetwork()
    net.add_nodes_from(range(model.n))
    for s in model.scopes:
        net.add_edges_from([(a, b) for i, a in enumerate(s) for b in s[i + 1:]])
    for s, t in zip(model.scopes, model.log_tables):
        net.add_factors(DiscreteFactor(list(s), list(t.shape), np.exp(t)))
    ve = VariableElimination(net)
    ours = exact.marginals(model, method="junction-tree")
    for v in range(model.n):
        q = ve.query([v], show_progress=False)
        np.testing.assert_allclose(ours[v], q.values / q.values.sum(), atol=1e-10)


def _lift(model):
    """Scopes and tables of ``model`` on cardinalities of at least 2 (pgmpy needs them)."""
    card = np.maximum(model.cardinalities, 2)
    tables = []
    for s, t in zip(model.scopes, model.log_tables):
        full = np.full([int(card[v]) for v in s], -np.inf)
        full[tuple(slice(0, c) for c in t.shape)] = t
        tables.append(full)
    return model.scopes, tables


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("shape", [(5000,), (3, 4000), (11, 11, 11, 11), (2,) * 14,
                                   (4, 1, 3, 2000)])
def test_logsumexp_kernel_equals_numpy(shape):
    from mrflib.inference._factor_ops import logsumexp, logsumexp_numpy

    rng = np.random.default_rng(len(shape))
    a = rng.normal(size=shape) * 300
    a[rng.random(shape) < 0.3] = -np.inf
    a[0] = -np.inf
    nd = len(shape)
    for axes in {(0,), tuple(range(nd)), tuple(range(1, nd)), (nd - 1,),
                 tuple(range(0, nd, 2))}:
        if not axes:
            continue
        ref, got = logsumexp_numpy(a, axes), logsumexp(a, axes)
        assert got.shape == ref.shape
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
        fin = np.isfinite(ref)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-14, atol=1e-12)


def _clique_inputs(rng, clique, card, n_inputs, spread, zeros):
    """Random log tables over subsets of ``clique`` (scopes in random order)."""
    tables, scopes = [], []
    for _ in range(n_inputs):
        size = int(rng.integers(1, len(clique) + 1))
        scope = tuple(int(v) for v in rng.permutation(clique)[:size])
        t = rng.normal(size=[card[v] for v in scope]) * spread
        t[rng.random(t.shape) < zeros] = -np.inf
        tables.append(t)
        scopes.append(scope)
    return tables, scopes


@pytest.mark.parametrize("shape", [(2,) * 13, (3, 2, 2, 5, 2, 2, 2, 3, 2), (3, 1500),
                                   (2, 2, 700, 2)])
def test_clique_sum_over_blocks_equals_numpy_bit_for_bit(shape):
    """Cliques larger than the kernel's block (the odometer steps between blocks; an inner
    axis alone larger than the block) are summed in input order from zero, the very floats
    of numpy's input-by-input broadcast sum."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(len(shape))
    clique = [int(v) for v in rng.permutation(20)[:len(shape)]]
    card = dict(zip(clique, shape))
    tables, scopes = _clique_inputs(rng, clique, card, 9, 50.0, 0.1)
    full = fo.clique_sum_numpy(tables, scopes, clique, list(shape))
    np.testing.assert_array_equal(fo.clique_sum(tables, scopes, clique, list(shape)), full)


@pytest.mark.parametrize("contract", ["kernel", "einsum"])
@pytest.mark.parametrize("spread", [1.0, 400.0])  # linear-space, then log-space kernels
@pytest.mark.parametrize("seed", range(12))
def test_clique_kernels_equal_numpy(seed, spread, contract, monkeypatch):
    """The fused clique kernels (messages without the clique table, several marginals in
    one pass), or opt_einsum's contraction of every clique, equal building the table by
    numpy broadcasting and reducing it."""
    from mrflib.inference import _factor_ops as fo

    if contract == "einsum":
        monkeypatch.setattr(fo, "EINSUM_MIN_SIZE", 1)
        monkeypatch.setattr(fo, "EINSUM_MIN_WIDTH", 1)
    rng = np.random.default_rng(seed)
    nd = 1 + seed % 5
    clique = [int(v) for v in rng.permutation(9)[:nd]]
    card = {v: int(rng.integers(1, 5)) for v in clique}
    shape = [card[v] for v in clique]
    tables, scopes = _clique_inputs(rng, clique, card, 1 + seed % 4, spread, 0.2 * (seed % 2))
    full = fo.clique_sum_numpy(tables, scopes, clique, shape)
    np.testing.assert_allclose(fo.clique_sum(tables, scopes, clique, shape), full,
                               rtol=1e-14)
    for maximize in (False, True):
        ref = fo.clique_eliminate_numpy(tables, scopes, clique, shape, maximize)
        got = fo.clique_eliminate(tables, scopes, clique, shape, maximize)
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
        np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)],
                                   rtol=1e-12, atol=1e-12)
    targets = [tuple(int(v) for v in rng.permutation(clique)[:k]) for k in range(nd + 1)]
    for s, got in zip(targets, fo.clique_marginals(tables, scopes, clique, shape, targets)):
        axes = tuple(d for d, v in enumerate(clique) if v not in s)
        kept = [v for v in clique if v in s]
        ref = np.transpose(fo.logsumexp_numpy(full, axes), [kept.index(v) for v in s])
        assert got.shape == ref.shape
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
        np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)],
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_both_clique_walks_equal_numpy(seed):
    """Each axis order of the linear-space kernel (blocked, sparse innermost), runs of axes
    merged, sums the clique's products onto every target as numpy does; walked a block of
    trailing axes at a time (for short rows), to the same floats."""
    from mrflib.inference import _elimination_kernels as ek
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    nd = 1 + seed % 7
    clique = [int(v) for v in rng.permutation(12)[:nd]]
    card = {v: int(rng.integers(1, 6)) for v in clique}
    shape = [card[v] for v in clique]
    tables, scopes = _clique_inputs(rng, clique, card, 1 + seed % 5, 1.0, 0.2 * (seed % 2))
    if seed % 3 == 0:  # a message over the whole clique but its first variable
        tables.append(rng.normal(size=shape[1:]))
        scopes.append(tuple(clique[1:]))
    lin = [np.exp(t) for t in tables]
    full = np.exp(fo.clique_sum_numpy(tables, scopes, clique, shape))
    targets = [tuple(clique[1:]), tuple(clique[:1])] + [
        tuple(int(v) for v in rng.permutation(clique)[:k]) for k in range(nd + 1)]
    values, offsets, strides, shp = fo._inputs(lin, scopes, clique, shape)
    ooffsets, ostrides, size, _, _ = fo._ostrides(tuple(clique), tuple(shape), tuple(targets))
    for perm in (ek.blocked_order(strides, shp, 4096), ek.sparse_inner_order(strides, shp),
                 ek.blocked_order(strides, shp, 1)):
        assert sorted(perm.tolist()) == list(range(nd))
        by, st, starts, s2, ost = ek._walk_layout(strides, shp, ostrides, perm)
        # the cost that picks the order, read off the layout it would make: per entry an
        # input of the last level and an output, per row an odometer step of each
        entries, R = float(np.prod(s2, dtype=np.float64)), len(ooffsets)
        assert ek.layout_cost(strides, shp, ostrides, perm) == (
            entries * (starts[-1] - starts[-2] + R)
            + 4.0 * (entries / s2[-1]) * (len(by) + R + 2))
        out = np.zeros(size)
        ek.clique_product_sum(values, offsets[by], st, starts, s2, ooffsets, ost, out)
        blocked = np.zeros(size)  # a block of trailing axes at a time: the same floats
        ek.clique_product_sum_blocked(values, offsets[by], st, starts, s2, ooffsets, ost,
                                      blocked)
        np.testing.assert_array_equal(blocked, out)
        for o, s in zip(ooffsets.tolist(), targets):
            axes = tuple(d for d, v in enumerate(clique) if v not in s)
            kept = [v for v in clique if v in s]
            ref = np.transpose(full.sum(axis=axes), [kept.index(v) for v in s])
            np.testing.assert_allclose(out[o:o + ref.size].reshape(ref.shape), ref,
                                       rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_blocked_walk_of_a_wide_clique_gives_the_same_floats(seed):
    """A clique of eleven 2- and 4-state variables (a CSP's: rows of four entries, many
    blocks) summed onto three targets, walked row by row and block by block: bit-equal."""
    from mrflib.inference import _elimination_kernels as ek
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    clique = [int(v) for v in rng.permutation(20)[:11]]
    card = {v: int(rng.choice([2, 4])) for v in clique}
    shape = [card[v] for v in clique]
    tables, scopes = _clique_inputs(rng, clique, card, 10, 1.0, 0.1)
    lin = [np.exp(t) for t in tables]
    targets = [tuple(clique[1:]), tuple(clique[:1]), tuple(clique[3:6])]
    values, offsets, strides, shp = fo._inputs(lin, scopes, clique, shape)
    ooffsets, ostrides, size, _, _ = fo._ostrides(tuple(clique), tuple(shape), tuple(targets))
    for perm in (ek.blocked_order(strides, shp, 4096), ek.sparse_inner_order(strides, shp)):
        by, st, starts, s2, ost = ek._walk_layout(strides, shp, ostrides, perm)
        rows, blocks = np.zeros(size), np.zeros(size)
        ek.clique_product_sum(values, offsets[by], st, starts, s2, ooffsets, ost, rows)
        ek.clique_product_sum_blocked(values, offsets[by], st, starts, s2, ooffsets, ost,
                                      blocks)
        np.testing.assert_array_equal(blocks, rows)


def test_merged_axes_walk_the_same_entries():
    """Axes every input and output walks as one merge; any other pair stays apart."""
    from mrflib.inference import _elimination_kernels as ek

    shape = np.array([2, 3, 4, 5], dtype=np.int64)
    strides = np.array([[60, 20, 5, 1], [0, 4, 1, 0]], dtype=np.int64)
    ostrides = np.array([[0, 20, 5, 1]], dtype=np.int64)
    shp, st, ost = ek.merge_axes(shape, strides, ostrides)
    assert shp.tolist() == [2, 12, 5]
    assert st.tolist() == [[60, 5, 1], [0, 1, 0]] and ost.tolist() == [[0, 5, 1]]


@pytest.mark.parametrize("seed", range(6))
def test_scaled_tables_round_trip_and_divide(seed):
    """A log table's linear form (largest entry one, the span of its finite entries) gives
    the table back; a Hugin quotient of two, or of a linear and a log table, is the log
    difference (zero where the divisor is zero); a span over the limit stays in log space."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, 4)) * 50
    b = rng.normal(size=(3, 4)) * 50
    a[0, 0] = b[0, 0] = -np.inf
    b[1, 1] = -np.inf
    sa, sb = fo.scaled(a), fo.scaled(b)
    assert sa.values.max() == 1.0 and sa.log_scale == a.max()
    fin = np.isfinite(a)
    assert sa.span == pytest.approx(a[fin].max() - a[fin].min())
    np.testing.assert_allclose(fo.as_log(sa)[fin], a[fin], rtol=1e-13, atol=1e-12)
    assert np.isneginf(fo.as_log(sa)[0, 0])
    with np.errstate(invalid="ignore"):
        ref = np.where(np.isneginf(b), -np.inf, a - 2.5 - b)
    for x, y in ((sa, sb), (sa, b), (a, sb)):
        got = fo.as_log(fo.divide(x, y, 2.5))
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
        ok = np.isfinite(ref)
        np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-12, atol=1e-10)
    assert fo.scaled(np.array([0.0, -800.0])) is None
    assert fo.scaled(np.array([-np.inf, -np.inf])) is None


def test_messages_wider_than_the_linear_span_mix_with_linear_ones():
    """A message whose span exceeds the linear limit stays a log table; a clique with it
    and linear inputs is summed in log space, and equals the reference."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(3)
    wide = rng.normal(size=(3, 4)) * 400
    narrow = rng.normal(size=(3,))
    tables, scopes, clique, shape = [wide, narrow], [(0, 1), (0,)], [0, 1], [3, 4]
    assert fo.scaled(wide) is None
    got = fo.as_log(fo.eliminate([wide, fo.scaled(narrow)], scopes, clique, shape))
    np.testing.assert_allclose(got, fo.clique_eliminate_numpy(tables, scopes, clique, shape),
                               rtol=1e-12)
    out = fo.eliminate([fo.scaled(rng.normal(size=(3, 4)) * 200),
                        fo.scaled(rng.normal(size=(3,)) * 200)], scopes, clique, shape)
    assert isinstance(out, (fo.Scaled, np.ndarray))


def _spread_tables(rng, clique, shape, scopes, total):
    """Log tables over ``scopes`` (subsets of ``clique``) whose spans add up to ``total``,
    each entry drawn uniformly within its table's span (both ends reached)."""
    pos = {v: d for d, v in enumerate(clique)}
    spans = rng.dirichlet(np.full(len(scopes), 20.0)) * total  # each within the limit
    tables = []
    for s, span in zip(scopes, spans):
        t = -rng.uniform(0.0, span, size=[shape[pos[v]] for v in s])
        t.flat[0], t.flat[-1] = 0.0, -span
        tables.append(t)
    return tables


@pytest.mark.parametrize("seed", range(6))
def test_products_past_the_linear_span_are_lifted_and_exact(seed):
    """Inputs whose spans add up past the linear limit (so some products would underflow
    with each input's largest entry one) are lifted: every product, partial ones too,
    stays a normal float, and the sums are the log-space reference's to rounding,
    through the numba kernel (small cliques) and ``opt_einsum`` (large ones); past
    :func:`lifted_span` the clique is summed in log space."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    large = seed % 2 == 1
    clique = [int(v) for v in rng.permutation(20)[:8 if large else 5]]
    shape = [4] * len(clique)
    c = clique
    scopes = ([(c[0], c[1], c[2], c[3]), (c[0], c[4], c[5]), (c[0], c[6], c[7]),
               (c[4], c[5], c[6], c[7])] if large else
              [(c[0], c[1]), (c[0], c[2]), (c[1], c[3], c[4]), (c[0], c[4]), (c[3],)])
    size = 4 ** len(clique)
    if large:
        assert size >= fo.EINSUM_MIN_SIZE and fo.gemm_width(
            [4 ** len(s) for s in scopes], scopes, clique, shape) >= fo.EINSUM_MIN_WIDTH
    total = fo.LINEAR_SPAN + (seed + 1) / 7 * (fo.lifted_span(size) - fo.LINEAR_SPAN)
    tables = _spread_tables(rng, clique, shape, scopes, total)
    lin = fo._all_scaled(tables, size)
    assert lin is not None and max(float(x.values.max()) for x in lin) > 1.0
    # every partial product lies in [e^-LINEAR_SPAN, e^lift]
    lows = [float(np.log(x.values[x.values > 0].min())) for x in lin]
    highs = [float(np.log(x.values.max())) for x in lin]
    for k in range(1, len(lin) + 1):
        assert sum(sorted(lows)[:k]) >= -fo.LINEAR_SPAN - 1e-9
        assert sum(sorted(highs)[-k:]) <= total - fo.LINEAR_SPAN + 1e-9
    ref = fo.clique_eliminate_numpy(tables, scopes, clique, shape)
    got = fo.as_log(fo.eliminate(tables, scopes, clique, shape))
    tol = 1e-12 * total  # log sums are exact to rounding times their scale
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
    assert np.ptp(ref) > 0 and np.isfinite(got).all()
    targets = [tuple(clique[1:]), (clique[2],), (clique[0], clique[3])]
    full = fo.clique_sum_numpy(tables, scopes, clique, shape)
    for t, m in zip(targets, fo.marginals_onto(tables, scopes, clique, shape, targets)):
        np.testing.assert_allclose(fo.as_log(m), fo.reduce_to(full, clique, t),
                                   rtol=0, atol=tol)
    wider = _spread_tables(rng, clique, shape, scopes, fo.lifted_span(size) + 1.0)
    if all(fo.scaled(t) is not None for t in wider):
        assert fo._all_scaled(wider, size) is None


@pytest.mark.parametrize("seed", range(3))
def test_a_separator_asked_for_twice_is_contracted_once(seed, monkeypatch):
    """Children sharing a separator ask a clique for one sum twice: ``opt_einsum``
    contracts it once and both get the one table (read only, by the Hugin quotients),
    equal to the numba kernel's sums."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    clique = [int(v) for v in rng.permutation(9)[:5]]
    card = {v: int(rng.integers(2, 5)) for v in clique}
    shape = [card[v] for v in clique]
    tables, scopes = _clique_inputs(rng, clique, card, 3, 1.0, 0.0)
    targets = [tuple(clique[1:]), (clique[2],), tuple(clique[1:])]
    kernel = fo.marginals_onto(tables, scopes, clique, shape, targets)
    monkeypatch.setattr(fo, "EINSUM_MIN_SIZE", 1)
    monkeypatch.setattr(fo, "EINSUM_MIN_WIDTH", 1)
    calls = []
    contract = fo._contract
    monkeypatch.setattr(fo, "_contract", lambda *a: calls.append(a[-1]) or contract(*a))
    got = fo.marginals_onto(tables, scopes, clique, shape, targets)
    assert got[0] is got[2] and calls == [tuple(clique[1:])]
    for a, b in zip(got, kernel):
        np.testing.assert_allclose(fo.as_log(a), fo.as_log(b), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("block", [1, 4, 64])
@pytest.mark.parametrize("seed", range(8))
def test_transposed_results_are_copied_to_c_order_entry_for_entry(seed, block, monkeypatch):
    """A transposed array (``opt_einsum``'s result in its own axis order) is copied in
    tiles to C order: numpy's copy, entry for entry, whatever the tile; a view that is not
    a permutation of a contiguous array (a strided slice) is copied by numpy."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    monkeypatch.setattr(fo, "PERMUTED_COPY_MIN", 1)
    monkeypatch.setattr(fo, "PERMUTED_COPY_BLOCK", block)
    nd = 1 + seed
    shape = tuple(int(c) for c in rng.integers(1, 5, size=nd))
    x = rng.normal(size=shape).transpose(rng.permutation(nd))
    got = fo.c_order(x)
    assert got.flags.c_contiguous and got.shape == x.shape
    np.testing.assert_array_equal(got, np.array(x, order="C"))
    sliced = rng.normal(size=(6, 5))[::2].T
    np.testing.assert_array_equal(fo.c_order(sliced), np.array(sliced, order="C"))


def test_products_entry_by_entry_go_to_the_kernel():
    """A clique summed onto one target from two or more inputs over all but its first
    variable is a product entry by entry: the numba kernel walks it, whatever the width
    of a BLAS product over the other inputs; onto several targets, or with one such
    input, ``opt_einsum`` contracts it as before."""
    from mrflib.inference import _factor_ops as fo

    clique, shape = list(range(17)), [2] * 17
    big = 2**16
    hadamard = [(0,), (0, 3), tuple(clique), tuple(clique)]
    sizes = [2, 4, 2 * big, 2 * big]
    assert fo.gemm_width(sizes, hadamard, clique, shape) >= fo.EINSUM_MIN_WIDTH
    assert not fo.contracted(sizes, hadamard, clique, shape, 1)
    assert fo.contracted(sizes, hadamard, clique, shape, 2)
    assert fo.contracted(sizes[:3], hadamard[:3], clique, shape, 1)
    assert not fo.contracted(sizes[:3], hadamard[:3], clique[:4], shape[:4], 1)


def test_lifting_keeps_sums_below_the_largest_float():
    """The lift is at most ``LINEAR_SPAN - log size``, so ``size`` products each at most
    ``e^lift`` sum to at most ``e^LINEAR_SPAN``; a clique of ``e^LINEAR_SPAN`` entries or
    more is never lifted."""
    from mrflib.inference import _factor_ops as fo

    assert fo.lifted_span(1) == 2 * fo.LINEAR_SPAN
    for size in (2**10, 2**25, 2**40):
        lift = fo.lifted_span(size) - fo.LINEAR_SPAN
        assert math.log(size) + lift <= fo.LINEAR_SPAN + 1e-9 < math.log(np.finfo(float).max)
    assert fo.lifted_span(10**305) == fo.LINEAR_SPAN


@pytest.mark.parametrize("seed", range(4))
def test_clique_rows_equal_slices_of_the_clique_table(seed):
    """Back-tracking and sampling read rows ``ψ_t(·, x_{N_t})`` summed from the inputs;
    they equal the rows of the full clique table."""
    rng = np.random.default_rng(seed)
    model = random_model(rng) if seed % 2 else random_bayes_net(rng)
    jt = elimination.plan(model)
    _, msgs = jt.upward()
    x = np.stack([rng.integers(0, c, size=5) for c in model.cardinalities.tolist()], axis=1)
    for t, clique in enumerate(jt.cliques):
        table = jt.clique_table(t, msgs)
        ref = np.stack([table[(slice(None), *(row[w] for w in clique[1:]))] for row in x])
        np.testing.assert_array_equal(jt.clique_rows(t, msgs, x), ref)


@pytest.mark.parametrize("seed", range(40))
def test_dense_greedy_orders_equal_the_set_based_reference(seed):
    """The numba greedy kernel gives the set-based heap's orders (every criterion, ties to
    the smallest index, the same stops at ``limit``) on random graphs and cardinalities,
    up to 200 nodes (bit-matrix rows of up to four words)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 200))
    scopes = [tuple(int(v) for v in rng.choice(n, size=min(n, int(rng.integers(1, 4))),
                                               replace=False))
              for _ in range(int(n * rng.uniform(0.3, 1.5)) + 1)]
    adj = eo.interaction_graph(n, scopes)
    card = rng.integers(1, 6, size=n) if seed % 2 else np.full(n, 2)
    logc = np.log(card.astype(float)).tolist()
    nodes = sorted(rng.choice(n, size=max(1, n // 2), replace=False).tolist()) \
        if seed % 3 == 0 else list(range(n))
    for criterion in eo.CRITERIA:
        for limit in (math.inf, float(rng.uniform(1.0, 8.0))):
            assert eo.greedy_order(adj, logc, nodes, criterion, limit) == \
                eo.greedy_order_sets(adj, logc, nodes, criterion, limit)


def _uniform_graph(seed):
    """A random interaction graph whose variables all have one number of states."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 150))
    scopes = [tuple(int(v) for v in rng.choice(n, size=min(n, int(rng.integers(1, 4))),
                                               replace=False))
              for _ in range(int(n * rng.uniform(0.3, 1.5)) + 1)]
    logc = [math.log(int(rng.integers(2, 5)))] * n
    return rng, n, eo.interaction_graph(n, scopes), logc


@pytest.mark.parametrize("seed", range(30))
def test_compiled_order_cost_equals_order_cliques_bit_for_bit(seed):
    """With one cardinality the compiled scorer gives :func:`order_cliques`' largest
    table and total to the last bit, and the same stop at ``limit``."""
    rng, n, adj, logc = _uniform_graph(seed)
    nodes = sorted(rng.choice(n, size=max(2, n // 2), replace=False).tolist()) \
        if seed % 3 == 0 and n > 2 else list(range(n))
    cost = eo._compiled_cost(eo._dense_adjacency(adj, nodes), logc, nodes)
    for limit in (math.inf, float(rng.uniform(1.0, 8.0))):
        order = [int(v) for v in rng.permutation(nodes)]
        cliques, size, total = eo.order_cliques(adj, order, logc, limit)
        got = cost(order, limit)
        if cliques is None:
            assert got == (size, 0.0, int(total))
        else:
            assert got == (size, total, 0)


@pytest.mark.parametrize("seed", range(30))
def test_best_order_is_the_same_with_the_compiled_scorer(seed, monkeypatch):
    """The candidates scored by the compiled kernel or by :func:`order_cliques` give the
    same best order, cost, width and cliques."""
    rng, n, adj, logc = _uniform_graph(seed)
    limit = math.inf if seed % 2 else float(rng.uniform(2.0, 6.0))
    fast = eo.best_order(adj, logc, range(n), limit)
    monkeypatch.setattr(eo, "_compiled_cost", lambda *a: None)
    assert eo.best_order(adj, logc, range(n), limit) == fast


@pytest.mark.parametrize("seed", range(20))
def test_compiled_cliques_equal_order_cliques(seed):
    """The winner's cliques listed by the compiled kernels are :func:`order_cliques`'."""
    rng, n, adj, logc = _uniform_graph(seed)
    order = rng.permutation(n).tolist()
    dense = eo._dense_adjacency(adj, list(range(n)))
    assert eo._dense_cliques(dense, list(range(n)), order) == eo.order_cliques(
        adj, order, logc)[0]


@pytest.mark.parametrize("seed", range(6))
def test_repeated_components_get_the_order_their_own_search_finds(seed):
    """Copies of one network, interleaved as a grounded Markov logic network numbers them
    (variable ``j`` of copy ``c`` is ``c + copies * j``), are ordered once and relabelled:
    each copy's order is the one :func:`best_order` finds for it alone. A copy with other
    numbers of states is searched on its own."""
    rng = np.random.default_rng(seed)
    copies, k = 5, int(rng.integers(3, 12))
    scopes = [tuple(rng.choice(k, size=int(rng.integers(1, 4)), replace=False).tolist())
              for _ in range(2 * k)]
    n = copies * k
    adj = eo.interaction_graph(n, [tuple(c + copies * j for j in s)
                                   for c in range(copies) for s in scopes])
    logc = [math.log(3 if v % copies == copies - 1 else 2 + (v // copies) % 2)
            for v in range(n)]
    memo: dict = {}
    for comp in eo.components(adj, range(n)):
        got, alone = eo.best_order(adj, logc, comp, math.inf, memo), eo.best_order(
            adj, logc, comp)
        # the totals are sums over Python sets, whose order follows the numbers: equal
        # up to rounding
        assert got._replace(total_entries=0.0, log_max_table=0.0) == alone._replace(
            total_entries=0.0, log_max_table=0.0)
        assert got.total_entries == pytest.approx(alone.total_entries, rel=1e-12)
        assert got.log_max_table == pytest.approx(alone.log_max_table, rel=1e-12)
    assert len(memo) == len({tuple(logc[v] for v in comp)
                             for comp in eo.components(adj, range(n))})


def _disconnected_scopes(seed):
    """Random factors of one to four variables within separate groups of variables, the
    groups' numbers interleaved, and a last variable in no factor but its own: ``n``,
    scopes and log cardinalities (mixed, or all three states for even seeds)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 60))
    group = rng.integers(0, int(rng.integers(2, 6)), size=n - 1)
    scopes = [(n - 1,)]
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        for _ in range(int(rng.integers(1, len(members) + 2))):
            k = min(len(members), int(rng.integers(1, 5)))
            scopes.append(tuple(int(v) for v in rng.choice(members, size=k, replace=False)))
    card = rng.integers(2, 5, size=n) if seed % 2 else np.full(n, 3)
    return n, scopes, np.log(card.astype(float)).tolist()


def _eliminated(n, scopes, logc, order):
    """Width, log largest table and total entries of eliminating in ``order``, by plain
    neighbour sets (independent of :mod:`elimination_order`)."""
    nb = [set() for _ in range(n)]
    for s in scopes:
        for v in s:
            nb[v] |= set(s) - {v}
    gone, width, biggest, total = set(), -1, -math.inf, 0.0
    for v in order:
        clique = {v} | (nb[v] - gone)
        size = sum(logc[u] for u in clique)
        width, biggest, total = max(width, len(clique) - 1), max(biggest, size), \
            total + math.exp(size)
        for u in clique:
            nb[u] |= clique - {u}
        gone.add(v)
    return width, biggest, total


@pytest.mark.parametrize("seed", range(12))
def test_best_order_of_a_disconnected_model_covers_every_component(seed):
    """On several components the order is a permutation of all the variables, each
    component's best order in turn, and its width, largest table and total are those of
    eliminating in it; no table is smaller than the largest factor's."""
    n, scopes, logc = _disconnected_scopes(seed)
    adj = eo.interaction_graph(n, scopes)
    comps = eo.components(adj, range(n))
    assert len(comps) > 1
    found = eo.best_order(adj, logc, range(n))
    assert sorted(found.order) == list(range(n))
    alone = [eo.best_order(adj, logc, comp) for comp in comps]
    assert found.order == [v for a in alone for v in a.order]
    width, biggest, total = _eliminated(n, scopes, logc, found.order)
    assert found.width == width
    assert found.log_max_table == pytest.approx(biggest, rel=1e-12)
    assert found.total_entries == pytest.approx(total, rel=1e-12)
    assert found.cliques == eo.order_cliques(adj, found.order, logc)[0]
    assert found.width >= max(len(s) for s in scopes) - 1
    assert found.log_max_table >= max(sum(logc[v] for v in s) for s in scopes) - 1e-9


def test_best_order_of_a_disconnected_model_stops_where_a_component_does_not_fit():
    """A limit that one component's tables pass gives no order, with that component's
    cost; a limit that all fit gives all the variables."""
    adj = eo.interaction_graph(9, [(0, 1, 2, 3), (4,), (5, 6), (7, 8)])
    logc = [math.log(2)] * 9
    assert eo.best_order(adj, logc, range(9), 3.5 * math.log(2)) == eo.best_order(
        adj, logc, range(4), 3.5 * math.log(2))
    assert eo.best_order(adj, logc, range(9), 3.5 * math.log(2)).order is None
    assert sorted(eo.best_order(adj, logc, range(9), 4 * math.log(2)).order) == list(range(9))


def test_lattice_orders_are_found_by_every_criterion():
    """The greedy criteria order a 30x30 lattice (900 variables, the dense kernel)."""
    edges = graphs.square_grid(30, 30)
    adj = eo.interaction_graph(900, [tuple(e) for e in edges])
    logc = [math.log(2)] * 900
    for criterion in eo.CRITERIA:
        assert sorted(eo.greedy_order(adj, logc, range(900), criterion)) == list(range(900))


@pytest.mark.parametrize("call", [
    lambda m: exact.marginals(m, method="junction-tree"),
    lambda m: m.condition({0: 5}),
], ids=["marginals", "condition"])
def test_outputs_of_a_huge_variable_are_refused_before_allocating(call):
    """A variable of 10^12 states in no factor has log Z = log 10^12, but its marginal (and
    an evidence indicator) would take 8 TB: refused by size before allocating."""
    model = FactorGraph([10**12], [], [])
    assert exact.log_partition(model) == pytest.approx(12 * math.log(10))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"would need 7\.3 TiB of memory"):
            call(model)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


@pytest.mark.parametrize("seed", range(4))
def test_components_equal_scipy_labelling(seed):
    """The plain search finds scipy's connected components, in the same order (by smallest
    node, each sorted), on the nodes asked for only."""
    import scipy.sparse
    import scipy.sparse.csgraph

    rng = np.random.default_rng(seed)
    n = 40
    edges = [tuple(rng.choice(n, 2, replace=False)) for _ in range(30)]
    adj = eo.interaction_graph(n, edges)
    nodes = sorted(rng.choice(n, 30, replace=False).tolist())
    rows = [(i, j) for i, v in enumerate(nodes) for j, u in enumerate(nodes) if u in adj[v]]
    A = scipy.sparse.coo_matrix((np.ones(len(rows)), tuple(zip(*rows)) or ([], [])),
                                shape=(len(nodes), len(nodes)))
    _, labels = scipy.sparse.csgraph.connected_components(A, directed=False)
    want: dict[int, list[int]] = {}
    for v, c in zip(nodes, labels.tolist()):
        want.setdefault(c, []).append(v)
    assert eo.components(adj, nodes[::-1]) == list(want.values())
    assert eo.components(adj, []) == []


def test_magnitude_equals_the_sum_table_by_table():
    """Batched over small tables, the sum is the same float as one table at a time:
    non-finite entries left out, empty tables and a table beyond a batch included."""
    from mrflib.models import precision

    rng = np.random.default_rng(0)
    tables = [rng.standard_normal(rng.integers(1, 30, size=2)) * 10.0 ** rng.integers(-3, 4)
              for _ in range(300)]
    tables[5][0, 0], tables[7][0, 0], tables[9][:] = -np.inf, np.nan, np.inf
    tables += [np.zeros((0, 3)), np.array(-2.5), rng.standard_normal(2**17), -tables[3]]
    want = 0.0
    for t in tables:
        if t.size:
            want += float(np.max(np.abs(t), where=np.isfinite(t), initial=0.0))
    assert precision.magnitude(tables) == want
    assert precision.magnitude([]) == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_plan_keeps_the_cliques_of_its_order(seed):
    """A plan keeps the cliques its winning candidates found (one per component) instead of
    eliminating again: they must be exactly those of its whole order."""
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, n=10, n_factors=9, max_scope=3)
    jt = elimination.plan(model)
    adj = eo.interaction_graph(model.n, jt.red.scopes)
    logc = np.log(jt.red.card.astype(np.float64)).tolist()
    cliques, _, _ = eo.order_cliques(adj, jt.order, logc)
    assert jt.cliques == [tuple(c) for c in cliques]


def test_kernel_layouts_are_shared_and_read_only():
    """The remembered layouts are the same objects on every call, and nobody can write them
    (a kernel that wrote one would corrupt every later pass of every plan)."""
    from mrflib.inference import _factor_ops as fo

    tables = [np.zeros((2, 3)), np.zeros(3)]
    first = fo._inputs(tables, [(4, 7), (7,)], (7, 4), (3, 2))
    again = fo._inputs([np.ones((2, 3)), np.ones(3)], [(4, 7), (7,)], [7, 4], [3, 2])
    for a, b in zip(first[1:], again[1:]):
        assert a is b and not a.flags.writeable
    np.testing.assert_array_equal(first[2], [[1, 3], [1, 0]])
    assert not np.shares_memory(first[0], again[0])


def test_hugin_division_in_one_pass_equals_numpy():
    """The fused division (quotient and its extent in one pass) gives numpy's quotient bit
    for bit, zero where the divisor is zero, and the extent of that quotient."""
    from mrflib.inference import _elimination_kernels as ek

    rng = np.random.default_rng(3)
    a = rng.random(1000)
    b = rng.random(1000)
    b[::7] = 0.0
    a[::7] = 0.0
    a[::11] = 0.0
    want = np.zeros(1000)
    np.divide(a, b, out=want, where=b > 0.0)
    got = np.empty(1000)
    hi, lo = ek.divide_extent(a, b, got)
    assert np.array_equal(got, want)
    assert (hi, lo) == ek.extent(want) == (want.max(), want[want > 0].min())
    assert ek.divide_extent(np.zeros(3), np.zeros(3), np.empty(3)) == (0.0, np.inf)


@pytest.mark.parametrize("seed", range(6))
def test_remembered_contraction_paths_give_opt_einsums_sums_bit_for_bit(seed):
    """The contraction path is found once per scopes and shapes; the sums are those of
    ``opt_einsum.contract`` finding it at every call, to the last bit, at the first call
    and the second."""
    import opt_einsum

    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    clique = [int(v) for v in rng.permutation(12)[:6]]
    card = {v: int(rng.integers(2, 5)) for v in clique}
    shape = [card[v] for v in clique]
    tables, scopes = _clique_inputs(rng, clique, card, 3 + seed % 3, 1.0, 0.0)
    lin = [fo.scaled(t) for t in tables]
    target = tuple(clique[1:4])
    args = []
    for x, s in zip(lin, scopes):
        args += [x.values, list(s)]
    held = {v for s in scopes for v in s}
    args += [a for v, c in zip(clique, shape) if v not in held
             for a in (np.ones(c), [v])]
    want = opt_einsum.contract(*args, list(target), optimize=fo.EINSUM_PATH,
                               memory_limit=int(np.prod(shape)))
    for _ in range(2):
        np.testing.assert_array_equal(fo._contract(lin, scopes, clique, shape, target), want)


def test_observed_variables_are_read_from_unary_factors_with_one_finite_entry():
    """One state, or the first unary factor with a single finite entry, fixes a variable;
    unary factors with several finite entries, or none, do not."""
    ninf = -np.inf
    model = FactorGraph(
        [1, 3, 3, 2, 4],
        [(1,), (2,), (1,), (3,), (4,), (3, 4), (2,)],
        [np.array([ninf, 0.5, ninf]), np.array([0.0, 1.0, ninf]), np.array([2.0, ninf, ninf]),
         np.array([ninf, ninf]), np.array([ninf, ninf, ninf, 0.0]), np.zeros((2, 4)),
         np.array([ninf, ninf, 3.0])])
    obs = observed_states(model)
    assert obs == {0: 0, 1: 1, 4: 3, 2: 2} and list(obs) == [0, 1, 4, 2]
    assert observed_states(FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))])) == {}


@pytest.mark.parametrize("seed", range(30))
def test_compiled_cuthill_mckee_equals_the_set_based_sweep(seed):
    """The compiled reverse Cuthill-McKee gives :func:`_rcm`'s order (start, ties by
    number), on connected graphs and on several components (the first one's sweep)."""
    rng, n, adj, logc = _uniform_graph(seed)
    for nodes in (list(range(n)), sorted(rng.choice(n, size=max(1, n // 2),
                                                    replace=False).tolist())):
        dense = eo._dense_adjacency(adj, nodes)
        assert eo._rcm_dense(dense, nodes) == eo._rcm(adj, nodes)


@pytest.mark.parametrize("seed", range(4))
def test_marginals_renormalized_together_are_renormalized_one_by_one(seed):
    """Arrays of one short length are summed and divided together, arrays of other lengths
    one by one: the floats of ``renormalize`` on each array, bit for bit (all-zero arrays
    left as they are, nothing changed at a small ``log Z``)."""
    from mrflib.inference import _factor_ops as fo

    rng = np.random.default_rng(seed)
    ps = [rng.random(int(k)) * rng.choice([1e-300, 1.0, 1e300])
          for k in rng.integers(1, 12, size=200)]
    ps[3] = np.zeros(ps[3].size)
    for log_z in (2.0 * fo.RENORMALIZE_LOG_Z, -3.0 * fo.RENORMALIZE_LOG_Z):
        want = [fo.renormalize(p.copy(), log_z) for p in ps]
        got = fo.renormalize_all([p.copy() for p in ps], log_z)
        for a, b in zip(got, want):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    same = fo.renormalize_all(ps, 0.5 * fo.RENORMALIZE_LOG_Z)
    assert all(a is b for a, b in zip(same, ps))


def test_factor_tables_put_reduced_beliefs_at_the_observed_values():
    """Elimination's factor marginals and loopy BP's factor beliefs come out of one
    expansion (``Reduced.factor_tables``): a point mass on the observed axes, the reduced
    factor's belief at the observed values; on a chain with evidence the two agree (BP is
    exact on a tree)."""
    from mrflib.inference.approx.lbp import loopy_bp

    rng = np.random.default_rng(3)
    card = [2, 3, 2, 3]
    scopes = [(0, 1), (1, 2), (2, 3), (3,)]
    tables = [rng.normal(size=(card[a], card[b])) for a, b in scopes[:3]] + [rng.normal(size=3)]
    observed = np.array([-np.inf, -np.inf, 0.0])  # variable 1 observed at 2
    model = FactorGraph(card, scopes + [(1,)], tables + [observed])
    red = Reduced(model, barren=False)
    empty = red.factor_tables(model, [])
    assert [t.shape for t in empty] == [t.shape for t in model.log_tables]
    assert empty[0][:, 2].tolist() == [1.0, 1.0] and empty[0].sum() == 2.0
    assert empty[2].sum() == 6.0  # no observed axis: ones until a belief is placed
    exact_tables = elimination.factor_marginals(model)
    bp_tables = loopy_bp(model, factor_beliefs=True).factor_beliefs
    for a, b in zip(exact_tables, bp_tables):
        np.testing.assert_allclose(a, b, atol=1e-9)
        assert a.shape == b.shape
