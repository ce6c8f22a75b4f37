import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, sampling


def test_kernel_matches_python_reference(grid_bm):
    rng = np.random.default_rng(0)
    x0 = (2 * rng.integers(0, 2, size=(5, 9)) - 1).astype(np.int8)
    record = np.array([-1, 0, -1, 1], dtype=np.int64)
    a, b = x0.copy(), x0.copy()
    out_a = sampling._run(grid_bm, a, 4, record, 2, np.random.default_rng(1))
    out_b = sampling._run(grid_bm, b, 4, record, 2, np.random.default_rng(1),
                          kernel=sampling._gibbs_reference)
    assert np.array_equal(a, b) and np.array_equal(out_a, out_b)


def test_kernel_matches_reference_on_a_non_bipartite_graph(dense_bm):
    rng = np.random.default_rng(0)
    x0 = (2 * rng.integers(0, 2, size=(3, dense_bm.n)) - 1).astype(np.int8)
    record = np.array([0, -1, 1], dtype=np.int64)
    a, b = x0.copy(), x0.copy()
    out_a = sampling._run(dense_bm, a, 3, record, 2, np.random.default_rng(4))
    out_b = sampling._run(dense_bm, b, 3, record, 2, np.random.default_rng(4),
                          kernel=sampling._gibbs_reference)
    assert np.array_equal(a, b) and np.array_equal(out_a, out_b)
    assert np.array_equal(sampling.sweep_order(dense_bm), np.arange(dense_bm.n))


def test_checkerboard_order_on_bipartite_graphs(grid_bm):
    order = sampling.sweep_order(grid_bm)
    r, c = np.divmod(order, 3)
    colour = (r + c) % 2
    assert np.all(np.diff(colour) >= 0) and set(colour) == {0, 1}  # two contiguous blocks


def test_serial_parallel_tabulated_direct_paths_agree(grid_bm):
    """Same bits whatever the thread count and whether thresholds are tabulated."""
    rng = np.random.default_rng(2)
    x0 = (2 * rng.integers(0, 2, size=(6, 9)) - 1).astype(np.int8)
    record = np.arange(5, dtype=np.int64)
    order, ptr, nbr, eids = sampling._layout(9, np.ascontiguousarray(grid_bm.edges,
                                                                      np.int64).tobytes())
    bias = np.ascontiguousarray(grid_bm.bias[order])
    weights = np.ascontiguousarray(grid_bm.coupling[eids])
    outs = []
    for use in (np.zeros(9, bool), np.ones(9, bool), np.arange(9) % 2 == 0):
        off, thr = sampling._threshold_tables(bias, ptr, weights, use)
        for table_only in {False, bool(use.all())}:
            for kernel in (sampling._gibbs_serial, sampling._gibbs_parallel):
                x, out = x0[:, order].copy(), np.empty((5, 6, 9), dtype=np.int8)
                state = np.arange(6, dtype=np.uint64)
                kernel(table_only, x, ptr, nbr, weights, bias, off, thr, state, record, order,
                       out)
                outs.append((x, out, state))
    for x, out, state in outs[1:]:
        assert np.array_equal(outs[0][0], x) and np.array_equal(outs[0][1], out)
        assert np.array_equal(outs[0][2], state)


def test_extreme_fields_are_exact():
    """P(+1) = 0 or 1 to double precision: the thresholds are 0 and 2^32."""
    bm = BoltzmannMachine(np.array([-1e3, 1e3, 1e3]), graphs.square_grid(1, 3),
                          np.array([0.0, 5e2]))
    x = sampling.gibbs(bm, 2000, burn_in=2, rng=5)
    assert np.all(x[:, 0] == -1) and np.all(x[:, 1] == 1) and np.all(x[:, 2] == 1)


def test_same_seed_same_bits(grid_bm):
    a = sampling.gibbs(grid_bm, 300, burn_in=10, thin=2, n_chains=7, rng=42)
    b = sampling.gibbs(grid_bm, 300, burn_in=10, thin=2, n_chains=7, rng=42)
    assert np.array_equal(a, b)
    c = sampling.gibbs(grid_bm, 300, burn_in=10, thin=2, n_chains=7, rng=43)
    assert not np.array_equal(a, c)


def test_gibbs_matches_exact_moments(dense_bm):
    x = sampling.gibbs(dense_bm, 40000, burn_in=30, rng=3)
    m, pair = exact.moments(dense_bm)
    m_hat, p_hat = exact.sufficient_statistics(x, dense_bm.edges)
    tol = 5 / np.sqrt(40000)
    assert np.abs(m_hat - m).max() < tol and np.abs(p_hat - pair).max() < tol


def test_single_long_chain_distribution(grid_bm):
    x = sampling.gibbs(grid_bm, 100000, burn_in=100, n_chains=1, rng=9)
    emp = exact.empirical_distribution(x)
    # total variation against the exact distribution (512 states, 1e5 correlated draws)
    assert 0.5 * np.abs(emp - exact.probabilities(grid_bm)).sum() < 0.05


def test_sweep_advances_copy_and_is_reproducible(grid_bm):
    s0 = np.ones((4, 9), dtype=np.int8)
    s1 = sampling.sweep(grid_bm, s0, 3, 1)
    assert np.all(s0 == 1)
    assert np.array_equal(s1, sampling.sweep(grid_bm, s0, 3, 1))
    assert np.array_equal(sampling.sweep(grid_bm, s0, 0, 1), s0)


def test_thinning_layout(grid_bm):
    x = sampling.gibbs(grid_bm, 10, burn_in=0, thin=3, n_chains=4, rng=0)
    assert x.shape == (10, 9) and x.dtype == np.int8


def test_strong_field_pins_spins():
    bm = BoltzmannMachine(np.full(5, 30.0), graphs.square_grid(1, 5), np.zeros(4))
    assert np.all(sampling.gibbs(bm, 50, burn_in=1, rng=0) == 1)


def test_exact_alias(grid_bm):
    assert np.array_equal(sampling.exact(grid_bm, 10, 1), exact.sample(grid_bm, 10, 1))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(burn_in=-1), "burn_in must be non-negative"),
        (dict(burn_in=1, thin=0), "thin must be positive"),
        (dict(burn_in=1, n_chains=20), "n_chains must be at most"),
        (dict(burn_in=1, n_chains=2, init=np.ones((3, 9))), "init must have n_chains"),
        (dict(burn_in=1, n_chains=2, init=np.zeros((2, 9))), "init must contain only spins"),
        (dict(burn_in=1, rng=None), "rng must be"),
    ],
)
def test_bad_input(grid_bm, kwargs, match):
    kwargs.setdefault("rng", 0)
    with pytest.raises(ValueError, match=match):
        sampling.gibbs(grid_bm, 10, **kwargs)
