"""Tests of mrflib.learning.lap (LAP, Mizrahi, de Freitas & Tenorio)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrflib import BoltzmannMachine, exact, graphs, lap, learning, sampling
from mrflib.repro import peers


def _mae(a: BoltzmannMachine, b: BoltzmannMachine) -> float:
    return float(np.mean(np.abs(a.params - b.params)))


@pytest.fixture(scope="module")
def grid3():
    e = graphs.square_grid(3, 3)
    bm = BoltzmannMachine.random(e, 9, rng=1)
    data = exact.sample(bm, 20_000, rng=0)
    return e, bm, data


# ------------------------------------------------------------------ neighbourhoods
def test_one_neighbourhood_running_example():
    # paper, Figure 1/3: Q = {7, 8} (1-based) has A_Q = {4, 5, 7, 8, 9}
    e = graphs.square_grid(3, 3)
    assert lap.one_neighbourhood(e, [6, 7]).tolist() == [3, 4, 6, 7, 8]
    cliques = [tuple(r) for r in e] + [(i,) for i in range(9)]
    assert lap.one_neighbourhood(cliques, (6, 7)).tolist() == [3, 4, 6, 7, 8]
    assert lap.one_neighbourhood(e, 4).tolist() == [1, 3, 4, 5, 7]
    # H = {{4, 9}, {5, 9}} (1-based)
    assert lap.path_connected_pairs(e, 9, [3, 4, 6, 7, 8]).tolist() == [[3, 8], [4, 8]]
    full = lap.path_connected_pairs(e, 9, [3, 4, 6, 7, 8], include_edges=True)
    assert full.tolist() == [[3, 4], [3, 8], [4, 8]]


def test_one_neighbourhoods_batched_matches_reference():
    e = graphs.random_graph(15, 0.25, rng=3)
    cl = [(i,) for i in range(15)] + [tuple(r) for r in e]
    got = lap.one_neighbourhoods(e, 15, cl)
    for q, a in zip(cl, got):
        assert a.tolist() == lap.one_neighbourhood(e, q).tolist()


def test_maximal_cliques():
    e = graphs.square_grid(3, 4)
    assert lap.maximal_cliques(e, 13) == sorted([tuple(map(int, r)) for r in e] + [(12,)])
    tri = graphs.from_pairs([(0, 1), (1, 2), (0, 2), (2, 3)])
    assert lap.maximal_cliques(tri, 4) == [(0, 1, 2), (2, 3)]
    assert lap.maximal_cliques(graphs.complete(4), 4) == [(0, 1, 2, 3)]


# ----------------------------------------------------------- normalized potentials
@pytest.mark.parametrize("card", [(2, 2, 2, 2), (3, 2, 4)])
def test_normalized_potentials_round_trip(card):
    rng = np.random.default_rng(0)
    p = rng.random(int(np.prod(card))) + 0.05
    p /= p.sum()
    V = lap.normalized_potentials(p, None if set(card) == {2} else card)
    assert np.allclose(lap.distribution_from_potentials(V, card), p, rtol=1e-12, atol=0)
    # potentials -> distribution -> potentials
    W = {C: rng.normal(size=v.shape) for C, v in V.items()}
    W2 = lap.normalized_potentials(lap.distribution_from_potentials(W, card), card)
    for C in W:
        assert np.allclose(W2[C], W[C], atol=1e-10)


@given(st.lists(st.integers(2, 3), min_size=1, max_size=4), st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_normalized_potentials_round_trip_property(card, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(int(np.prod(card)))) + 1e-3
    p /= p.sum()
    V = lap.normalized_potentials(p, card)
    assert np.allclose(lap.distribution_from_potentials(V, card), p, rtol=1e-10, atol=0)
    # normalized: V_C = 0 whenever a site of C is at the reference 0 is built in, and the
    # zeta sum reconstructs log f(x) - log f(0) at the all-ones configuration
    x = np.ones(len(card), dtype=np.int64)
    idx = int(sum(x[i] * np.prod(card[:i]) for i in range(len(card))))
    total = sum(v.flat[0] for v in V.values())
    assert np.isclose(total, np.log(p[idx]) - np.log(p[0]))


def test_normalized_potentials_definition_5():
    # V_C(x) = sum_{B ⊆ C} (-1)^{|C-B|} log f(x^B), checked literally for n = 3 binary
    rng = np.random.default_rng(1)
    p = rng.random(8) + 0.1
    p /= p.sum()
    V = lap.normalized_potentials(p)
    lp = np.log(p)
    for C, v in V.items():
        total = 0.0
        for mask in range(8):
            B = [i for i in range(3) if mask >> i & 1]
            if set(B) <= set(C):
                total += (-1) ** (len(C) - len(B)) * lp[sum(1 << i for i in B)]
        assert np.isclose(v.item(), total)


def test_ising_normalized_potentials(grid3):
    e, bm, _ = grid3
    V = lap.normalized_potentials(exact.probabilities(bm), tol=1e-9)
    ref = lap.ising_normalized_potentials(bm)
    assert set(V) == set(ref)  # Hammersley-Clifford: only nodes and edges
    for C, v in ref.items():
        assert np.isclose(V[C].item(), v, atol=1e-10)


# ---------------------------------------------------------------------- Ising LAP
def test_batched_fit_equals_literal_auxiliary_mle(grid3):
    e, _, data = grid3
    fit = lap.fit_ising(data, e)
    rows = [tuple(map(int, r)) for r in e]
    for Q in ([6, 7], [0, 1], [1, 4]):
        ref = lap.fit_auxiliary(data, e, Q)
        assert abs(ref["coupling"][tuple(Q)] - fit.coupling[rows.index(tuple(Q))]) < 1e-6
    for i in (0, 4, 7):
        ref = lap.fit_auxiliary(data, e, [i])
        assert abs(ref["bias"][0] - fit.bias[i]) < 1e-6
    # the maximal-clique variant: edge cliques also give b_i (averaged over edges)
    fm = lap.fit_ising(data, e, cliques="maximal")
    ref = lap.fit_auxiliary(data, e, [6, 7])
    assert np.allclose(fm.coupling, fit.coupling)
    b6 = [lap.fit_auxiliary(data, e, list(r))["bias"][list(r).index(6)] for r in e if 6 in r]
    assert abs(np.mean(b6) - fm.bias[6]) < 1e-6


def test_fit_ising_recovers_parameters_4x4():
    e = graphs.square_grid(4, 4)
    bm = BoltzmannMachine.random(e, 16, rng=2)
    errs = []
    for N in (500, 5_000, 50_000):
        data = exact.sample(bm, N, rng=N)
        errs.append(_mae(lap.fit_ising(data, e), bm))
    assert errs[2] < errs[0] / 3
    assert errs[2] < 0.015
    # Theorem 10 (in kind): close to the exact MLE at large N
    mle = learning.fit(data, e, "mle").model
    assert _mae(lap.fit_ising(data, e), mle) < 0.01


def test_fit_ising_recovers_parameters_cubic_and_chimera():
    for e, n in ((graphs.cubic(3), 27), (graphs.chimera(1, 2, 4), 16)):
        bm = BoltzmannMachine.random(e, n, rng=4)
        errs = []
        for N in (500, 40_000):
            data = sampling.gibbs(bm, N, burn_in=60, rng=N)
            errs.append(_mae(lap.fit_ising(data, e), bm))
        assert errs[1] < errs[0] / 3
        assert errs[1] < 0.02


def test_parallel_paths_agree(grid3):
    e, _, data = grid3
    serial = lap.fit_ising(data, e, n_jobs=1)
    procs = lap.fit_ising(data, e, n_jobs=2)
    assert np.array_equal(serial.params, procs.params)


def test_dask_path_agrees(grid3):
    distributed = pytest.importorskip("distributed")
    e, _, data = grid3
    serial = lap.fit_ising(data, e, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                      host="127.0.0.1", protocol="tcp",
                                      dashboard_address=None) as cluster:
            with distributed.Client(cluster) as client:
                via_client = lap.fit_ising(data, e, scheduler=client)
            via_address = lap.fit_ising(data, e, scheduler=cluster.scheduler_address)
    assert np.array_equal(serial.params, via_client.params)
    assert np.array_equal(serial.params, via_address.params)


def test_separable_data_warns_and_l2_fixes():
    e = graphs.square_grid(1, 3)
    x = np.array([[1, 1, -1], [-1, -1, 1], [1, 1, 1], [-1, -1, -1]] * 5)  # x0 == x1
    with pytest.warns(RuntimeWarning, match="no finite ML"):
        lap.fit_ising(x, e)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = lap.fit_ising(x, e, l2=0.1)
    assert np.all(np.isfinite(fit.params))


def test_junction_tree_moments_exact(grid3):
    _, bm, _ = grid3
    m, pair = peers.junction_tree_moments(bm)
    m0, p0 = exact.moments(bm)
    assert np.allclose(m, m0, atol=1e-12) and np.allclose(pair, p0, atol=1e-12)


# ------------------------------------------------------------------- Gaussian LAP
def test_fit_gaussian_equals_direct_computation():
    rng = np.random.default_rng(5)
    K, e = lap.random_sparse_precision(30, 3.0, rng=1)
    X = lap.sample_gaussian(K, 400, rng=2) + 0.1 * rng.normal(size=(400, 30))
    est = lap.fit_gaussian(X, e)
    D = X.T @ X / len(X)
    nb = graphs.neighbours(e, 30)
    for i in range(30):
        A = np.union1d([i], nb[i])
        assert abs(est[i, i] - np.linalg.inv(D[np.ix_(A, A)])[A == i, A == i][0]) < 1e-10
    for i, j in e:
        A = np.union1d(np.union1d([i, j], nb[i]), nb[j])
        inv = np.linalg.inv(D[np.ix_(A, A)])
        v = inv[np.searchsorted(A, i), np.searchsorted(A, j)]
        assert abs(est[i, j] - v) < 1e-10 and abs(est[j, i] - v) < 1e-10
    mask = np.zeros((30, 30), bool)
    mask[e[:, 0], e[:, 1]] = mask[e[:, 1], e[:, 0]] = True
    np.fill_diagonal(mask, True)
    assert np.all(est[~mask] == 0)
    sparse = lap.fit_gaussian(X, e, sparse=True)
    assert np.array_equal(sparse.toarray(), est)
    centred = lap.fit_gaussian(X, e, assume_centered=False)
    Xc = X - X.mean(0)
    Dc = Xc.T @ Xc / len(X)
    A = np.union1d([0], nb[0])
    assert abs(centred[0, 0] - np.linalg.inv(Dc[np.ix_(A, A)])[0, 0]) < 1e-10


def test_fit_gaussian_converges_and_mle_is_stationary():
    K, e, Lf = lap.laplacian_precision(5, 5, return_factor=True)
    X = lap.sample_gaussian(K, 200_000, rng=3, factor=Lf)
    Kd = K.toarray()
    est = lap.fit_gaussian(X, e)
    assert np.linalg.norm(est - Kd) / np.linalg.norm(Kd) < 0.05
    mle = lap.fit_gaussian_mle(X[:2000], e)
    D = X[:2000].T @ X[:2000] / 2000
    W = np.linalg.inv(mle)
    mask = np.eye(25, dtype=bool)
    mask[e[:, 0], e[:, 1]] = mask[e[:, 1], e[:, 0]] = True
    assert np.allclose(W[mask], D[mask], atol=1e-8)  # moment matching on the pattern
    assert np.all(mle[~mask] == 0)
    # with the complete pattern, ML is D^-1 (eq. 9)
    full = lap.fit_gaussian_mle(X[:500, :6], graphs.complete(6))
    D6 = X[:500, :6].T @ X[:500, :6] / 500
    assert np.allclose(full, np.linalg.inv(D6), atol=1e-8)


def test_decomposable_ml_is_the_pattern_ml_on_chordal_graphs():
    nx = pytest.importorskip("networkx")
    K, e, Lf = lap.laplacian_precision(3, 4, return_factor=True)
    chordal, _ = nx.complete_to_chordal_graph(graphs.to_networkx(e, 12))
    ec = graphs.from_pairs(np.array(list(chordal.edges()), dtype=np.int64))
    X = lap.sample_gaussian(K, 300, rng=4, factor=Lf)
    closed = lap.fit_gaussian_decomposable(X, ec)
    newton = lap.fit_gaussian_mle(X, ec)
    assert np.allclose(closed, newton, atol=1e-8 * np.abs(newton).max())
    with pytest.raises(ValueError, match="chordal"):
        lap.fit_gaussian_decomposable(X, e)
    with pytest.raises(ValueError, match="N >"):
        lap.fit_gaussian_decomposable(X[:3], ec)


def test_sample_gaussian_covariance():
    K, _, Lf = lap.laplacian_precision(3, 3, return_factor=True)
    a = lap.sample_gaussian(K, 50_000, rng=0)
    b = lap.sample_gaussian(K, 50_000, rng=0, factor=Lf)
    S = np.linalg.inv(K.toarray())
    for x in (a, b):
        assert np.allclose(x.T @ x / len(x), S, atol=0.02 * np.abs(S).max())
    assert np.array_equal(lap.sample_gaussian(K, 5, rng=1), lap.sample_gaussian(K, 5, rng=1))


# ---------------------------------------------------------------------- bad input
def test_bad_input():
    e = graphs.square_grid(2, 2)
    good = np.ones((10, 4), dtype=np.int8)
    with pytest.raises(ValueError, match="data"):
        lap.fit_ising(np.zeros((10, 4)), e)
    with pytest.raises(ValueError, match="data"):
        lap.fit_ising(good, e, n=5)
    with pytest.raises(ValueError, match="edges"):
        lap.fit_ising(good, [[1, 0]])
    with pytest.raises(ValueError, match="edges"):
        lap.fit_ising(good, [[0, 7]])
    with pytest.raises(ValueError, match="cliques"):
        lap.fit_ising(good, e, cliques="some")
    with pytest.raises(ValueError, match="n_jobs"):
        lap.fit_ising(good, e, n_jobs=0)
    with pytest.raises(ValueError, match="l2"):
        lap.fit_ising(good, e, l2=-1)
    with pytest.raises(ValueError, match="scheduler"):
        lap.fit_ising(good, e, scheduler=3)
    with pytest.raises(ValueError, match="maximal clique"):
        lap.fit_ising(np.ones((5, 13), np.int8), graphs.complete(13), cliques="maximal")
    with pytest.raises(ValueError, match="Q"):
        lap.one_neighbourhood(e, [])
    with pytest.raises(ValueError, match="Q"):
        lap.one_neighbourhood(e, [1, 1])
    with pytest.raises(ValueError, match="cliques"):
        lap.one_neighbourhood([[0.5, 1]], [0])
    with pytest.raises(ValueError, match="strictly positive"):
        lap.normalized_potentials([0.5, 0.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="2\\^n"):
        lap.normalized_potentials([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="cardinalities"):
        lap.normalized_potentials(np.full(6, 1 / 6), [2, 2])
    with pytest.raises(ValueError, match="potentials"):
        lap.distribution_from_potentials({(0, 5): np.ones((1, 1))}, [2, 2])
    with pytest.raises(ValueError, match="shape"):
        lap.distribution_from_potentials({(0,): np.ones(3)}, [2, 2])
    X = np.random.default_rng(0).normal(size=(3, 4))
    with pytest.raises(ValueError, match="samples"):
        lap.fit_gaussian(X, graphs.complete(4))
    with pytest.raises(ValueError, match="finite"):
        lap.fit_gaussian(np.full((10, 4), np.nan), e)
    with pytest.raises(ValueError, match="data"):
        lap.fit_gaussian(np.ones(4), e)
    with pytest.raises(ValueError, match="positive definite"):
        lap.sample_gaussian(-np.eye(3), 4, rng=0)
    with pytest.raises(ValueError, match="rng"):
        lap.sample_gaussian(np.eye(3), 4, rng=None)
    with pytest.raises(TypeError, match="bm"):
        peers.junction_tree_moments("model")


def test_fit_ising_refuses_zero_samples():
    with pytest.raises(ValueError, match="data"):
        lap.fit_ising(np.zeros((0, 4), dtype=np.int8), graphs.square_grid(2, 2))


def test_split_modules_are_reexported():
    from mrflib.learning import lap_gaussian, neighbourhoods, potentials

    assert lap.fit_gaussian is lap_gaussian.fit_gaussian
    assert lap.one_neighbourhood is neighbourhoods.one_neighbourhood
    assert lap.normalized_potentials is potentials.normalized_potentials


def test_one_neighbourhood_of_general_cliques_is_the_clique_union():
    from mrflib.learning import neighbourhoods

    rng = np.random.default_rng(1)
    family = [rng.choice(12, size=rng.integers(1, 4), replace=False) for _ in range(8)]
    for Q in ([0], [3, 5], [11]):
        want = set(Q)
        for c in family:
            if set(c.tolist()) & set(Q):
                want |= set(c.tolist())
        assert neighbourhoods.one_neighbourhood(family, Q).tolist() == sorted(want)


@pytest.mark.parametrize("case", ["one sample", "two samples", "constant spin",
                                  "unseen joint state"])
def test_lap_without_an_estimate_is_not_converged(case):
    """Where the MLE does not exist, some auxiliary ML is at infinity: LAP is reported
    as not converged, with the reason, as MLE is."""
    from mrflib import learning

    edges = graphs.square_grid(3, 3)
    bm = BoltzmannMachine.random(edges, 9, bias_scale=0.3, coupling_scale=0.4, rng=2)
    x = exact.sample(bm, 400, rng=5)
    if case == "one sample":
        x = x[:1]
    elif case == "two samples":
        x = x[:2]
    elif case == "constant spin":
        x = x.copy()
        x[:, 4] = 1
    else:
        x = x.copy()
        x[(x[:, 0] == 1) & (x[:, 1] == 1), 1] = -1  # edge (0, 1) never in (+1, +1)
    with pytest.warns(RuntimeWarning, match="does not exist"):
        fit = learning.fit(x, edges, "lap")
    assert not fit.converged and fit.stop_reason.startswith("the LAP estimate does not exist")
    with pytest.warns(RuntimeWarning, match="does not exist"):
        mle = learning.fit(x, edges, "mle", max_steps=50)
    assert not mle.converged
