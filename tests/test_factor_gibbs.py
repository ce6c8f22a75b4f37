"""The factor-graph Gibbs sampler against its numpy reference and against enumeration."""

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import FactorGraph, exact
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.models import lattices as factor_models


def _weights(model, x):
    with np.errstate(invalid="ignore"):
        return model.log_weight(x)


def test_seeded_bits_of_the_general_kernel():
    """The draws of the factor-graph kernel on a model of three-variable factors: a
    checksum of its output for this seed."""
    x = factor_gibbs.gibbs(factor_models.triangle_lattice(3, 3, 3, rng=1), 500, burn_in=7,
                           rng=5)
    assert x.shape == (500, 9) and x.dtype == np.int64
    assert int(np.sum(x * np.arange(1, 10))) == 22564
    assert int(np.sum(x[:, 0] * np.arange(500))) == 127172


def test_seeded_bits_of_the_pairwise_kernel():
    """The draws of the pairwise kernel on a Potts lattice: a checksum for this seed."""
    x = factor_gibbs.gibbs(factor_models.potts_lattice(3, 3, 3, rng=1), 500, burn_in=7, rng=5)
    assert x.shape == (500, 9) and x.dtype == np.int64
    assert int(np.sum(x * np.arange(1, 10))) == 22745
    assert int(np.sum(x[:, 0] * np.arange(500))) == 125398


@pytest.mark.parametrize("seed", range(4))
def test_kernel_matches_numpy_reference(seed):
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, evidence=seed % 3)
    kw = dict(burn_in=3, thin=2, n_chains=7, rng=seed)
    a = factor_gibbs.gibbs(model, 40, **kw)
    b = factor_gibbs.gibbs_numpy(model, 40, **kw)
    assert np.mean(a != b) < 1e-3  # the same draws (exp may differ in the last bit)
    assert np.array_equal(a, factor_gibbs.gibbs(model, 40, **kw))
    assert np.all(_weights(model, a) > -np.inf)  # never a state of zero weight


def test_layout_of_chains_and_rounds():
    model = factor_models.potts_lattice(2, 3, 3, rng=0)
    x = factor_gibbs.gibbs(model, 12, burn_in=2, n_chains=3, rng=4)
    first = factor_gibbs.gibbs(model, 3, burn_in=2, n_chains=3, rng=4)
    assert np.array_equal(x[:3], first)  # row t * n_chains + c: chain c, time t
    assert len(factor_gibbs.gibbs(model, 10, burn_in=0, thin=3, n_chains=4, rng=0)) == 10


@pytest.mark.parametrize("seed", range(3))
def test_marginals_with_zeros_and_evidence_match_enumeration(seed):
    rng = np.random.default_rng(10 + seed)
    model = random_factor_graph(rng, n=5, scale=0.7, evidence=1 + seed % 2)
    truth = exact.marginals(model)
    res = factor_gibbs.gibbs_marginals(model, n_samples=20_000, burn_in=20, n_chains=200,
                                       rng=seed)
    assert res["n_samples"] == 20_000
    for p, m, s in zip(truth, res["marginals"], res["standard_errors"]):
        assert np.all(np.abs(p - m) <= 5 * s + 1e-12)


def test_evidence_is_clamped_and_matches_the_conditioned_model():
    model = factor_models.potts_lattice(3, 3, 3, coupling=0.8, rng=2)
    ev = {4: 2, 0: 1}
    x = factor_gibbs.gibbs(model, 4000, burn_in=10, n_chains=100, evidence=ev, rng=1)
    assert np.all(x[:, 4] == 2) and np.all(x[:, 0] == 1)
    truth = exact.marginals(model.condition(ev))
    means, ses = factor_gibbs.estimate_marginals(x, model.cardinalities, n_chains=100)
    for p, m, s in zip(truth, means, ses):
        assert np.all(np.abs(p - m) <= 5 * s + 1e-12)


def _equality_chain(n=8):
    """x_0 = x_1 = ... = x_{n-1} (3 states), a uniform start almost never satisfies it."""
    eq = np.where(np.eye(3) > 0, 0.0, -np.inf)
    return FactorGraph([3] * n, [(i, i + 1) for i in range(n - 1)], [eq] * (n - 1))


def test_zero_weight_starts_are_replaced_exactly_or_repaired(monkeypatch):
    model = _equality_chain()
    x = factor_gibbs.gibbs(model, 300, burn_in=1, rng=0)  # exact starts
    assert np.all(x == x[:, :1])
    assert np.all(np.abs(np.bincount(x[:, 0], minlength=3) / 300 - 1 / 3) < 0.1)
    monkeypatch.setattr(factor_gibbs, "EXACT_START_BYTES", 0.0)  # too wide: repair
    y = factor_gibbs.gibbs(model, 300, burn_in=1, rng=0)
    assert np.all(y == y[:, :1])


def test_zero_partition_function_is_refused(monkeypatch):
    """Evidence x_0 = 0, x_1 = x_0, and a table forbidding x_1 = 0: no state is possible."""
    eq = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    dead = FactorGraph([2, 2], [(0, 1), (1,)], [eq, np.array([-np.inf, 0.0])])
    dead = dead.condition({0: 0})
    with pytest.raises(ValueError, match="Z = 0"):
        factor_gibbs.gibbs(dead, 5, burn_in=1, rng=0)
    monkeypatch.setattr(factor_gibbs, "EXACT_START_BYTES", 0.0)
    monkeypatch.setattr(factor_gibbs, "REPAIR_SWEEPS", 5)
    with pytest.raises(ValueError, match="no state of positive weight found"):
        factor_gibbs.gibbs(dead, 5, burn_in=1, rng=0)


def test_bad_init_and_evidence_are_refused():
    model = _equality_chain(3)
    with pytest.raises(ValueError, match="init: 1 of 2 rows have zero weight"):
        factor_gibbs.gibbs(model, 2, burn_in=1, init=[[0, 0, 0], [0, 1, 1]], rng=0)
    with pytest.raises(ValueError, match="contradicts the observed value"):
        factor_gibbs.gibbs(model, 1, burn_in=1, init=[[0, 0, 0]], evidence={1: 2}, rng=0)
    with pytest.raises(ValueError, match="evidence must be a mapping"):
        factor_gibbs.gibbs(model, 1, burn_in=1, evidence=[1], rng=0)
    with pytest.raises(ValueError, match="rng must be"):
        factor_gibbs.gibbs(model, 1, burn_in=1, rng=None)
    with pytest.raises(ValueError, match="n_chains must be at most"):
        factor_gibbs.gibbs(model, 2, burn_in=1, n_chains=3, rng=0)


def test_batch_ids_and_standard_errors():
    assert factor_gibbs.batch_ids(8, 8, 4).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    # two chains of four samples, each cut into two runs: chain-major batches
    assert factor_gibbs.batch_ids(8, 2, 4).tolist() == [0, 2, 0, 2, 1, 3, 1, 3]
    model = factor_models.potts_lattice(2, 2, 3, rng=3)
    x = exact.sample(model, 20_000, rng=2)
    means, ses = factor_gibbs.estimate_marginals(x, model.cardinalities)
    for p, m, s in zip(exact.marginals(model), means, ses):  # i.i.d.: sqrt(p (1 - p) / N)
        np.testing.assert_allclose(s, np.sqrt(p * (1 - p) / len(x)), rtol=0.5)
        assert np.all(np.abs(m - p) <= 5 * s)


def test_time_limited_marginals_continue_the_chains():
    model = factor_models.potts_lattice(3, 3, 3, rng=0)
    res = factor_gibbs.gibbs_marginals(model, n_samples=4000, burn_in=5, n_chains=50,
                                       time_limit=60.0, rng=1)
    assert res["n_samples"] == 4000 and res["seconds"] > 0
    truth = exact.marginals(model)
    for p, m, s in zip(truth, res["marginals"], res["standard_errors"]):
        assert np.all(np.abs(p - m) <= 5 * s + 1e-12)
    with pytest.raises(ValueError, match="time_limit"):
        factor_gibbs.gibbs_marginals(model, n_samples=10, burn_in=1, time_limit=-1.0, rng=0)
