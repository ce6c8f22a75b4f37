"""LAP versus junction-tree exact inference on square-lattice Ising models (Figure 5 of
Mizrahi, de Freitas & Tenorio).

For a J x J lattice (random couplings and biases, U[-0.3, 0.3] / U[-0.2, 0.2]) with
N = 1000 Gibbs samples we time

- ``lap``: the whole LAP fit (:func:`mrflib.learning.lap.fit_ising`, every node and edge clique,
  default local execution -- in-process for small lattices, 2 processes for large);
- ``junction-tree``: ONE exact gradient evaluation of maximum likelihood, i.e. all
  node and edge marginals by pgmpy's junction-tree belief propagation
  (:func:`mrflib.repro.peers.junction_tree_moments`). A gradient-ascent fit needs tens to
  hundreds of these, so the ratio understates LAP's advantage.

The junction tree runs only up to a size it finishes in seconds (its cost grows
exponentially with J); beyond that the LAP rows have no baseline. LAP's time grows
linearly with the number of cliques (the ``rate`` column is cliques per second).

LAP for general discrete MRFs (``learning.fit(data, factor_graph, "lap")``, 3-state
Potts lattices and a lattice of triangle factors, N = 2000 samples after 20 Gibbs
sweeps): the numba kernels (each factor's data patterns counted once, its auxiliary
model enumerated, damped Newton; the factors batched in one call) against the numpy
reference path they replaced (one factor at a time, dense design matrix), BLAS on one
thread (its default threads only slow the reference's many small products on a shared
machine). The two must agree to 1e-10 in every table entry.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from mrflib import BoltzmannMachine, graphs, lap, learning, sampling
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import table_learners
from mrflib.models import lattices as factor_models
from mrflib.repro.peers import junction_tree_moments
from mrflib.repro.timing import best_seconds


def lattice(J: int, N: int = 1000, seed: int = 0):
    """Edges, generating model and N Gibbs samples of a J x J lattice."""
    edges = graphs.square_grid(J, J)
    bm = BoltzmannMachine.random(edges, J * J, rng=seed)
    data = sampling.gibbs(bm, N, burn_in=50, thin=2, n_chains=min(N, 100), rng=seed)
    return edges, bm, data


def _factor_lap_row(case, truth, N, repeats):
    """One factor-graph LAP row: numba path against the numpy reference, same data."""
    from threadpoolctl import threadpool_limits

    data = factor_gibbs.gibbs(truth, N, burn_in=20, rng=1)
    learning.fit(data[:50], truth, "lap", l2=1e-6)  # warm-up: numba compilation excluded
    fit = learning.fit(data, truth, "lap")
    t = best_seconds(lambda: learning.fit(data, truth, "lap"), repeats)[0]
    with threadpool_limits(limits=1, user_api="blas"):
        t0 = time.perf_counter()
        ref = table_learners._lap_reference(data, truth)
        t_ref = time.perf_counter() - t0
    diff = max(float(np.max(np.abs(a - b)))
               for a, b in zip(fit.model.log_tables, ref.model.log_tables))
    if not diff < 1e-10 or fit.n_steps != ref.n_steps:
        raise AssertionError(f"{case}: numba and numpy LAP differ by {diff:.3g} "
                             f"({fit.n_steps} against {ref.n_steps} Newton steps)")
    return dict(benchmark="factor-graph LAP", case=f"{case}, N = {N}", method="lap (numba)",
                seconds=t, baseline="numpy reference (BLAS on one thread)",
                ratio=t_ref / t, rate=truth.n_factors / t, rate_unit="factors/s",
                note=(f"{truth.n_factors} auxiliary fits, at most {fit.n_steps} Newton steps; "
                      f"numpy reference {t_ref:.2f} s; max |table difference| {diff:.1e}"))


def factor_lap_rows(quick: bool = False) -> list[dict]:
    """The factor-graph LAP rows (see the module docstring)."""
    potts, triangles = factor_models.potts_lattice, factor_models.triangle_lattice
    cases = ([("4x4 Potts lattice, q = 3", potts(4, 4, 3, coupling=0.4, rng=4)),
              ("3x3 triangle lattice, q = 3", triangles(3, 3, 3, rng=3))]
             if quick else
             [("8x8 Potts lattice, q = 3", potts(8, 8, 3, coupling=0.4, rng=8)),
              ("16x16 Potts lattice, q = 3", potts(16, 16, 3, coupling=0.4, rng=16)),
              ("6x6 triangle lattice, q = 3", triangles(6, 6, 3, rng=6))])
    return [_factor_lap_row(case, truth, 500 if quick else 2000, 1 if quick else 3)
            for case, truth in cases]


def run(quick: bool = False) -> list[dict]:
    jt_sizes = (3, 4) if quick else (3, 4, 5, 6, 7)
    lap_sizes = (3, 4, 10) if quick else (3, 4, 5, 6, 7, 10, 20, 50, 100)
    N = 1000
    warnings.filterwarnings("ignore", category=FutureWarning)
    e0, bm0, d0 = lattice(3, N)
    lap.fit_ising(d0, e0)  # warm-up: numba compilation excluded
    junction_tree_moments(bm0)  # warm-up: pgmpy imports excluded
    jt = {}
    for J in jt_sizes:
        _, bm, _ = lattice(J, 10)
        jt[J] = best_seconds(lambda bm=bm: junction_tree_moments(bm), 1 if J >= 6 else 3)[0]
    rows = []
    for J in lap_sizes:
        edges, bm, data = lattice(J, N)
        repeats = 1 if J >= 50 else 3
        t = best_seconds(lambda d=data, e=edges: lap.fit_ising(d, e)[0], repeats)
        n_cliques = J * J + len(edges)
        row = dict(benchmark="lap", case=f"{J}x{J} Ising lattice, N = {N}", method="lap",
                   seconds=t, rate=n_cliques / t, rate_unit="cliques/s")
        if J in jt:
            row.update(baseline="junction-tree", ratio=jt[J] / t,
                       note="LAP: whole fit; junction tree: one gradient evaluation (pgmpy)")
        else:
            row.update(baseline="", ratio=None,
                       note="junction tree not run at this size (exponential in J)")
        rows.append(row)
    for J, t in jt.items():
        rows.append(dict(benchmark="lap", case=f"{J}x{J} Ising lattice, N = {N}",
                         method="junction-tree", seconds=t, baseline="", ratio=None,
                         rate=None, rate_unit="",
                         note="pgmpy BeliefPropagation: all node and edge marginals"))
    return rows + factor_lap_rows(quick)


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=False):
        ratio = f"ratio {r['ratio']:9.1f}" if r["ratio"] else " " * 15
        print(f"{r['case']:>32} {r['method']:>14}: {r['seconds']:9.4f} s {ratio}  {r['note']}")
