"""Approximate inference on factor graphs (loopy BP, mean field, the approx front) against
brute-force enumeration and exact inference."""

import dataclasses
import math
import warnings

import numpy as np
import pytest

from mrflib import BoltzmannMachine, FactorGraph, approx, exact
from mrflib.inference.approx import lbp, mean_field
from mrflib.inference.approx.result import ApproxResult
from mrflib.models import lattices as factor_models

TOL = 1e-10


def random_model(rng, n=None, n_factors=None, zeros=0.25, max_card=5, max_scope=4,
                 evidence=0.3):
    """Cardinalities 1-5, scopes of 1-4 variables, zeros, and evidence on a variable."""
    n = int(rng.integers(1, 7)) if n is None else n
    n_factors = int(rng.integers(1, 8)) if n_factors is None else n_factors
    card = rng.integers(1, max_card + 1, n)
    scopes, tables = [], []
    for _ in range(n_factors):
        k = int(rng.integers(1, min(max_scope, n) + 1))
        s = tuple(rng.choice(n, size=k, replace=False).tolist())
        t = rng.normal(scale=1.5, size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < zeros] = -np.inf
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    if rng.random() < evidence:
        v = int(rng.integers(n))
        model = model.condition({v: int(rng.integers(card[v]))})
    return model


def random_tree(rng, n, zeros=0.2, evidence=0.5):
    """A factor graph whose factor-variable graph is a tree: each factor joins one placed
    variable to 1-3 new ones; unary factors anywhere."""
    card = rng.integers(1, 5, n)
    scopes, placed, rest = [], [0], list(range(1, n))
    while rest:
        m = min(len(rest), int(rng.integers(1, 4)))
        scopes.append((int(rng.choice(placed)), *rest[:m]))
        placed += rest[:m]
        rest = rest[m:]
    scopes += [(int(v),) for v in rng.choice(n, 3)]
    tables = []
    for s in scopes:
        t = rng.normal(size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < zeros] = -np.inf
        t.flat[int(rng.integers(t.size))] = 0.0  # never an all-zero table
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    if rng.random() < evidence:
        v = int(rng.integers(n))
        model = model.condition({v: int(rng.integers(card[v]))})
    return model


def exact_or_none(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        logz = exact.log_partition(model)
    return None if logz == -np.inf else (logz, exact.marginals(model))


def max_error(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def same_bits(a, b):
    """Two results with the same marginals, bit for bit, and the same other fields."""
    da, db = dataclasses.asdict(a), dataclasses.asdict(b)
    ma, mb = da.pop("marginals"), db.pop("marginals")
    for key in ("seconds", "details", "factor_beliefs"):
        da.pop(key, None)
        db.pop(key, None)
    return da == db and all(np.array_equal(x, y) for x, y in zip(ma, mb))


def chain(rng, n=8, q=3):
    scopes = [(i,) for i in range(n)] + [(i, i + 1) for i in range(n - 1)]
    tables = [rng.normal(size=q) for _ in range(n)] + [rng.normal(size=(q, q))
                                                        for _ in range(n - 1)]
    return FactorGraph(np.full(n, q), scopes, tables)


# --------------------------------------------------------------------------- loopy BP
def test_lbp_exact_on_a_chain():
    model = chain(np.random.default_rng(0))
    r = lbp.loopy_bp(model, tol=1e-14)
    assert r.converged
    assert max_error(r.marginals, exact.marginals(model)) < TOL
    assert r.log_partition == pytest.approx(exact.log_partition(model), abs=TOL)


@pytest.mark.parametrize("seed", range(60))
def test_lbp_exact_on_trees_with_zeros_and_evidence(seed):
    rng = np.random.default_rng(seed)
    model = random_tree(rng, int(rng.integers(2, 10)))
    truth = exact_or_none(model)
    if truth is None:
        with pytest.raises(ValueError, match="Z = 0"):
            lbp.loopy_bp(model)
        return
    r = lbp.loopy_bp(model, tol=1e-14, factor_beliefs=True)
    assert r.converged
    assert max_error(r.marginals, truth[1]) < TOL
    assert r.log_partition == pytest.approx(truth[0], abs=TOL)
    assert max_error(r.factor_beliefs, exact.factor_marginals(model)) < TOL


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("damping", [0.0, 0.3])
def test_lbp_kernels_match_the_numpy_reference(seed, damping):
    rng = np.random.default_rng(100 + seed)
    model = random_model(rng, n=5, n_factors=6, zeros=0.1)
    try:
        a = lbp.loopy_bp(model, damping=damping, max_iter=30, factor_beliefs=True)
    except ValueError:
        with pytest.raises(ValueError):
            lbp.loopy_bp_numpy(model, damping=damping, max_iter=30)
        return
    b = lbp.loopy_bp_numpy(model, damping=damping, max_iter=30, factor_beliefs=True)
    assert a.iterations == b.iterations and a.converged == b.converged
    assert max_error(a.marginals, b.marginals) < 1e-12
    assert max_error(a.factor_beliefs, b.factor_beliefs) < 1e-12
    assert a.log_partition == pytest.approx(b.log_partition, abs=1e-10)


def test_lbp_marginals_are_normalized_and_respect_zeros():
    rng = np.random.default_rng(7)
    for _ in range(40):
        model = random_model(rng)
        try:
            r = lbp.loopy_bp(model, max_iter=50)
        except ValueError:
            continue
        truth = exact_or_none(model)
        assert truth is not None  # LBP's messages exclude a value only when it is impossible
        for m, e in zip(r.marginals, truth[1]):
            assert np.all(np.isfinite(m)) and m.sum() == pytest.approx(1.0, abs=1e-12)
            assert np.all(e[m == 0] == 0)  # a possible value is never excluded
        assert math.isfinite(r.log_partition)


def test_lbp_zero_partition_function_is_refused():
    model = FactorGraph([2, 2], [(0, 1), (0,), (1,)],
                        [np.array([[0.0, -np.inf], [-np.inf, 0.0]]),
                         np.array([0.0, -np.inf]), np.array([-np.inf, 0.0])])
    with pytest.raises(ValueError, match="Z = 0"):
        lbp.loopy_bp(model)


def test_lbp_options_are_checked():
    model = chain(np.random.default_rng(1), n=3)
    for kwargs, what in [({"damping": 1.0}, "damping"), ({"damping": -0.1}, "damping"),
                         ({"max_iter": 0}, "max_iter"), ({"tol": -1.0}, "tol"),
                         ({"time_limit": -1.0}, "time_limit")]:
        with pytest.raises(ValueError, match=what):
            lbp.loopy_bp(model, **kwargs)
    r = lbp.loopy_bp(factor_models.potts_lattice(6, 6, 3, rng=0), time_limit=0.0)
    assert r.iterations == 1  # a time limit still gives one sweep's answer


def test_lbp_on_a_loopy_model_is_close_and_deterministic():
    model = factor_models.potts_lattice(4, 4, 3, coupling=0.3, rng=0)
    a, b = lbp.loopy_bp(model), lbp.loopy_bp(model)
    assert same_bits(a, b)
    assert max_error(a.marginals, exact.marginals(model)) < 0.05
    assert a.log_partition == pytest.approx(exact.log_partition(model), abs=0.5)


# --------------------------------------------------------------------------- mean field
def test_mean_field_is_a_lower_bound_on_200_random_models():
    rng = np.random.default_rng(2026)
    checked = 0
    for _ in range(200):
        model = random_model(rng)
        truth = exact_or_none(model)
        if truth is None:
            try:
                r = mean_field.mean_field(model)
            except ValueError:
                continue
            assert r.lower_bound == -np.inf
            continue
        r = mean_field.mean_field(model)
        assert r.lower_bound <= truth[0] + 1e-9
        # a point mass on a state of positive weight is found on these small models
        assert r.lower_bound > -np.inf
        for m in r.marginals:
            assert np.all(np.isfinite(m)) and m.sum() == pytest.approx(1.0, abs=1e-12)
        checked += 1
    assert checked > 100


def test_mean_field_is_exact_without_interactions():
    rng = np.random.default_rng(3)
    card = [1, 2, 3, 5]
    model = FactorGraph(card, [(i,) for i in range(4)], [rng.normal(size=c) for c in card])
    r = mean_field.mean_field(model)
    assert r.lower_bound == pytest.approx(exact.log_partition(model), abs=1e-12)
    assert max_error(r.marginals, exact.marginals(model)) < 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_mean_field_kernels_match_the_numpy_reference(seed):
    model = random_model(np.random.default_rng(300 + seed), n=5, n_factors=6, zeros=0.1)
    try:
        a = mean_field.mean_field(model, max_iter=40)
    except ValueError:
        return
    b = mean_field.mean_field_numpy(model, max_iter=40)
    assert (a.iterations, a.start, a.converged) == (b.iterations, b.start, b.converged)
    assert max_error(a.marginals, b.marginals) < 1e-12
    assert a.lower_bound == pytest.approx(b.lower_bound, abs=1e-10) or (
        a.lower_bound == b.lower_bound == -np.inf)


def test_mean_field_starts_from_a_feasible_state_when_uniform_is_infeasible():
    # x0 == x1 is forced: a uniform q puts mass on x0 != x1 (bound -inf), a point mass not
    eq = np.where(np.eye(3) > 0, 0.0, -np.inf)
    model = FactorGraph([3, 3], [(0, 1), (0,)], [eq, np.array([0.0, 1.0, 2.0])])
    r = mean_field.mean_field(model)
    assert r.start == "feasible" and math.isfinite(r.lower_bound)
    assert r.lower_bound <= exact.log_partition(model) + 1e-12


def xor_model(n=90, m=60, seed=0) -> FactorGraph:
    """Parity constraints (tables 0 / -inf) on random triples of binary variables, with a
    planted solution, and random unary weights: satisfiable, and every state that breaks a
    constraint has zero weight."""
    rng = np.random.default_rng(seed)
    planted = rng.integers(0, 2, n)
    odd = np.indices((2, 2, 2)).sum(axis=0) % 2
    scopes = [(v,) for v in range(n)]
    tables = [rng.normal(size=2) for _ in range(n)]
    for _ in range(m):
        s = tuple(sorted(rng.choice(n, 3, replace=False).tolist()))
        scopes.append(s)
        tables.append(np.where(odd == planted[list(s)].sum() % 2, 0.0, -np.inf))
    return FactorGraph(np.full(n, 2), scopes, tables)


@pytest.mark.parametrize("seed", range(3))
def test_mean_field_feasible_start_searches_under_the_time_limit(monkeypatch, seed):
    """On a satisfiable XOR model the start of positive weight is found by a search under
    the call's limit, with no elimination-order search."""
    from mrflib.inference.exact import elimination

    def no_plan(*args, **kwargs):
        raise AssertionError("an elimination plan was searched")

    monkeypatch.setattr(elimination, "plan", no_plan)
    r = mean_field.mean_field(xor_model(seed=seed), time_limit=0.5)
    assert r.start == "feasible" and math.isfinite(r.lower_bound)


def test_mean_field_init_is_checked():
    model = chain(np.random.default_rng(4), n=3)
    with pytest.raises(ValueError, match="init"):
        mean_field.mean_field(model, init=[np.ones(3)])
    with pytest.raises(ValueError, match=r"init\[1\]"):
        mean_field.mean_field(model, init=[np.ones(3), -np.ones(3), np.ones(3)])
    r = mean_field.mean_field(model, init=[np.ones(3)] * 3)
    assert r.start == "init" and r.lower_bound <= exact.log_partition(model) + 1e-12


# --------------------------------------------------------------------------- the front
def small_bm():
    rng = np.random.default_rng(5)
    edges = [(0, 1), (0, 2), (0, 3), (1, 2), (2, 3)]
    return BoltzmannMachine(rng.normal(size=4), edges,
                            coupling=rng.normal(size=len(edges)))


@pytest.mark.parametrize("method", ["lbp", "mean-field", "exact", "auto"])
def test_boltzmann_machine_is_its_factor_graph(method):
    bm = small_bm()
    a = approx.marginals(bm, method)
    b = approx.marginals(FactorGraph.from_boltzmann(bm), method)
    assert a.method == b.method
    assert max_error(a.marginals, b.marginals) == 0.0
    assert a.log_partition == b.log_partition


def test_auto_is_exact_on_small_models():
    rng = np.random.default_rng(6)
    for _ in range(10):
        model = random_model(rng, evidence=0.0, zeros=0.0)
        r = approx.marginals(model)
        assert r.method == "exact" and r.converged
        assert max_error(r.marginals, exact.marginals(model)) == 0.0
        assert r.log_partition == exact.log_partition(model)
        assert [t["step"] for t in r.details["tried"]] == ["plan", "exact"]


def test_auto_falls_back_to_lbp(monkeypatch):
    monkeypatch.setattr(approx, "_exact_fits", lambda model, clock: (False, "too wide"))
    model = factor_models.potts_lattice(5, 5, 3, coupling=0.2, rng=0)
    r = approx.marginals(model, time_limit=30.0)
    assert r.method == "lbp" and r.converged
    assert same_bits(r, approx.marginals(model, time_limit=30.0))
    assert max_error(r.marginals, exact.marginals(model)) < 0.05


def test_front_methods_and_log_partition():
    model = factor_models.potts_lattice(3, 4, 2, rng=0)
    z = exact.log_partition(model)
    assert approx.log_partition(model, "exact") == pytest.approx(z, abs=1e-12)
    assert approx.log_partition(model, "mean-field") <= z + 1e-12
    assert approx.log_partition(model, "lbp") == pytest.approx(z, abs=0.2)
    r = approx.marginals(model, "lbp", damping=0.5, max_iter=500)
    assert isinstance(r, ApproxResult) and r.converged and r.seconds >= 0
    assert r.n_samples is None and r.standard_errors is None and r.iterations >= 1


def test_log_partition_bounds_contain_the_truth(monkeypatch):
    rng = np.random.default_rng(8)
    models = [random_model(rng, n=5, n_factors=6, evidence=0.5) for _ in range(15)]
    for model in models:
        lo, hi = approx.log_partition_bounds(model)
        truth = exact_or_none(model)
        z = -np.inf if truth is None else truth[0]
        assert lo == hi == pytest.approx(z, abs=1e-12) or lo == hi == z
    monkeypatch.setattr(approx, "_exact_fits", lambda model, clock: (False, "too wide"))
    for model in models:
        truth = exact_or_none(model)
        lo, hi = approx.log_partition_bounds(model)
        if truth is None:
            assert lo == -np.inf
            continue
        assert lo <= truth[0] + 1e-9 <= hi + 2e-9


def test_bad_arguments_name_what_is_wrong(monkeypatch):
    model = chain(np.random.default_rng(9), n=3)
    with pytest.raises(ValueError, match="method must be one of"):
        approx.marginals(model, "belief-propagation")
    with pytest.raises(ValueError, match=r"does not take the option\(s\) \['foo'\]"):
        approx.marginals(model, "lbp", foo=1)
    with pytest.raises(ValueError, match="does not take"):
        approx.marginals(model, "auto", damping=0.5)
    with pytest.raises(ValueError, match="time_limit"):
        approx.marginals(model, "lbp", time_limit=-1)
    with pytest.raises(TypeError, match="model must be a BoltzmannMachine"):
        approx.marginals("model", "lbp")

    def no_logz(model, *, time_limit, rng):
        return ApproxResult(exact.marginals(model), "no-logz", 0.0, True)

    monkeypatch.setitem(approx.METHODS, "no-logz", no_logz)
    assert "no-logz" in approx.available()
    with pytest.raises(ValueError, match="gives no estimate of log Z"):
        approx.log_partition(model, "no-logz")


def test_same_call_same_bits():
    model = random_model(np.random.default_rng(10), n=6, n_factors=8, zeros=0.1,
                         evidence=0.0)
    for method in ("lbp", "mean-field"):
        assert same_bits(approx.marginals(model, method), approx.marginals(model, method))
