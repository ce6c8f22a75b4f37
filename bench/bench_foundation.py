"""Exact moments and Gibbs sampling against same-run baselines (the foundation modules).

* ``exact.moments`` for n = 20 (2^20 states, all pairs) against one BLAS
  ``X.T @ (p[:, None] * X)`` on the precomputed state table, and against a plain numpy
  loop over the states in chunks.
* ``sampling.gibbs`` single-spin updates per second per core (CPU time, so that other
  load on the machine does not count; numba's threads count too) on a 4x5 grid (index
  order, 1000 chains) and a 100x100 grid (square-grid checkerboard kernel, one chain, so
  one thread), against a vectorized numpy checkerboard sampler (fields by shifted slices
  of the lattice). The 100x100 lattice is timed twice: repeated calls on one model (its
  threshold tables kept) and a new model in every call (tables built inside the call).
"""

from __future__ import annotations

import os
import time

import numpy as np

from mrflib import BoltzmannMachine, exact, graphs, sampling
from mrflib.repro.experiments import best_time

#: Target of the lattice sampler: spin updates per second per core on the 100x100 lattice.
GIBBS_TARGET = 1e8


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


def _grid_couplings(bm, rows, cols):
    """Couplings of a square grid as ``(right, down)`` arrays of shapes ``(rows, cols - 1)``
    and ``(rows - 1, cols)`` (edge order of :func:`mrflib.models.graphs.square_grid`)."""
    e, J = bm.edges, bm.coupling
    right = np.zeros((rows, cols - 1))
    down = np.zeros((rows - 1, cols))
    horizontal = e[:, 1] - e[:, 0] == 1
    r, c = np.divmod(e[horizontal, 0], cols)
    right[r, c] = J[horizontal]
    r, c = np.divmod(e[~horizontal, 0], cols)
    down[r, c] = J[~horizontal]
    return right, down


def _grid_fields(bias, right, down, x):
    """Local fields ``b + sum_j J_ij x_j`` of chains ``x (M, rows, cols)`` by shifted slices."""
    h = np.broadcast_to(bias, x.shape).copy()
    h[:, :, :-1] += right * x[:, :, 1:]
    h[:, :, 1:] += right * x[:, :, :-1]
    h[:, :-1, :] += down * x[:, 1:, :]
    h[:, 1:, :] += down * x[:, :-1, :]
    return h


def _checkerboard_numpy(bm, rows, cols, x, sweeps, rng):
    """Baseline: vectorized numpy checkerboard Gibbs on a square grid: fields by shifted
    slices of the whole lattice, then one colour redrawn from its conditional."""
    right, down = _grid_couplings(bm, rows, cols)
    bias = bm.bias.reshape(rows, cols)
    r, c = np.indices((rows, cols))
    masks = [(r + c) % 2 == k for k in (0, 1)]
    x = x.reshape(len(x), rows, cols).astype(np.float64)
    for _ in range(sweeps):
        for mask in masks:
            h = _grid_fields(bias, right, down, x)[:, mask]
            u = rng.random(h.shape)
            x[:, mask] = np.where(u * (1 + np.exp(-2 * h)) < 1, 1.0, -1.0)
    return x.reshape(len(x), -1)


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
        rows += _gibbs_rows(R, C, chains, sweeps)
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


def _cold_cpu(models, fn, repeat=3):
    """Best CPU time of ``fn(model)`` over ``repeat`` models each seen for the first time
    (per-model setup such as the threshold tables paid inside the call)."""
    best = float("inf")
    for bm in models[:repeat]:
        t0 = time.process_time()
        fn(bm)
        best = min(best, time.process_time() - t0)
    return best


def _gibbs_rows(R, C, chains, sweeps) -> list[dict]:
    """Spin updates per CPU-second of :func:`mrflib.inference.sampling.sweep` against the numpy
    checkerboard baseline, both timed here; on the 100x100 lattice also with a new model
    in every call (threshold tables built inside the call)."""
    nn = R * C
    bm = BoltzmannMachine.random(graphs.square_grid(R, C), nn, rng=0)
    x0 = np.ones((chains, nn), dtype=np.int8)
    right, down = _grid_couplings(bm, R, C)
    x = (2 * np.random.default_rng(0).integers(0, 2, size=(2, nn)) - 1).astype(np.float64)
    h = _grid_fields(bm.bias.reshape(R, C), right, down, x.reshape(2, R, C))
    assert np.allclose(h.reshape(2, nn), bm.local_field(x), atol=1e-12)  # the baseline's fields
    t_g = _cpu_best(sampling.sweep, bm, x0, sweeps, 0)
    rng = np.random.default_rng(0)
    t_c = _cpu_best(_checkerboard_numpy, bm, R, C, x0.copy(), sweeps, rng)
    updates = chains * nn * sweeps
    case = f"{R}x{C} grid, {chains} chains x {sweeps} sweeps"
    base = (f"CPU time, best of 3 calls; baseline {updates / t_c:.3g} updates/s per core; "
            f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if nn < 1024:
        return [_gibbs_row(case, "mrflib (index order, tables)", t_g, t_c, updates, base)]
    models = [BoltzmannMachine.random(bm.graph, nn, rng=seed) for seed in (1, 2, 3)]
    t_cold = _cold_cpu(models, lambda m: sampling.sweep(m, x0, sweeps, rng=0))
    return [
        _gibbs_row(case, "mrflib (square-grid checkerboard, tables kept)", t_g, t_c, updates,
                   f"{base}; repeated calls on one model", target=GIBBS_TARGET),
        _gibbs_row(case + ", new model per call", "mrflib (square-grid checkerboard, tables "
                   "built in the call)", t_cold, t_c, updates, base, target=GIBBS_TARGET),
    ]


def _gibbs_row(case, method, seconds, t_base, updates, note, target=np.nan) -> dict:
    return dict(benchmark="sampling.gibbs", case=case, method=method, seconds=seconds,
                baseline="numpy checkerboard", ratio=t_base / seconds, rate=updates / seconds,
                rate_unit="spin updates/s per core", note=note, target=target)
