"""The junction-tree engine of Boltzmann machines (:mod:`mrflib.inference.exact._spin_plan`,
the elimination engine on a machine's tables) on square Ising lattices.

Models: biases U[-0.2, 0.2], couplings U[-0.3, 0.3] (the GSMCI defaults), seed 0.

- ``edge marginals``: all node and edge moments of a J x J lattice, J = 3..7, by our
  engine, once with the plan built in the call (elimination order, junction tree and its
  compiled layout, then the upward and downward passes) and once with the plan reused (as a
  learner does across gradient steps), against pgmpy's ``BeliefPropagation``
  (:func:`mrflib.repro.peers.junction_tree_moments`). The three are timed interleaved,
  round after round (pgmpy once, then ours 5 times each way), and each reports its median,
  so load on a shared machine slows both alike; ``note`` has pgmpy's median time and the
  largest difference between the two.
- ``16x16``: ``log Z`` and all moments of a 16 x 16 lattice (treewidth 16), plan included.
  No peer can run at this size; the note gives the pgmpy time extrapolated from the
  growth per unit of width measured above (an extrapolation, not a measurement).
- ``widest lattice``: the widest J x J lattice whose calibration fits a memory budget
  (a quarter of the available memory, at most 4 GiB) and about a minute; time and peak
  memory (tracemalloc, numpy buffers included).
- ``exact samples``: independent samples of the 16 x 16 lattice per second (forward
  filtering, backward sampling), against Gibbs sweeps per second of
  :func:`mrflib.inference.sampling.gibbs` (one sweep per sample, which gives *correlated* samples).
- ``exact MLE``: ``learning.fit(data, edges, "mle")`` on a 10 x 10 lattice from N = 10^4 exact
  samples (L-BFGS-B with junction-tree gradients), beside the approximate LAP fit
  (:func:`mrflib.learning.lap.fit_ising`) of the same data (ratio below 1: LAP is faster).
"""

from __future__ import annotations

import time
import tracemalloc
import warnings

import numpy as np

from mrflib import BoltzmannMachine, exact, graphs, lap, sampling
from mrflib._support.validation import available_memory, format_bytes
from mrflib.inference.exact._spin_plan import SpinPlan
from mrflib.learning._maximum_likelihood import fit_exact
from mrflib.repro import peers
from mrflib.repro.timing import best_seconds


def lattice(rows: int, cols: int | None = None, seed: int = 0) -> BoltzmannMachine:
    cols = rows if cols is None else cols
    return BoltzmannMachine.random(graphs.square_grid(rows, cols), rows * cols, rng=seed)


def _fresh_moments(bm):
    return SpinPlan(bm.edges, bm.n).calibrate(bm.bias, bm.coupling)


def _interleaved(fns: dict, rounds: int, inner: dict) -> tuple[dict, dict]:
    """Median seconds of each function, run in turn round after round (``inner[name]``
    times per round), and each one's last result."""
    times: dict = {name: [] for name in fns}
    outs: dict = {}
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(inner.get(name, 1)):
                t0 = time.perf_counter()
                outs[name] = fn()
                times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}, outs


def _marginals(sizes) -> tuple[list[dict], float, tuple[int, float]]:
    rows, times = [], {}
    for J in sizes:
        bm = lattice(J)
        plan = SpinPlan(bm.edges, bm.n)
        med, out = _interleaved(
            dict(pgmpy=lambda bm=bm: peers.junction_tree_moments(bm),
                 fresh=lambda bm=bm: _fresh_moments(bm),
                 reused=lambda bm=bm, plan=plan: plan.calibrate(bm.bias, bm.coupling)),
            rounds=5 if J >= 6 else 7, inner=dict(fresh=5, reused=5))
        t_pg, (m_pg, p_pg), (_, m, p) = med["pgmpy"], out["pgmpy"], out["fresh"]
        diff = max(np.abs(m - m_pg).max(), np.abs(p - p_pg).max())
        times[J] = t_pg
        for method, sec, what in (("mrflib", med["fresh"], "plan built in the call"),
                                  ("mrflib, plan reused", med["reused"],
                                   "plan reused (as in learning)")):
            rows.append(dict(benchmark="edge marginals", case=f"{J}x{J} lattice",
                             method=method, seconds=sec, baseline="pgmpy BeliefPropagation",
                             ratio=t_pg / sec, rate=(J * J + len(bm.edges)) / sec,
                             rate_unit="marginals/s",
                             note=f"{what}; medians, interleaved; pgmpy {t_pg:.3g} s; "
                                  f"max |ours - pgmpy| = {diff:.1e}"))
    Js = np.array(sorted(times))
    growth = float(np.exp(np.polyfit(Js, np.log([times[J] for J in Js]), 1)[0]))
    return rows, growth, (int(Js[-1]), times[Js[-1]])


def _sixteen(growth: float, pg_last: tuple[int, float]) -> dict:
    bm = lattice(16)
    t, (lz, m, p) = best_seconds(lambda: _fresh_moments(bm), 3)
    J0, t0 = pg_last
    extra = t0 * growth ** (16 - J0)
    return dict(benchmark="16x16", case="16x16 lattice: log Z and all moments",
                method="mrflib", seconds=t, baseline="", ratio=None,
                rate=(256 + len(bm.edges)) / t, rate_unit="marginals/s",
                note=f"treewidth 16, plan included; log Z = {lz:.6f}; pgmpy extrapolated "
                     f"({growth:.2f}x per unit width from J={J0}): {extra:.3g} s")


def _widest(quick: bool) -> dict:
    budget = min(available_memory() / 4, 4 * 2**30)
    J = 8 if quick else 16
    best = None
    while True:
        plan = SpinPlan(graphs.square_grid(J, J), J * J)
        est = 2 * plan.total_bytes / 8 * 25e-9  # about 25 ns per table entry and pass
        too_slow = est > (0.5 if quick else 60) or (quick and J > 10)
        if plan.memory_bytes() > budget or (best is not None and too_slow):
            break
        bm = lattice(J)
        tracemalloc.start()
        t0 = time.perf_counter()
        plan.calibrate(bm.bias, bm.coupling)
        t = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        best = dict(benchmark="widest lattice", case=f"{J}x{J} lattice (treewidth "
                    f"{plan.treewidth})", method="mrflib", seconds=t, baseline="", ratio=None,
                    rate=peak / 2**20, rate_unit="MiB peak",
                    note=f"log Z and all moments, plan excluded; budget "
                         f"{format_bytes(budget)}; next width stops on memory or time")
        J += 1
    return best


def _samples(quick: bool) -> dict:
    J, M = (8, 2000) if quick else (16, 20_000)
    bm = lattice(J)
    exact.sample(bm, 10, rng=0)
    sampling.gibbs(bm, 10, burn_in=0, rng=0)
    t, _ = best_seconds(lambda: exact.sample(bm, M, rng=1), 2)
    tg, _ = best_seconds(lambda: sampling.gibbs(bm, M, burn_in=0, thin=1, rng=1), 2)
    return dict(benchmark="exact samples", case=f"{J}x{J} lattice, {M} samples",
                method="mrflib exact", seconds=t, baseline="gibbs (1 sweep per sample)",
                ratio=tg / t, rate=M / t, rate_unit="samples/s",
                note="exact samples are independent; Gibbs sweeps are correlated")


def _mle(quick: bool) -> dict:
    J, N = (5, 2000) if quick else (10, 10_000)
    bm = lattice(J)
    data = exact.sample(bm, N, rng=2)
    lap.fit_ising(data, bm.edges)  # warm-up: numba cache load excluded
    # the learner itself, for the optimizer's counts that its Fit does not keep
    t, (_, res) = best_seconds(lambda: fit_exact(data, bm.edges), 1)
    t_lap, _ = best_seconds(lambda: lap.fit_ising(data, bm.edges), 3)
    return dict(benchmark="exact MLE", case=f"{J}x{J} lattice, N = {N}", method="mrflib",
                seconds=t, baseline="LAP fit (approximate)", ratio=t_lap / t,
                rate=res.nfev / t, rate_unit="gradients/s",
                note=f"L-BFGS-B, {res.nit} iterations, {res.nfev} exact gradients, "
                     f"max |gradient| {res.grad_max:.1e}")


def run(quick: bool = False) -> list[dict]:
    warnings.filterwarnings("ignore", category=FutureWarning)
    sizes = (3, 4) if quick else (3, 4, 5, 6, 7)
    peers.junction_tree_moments(lattice(3))  # warm-up: pgmpy imports excluded
    _fresh_moments(lattice(3))  # warm-up: numba cache load excluded
    rows, growth, pg_last = _marginals(sizes)
    if not quick:
        rows.append(_sixteen(growth, pg_last))
    rows.append(_widest(quick))
    rows.append(_samples(quick))
    rows.append(_mle(quick))
    return rows
