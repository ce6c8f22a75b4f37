"""Tests of mrflib.io.datasets (the six training sets of section 3.4 of the FSLL paper)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mrflib import datasets, exact, fsll, graphs


@pytest.fixture(scope="module")
def bn37():
    return datasets.load("BN20-37S")


def test_bayesian_network_structure():
    for max_parents, n_edges in ((2, 37), (3, 54)):
        parents, tables = datasets.bayesian_network(20, max_parents, rng=0)
        assert sum(len(p) for p in parents) == n_edges
        for i, (par, q) in enumerate(zip(parents, tables)):
            assert len(par) == min(i, max_parents)
            assert np.all(par < i) and len(set(par.tolist())) == len(par)
            assert q.shape == (2 ** len(par),) and np.all((q > 0) & (q < 1))
    assert [len(p) for p in datasets.bayesian_network(20, 3, rng=0)[0][:4]] == [0, 1, 2, 3]


def test_bn_probabilities_brute_force():
    parents, tables = datasets.bayesian_network(5, 2, rng=3)
    p = datasets.bn_probabilities(parents, tables)
    for x in itertools.product((0, 1), repeat=5):
        ref = 1.0
        for i, (par, q) in enumerate(zip(parents, tables)):
            c = sum(x[v] << j for j, v in enumerate(par.tolist()))
            ref *= q[c] if x[i] else 1 - q[c]
        idx = sum(b << i for i, b in enumerate(x))  # bit i is x_i (fsll flat order)
        assert p[idx] == pytest.approx(ref)
    assert p.sum() == pytest.approx(1.0)


def test_load_sizes_determinism_and_shared_truth(bn37):
    assert bn37.data.shape == (1000, 20) and bn37.data.dtype == np.int8
    assert set(np.unique(bn37.data)) <= {0, 1}
    assert bn37.p_star.shape == (2**20,) and bn37.p_star.sum() == pytest.approx(1.0)
    assert bn37.structure["n_edges"] == 37
    again = datasets.load("BN20-37S")
    np.testing.assert_array_equal(again.data, bn37.data)
    other = datasets.load("BN20-37S", n_samples=10, rng=5)
    np.testing.assert_array_equal(other.p_star, bn37.p_star)  # same network, other draw
    assert other.data.shape == (10, 20)
    assert datasets.NAMES["BN20-54L"] == 100_000
    with pytest.raises(ValueError, match="name"):
        datasets.load("BN20-99S")


def test_samples_follow_p_star():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    idx = datasets.sample_table(p, 200_000, rng=0)
    freq = np.bincount(idx, minlength=4) / idx.size
    np.testing.assert_allclose(freq, p, atol=5e-3)
    ds = datasets.load("BN20-54S", n_samples=20_000)
    # single-variable marginals of the draw agree with p*
    bits = datasets.to_binary(np.arange(2**20), 20)
    marg = ds.p_star @ bits
    np.testing.assert_allclose(ds.data.mean(axis=0), marg, atol=0.015)


def test_ising5x4_true_distribution():
    ds = datasets.load("Ising5x4S")
    edges = graphs.square_grid(5, 4)
    assert len(edges) == 31
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 2**20, size=20)
    x = datasets.to_binary(idx, 20)
    s = 2 * x.astype(float) - 1  # s_i = +1 iff x_i = 1
    logw = 0.5 * np.sum(s[:, edges[:, 0]] * s[:, edges[:, 1]], axis=1)
    ratio = np.log(ds.p_star[idx]) - logw
    np.testing.assert_allclose(ratio, ratio[0], atol=1e-9)  # p* ~ exp(1/2 sum s_i s_j)
    # same state order as mrflib.inference.exact and fsll
    np.testing.assert_array_equal(fsll.flat_index(x, (2,) * 20), idx)
    np.testing.assert_array_equal(exact.states(20)[idx], s.astype(np.int8))


def test_bn_sample_matches_table():
    parents, tables = datasets.bayesian_network(4, 2, rng=1)
    p = datasets.bn_probabilities(parents, tables)
    x = datasets.bn_sample(parents, tables, 200_000, rng=0)
    idx = fsll.flat_index(x, (2,) * 4)
    np.testing.assert_allclose(np.bincount(idx, minlength=16) / idx.size, p, atol=5e-3)


# --------------------------------------------------------------------------- real data
def test_digits_reproduce_sklearn_pixels():
    from sklearn.datasets import load_digits

    x, labels = datasets.digits()
    d = load_digits()
    assert x.dtype == np.int8 and x.shape == (1797, 64)
    assert np.array_equal(labels, d.target)
    for m in (0, 1, 500, 1796):
        for r in range(8):
            for c in range(8):
                assert x[m, r * 8 + c] == (1 if d.images[m, r, c] >= 8 else -1)
    assert np.array_equal(x == 1, d.data >= 8)


@pytest.fixture(scope="module")
def asia():
    return datasets.expert_network("asia")


def test_expert_network_structure(asia):
    assert asia.n == 8 and asia.cardinalities == (2,) * 8 and asia.n_edges == 8
    for i, par in enumerate(asia.parents):
        assert all(v < i for v in par)
        np.testing.assert_allclose(asia.cpds[i].sum(axis=1), 1.0)
        assert asia.cpds[i].shape == (2 ** len(par), 2)
    with pytest.raises(ValueError, match="name"):
        datasets.expert_network("nope")


def test_expert_joint_brute_force_and_normalized():
    net = datasets.expert_network("survey")  # cardinalities 3 and 2
    p = net.joint()
    assert p.shape == (net.n_states,) and p.sum() == pytest.approx(1.0, abs=1e-12)
    x = fsll.unflatten(np.arange(p.size), net.cardinalities)
    ref = np.ones(p.size)
    for i, par in enumerate(net.parents):
        conf = np.zeros(p.size, dtype=np.int64)
        stride = 1
        for v in par:
            conf += x[:, v] * stride
            stride *= net.cardinalities[v]
        ref *= net.cpds[i][conf, x[:, i]]
    np.testing.assert_allclose(p, ref, rtol=1e-12, atol=0)


def test_expert_sampler_matches_joint_chi_square(asia):
    from scipy import stats

    p = asia.joint()
    N = 200_000
    x = asia.sample(N, rng=7)
    assert x.dtype == np.int8 and x.shape == (N, 8)
    counts = np.bincount(fsll.flat_index(x, asia.cardinalities), minlength=p.size)
    # pool the states with small expectation into one cell
    big = p * N >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(p[big] * N, p[~big].sum() * N)
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    assert np.array_equal(asia.sample(50, rng=3), asia.sample(50, rng=3))


def test_ancestral_subset_marginal_equals_pgmpy_variable_elimination():
    from pgmpy.inference import VariableElimination

    net = datasets.expert_network("asia")
    sub = net.ancestral_subset(["either"])
    assert set(sub.variables) == {"either", "lung", "tub", "smoke", "asia"}
    q = VariableElimination(datasets.pgmpy_model("asia")).query(
        list(sub.variables), show_progress=False)
    for i, v in enumerate(sub.variables):
        assert list(q.state_names[v]) == list(sub.states[i])
    ref = np.transpose(q.values, [q.variables.index(v) for v in sub.variables[::-1]]).ravel()
    np.testing.assert_allclose(sub.joint(), ref, atol=1e-12)


def test_largest_ancestral_subset_and_refusal():
    child = datasets.expert_network("child")
    with pytest.raises(ValueError, match="states"):
        child.joint()
    sub = child.largest_ancestral_subset(2**12)
    assert sub.n_states <= 2**12
    names = set(sub.variables)
    for v in sub.variables:  # ancestrally closed
        for u in child.parents[child.variables.index(v)]:
            assert child.variables[u] in names
    assert sub.joint().sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="variables"):
        child.ancestral_subset(["nope"])
