"""What the ±1 fast paths buy: each against the general factor-graph engine on
``FactorGraph.from_boltzmann(bm)``, the same distribution, in the same run.

Models: square lattices with biases U[-0.2, 0.2] and couplings U[-0.3, 0.3] (the GSMCI
defaults), seed 0. Every call goes through the same public function with the same
arguments, the Boltzmann machine or its factor graph as the model; times are the best of
a few repeats after one warm-up call (compilation and plan caches excluded), and ``ratio``
is the factor graph's time over the Boltzmann machine's. The public calls are timed as
a user makes them: the ±1 junction tree reuses its cached plan (one per graph), the
general engine plans in every call (its plan is not cached), which is part of what the
fast path buys.

- ``enumeration``: ``exact.moments(model, method="enumerate")``, all ``2^n`` states
  (biases and pair moments of the ±1 kernels against every variable and factor marginal
  of the joint table).
- ``junction-tree log Z``: ``exact.log_partition(model, method="junction-tree")``.
- ``junction-tree moments``: ``exact.moments(model, method="junction-tree")``.
- ``Gibbs``: ``sampling.gibbs(model, M, burn_in=B, rng=0)`` (one chain per sample).
"""

from __future__ import annotations

import numpy as np

from mrflib import BoltzmannMachine, FactorGraph, exact, graphs, sampling
from mrflib.repro.timing import best_seconds


def lattice(rows: int, cols: int) -> BoltzmannMachine:
    return BoltzmannMachine.random(graphs.square_grid(rows, cols), rows * cols, rng=0)


def _cases(quick: bool):
    enum = (3, 4) if quick else (4, 5)
    jt = (6, 6) if quick else (12, 12)
    gibbs, M, B = ((8, 8), 200, 20) if quick else ((32, 32), 1000, 100)
    yield "enumeration", enum, lambda m: exact.moments(m, method="enumerate")
    yield "junction-tree log Z", jt, lambda m: exact.log_partition(m, method="junction-tree")
    yield "junction-tree moments", jt, lambda m: exact.moments(m, method="junction-tree")
    yield "Gibbs", gibbs, lambda m: sampling.gibbs(m, M, burn_in=B, rng=0)


def _check(name: str, a, b) -> str:
    """How far the two answers are apart (samples: their mean magnetizations)."""
    if name == "Gibbs":
        return (f"mean spin {np.mean(a):+.4f} (+-1) vs {np.mean(2 * b - 1):+.4f} (factor "
                "graph)")
    if isinstance(a, float):
        return f"|log Z difference| = {abs(a - b):.1e}"
    mean = np.array([m[1] - m[0] for m in b[0]])
    return f"max |mean difference| = {np.abs(a[0] - mean).max():.1e}"


def run(quick: bool = False) -> list[dict]:
    rows = []
    for name, (r, c), fn in _cases(quick):
        bm = lattice(r, c)
        fg = FactorGraph.from_boltzmann(bm)
        repeats = 3 if quick else 5
        fn(bm), fn(fg)  # warm-up: compilation and plan caches
        t_bm, a = best_seconds(lambda fn=fn, bm=bm: fn(bm), repeats)
        t_fg, b = best_seconds(lambda fn=fn, fg=fg: fn(fg), repeats)
        rows.append(dict(benchmark="one library", case=f"{name}, {r}x{c} lattice",
                         method="±1 engine (BoltzmannMachine)", seconds=t_bm,
                         baseline="general engine (FactorGraph.from_boltzmann)",
                         ratio=t_fg / t_bm, rate=1.0 / t_bm, rate_unit="calls/s",
                         note=f"general engine {t_fg:.3g} s; {_check(name, a, b)}"))
    return rows
