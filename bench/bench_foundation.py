"""Exact moments and Gibbs sampling against same-run baselines (issue: foundation).

* ``exact.moments`` for n = 20 (2^20 states, all pairs) against one BLAS
  ``X.T @ (p[:, None] * X)`` on the precomputed state table, and against a plain numpy
  loop over the states in chunks.
* ``sampling.gibbs`` single-spin updates per second per core (CPU time, so that other
  load on the machine does not count) on a 4x5 grid (index order, 1000 chains) and a
  100x100 grid (checkerboard path, one chain), against a vectorized numpy checkerboard
  sampler.
"""

from __future__ import annotations

import time

import numpy as np

from mrflib import BoltzmannMachine, exact, graphs, sampling
from mrflib.experiments import best_time


def _numpy_chunked_moments(bm: BoltzmannMachine, chunk: int = 1 << 14) -> np.ndarray:
    """Baseline: loop over the states in chunks, all in plain numpy."""
    n = bm.n
    W = bm.coupling_matrix()
    logz = exact.log_partition(bm)
    C = np.zeros((n, n))
    for start in range(0, 2**n, chunk):
        X = exact.index_to_states(np.arange(start, min(start + chunk, 2**n)), n).astype(float)
        p = np.exp(X @ bm.bias + 0.5 * np.einsum("si,ij,sj->s", X, W, X) - logz)
        C += X.T @ (p[:, None] * X)
    return C


def _checkerboard_numpy(bm, rows, cols, x, sweeps, rng):
    """Baseline: vectorized checkerboard Gibbs for a square grid (numpy only)."""
    W = bm.coupling_matrix() if bm.n <= 400 else None
    n = rows * cols
    r, c = np.divmod(np.arange(n), cols)
    colour = (r + c) % 2
    e = bm.edges
    for _ in range(sweeps):
        for k in (0, 1):
            if W is not None:
                h = bm.bias + x @ W
            else:
                h = np.broadcast_to(bm.bias, x.shape).copy()
                xs = x.astype(float)
                np.add.at(h.T, e[:, 0], (xs[:, e[:, 1]] * bm.coupling).T)
                np.add.at(h.T, e[:, 1], (xs[:, e[:, 0]] * bm.coupling).T)
            u = rng.random(x.shape)
            new = np.where(u * (1 + np.exp(-2 * h)) < 1, 1, -1)
            mask = colour == k
            x[:, mask] = new[:, mask]
    return x


def run(quick: bool = False) -> list[dict]:
    rows = []
    n = 14 if quick else 20
    bm = BoltzmannMachine.random(graphs.complete(n), n, rng=0)
    X = exact.states(n).astype(np.float64)
    p = exact.probabilities(bm)
    t_ours = best_time(exact.correlation_matrix, bm, repeat=5)
    t_blas = best_time(lambda: X.T @ (p[:, None] * X), repeat=5)
    t_loop = best_time(_numpy_chunked_moments, bm, repeat=1)
    assert np.allclose(exact.correlation_matrix(bm), X.T @ (p[:, None] * X), atol=1e-10)
    case = f"n={n}, complete graph, all pairs"
    rows.append(dict(benchmark="exact.moments", case=case, method="mrflib", seconds=t_ours,
                     baseline="", ratio=np.nan, rate=2**n / t_ours, rate_unit="states/s",
                     note="block-split BLAS kernel, log-weights and moments"))
    rows.append(dict(benchmark="exact.moments", case=case, method="mrflib", seconds=t_ours,
                     baseline="one BLAS X.T @ (p X) (table and p given)",
                     ratio=t_blas / t_ours, rate=np.nan, rate_unit="",
                     note=f"baseline {t_blas:.4f} s"))
    rows.append(dict(benchmark="exact.moments", case=case, method="mrflib", seconds=t_ours,
                     baseline="numpy loop over states in chunks", ratio=t_loop / t_ours,
                     rate=np.nan, rate_unit="", note=f"baseline {t_loop:.4f} s"))
    for R, C, chains, sweeps in ([4, 5, 1000, 200], [100, 100, 1, 50 if quick else 300]):
        rows.append(_gibbs_row(R, C, chains, sweeps))
    return rows


def _cpu_best(fn, *args, repeat=3):
    """Best CPU time (all threads of this process) of ``repeat`` calls after a warm-up:
    updates per CPU-second is the per-core rate, whatever else the machine runs."""
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - t0)
    return best


def _gibbs_row(R, C, chains, sweeps) -> dict:
    nn = R * C
    bm = BoltzmannMachine.random(graphs.square_grid(R, C), nn, rng=0)
    x0 = np.ones((chains, nn), dtype=np.int8)
    t_g = _cpu_best(sampling.sweep, bm, x0, sweeps, 0)
    rng = np.random.default_rng(0)
    t_c = _cpu_best(_checkerboard_numpy, bm, R, C, x0.copy(), sweeps, rng, repeat=1)
    updates = chains * nn * sweeps
    path = ("checkerboard, integer thresholds" if nn >= 1024 else "index order, tables")
    return dict(benchmark="sampling.gibbs", case=f"{R}x{C} grid, {chains} chains x {sweeps} "
                f"sweeps", method=f"mrflib ({path})", seconds=t_g,
                baseline="numpy checkerboard", ratio=t_c / t_g, rate=updates / t_g,
                rate_unit="spin updates/s per core",
                note=f"CPU time; baseline {updates / t_c:.3g} updates/s per core; target "
                     "1e8 per core on the 100x100 lattice")
