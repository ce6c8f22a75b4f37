"""Weighted mini-bucket elimination against brute-force enumeration."""

import math

import numpy as np
import pytest

from mrflib import BoltzmannMachine, FactorGraph, graphs
from mrflib.inference.approx import _wmb_kernels as kernels
from mrflib.inference.approx.wmb import WMBResult, elimination_order, weighted_mini_bucket
from mrflib.inference.exact import enumeration as fe


def random_model(rng):
    """Cardinalities 1-5, scopes of 1-4 variables, zero weights, evidence on some."""
    n = int(rng.integers(2, 8))
    card = rng.integers(1, 6, size=n)
    while math.prod(card.tolist()) > 20_000:
        card = np.maximum(1, card - 1)
    scopes, tables = [], []
    for _ in range(int(rng.integers(1, 10))):
        k = int(rng.integers(1, min(4, n) + 1))
        s = tuple(rng.choice(n, size=k, replace=False).tolist())
        t = rng.normal(scale=1.5, size=tuple(int(card[v]) for v in s))
        t[rng.random(t.shape) < 0.2] = -np.inf
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    if rng.random() < 0.3:
        v = int(rng.integers(n))
        model = model.condition({v: int(rng.integers(card[v]))})
    return model


def _models(count, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        m = random_model(rng)
        if fe.log_partition(m) > -math.inf:
            out.append(m)
    return out


MODELS = _models(200)


@pytest.mark.parametrize("chunk", range(4))
def test_upper_bound_on_random_factor_graphs(chunk):
    for model in MODELS[chunk::4]:
        log_z = fe.log_partition(model)
        for ibound in (1, 2, 3):
            res = weighted_mini_bucket(model, ibound=ibound, max_iter=5)
            assert res.log_upper >= log_z - 1e-9 * (1 + abs(log_z))
            for p, c in zip(res.marginals, model.cardinalities):
                assert p.shape == (c,) and np.all(p >= 0) and abs(p.sum() - 1) < 1e-9


@pytest.mark.parametrize("chunk", range(2))
def test_exact_when_the_ibound_covers_the_width(chunk):
    for model in MODELS[chunk::2]:
        res = weighted_mini_bucket(model, ibound=model.n)
        assert res.iterations == 1
        assert res.log_upper == pytest.approx(fe.log_partition(model), abs=1e-9)
        for p, q in zip(res.marginals, fe.marginals(model)):
            np.testing.assert_allclose(p, q, atol=1e-9)


def test_beliefs_exact_on_trees():
    rng = np.random.default_rng(3)
    for _ in range(10):
        n = 12
        card = rng.integers(2, 5, size=n)
        edges = [(int(rng.integers(v)), v) for v in range(1, n)]
        scopes = [(v,) for v in range(n)] + edges
        tables = [rng.normal(size=tuple(int(card[u]) for u in s)) for s in scopes]
        tables[3][0] = -np.inf
        model = FactorGraph(card, scopes, tables)
        res = weighted_mini_bucket(model, ibound=2)
        assert res.ibound <= 2
        assert res.log_upper == pytest.approx(fe.log_partition(model), abs=1e-9)
        for p, q in zip(res.marginals, fe.marginals(model)):
            np.testing.assert_allclose(p, q, atol=1e-9)


def test_bound_tightens_with_the_ibound_and_iterations():
    rng = np.random.default_rng(1)
    edges = graphs.square_grid(4, 4)
    bm = BoltzmannMachine(rng.normal(size=16) * 0.3, edges, rng.normal(size=len(edges)))
    log_z = fe.log_partition(FactorGraph.from_boltzmann(bm))
    one = weighted_mini_bucket(bm, ibound=2, max_iter=1)
    many = weighted_mini_bucket(bm, ibound=2, max_iter=30)
    wide = weighted_mini_bucket(bm, ibound=5, max_iter=30)
    assert log_z <= wide.log_upper <= many.log_upper <= one.log_upper
    assert isinstance(one, WMBResult) and one.ibound == 2


def test_memory_chooses_the_ibound():
    model = MODELS[5]
    small = weighted_mini_bucket(model, memory=8 * 5)
    big = weighted_mini_bucket(model)
    assert small.ibound <= big.ibound
    assert small.log_upper >= fe.log_partition(model) - 1e-9


def test_zero_partition_function_is_refused():
    model = FactorGraph([2, 2], [(0, 1)], [np.full((2, 2), -np.inf)])
    with pytest.raises(ValueError, match="Z = 0"):
        weighted_mini_bucket(model, ibound=1)


@pytest.mark.parametrize("bad", [{"ibound": 0}, {"max_iter": 0}, {"time_limit": -1.0},
                                 {"memory": 0}, {"ibound": 1.5}])
def test_bad_options(bad):
    with pytest.raises(ValueError):
        weighted_mini_bucket(MODELS[0], **bad)


def test_kernels_against_numpy():
    rng = np.random.default_rng(7)
    for _ in range(50):
        shape = tuple(rng.integers(1, 5, size=int(rng.integers(1, 4))).tolist())
        a = rng.normal(scale=3, size=shape)
        a[rng.random(shape) < 0.3] = -np.inf
        w = float(rng.uniform(0.05, 1.0))
        np.testing.assert_allclose(kernels.power_lse(a, w), kernels.power_lse_numpy(a, w),
                                   rtol=1e-12, atol=1e-12)
        assert kernels.conditional_entropy(a) == pytest.approx(
            kernels.conditional_entropy_numpy(a), rel=1e-12, abs=1e-12)


def test_deadline_abandons_a_pass():
    with pytest.raises(TimeoutError):
        weighted_mini_bucket(MODELS[0], ibound=1, deadline=1e-12)
    res = weighted_mini_bucket(MODELS[0], ibound=1, deadline=600.0)
    assert res.iterations >= 1


def test_elimination_order_is_reusable():
    model = MODELS[7]
    order, log_max, total = elimination_order(model)
    assert total >= 1 and log_max >= 0
    a = weighted_mini_bucket(model, ibound=2, order=order)
    b = weighted_mini_bucket(model, ibound=2)
    assert a.log_upper == b.log_upper
    with pytest.raises(ValueError, match="order"):
        weighted_mini_bucket(model, ibound=2, order=order[:-1] if order else [0, 0])


@pytest.mark.parametrize("bad", [{"ibound": 0}, {"ibound": 1.5}, {"memory": -1.0},
                                 {"memory": "8"}, {"seconds": -1.0}])
def test_one_budget_check_for_the_mini_bucket_methods(bad):
    """wmb, max mini-bucket and the importance proposal refuse a bad i-bound, memory or
    time through one check, which names the argument as the caller spells it."""
    from mrflib.inference.approx import importance, max_mini_bucket, wmb

    model = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))])
    args = {"ibound": None, "memory": None, "seconds": None, **bad}
    name = next(iter(bad)) if "seconds" not in bad else "time_limit"
    with pytest.raises(ValueError, match=name):
        wmb.check_budget(args["ibound"], args["memory"], args["seconds"])
    calls = [(weighted_mini_bucket, "time_limit"), (importance.wmb_proposal, "time_limit"),
             (max_mini_bucket.max_mini_bucket, "deadline")]
    for fn, seconds in calls:
        kw = {n: v for n, v in bad.items() if n != "seconds"}
        if "seconds" in bad:
            kw[seconds] = bad["seconds"]
        with pytest.raises(ValueError, match=next(iter(kw))):
            fn(model, **kw)
    wmb.check_budget(None, None, None)
    wmb.check_budget(2, 1e6, 0.0)
