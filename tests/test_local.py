"""Local objectives from local-pattern counts (mrflib.learning._local) against per-sample numpy.

The fitting path compresses the data into per-node pattern counts (or distinct rows)
and evaluates in numba; :func:`mrflib.learning.learners._local_terms_numpy` evaluates the same
objective sample by sample in plain numpy. They must agree to 1e-12.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, learning, sampling, smci
from mrflib.inference.smci import _spin_estimators as se
from mrflib.learning import learners
from mrflib.learning._local import LocalObjective
from mrflib.learning._problem import Problem


def _cases():
    grid = graphs.square_grid(4, 4)
    rnd = graphs.random_graph(30, 0.1, rng=3)
    return [
        ("grid4", grid, 16, 3000, 0.5),
        ("grid4-strong", grid, 16, 500, 3.0),
        ("random30", rnd, 30, 2000, 0.4),  # isolated nodes included
        ("complete9", graphs.complete(9), 9, 300, 0.3),  # dense: distinct rows
        ("grid4-few", grid, 16, 8, 0.5),  # N below the pattern count: rows
    ]


def _data(edges, n, N, scale, seed):
    bm = BoltzmannMachine.random(edges, n, bias_scale=scale, coupling_scale=scale, rng=seed)
    if n <= 16:
        return bm, exact.sample(bm, N, rng=seed + 1)
    return bm, sampling.gibbs(bm, N, burn_in=50, rng=seed + 1)


def _objective(x, edges, method):
    return LocalObjective(x, graphs.as_graph(edges, x.shape[1]), method)


@pytest.mark.parametrize("method", learning.LOCAL_METHODS)
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_compressed_equals_per_sample(case, method):
    _, edges, n, N, scale = case
    gen, data = _data(edges, n, N, scale, seed=11)
    bm = BoltzmannMachine.random(edges, n, bias_scale=scale, coupling_scale=scale, rng=5)
    local = _objective(data, edges, method)
    expected_mode = "rows" if case[0] in ("complete9", "grid4-few") else "patterns"
    assert local.mode == expected_mode
    v, gb, gj = local(bm.params)
    rv, rb, rj = learners._local_terms_numpy(bm, data, method)
    assert abs(v - rv) <= 1e-12 * max(1.0, abs(rv))
    np.testing.assert_allclose(gb, rb, rtol=0, atol=1e-12)
    np.testing.assert_allclose(gj, rj, rtol=0, atol=1e-12)
    # the public functions take the compressed path
    assert learning.objective(bm, data, method) == v
    ob, oj = learning.objective_gradient(bm, data, method)
    np.testing.assert_array_equal(ob, gb)
    np.testing.assert_array_equal(oj, gj)


def test_patterns_are_few_and_counts_complete():
    edges = graphs.square_grid(5, 5)
    _, data = _data(edges, 25, 5000, 0.3, seed=2)
    local = _objective(data, edges, "mple")
    deg = np.diff(graphs.adjacency(edges, 25)[0])
    sizes = np.diff(local.poff)
    assert np.all(sizes <= 2 ** (deg + 1))
    # every node's pattern frequencies sum to one
    sums = np.add.reduceat(local.weights, local.poff[:-1])
    np.testing.assert_allclose(sums, 1.0, atol=1e-15)


@pytest.mark.parametrize("J", [20.0, 40.0, 1e3])
@pytest.mark.parametrize("method", ["mple", "rm"])
def test_extreme_couplings_finite(J, method):
    """Stable forms: finite values and gradients however large |J| (MPF's objective,
    exp(-u), genuinely exceeds float64 there)."""
    edges = graphs.square_grid(3, 3)
    rng = np.random.default_rng(0)
    data = rng.choice(np.array([-1, 1], dtype=np.int8), size=(200, 9))
    signs = (-1.0) ** np.arange(len(edges))
    bm = BoltzmannMachine(np.zeros(9), edges, J * signs)
    v, gb, gj = _objective(data, edges, method)(bm.params)
    assert np.isfinite(v) and np.all(np.isfinite(gb)) and np.all(np.isfinite(gj))
    rv, rb, rj = learners._local_terms_numpy(bm, data, method)
    assert abs(v - rv) <= 1e-12 * max(1.0, abs(rv))
    np.testing.assert_allclose(gj, rj, rtol=1e-12, atol=1e-12)


def test_1smci_direction_from_counts_equals_per_sample():
    """1-SMCI learning uses the configuration counts of smci.moments; the per-sample
    numpy estimator gives the same ascent direction, eq. (26)."""
    edges = graphs.square_grid(4, 4)
    gen, data = _data(edges, 16, 4000, 0.4, seed=3)
    bm = BoltzmannMachine.random(edges, 16, rng=9)
    assert Problem(data, edges).smci1().available
    db, dj = learning.ascent_direction(bm, data, "1-smci")
    mean, pair = se._moments_numpy(bm, data, "1-smci")
    x = data.astype(float)
    np.testing.assert_allclose(db, x.mean(0) - mean, rtol=0, atol=1e-12)
    tgt = np.mean(x[:, edges[:, 0]] * x[:, edges[:, 1]], axis=0)
    np.testing.assert_allclose(dj, tgt - pair, rtol=0, atol=1e-12)


@pytest.mark.parametrize("J", [5.0, 40.0, 1e3])
def test_1smci_counts_finite_for_extreme_couplings(J):
    edges = graphs.square_grid(3, 3)
    rng = np.random.default_rng(1)
    data = rng.choice(np.array([-1, 1], dtype=np.int8), size=(300, 9))
    signs = (-1.0) ** np.arange(len(edges))
    bm = BoltzmannMachine(np.full(9, J / 2), edges, J * signs)
    db, dj = learning.ascent_direction(bm, data, "1-smci")
    assert np.all(np.isfinite(db)) and np.all(np.isfinite(dj))
    if J <= 5:
        mean, pair = se._moments_numpy(bm, data, "1-smci")
        np.testing.assert_allclose(dj, np.mean(data[:, edges[:, 0]] * data[:, edges[:, 1]],
                                               axis=0) - pair, rtol=0, atol=1e-12)


def test_1smci_dense_graph_falls_back_to_smci_moments():
    edges = graphs.complete(8)
    _, data = _data(edges, 8, 50, 0.3, seed=6)
    counts = Problem(data, edges).smci1()
    assert not counts.available
    bm = BoltzmannMachine.random(edges, 8, rng=2)
    _, dj = learning.ascent_direction(bm, data, "1-smci")
    _, pair = smci.moments(bm, data, "1-smci")
    x = data.astype(float)
    np.testing.assert_allclose(dj, np.mean(x[:, edges[:, 0]] * x[:, edges[:, 1]], 0) - pair,
                               atol=1e-12)


def test_compressed_fit_reaches_reference_optimum():
    """Same optimum: the reference objective's gradient vanishes at the fitted model."""
    edges = graphs.random_graph(30, 0.1, rng=3)
    _, data = _data(edges, 30, 3000, 0.4, seed=4)
    for method in learning.LOCAL_METHODS:
        f = learning.fit(data, edges, method, solver="lbfgs", tol=1e-9)
        _, rb, rj = learners._local_terms_numpy(f.model, data, method)
        assert max(np.abs(rb).max(), np.abs(rj).max()) < 1e-7


_MEMORY_SCRIPT = textwrap.dedent("""
    import resource, sys, tracemalloc
    import numpy as np
    from mrflib import graphs, learning
    L, N = 320, 64
    n = L * L
    edges = graphs.square_grid(L, L)
    rng = np.random.default_rng(0)
    data = rng.choice(np.array([-1, 1], dtype=np.int8), size=(N, n))
    learning.fit(data[:, :16], graphs.square_grid(4, 4), "mple", max_steps=2)  # compile
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    for method in sys.argv[1:]:
        f = learning.fit(data, edges, method, max_steps=3, record=False, progress=False)
        assert f.n_steps == 3 and np.all(np.isfinite(f.model.coupling))
    peak = tracemalloc.get_traced_memory()[1]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(n, len(edges), peak, rss - base)
""")


def test_learners_memory_linear_on_large_lattice():
    """Memory linear in the lattice: 102,400 spins (a dense n x n matrix would take 84 GB)."""
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, "mple", "rm", "mpf"],
                         capture_output=True, text=True, check=True, timeout=600)
    n, E, peak, rss = (int(v) for v in out.stdout.split())
    dense = n * n * 8
    assert n >= 100_000
    # numpy's traced peak and the process's resident growth (numba arrays included)
    assert peak < 2000 * (n + E), (peak, n, E)
    assert rss < 1e-2 * dense, (rss, dense)
