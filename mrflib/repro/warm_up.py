"""``python -m mrflib warm-up``: compile the common numba kernels into numba's cache once.

Every kernel is compiled on its first call and cached on disk (``cache=True``); with an
empty cache the README's example spends most of its first run compiling. This runs the
same calls on small inputs (numba specializes on argument types, not sizes, so each
kernel compiles with the signature a real call uses) and leaves the cache warm for every
later process: exact inference of both model families (enumeration, junction tree,
variable elimination), exact and Gibbs sampling, the MPLE, ML, LAP and stochastic
learners, and the approximate methods (loopy BP, mean field, weighted mini-bucket, Gibbs and
SMCI on factor graphs). ``make env`` runs it after installing.
"""

from __future__ import annotations

import sys
import time
import warnings

#: Approximate methods and small options for the warm-up (every kernel they call).
_APPROX = [("lbp", {}), ("mean-field", {}), ("wmb", {"ibound": 2}),
           ("gibbs", {"n_samples": 20, "burn_in": 2}),
           ("smci", {"n_samples": 20, "burn_in": 2, "order": 1}),
           ("smci", {"n_samples": 20, "burn_in": 2, "order": 2})]


def _steps():
    """``(name, call)`` pairs, the README's example in small."""
    import numpy as np

    from mrflib.inference import _factor_ops, approx, exact, sampling
    from mrflib.inference.sampling import chains as factor_gibbs
    from mrflib.learning import learners as learning
    from mrflib.models import graphs
    from mrflib.models import lattices as factor_models
    from mrflib.models.boltzmann import BoltzmannMachine
    from mrflib.models.factor_graph import FactorGraph

    bm = BoltzmannMachine.random(graphs.square_grid(3, 3), 9, rng=0)
    x = sampling.gibbs(bm, 50, burn_in=5, rng=1)
    big = BoltzmannMachine.random(graphs.square_grid(5, 5), 25, rng=0)
    potts = factor_models.potts_lattice(3, 3, q=3, rng=0)
    fg = FactorGraph.from_boltzmann(big)
    wide = factor_models.potts_lattice(6, 6, q=3, rng=0)
    differ = np.where(np.eye(3) > 0, -np.inf, 0.0)  # neighbours differ: zeros to search
    colouring = FactorGraph([3] * 4, [(0, 1), (1, 2), (2, 3), (0, 3)], [differ] * 4)

    def potts_data():
        return exact.sample(potts, 300, rng=1)

    # a large clique's opt_einsum result in an axis order of its own, copied to the
    # target's in tiles: too large for the small models above to reach
    transposed = np.zeros((2,) * 13).transpose(np.arange(13)[::-1])

    return [
        ("Boltzmann machine: enumeration", lambda: exact.moments(bm)),
        ("Boltzmann machine: Gibbs sampling", lambda: sampling.gibbs(bm, 20, burn_in=2, rng=1)),
        ("Boltzmann machine: junction tree",
         lambda: (exact.log_partition(big), exact.moments(big), exact.sample(big, 5, rng=0))),
        ("Boltzmann machine: learning (MPLE, MLE, LAP)",
         lambda: [learning.fit(x, bm.edges, m, progress=False) for m in ("mple", "mle", "lap")]),
        ("factor graph: elimination and marginals",
         lambda: (exact.log_partition(fg), exact.marginals(fg), exact.marginals(potts),
                  exact.log_partition(potts), _factor_ops.c_order(transposed))),
        ("factor graph: sampling", potts_data),
        ("factor graph: learning (LAP, MPLE, MLE)",
         lambda: [learning.fit(potts_data(), potts, m, max_steps=20)
                  for m in ("lap", "mple", "mle")]),
        ("factor graph: Gibbs sampling",
         lambda: factor_gibbs.gibbs(potts, 10, burn_in=2, rng=np.random.default_rng(0))),
        ("factor graph: stochastic learners (PCD, 1-SMCI)",
         lambda: [learning.fit(potts_data(), potts, m, max_steps=2, rng=0)
                  for m in ("pcd", "1-smci")]),
        ("approximate inference (LBP, mean field, WMB, Gibbs, SMCI, bounds)",
         lambda: ([approx.marginals(potts, m, rng=0, **o) for m, o in _APPROX]
                  + [approx.log_partition_bounds(wide, time_limit=0)])),
        ("MAP (search on zeros, local search, max mini-bucket, branch and bound)",
         lambda: [approx.map_assignment(colouring, m, rng=0)
                  for m in ("search", "mini-bucket", "branch-and-bound")]),
    ]


def warm_up(out=sys.stderr) -> float:
    """Run every step once (compiling what the cache lacks); returns the seconds taken.
    Every kernel is compiled, the small calls the interpreter would otherwise run
    (:mod:`mrflib._support.interpreted`) included, so that later processes load them."""
    from mrflib._support import interpreted

    t0 = time.perf_counter()
    mode = interpreted.MODE
    interpreted.MODE = "never"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # small data: learners may warn of missing estimates
            for name, call in _steps():
                t = time.perf_counter()
                call()
                print(f"warm-up: {name} ({time.perf_counter() - t:.1f} s)", file=out,
                      flush=True)
    finally:
        interpreted.MODE = mode
    total = time.perf_counter() - t0
    print(f"warm-up: done in {total:.1f} s; later first calls load the kernels from numba's "
          "cache", file=out, flush=True)
    return total


def main(argv: list[str] | None = None) -> int:
    """``python -m mrflib warm-up``: no arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv:
        if argv[0] in ("-h", "--help"):
            print("usage: python -m mrflib warm-up\n\ncompile the common numba kernels into "
                  "numba's cache once (what the first call of a fresh install costs)")
            return 0
        print(f"warm-up takes no arguments, got {argv[0]!r}", file=sys.stderr)
        return 2
    warm_up()
    return 0
