"""``smci.moments`` throughput against plain numpy (the SMCI/GSMCI chapter's estimators).

For each method ("mci", "1-smci", "s2-smci", "2-smci") the numba path of
:func:`mrflib.inference.smci.moments` is timed against
:func:`mrflib.inference.smci._spin_estimators._moments_numpy`, a plain numpy implementation
of the same formulas (eq. 14-17 and 22-26 of the GSMCI paper, vectorized over samples), in
the same run. Cases: the 1-SMCI learning workload (4x4 grid,
N = 2000 data points), the 4x5 grid and a random graph (n = 20, p = 0.2) of Figure 5 with
M = 1000, and a 32x32 grid with M = 1000. "2-smci" (exact sums over R_1(T)) has no separate
numpy formula; it is compared with a numpy enumeration of the same sums. The rate is
samples x (nodes + edges) estimated per second.
"""

from __future__ import annotations

import numpy as np

from mrflib import BoltzmannMachine, exact, graphs, sampling, smci
from mrflib.inference.smci import _spin_estimators as se
from mrflib.repro.experiments import best_time


def _numpy_region_moments(bm: BoltzmannMachine, s: np.ndarray) -> tuple[np.ndarray, ...]:
    """Baseline for 2-SMCI: per target, enumerate R_1(T) as a state table in numpy."""
    W = bm.coupling_matrix()
    h = s.astype(np.float64) @ W + bm.bias
    out = []
    targets = [np.array([i]) for i in range(bm.n)] + list(bm.edges)
    for T in targets:
        A = graphs.R_k(bm.edges, bm.n, T, 1)
        X = exact.states(len(A)).astype(np.float64)
        WA = W[np.ix_(A, A)]
        H = h[:, A] - s[:, A] @ WA  # fields from the boundary and biases, per sample
        lw = 0.5 * np.einsum("ri,ij,rj->r", X, WA, X)[:, None] + X @ H.T
        lw -= lw.max(axis=0)
        w = np.exp(lw)
        f = np.prod(X[:, np.searchsorted(A, T)], axis=1)
        out.append(float(np.mean((f @ w) / w.sum(axis=0))))
    return np.asarray(out[: bm.n]), np.asarray(out[bm.n:])


def run(quick: bool = False) -> list[dict]:
    rows = []
    cases = [
        ("4x4 grid, M = 2000 (learning)", graphs.square_grid(4, 4), 16, 2000),
        ("4x5 grid, M = 1000 (Figure 5)", graphs.square_grid(4, 5), 20, 1000),
        ("random n = 20, p = 0.2, M = 1000", graphs.random_graph(20, 0.2, rng=0), 20, 1000),
    ]
    if quick:
        cases = cases[:2]
    else:
        cases.append(("32x32 grid, M = 1000", graphs.square_grid(32, 32), 1024, 1000))
    repeat = 2 if quick else 5
    for case, edges, n, M in cases:
        bm = BoltzmannMachine.random(edges, n, rng=1)
        s = sampling.gibbs(bm, M, burn_in=20, rng=2)
        work = M * (n + len(edges))
        for method in smci.METHODS:
            if method == "2-smci" and n > 20:
                continue
            ours = best_time(smci.moments, bm, s, method, repeat=repeat)
            if method == "2-smci":
                base_name = "numpy enumeration of R_1(T)"
                base = best_time(_numpy_region_moments, bm, s, repeat=1 if quick else 2)
            else:
                base_name = "smci._moments_numpy"
                base = best_time(se._moments_numpy, bm, s, method, repeat=repeat)
            rows.append({
                "benchmark": "smci.moments", "case": case, "method": method,
                "seconds": ours, "baseline": base_name, "ratio": base / ours,
                "rate": work / ours, "rate_unit": "samples x (nodes + edges) / s",
                "note": f"baseline {base:.3g} s" + (
                    "; same samples again: configuration counts cached (as in learning)"
                    if method == "1-smci" else ""),
            })
            if method == "1-smci":  # a fresh sample set every call: no cached counts
                fresh = best_time(_uncached_1smci, bm, s, repeat=repeat)
                rows.append({
                    "benchmark": "smci.moments", "case": case, "method": "1-smci (new samples)",
                    "seconds": fresh, "baseline": base_name, "ratio": base / fresh,
                    "rate": work / fresh, "rate_unit": "samples x (nodes + edges) / s",
                    "note": f"baseline {base:.3g} s; counts recomputed every call",
                })
    return rows


def _uncached_1smci(bm, s):
    se._COUNTS_CACHE.clear()
    return smci.moments(bm, s, "1-smci")


if __name__ == "__main__":  # pragma: no cover
    import pandas as pd

    print(pd.DataFrame(run(quick=True)).to_string())
