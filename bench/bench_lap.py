"""LAP versus junction-tree exact inference on square-lattice Ising models (Figure 5 of
Mizrahi, de Freitas & Tenorio).

For a J x J lattice (random couplings and biases, U[-0.3, 0.3] / U[-0.2, 0.2]) with
N = 1000 Gibbs samples we time

- ``lap``: the whole LAP fit (:func:`mrflib.lap.fit_ising`, every node and edge clique,
  default local execution -- in-process for small lattices, 2 processes for large);
- ``junction-tree``: ONE exact gradient evaluation of maximum likelihood, i.e. all
  node and edge marginals by pgmpy's junction-tree belief propagation
  (:func:`mrflib.repro.peers.junction_tree_moments`). A gradient-ascent fit needs tens to
  hundreds of these, so the ratio understates LAP's advantage.

The junction tree runs only up to a size it finishes in seconds (its cost grows
exponentially with J); beyond that the LAP rows have no baseline. LAP's time grows
linearly with the number of cliques (the ``rate`` column is cliques per second).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from mrflib import BoltzmannMachine, graphs, lap, sampling
from mrflib.repro.peers import junction_tree_moments


def _best(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def lattice(J: int, N: int = 1000, seed: int = 0):
    """Edges, generating model and N Gibbs samples of a J x J lattice."""
    edges = graphs.square_grid(J, J)
    bm = BoltzmannMachine.random(edges, J * J, rng=seed)
    data = sampling.gibbs(bm, N, burn_in=50, thin=2, n_chains=min(N, 100), rng=seed)
    return edges, bm, data


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
        jt[J] = _best(lambda bm=bm: junction_tree_moments(bm), 1 if J >= 6 else 3)
    rows = []
    for J in lap_sizes:
        edges, bm, data = lattice(J, N)
        repeats = 1 if J >= 50 else 3
        t = _best(lambda d=data, e=edges: lap.fit_ising(d, e), repeats)
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
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=False):
        ratio = f"ratio {r['ratio']:9.1f}" if r["ratio"] else " " * 15
        print(f"{r['case']:>32} {r['method']:>14}: {r['seconds']:9.4f} s {ratio}  {r['note']}")
