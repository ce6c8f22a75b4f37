"""Wall time of one fit in the Table 1 setting of Yasuda (2018).

4x4 grid, N = 2000 data points drawn exactly from a bias-free machine with couplings
U[-0.3, 0.3], gradient ascent with eta = 0.2 from zero until max |Delta| < 1e-6, for
MPLE, RM, MPF and 1-SMCI; and the exact MLE (L-BFGS on the enumerated likelihood).
Ratios are against the exact MLE and against MPF (the paper's fastest). The issue's
targets: each approximate method under 0.05 s per fit, 1-SMCI at most 2x MPF.
"""

from __future__ import annotations

import time

import numpy as np

from mrflib import BoltzmannMachine, exact, graphs, learning

PAPER_SECONDS = {"mple": 0.08, "rm": 0.1, "mpf": 0.04, "1-smci": 0.26}
METHODS = ("mle", "mple", "rm", "mpf", "1-smci")


def _best(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(quick: bool = False) -> list[dict]:
    repeats = 3 if quick else 7
    edges = graphs.square_grid(4, 4)
    rng = np.random.default_rng(0)
    gen = BoltzmannMachine(np.zeros(16), edges, rng.uniform(-0.3, 0.3, len(edges)))
    data = exact.sample(gen, 2000, rng)
    seconds, steps = {}, {}
    for m in METHODS:
        def one(m=m):
            return learning.fit(data, edges, m, bias=False, record=False, progress=False)

        one()  # warm-up: numba compilation and caches excluded
        seconds[m], f = _best(one, repeats)
        steps[m] = f.n_steps
    rows = []
    case = "Table 1: 4x4 grid, N = 2000, eta = 0.2, tol 1e-6"
    for m in METHODS:
        for base in ("mle", "mpf"):
            if m == base or (base == "mpf" and m == "mle"):
                continue
            note = f"{steps[m]} steps" if m != "mle" else "exact L-BFGS"
            if m in PAPER_SECONDS:
                note += f"; paper {PAPER_SECONDS[m]} s"
            rows.append(dict(
                benchmark="learning", case=case, method=m, seconds=seconds[m], baseline=base,
                ratio=seconds[base] / seconds[m],
                rate=steps[m] / seconds[m] if steps[m] else None,
                rate_unit="steps/s" if steps[m] else "", note=note,
            ))
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=False):
        print(f"{r['method']:>7} vs {r['baseline']:>4}: {r['seconds'] * 1e3:8.2f} ms "
              f"ratio {r['ratio']:7.2f}  {r['note']}")
