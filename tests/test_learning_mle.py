"""``learning.fit(..., "mle")`` with the exact solver: options honoured, honest results;
``exact.fit_mle``, the name it had in the inference layer, deprecated."""

import subprocess
import sys
import warnings

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


def test_engine_option_picks_the_exact_engine_and_is_checked(data_edges):
    """``engine`` (what ``exact.fit_mle`` called ``method``) reaches both solvers of "mle"."""
    data, edges = data_edges
    a = learning.fit(data, edges, "mle", engine="junction-tree")
    b = learning.fit(data, edges, "mle", engine="enumerate")
    assert a.converged and np.abs(a.model.params - b.model.params).max() < 1e-6
    c, d = (learning.fit(data, edges, "mle", solver="gradient", engine=e, max_steps=3)
            for e in ("junction-tree", "enumerate"))
    assert np.abs(c.model.params - d.model.params).max() < 1e-12
    for bad in ("bp", None, 3):
        with pytest.raises(ValueError, match="engine must be one of"):
            learning.fit(data, edges, "mle", engine=bad)
    with pytest.raises(ValueError, match="unknown options"):
        learning.fit(data, edges, "mple", engine="enumerate")


def test_mle_beyond_enumeration_on_a_long_lattice():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 12), 36, rng=4)
    data = exact.sample(bm, 3000, rng=5)
    fit = learning.fit(data, bm.edges, "mle")
    m_d, p_d = exact.sufficient_statistics(data, bm.edges)
    m, p = exact.moments(fit.model)
    assert fit.converged
    assert np.abs(m - m_d).max() < 1e-8 and np.abs(p - p_d).max() < 1e-8


def test_mle_matches_independent_scipy(grid_bm):
    import scipy.optimize

    data = exact.sample(grid_bm, 3000, rng=2)
    fit = learning.fit(data, grid_bm.edges, "mle").model
    # first-order optimality: model moments equal data moments
    m_d, p_d = exact.sufficient_statistics(data, grid_bm.edges)
    m_f, p_f = exact.moments(fit)
    assert np.abs(m_f - m_d).max() < 1e-7 and np.abs(p_f - p_d).max() < 1e-7
    # an independent optimization of the brute-force likelihood (BFGS, no gradient)
    X = exact.states(9).astype(float)
    F = np.hstack([X, X[:, grid_bm.edges[:, 0]] * X[:, grid_bm.edges[:, 1]]])
    t = np.concatenate([m_d, p_d])

    def nll(theta):
        lw = F @ theta
        return np.log(np.exp(lw - lw.max()).sum()) + lw.max() - theta @ t

    ref = scipy.optimize.minimize(nll, np.zeros(F.shape[1]), method="BFGS",
                                  options={"gtol": 1e-9})
    assert np.abs(ref.x - fit.params).max() < 1e-4


def test_mle_without_bias(grid_bm):
    data = exact.sample(grid_bm, 2000, rng=3)
    fit = learning.fit(data, grid_bm.edges, "mle", bias=False).model
    assert np.all(fit.bias == 0)
    _, p_d = exact.sufficient_statistics(data, grid_bm.edges)
    assert np.abs(exact.moments(fit)[1] - p_d).max() < 1e-7


def test_mle_junction_tree_equals_enumeration(grid_bm):
    data = exact.sample(grid_bm, 2000, rng=4)
    a = learning.fit(data, grid_bm.edges, "mle", engine="enumerate").model
    b = learning.fit(data, grid_bm.edges, "mle", engine="junction-tree").model
    assert np.abs(a.params - b.params).max() < 1e-6


def test_mle_beyond_enumeration_matches_moments():
    bm = BoltzmannMachine.random(graphs.square_grid(6, 6), 36, rng=3)
    data = exact.sample(bm, 4000, rng=5)
    fit, res = fit_exact(data, bm.edges)
    m_d, p_d = exact.sufficient_statistics(data, bm.edges)
    m_f, p_f = exact.moments(fit)
    assert res.success and res.grad_max < 1e-9
    assert np.abs(m_f - m_d).max() < 1e-8 and np.abs(p_f - p_d).max() < 1e-8


@pytest.mark.parametrize("case,pattern", [
    ("constant", r"spin\(s\) \[2\] constant"),
    ("equal", r"\(0, 1\)\] always equal"),
    ("opposite", r"\(0, 3\)\] always opposite"),
])
def test_mle_warns_when_it_does_not_exist(case, pattern, grid_bm):
    data = exact.sample(grid_bm, 300, rng=6).copy()
    if case == "constant":
        data[:, 2] = 1
    elif case == "equal":
        data[:, 1] = data[:, 0]
    else:
        data[:, 3] = -data[:, 0]
    with pytest.warns(RuntimeWarning, match="does not exist.*" + pattern):
        fit = learning.fit(data, grid_bm.edges, "mle", max_steps=200)
    assert not fit.converged and "does not exist" in fit.stop_reason
    assert np.all(np.isfinite(fit.model.params))


def test_mle_warns_when_an_edge_misses_one_joint_state(grid_bm):
    """Neither spin constant, the pair neither always equal nor always opposite, but the
    state (+1, +1) of edge (0, 1) never seen: with biases the MLE does not exist (that
    state's probability is positive under every finite θ); without biases it does."""
    data = exact.sample(grid_bm, 300, rng=6).copy()
    both = (data[:, 0] == 1) & (data[:, 1] == 1)
    data[both, 1] = -1
    assert len({tuple(r) for r in data[:, :2]}) == 3
    with pytest.warns(RuntimeWarning, match=r"\(0, 1\)\] never seen in one of their four"):
        fit, res = fit_exact(data, grid_bm.edges, max_iter=200)
    assert not res.success and not res.mle_exists and np.all(np.isfinite(fit.params))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, res = fit_exact(data, grid_bm.edges, bias=False)
    assert res.mle_exists


def test_fit_mle_is_a_deprecated_alias_of_the_mle_learner(grid_bm):
    """``exact.fit_mle`` and its ``return_result`` flag answer as before, warn, and name
    the call of the learner that replaced them, whose model is bit-identical."""
    data = exact.sample(grid_bm, 500, rng=1)
    new = learning.fit(data, grid_bm.edges, "mle").model
    with pytest.warns(FutureWarning,
                      match=r'exact\.fit_mle\(\.\.\.\) is deprecated.*learning\.fit\(data, '
                            r'edges, "mle"\)$'):
        old = exact.fit_mle(data, grid_bm.edges)
    assert isinstance(old, BoltzmannMachine) and np.array_equal(old.params, new.params)
    with pytest.warns(FutureWarning, match=r'return_result=True\) is deprecated.*learning\.fit'
                                           r'\(data, edges, "mle", engine="enumerate"\)'):
        old, res = exact.fit_mle(data, grid_bm.edges, return_result=True, method="enumerate")
    assert np.array_equal(old.params, new.params) and res.success
    from mrflib.inference.exact import fit_mle

    assert fit_mle is exact.fit_mle and "fit_mle" not in exact.__all__
    with pytest.raises(AttributeError, match="has no attribute 'fit_mle_'"):
        exact.fit_mle_  # noqa: B018


def test_the_exact_front_imports_no_learner():
    """The inference layer cannot import learning: the deprecated name loads it only when
    asked for."""
    code = ("import sys\nimport mrflib.inference.exact as e\n"
            "assert not [m for m in sys.modules if m.startswith('mrflib.learning')]\n"
            "assert e.fit_mle.__module__ == 'mrflib.learning._maximum_likelihood'\n")
    subprocess.run([sys.executable, "-c", code], check=True)
