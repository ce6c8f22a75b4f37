import warnings

import numpy as np
import pytest
from conftest import brute_force
from hypothesis import given, settings
from hypothesis import strategies as st

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib._support.validation import format_bytes
from mrflib.learning._maximum_likelihood import fit_exact


@pytest.mark.parametrize("fixture", ["grid_bm", "dense_bm"])
def test_against_brute_force(fixture, request):
    bm = request.getfixturevalue(fixture)
    X, p, logz, mean, C = brute_force(bm)
    assert np.array_equal(exact.states(bm.n), X)
    assert exact.log_partition(bm) == pytest.approx(logz, abs=1e-12)
    assert np.allclose(exact.probabilities(bm), p, atol=1e-15)
    m, pair = exact.moments(bm)
    assert np.allclose(m, mean, atol=1e-13)
    assert np.allclose(pair, C[bm.edges[:, 0], bm.edges[:, 1]], atol=1e-13)
    assert np.allclose(exact.correlation_matrix(bm), C, atol=1e-13)
    assert np.allclose(exact.covariance_matrix(bm), C - np.outer(mean, mean), atol=1e-13)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 9), seed=st.integers(0, 10**6), scale=st.floats(0.0, 3.0))
def test_property_random_models(n, seed, scale):
    e = graphs.random_graph(n, 0.5, rng=seed) if n > 1 else np.zeros((0, 2), np.int64)
    bm = BoltzmannMachine.random(e, n, bias_scale=scale, coupling_scale=scale, rng=seed)
    X, p, logz, mean, C = brute_force(bm)
    assert exact.log_partition(bm) == pytest.approx(logz, rel=1e-12, abs=1e-12)
    assert np.allclose(exact.correlation_matrix(bm), C, atol=1e-12)


def test_large_couplings_are_stable():
    bm = BoltzmannMachine.random(graphs.complete(8), 8, bias_scale=200, coupling_scale=300,
                                 rng=1)
    lz = exact.log_partition(bm)
    assert np.isfinite(lz)
    assert np.isclose(exact.probabilities(bm).sum(), 1.0)


def test_state_index_roundtrip():
    X = exact.states(6)
    assert np.array_equal(exact.states_to_index(X), np.arange(64))
    assert np.array_equal(exact.index_to_states(np.arange(64), 6), X)


def test_sufficient_statistics_and_empirical(grid_bm):
    data = exact.sample(grid_bm, 500, rng=0)
    m, pair = exact.sufficient_statistics(data, grid_bm.edges)
    assert np.allclose(m, data.mean(0))
    e = grid_bm.edges
    assert np.allclose(pair, (data[:, e[:, 0]] * data[:, e[:, 1]]).mean(0))
    emp = exact.empirical_distribution(data)
    assert emp.sum() == pytest.approx(1.0)
    assert np.allclose(exact.states(9).T @ emp, m)


def test_kl_divergences(grid_bm):
    data = exact.sample(grid_bm, 2000, rng=1)
    p_d = exact.empirical_distribution(data)
    p_m = exact.probabilities(grid_bm)
    assert exact.kl_data_model(grid_bm, data) == pytest.approx(exact.kl_divergence(p_d, p_m),
                                                               abs=1e-10)
    other = grid_bm.with_params(grid_bm.params * 0.5)
    assert exact.kl_model(grid_bm, other) == pytest.approx(
        exact.kl_divergence(p_m, exact.probabilities(other)), abs=1e-12)
    assert exact.kl_model(grid_bm, grid_bm) == pytest.approx(0.0, abs=1e-12)
    assert exact.kl_divergence([1.0, 0.0], [0.0, 1.0]) == np.inf
    with pytest.raises(ValueError, match="probability vector"):
        exact.kl_divergence([0.5, 0.6], [0.5, 0.5])


def test_exact_sampling_is_reproducible_and_correct(grid_bm):
    a = exact.sample(grid_bm, 20000, rng=5)
    assert np.array_equal(a, exact.sample(grid_bm, 20000, rng=5))
    m, _ = exact.moments(grid_bm)
    assert np.abs(a.mean(0) - m).max() < 4 / np.sqrt(20000) * 2


def test_refuses_too_large_before_allocating():
    bm = BoltzmannMachine.random(graphs.square_grid(8, 8), 64, rng=0)
    need = format_bytes(exact.MAX_STATE_BYTES_FACTOR * 2.0**64)
    with pytest.raises(ValueError, match=f"would need {need}"):
        exact.log_partition(bm, method="enumerate")
    with pytest.raises(ValueError, match="exact log Z and moments"):
        learning.fit(np.ones((3, 64)), graphs.square_grid(8, 8), "mle", engine="enumerate")


def test_bad_input(grid_bm):
    with pytest.raises(TypeError, match="model must be a BoltzmannMachine"):
        exact.moments("model")
    with pytest.raises(ValueError, match="data must contain only spins"):
        learning.fit(np.zeros((4, 9)), grid_bm.edges, "mle")
    with pytest.raises(ValueError, match="data must have 9 columns"):
        exact.log_likelihood(grid_bm, np.ones((4, 8)))


def test_auto_enumerates_up_to_20_spins_bit_identically(grid_bm):
    assert exact.log_partition(grid_bm) == exact.log_partition(grid_bm, method="enumerate")
    for u, v in zip(exact.moments(grid_bm), exact.moments(grid_bm, method="enumerate")):
        assert np.array_equal(u, v)
    assert np.array_equal(exact.sample(grid_bm, 100, rng=3),
                          exact.sample(grid_bm, 100, rng=3, method="enumerate"))
    data = exact.sample(grid_bm, 500, rng=1)
    assert np.array_equal(learning.fit(data, grid_bm.edges, "mle").model.params,
                          learning.fit(data, grid_bm.edges, "mle", engine="enumerate").model.params)
    with pytest.raises(ValueError, match="method must be one of"):
        exact.log_partition(grid_bm, method="bp")


def test_auto_uses_the_junction_tree_beyond_20_spins():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 8), 24, rng=2)
    assert exact.log_partition(bm) == exact.log_partition(bm, method="junction-tree")
    assert exact.log_partition(bm) == pytest.approx(
        exact.log_partition(bm, method="enumerate"), abs=1e-10)


@pytest.mark.parametrize("f", [
    lambda d, bm: fit_exact(d, bm.edges, n=9),
    lambda d, bm: exact.kl_data_model(bm, d),
    lambda d, bm: exact.log_likelihood(bm, d),
    lambda d, bm: exact.empirical_distribution(d, 9),
    lambda d, bm: exact.sufficient_statistics(d, bm.edges, 9),
])
def test_zero_samples_are_refused(f, grid_bm):
    with pytest.raises(ValueError, match="data must contain at least one sample"):
        f(np.zeros((0, 9), dtype=np.int8), grid_bm)


def test_calibrator_gives_log_z_and_the_moments_of_either_engine(grid_bm):
    for method in ("enumerate", "junction-tree"):
        calibrate = exact.calibrator(grid_bm.edges, grid_bm.n, method=method)
        logz, mean, pair = calibrate(grid_bm.bias, grid_bm.coupling)
        assert calibrate.engine == method
        assert logz == pytest.approx(exact.log_partition(grid_bm), abs=1e-12)
        m, p = exact.moments(grid_bm)
        assert np.allclose(mean, m, atol=1e-12) and np.allclose(pair, p, atol=1e-12)
    assert exact.calibrator(grid_bm.edges).engine == "enumerate"
    with pytest.raises(ValueError, match="method must be one of"):
        exact.calibrator(grid_bm.edges, method="bp")


# ----------------------------------------------------------------------------- factor graphs
def test_factor_graph_of_a_boltzmann_machine_gives_its_log_z_and_moments():
    """Through FactorGraph.from_boltzmann, both engines give the Ising fast path's answers."""
    from mrflib import FactorGraph

    for bm in (BoltzmannMachine.random(graphs.square_grid(3, 4), 12, rng=3),
               BoltzmannMachine.random(graphs.square_grid(5, 5), 25, rng=4)):
        fg = FactorGraph.from_boltzmann(bm)
        mean, pair = exact.moments(bm)
        methods = ("enumerate", "junction-tree") if bm.n <= 20 else ("junction-tree",)
        for method in methods:
            assert abs(exact.log_partition(fg, method=method) - exact.log_partition(bm)) < 1e-10
            marg = exact.marginals(fg, method=method)
            np.testing.assert_allclose([p[1] - p[0] for p in marg], mean, atol=1e-10)
            fm = exact.factor_marginals(fg, method=method)[bm.n:]
            np.testing.assert_allclose([f[0, 0] + f[1, 1] - f[0, 1] - f[1, 0] for f in fm],
                                       pair, atol=1e-10)
        assert np.array_equal(exact.marginals(bm)[0], exact.marginals(fg)[0])


def test_factor_graph_auto_method_enumerates_small_state_spaces():
    from mrflib import FactorGraph

    rng = np.random.default_rng(0)
    fg = FactorGraph([3, 4, 2], [(0, 1), (1, 2)], [rng.normal(size=(3, 4)),
                                                    rng.normal(size=(4, 2))])
    x, lw = exact.map_assignment(fg)
    assert x.dtype == np.int64 and abs(fg.log_weight(x) - lw) < 1e-12
    s = exact.sample(fg, 5, rng=0)
    assert s.shape == (5, 3) and s.dtype == np.int64
    np.testing.assert_array_equal(s, exact.sample(fg, 5, rng=0, method="enumerate"))
    p = exact.plan(fg)
    assert p.treewidth == 1 and p.max_table_bytes == 8 * 12
    data = exact.sample(fg, 20, rng=1)
    assert abs(exact.log_likelihood(fg, data)
               - exact.log_likelihood(fg, data, method="junction-tree")) < 1e-12


@pytest.mark.parametrize("s", [1e4, 1e6, 1e12, 1e15])
def test_factor_graph_marginals_sum_to_one_at_huge_log_weights(s):
    """Log-weights ``[[s, s], [s, s - 1]]`` (exact floats): ``exp(lw - log Z)`` loses
    ``log Z``'s last bits (marginals summing to 1.00005 at ``s = 1e12``, to 2 at ``1e17``),
    so past ``|log Z| = 2^10`` they are divided by their sum (the enumeration is then
    exact: ``lw - max`` is), and ordinary models keep their bits."""
    from mrflib import FactorGraph
    from mrflib.inference._factor_ops import RENORMALIZE_LOG_Z

    model = FactorGraph([2, 2], [(0, 1)], [np.array([[s, s], [s, s - 1.0]])])
    w = np.array([[1.0, 1.0], [1.0, np.exp(-1.0)]]) / (3 + np.exp(-1.0))
    enum = exact.marginals(model, method="enumerate")
    assert np.allclose(enum[0], w.sum(axis=1), rtol=1e-14, atol=0)
    assert np.allclose(exact.factor_marginals(model, method="enumerate")[0], w,
                       rtol=1e-14, atol=0)
    for m in (*exact.marginals(model, method="junction-tree"),
              *exact.factor_marginals(model, method="junction-tree")):
        assert abs(m.sum() - 1.0) < 1e-14
    for a, b in zip(exact.marginals(model, method="junction-tree"), enum):
        # log-space messages at magnitude s are exact to about s * eps only
        assert np.allclose(a, b, rtol=0, atol=0.1 * s * np.finfo(float).eps + 1e-14)
    const = FactorGraph([2], [(), (0,)], [np.array(s), np.array([0.0, 1.0])])
    for method in ("enumerate", "junction-tree"):
        p = exact.marginals(const, method=method)[0]
        assert np.allclose(p, [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-12, atol=0)
    small = FactorGraph([2, 2], [(0, 1)], [np.array([[0.5, 0.0], [0.0, 1.0]])])
    logz = exact.log_partition(small)
    assert abs(logz) < RENORMALIZE_LOG_Z
    want = np.exp(small.log_tables[0] - logz)  # the unrenormalized form, bit for bit
    assert np.array_equal(exact.factor_marginals(small, method="enumerate")[0], want)


@pytest.mark.parametrize("s", [1e12, 1e15, 1.25e157])
def test_junction_tree_marginals_sum_to_one_when_huge_log_weights_cancel(s):
    """Messages of magnitude ``s`` cancelled by a unary ``-s`` (log Z = log 5): the root's
    small ``|log Z|`` does not ask for renormalization (the marginals would sum to 1.00006
    at ``s = 1e12`` and to 5 at ``1.25e157``), so the scale is also the tables' own."""
    from mrflib import FactorGraph

    t = np.array([[s, s, 0.0], [s, 0.0, -np.inf], [-s, s, s]])
    model = FactorGraph([3, 3], [(0, 1), (1,)], [t, np.full(3, -s)])
    assert exact.log_partition(model, method="enumerate") == pytest.approx(np.log(5))
    for m in (*exact.marginals(model, method="junction-tree"),
              *exact.factor_marginals(model, method="junction-tree")):
        assert np.all(np.isfinite(m)) and abs(m.sum() - 1.0) < 1e-14


def test_log_weights_beyond_the_precision_limit_warn():
    """A unary ``[0, 1e16]`` (P(x1 = 1) came out 0.47 or 0.50 for 0.78) and a ±1 chain
    with J = 1e16, b = 0.5 (means 0 for 0.995) lost their answers to float64 rounding without
    a word; beyond ``PRECISE_LOG_WEIGHT`` every exact function now warns, and within it a
    model is answered without a warning."""
    from mrflib import FactorGraph
    from mrflib.models.precision import PRECISE_LOG_WEIGHT, PrecisionWarning

    def unary(top):
        return FactorGraph([2, 2, 2], [(0,), (0, 1), (1, 2)],
                           [np.array([0.0, top]), np.array([[0.0, 0.0], [0.0, 1.0]]),
                            np.array([[0.0, 0.0], [0.0, 0.5]])])

    def chain(J):
        edges = np.array([[i, i + 1] for i in range(5)])
        return BoltzmannMachine(np.full(6, 0.5), edges, np.full(5, J))

    calls = [lambda m, e: exact.marginals(m, method=e),
             lambda m, e: exact.factor_marginals(m, method=e),
             lambda m, e: exact.map_assignment(m, method=e),
             lambda m, e: exact.log_partition(m, method=e),
             lambda m, e: exact.sample(m, 3, rng=0, method=e)]
    for engine in ("enumerate", "junction-tree"):
        for call in calls:
            for model in (unary(1e16), chain(1e16), unary(1e15)):
                with pytest.warns(PrecisionWarning, match=r"add up to [15]e\+1[56].*2\^32"):
                    call(model, engine)
        with pytest.warns(PrecisionWarning, match="BoltzmannMachine"):
            exact.moments(chain(1e16), method=engine)
        with pytest.warns(PrecisionWarning):
            exact.log_likelihood(chain(1e16), np.ones((2, 6)), method=engine)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # at the limit: no warning, and the right answer
            p = exact.marginals(unary(PRECISE_LOG_WEIGHT - 1.5), method=engine)[1][1]
            want = (np.e + np.exp(1.5)) / (2 + np.e + np.exp(1.5))
            assert abs(p - want) < 1e-6
            mean, _ = exact.moments(chain(PRECISE_LOG_WEIGHT / 6), method=engine)
            assert np.allclose(mean, np.tanh(3.0), atol=1e-6)
