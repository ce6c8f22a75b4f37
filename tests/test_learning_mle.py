"""``learning.fit(..., "mle")`` with the exact solver: options honoured, honest results."""

import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib.learning._maximum_likelihood import fit_exact


@pytest.fixture
def data_edges():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 3), 9, bias_scale=0.4,
                                 coupling_scale=0.6, rng=1)
    return exact.sample(bm, 1000, rng=2), bm.edges


def test_default_is_the_exact_solver_and_converged(data_edges):
    data, edges = data_edges
    fit = learning.fit(data, edges, "mle")
    assert np.array_equal(fit.model.params, fit_exact(data, edges)[0].params)
    assert fit.converged and fit.n_steps > 0 and fit.stop_reason


def test_max_steps_tol_and_init_are_honoured(data_edges):
    data, edges = data_edges
    short = learning.fit(data, edges, "mle", max_steps=2)
    assert short.n_steps <= 2 and not short.converged
    assert "not converged" in short.stop_reason
    loose = learning.fit(data, edges, "mle", tol=1e-2)
    full = learning.fit(data, edges, "mle")
    assert loose.converged and loose.n_steps < full.n_steps
    warm = learning.fit(data, edges, "mle", init=full.model)
    assert warm.converged and warm.n_steps <= 1
    warm_array = learning.fit(data, edges, "mle", init=full.model.params)
    assert np.array_equal(warm_array.model.params, warm.model.params)
    with pytest.raises(ValueError, match="max_steps must be positive"):
        learning.fit(data, edges, "mle", max_steps=0)
    with pytest.raises(ValueError, match="init must have shape"):
        learning.fit(data, edges, "mle", init=np.zeros(3))


def test_no_mle_is_reported_not_converged(data_edges):
    data, edges = data_edges
    data = data.copy()
    data[:, 4] = data[:, 1]  # an edge (1, 4) whose spins are always equal
    with pytest.warns(RuntimeWarning, match="does not exist"):
        fit = learning.fit(data, edges, "mle", max_steps=300)
    assert not fit.converged and "does not exist" in fit.stop_reason


def test_mle_beyond_enumeration_on_a_long_lattice():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 12), 36, rng=4)
    data = exact.sample(bm, 3000, rng=5)
    fit = learning.fit(data, bm.edges, "mle")
    m_d, p_d = exact.sufficient_statistics(data, bm.edges)
    m, p = exact.moments(fit.model)
    assert fit.converged
    assert np.abs(m - m_d).max() < 1e-8 and np.abs(p - p_d).max() < 1e-8
