"""Tests of mrflib.datasets (the six training sets of section 3.4 of the FSLL paper)."""

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
        parents, tables = datasets.bayesian_network(20, max_parents, 0)
        assert sum(len(p) for p in parents) == n_edges
        for i, (par, q) in enumerate(zip(parents, tables)):
            assert len(par) == min(i, max_parents)
            assert np.all(par < i) and len(set(par.tolist())) == len(par)
            assert q.shape == (2 ** len(par),) and np.all((q > 0) & (q < 1))
    assert [len(p) for p in datasets.bayesian_network(20, 3, 0)[0][:4]] == [0, 1, 2, 3]


def test_bn_probabilities_brute_force():
    parents, tables = datasets.bayesian_network(5, 2, 3)
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
    idx = datasets.sample_table(p, 200_000, 0)
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
    # same state order as mrflib.exact and fsll
    np.testing.assert_array_equal(fsll.flat_index(x, (2,) * 20), idx)
    np.testing.assert_array_equal(exact.states(20)[idx], s.astype(np.int8))


def test_bn_sample_matches_table():
    parents, tables = datasets.bayesian_network(4, 2, 1)
    p = datasets.bn_probabilities(parents, tables)
    x = datasets.bn_sample(parents, tables, 200_000, 0)
    idx = fsll.flat_index(x, (2,) * 4)
    np.testing.assert_allclose(np.bincount(idx, minlength=16) / idx.size, p, atol=5e-3)
