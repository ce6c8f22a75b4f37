"""SMCI on factor graphs against enumeration: every path, unbiasedness, consistency, and
the GSMCI paper's Theorem 2 (the variance falls with the sum region, plain MC's highest)."""

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import approx, exact
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import _region_sums as region_sums
from mrflib.inference.smci import regions as sf
from mrflib.models import lattices as factor_models

ORDERS = (0, 1, 2, 3)


def _models():
    """Random small factor graphs (cardinalities 1-5, scopes 1-4, zeros, evidence) and a
    Potts lattice."""
    out = [random_factor_graph(np.random.default_rng(s), n=6, n_factors=5, scale=0.8,
                               evidence=s % 2) for s in range(4)]
    return out + [factor_models.potts_lattice(2, 3, 3, coupling=0.6, rng=1)]


MODELS = _models()


@pytest.mark.parametrize("model", MODELS)
def test_region_paths_agree(model):
    """The batched einsum, the dense log table and the exact engine per boundary give the
    same conditionals, and the 1-SMCI kernels the same sums as the generic path."""
    x = exact.sample(model, 12, rng=0)
    vf = model.variable_factors()
    for order in (1, 2):
        for target in [(i,) for i in range(model.n)] + [s for s in model.scopes if s]:
            region, boundary, factors = sf.sum_region(model, target, sf.method_name(order), vf)
            dense = region_sums.dense_rho(model, x, region, factors, len(target))
            plan = region_sums.einsum_plan(model, region, factors, len(target))
            if plan is not None:
                np.testing.assert_allclose(
                    region_sums.einsum_rho(model, x, region, factors, len(target), plan), dense,
                    atol=1e-12)
            np.testing.assert_allclose(  # the slowest path: a few rows
                region_sums.exact_rho(model, x[:4], region, boundary, factors, len(target)),
                dense[:4], atol=1e-12)
    generic = [sf._rho(model, x, (i,), 1, vf).mean(axis=0) for i in range(model.n)]
    for a, b in zip(generic, sf.marginals(model, x, method="1-smci")):  # the variables' kernel
        np.testing.assert_allclose(a, b, atol=1e-12)
    generic = [sf._rho(model, x, s, 1, vf).mean(axis=0) for s in model.scopes]
    for a, b in zip(generic, sf.factor_marginals(model, x, method="1-smci")):  # the scopes' kernel
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_sum_regions_follow_the_paper():
    """Figure 3 (a) of the GSMCI paper on a 5x5 grid (nodes 1..25 there, 0..24 here)."""
    model = factor_models.potts_lattice(5, 5, 2, rng=0)
    region, boundary, _ = sf.sum_region(model, (12,), "1-smci")
    assert region == (12,) and boundary == (7, 11, 13, 17)
    region, boundary, _ = sf.sum_region(model, (12,), "2-smci")
    assert region == (12, 7, 11, 13, 17)
    assert boundary == (2, 6, 8, 10, 14, 16, 18, 22)
    assert sf.sum_region(model, (11, 12), "1-smci")[1] == (6, 7, 10, 13, 16, 17)  # Figure 3 (b)


@pytest.mark.parametrize("model", MODELS)
def test_theorem_2_variance_ordering(model):
    """The exact per-sample variances (eq. (12)) fall with the order, for every probability
    of every variable and factor scope, plain Monte Carlo (order 0) the largest."""
    for targets in ("variables", "factors"):
        var = [sf.asymptotic_variance(model, method=sf.method_name(k), targets=targets)
               for k in ORDERS]
        for lo, hi in zip(var[1:], var[:-1]):
            for a, b in zip(lo, hi):
                assert np.all(a <= b + 1e-12)
        p = exact.marginals(model) if targets == "variables" else exact.factor_marginals(model)
        for a, q in zip(var[0], p):
            np.testing.assert_allclose(a, q * (1 - q), atol=1e-12)


@pytest.mark.parametrize("model", MODELS[::2])
def test_unbiased_on_exact_samples_with_the_predicted_variance(model):
    """Over many independent sets of M exact samples the mean estimate is the exact factor
    marginal and the spread is eq. (12)'s variance over M. (The estimate of a set is the
    mean of its rows' terms ρ, eq. (13): they are computed once for all sets.)"""
    M, R = 20, 200
    x = exact.sample(model, M * R, rng=7)
    vf = model.variable_factors()
    truth = exact.factor_marginals(model)
    for k in (0, 1, 2):
        var = sf.asymptotic_variance(model, method=sf.method_name(k), targets="factors")
        for target, p, v in zip(model.scopes, truth, var):
            rho = sf._rho(model, x, target, k, vf).reshape((R, M) + p.shape)
            sets = rho.mean(axis=1)
            assert np.all(np.abs(sets.mean(axis=0) - p) <= 5 * np.sqrt(v / M / R) + 1e-12)
            if v.sum() > 1e-3:
                assert 0.6 < sets.var(axis=0).sum() / (v.sum() / M) < 1.6
    first = sf.factor_marginals(model, x[:M], method="2-smci")
    for target, e in zip(model.scopes, first):
        np.testing.assert_allclose(e, sf._rho(model, x[:M], target, 2, vf).mean(axis=0))


def test_consistent_error_falls_as_one_over_root_n():
    model = MODELS[4]
    truth = exact.marginals(model)
    for k in (1, 2):
        err = {}
        for M in (100, 6400):
            e = [np.mean([np.abs(a - b).sum() for a, b in
                          zip(sf.marginals(model, exact.sample(model, M, rng=r),
                                           method=sf.method_name(k)),
                              truth)]) for r in range(6)]
            err[M] = np.mean(e)
        assert 4 < err[100] / err[6400] < 16  # sqrt(64) = 8


def test_standard_errors_and_gibbs_samples_with_evidence():
    model = factor_models.potts_lattice(3, 3, 3, coupling=0.6, rng=4)
    ev = {2: 1}
    res = sf.smci_marginals(model, method="2-smci", n_samples=4000, burn_in=10, n_chains=100,
                            evidence=ev, rng=3)
    truth = exact.marginals(model.condition(ev))
    assert res["n_samples"] == 4000
    np.testing.assert_array_equal(res["marginals"][2], [0.0, 1.0, 0.0])
    for p, m, s in zip(truth, res["marginals"], res["standard_errors"]):
        assert np.all(np.abs(p - m) <= 5 * s + 1e-9)
    x = factor_gibbs.gibbs(model, 400, burn_in=10, n_chains=40, rng=0)
    est = sf.estimate(model, x, method="1-smci", targets="factors", n_chains=40)
    assert [e.shape for e in est.values] == [t.shape for t in model.log_tables]
    assert all(np.all(s >= 0) for s in est.standard_errors)


def test_bad_input_is_refused():
    model = MODELS[4]
    x = exact.sample(model, 5, rng=0)
    with pytest.raises(ValueError, match="method"):
        sf.marginals(model, x, method="-1-smci")
    with pytest.raises(ValueError, match="targets"):
        sf.estimate(model, x, targets="edges")
    with pytest.raises(ValueError, match="samples"):
        sf.marginals(model, x[:, :3])
    with pytest.raises(TypeError, match="model"):
        sf.marginals(None, x)
    hard = factor_models.potts_lattice(2, 2, 2, rng=0).condition({0: 1})
    bad = np.zeros((3, 4), dtype=np.int64)  # x_0 = 0 contradicts the evidence
    for order in (1, 2):
        with pytest.raises(ValueError, match=r"samples\[0\] has zero weight"):
            sf.factor_marginals(hard, bad, method=sf.method_name(order))
    with pytest.raises(ValueError, match=r"samples\[0\] has zero weight"):
        sf.marginals(hard, bad, method="1-smci")


def test_the_kernels_name_a_row_of_zero_weight_themselves():
    """``estimate`` refuses rows of zero weight before the kernels run; the kernels keep a
    guard of their own (a row where some conditional has no state of positive weight) for
    callers that pass rows unchecked, and name the first such row."""
    from mrflib.models.factor_graph import FactorGraph

    ninf = -np.inf
    model = FactorGraph([2, 2], [(0, 1), (1,)], [np.array([[ninf, ninf], [0.0, 0.3]]),
                                                 np.array([0.0, 0.2])])
    x = np.array([[1, 0], [0, 1], [0, 0]], dtype=np.int64)  # x_0 = 0 leaves x_1 no state
    batch, counts = sf._batches(len(x), None)
    flat = factor_gibbs.flat_tables(model)
    with pytest.raises(ValueError, match=r"samples\[1\] has zero weight"):
        sf._variables_order_one(model, x, batch, counts, flat)
    with pytest.raises(ValueError, match=r"samples\[1\] has zero weight"):
        sf._scope_sums(flat, x, batch, counts, sf.scope_plan(model))


def test_time_limit_bounds_the_region_sums_and_says_so():
    """Under a time limit, order-2 sums run over the samples that fit in the time left (whole
    sweeps), or fall back to order 1, and the result says which; no limit: order 2 on all."""
    from mrflib.models.lattices import potts_lattice

    model = potts_lattice(4, 4, 3, rng=2)
    full = approx.marginals(model, "smci", estimator="2-smci", n_samples=200, n_chains=10, rng=1)
    assert full.details["order"] == 2 and full.n_samples == 200 and full.converged
    roomy = approx.marginals(model, "smci", estimator="2-smci", n_samples=200, n_chains=10, rng=1,
                             time_limit=1000.0)
    assert roomy.details["order"] == 2 and roomy.n_samples == 200
    tight = approx.marginals(model, "smci", estimator="2-smci", n_samples=200, n_chains=10, rng=1,
                             time_limit=1e-6)
    assert tight.details["order"] == 1 and not tight.converged
    assert all(abs(p.sum() - 1) < 1e-12 for p in tight.marginals)


@pytest.mark.parametrize("model", MODELS)
def test_a_scope_plan_reused_with_new_tables_gives_the_same_bits(model):
    """A plan built once for a structure serves models of the same structure with other
    tables (a learner's steps): the same estimates, bit for bit, as a plan built per call."""
    x = factor_gibbs.gibbs(model, 40, burn_in=5, rng=0)
    plan = sf.scope_plan(model)
    rng = np.random.default_rng(1)
    other = type(model)(model.cardinalities, model.scopes,
                        [np.where(np.isfinite(t), t + rng.normal(0, 0.3, t.shape), t)
                         for t in model.log_tables])
    for m in (model, other):
        fresh = sf.estimate(m, x, targets="factors")
        reused = sf.estimate(m, x, targets="factors", plan=plan)
        for a, b in zip(fresh.values + fresh.standard_errors,
                        reused.values + reused.standard_errors):
            assert np.array_equal(a, b, equal_nan=True)


def test_a_plan_of_another_structure_is_refused():
    a, b = MODELS[4], factor_models.potts_lattice(2, 2, 3, rng=0)
    x = exact.sample(a, 5, rng=0)
    with pytest.raises(ValueError, match="plan must be made for the model's structure"):
        sf.factor_marginals(a, x, plan=sf.scope_plan(b))
    with pytest.raises(ValueError, match="plan must be a ScopePlan"):
        sf.factor_marginals(a, x, plan="plan")


def test_the_estimator_is_spelled_by_name_and_order_warns():
    """One spelling of SMCI's estimator: ``"mci"`` or ``"k-smci"``; the old ``order=k``
    still works for one release, with a warning naming the new call, and the same bits."""
    model = MODELS[4]
    x = exact.sample(model, 5, rng=0)
    assert [sf.order_of(m) for m in ("mci", "1-smci", "2-smci")] == [0, 1, 2]
    assert sf.method_name(0) == "mci" and sf.method_name(3) == "3-smci"
    with pytest.warns(FutureWarning, match='marginals\\(method="2-smci"\\)'):
        old = sf.marginals(model, x, order=2)
    new = sf.marginals(model, x, method="2-smci")
    assert all(np.array_equal(a, b) for a, b in zip(old, new))
    with pytest.raises(ValueError, match="method must be 'mci' or 'k-smci'"):
        sf.marginals(model, x, method="smci")
    with pytest.warns(FutureWarning, match='estimator="2-smci"'):
        approx.marginals(model, "smci", order=2, n_samples=20, n_chains=4, rng=1)
