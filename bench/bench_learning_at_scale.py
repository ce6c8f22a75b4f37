"""Every factor-graph learner that scales, on a 256x256 Potts lattice (q = 4, 65,536 variables).

The truth is ``lattices.potts_lattice(256, 256, 4, coupling=0.4)`` (ferromagnetic couplings
uniform on [0, 0.8], fields on [-0.2, 0.2]: below the q = 4 transition at log(1 + 2) =
1.10, so Gibbs chains mix in tens of sweeps); N = 1,000 samples are the states of 1,000
independent :func:`mrflib.inference.factor_gibbs.gibbs` chains after ``BURN_IN`` sweeps.
Each learner's row gives its wall time and peak memory (tracemalloc, numpy buffers
included) for a fixed budget of work: MPLE and LAP to their tolerances; the gradient
learners (1-SMCI, CD, PCD, SMCI-PCD) for ``STEPS`` steps, so their rows are the cost of
that many steps (their time grows linearly with the steps), not of a converged fit; each
row's note gives the steps taken and the error of the fitted couplings (the normalized
diagonal of each pair table, ``J`` of the truth) against the truth. Exact ML is refused by
name (its row records the refusal). ``--quick``: a 16x16 lattice.

Size. ``make bench`` runs a 32x32 lattice (minutes); the environment variable
``MRFLIB_BENCH_SCALE_SIDE`` sets the side, 256 for the full size. At 256 the factor-graph
Gibbs kernel (about 3 microseconds an update here) makes the data alone take hours, and a
1-SMCI step minutes: the learners' memory is linear in the model, their kernels are not yet
fast enough for that size.
"""

from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np

from mrflib import learning
from mrflib._support.validation import format_bytes
from mrflib.inference import factor_gibbs
from mrflib.models import lattices

Q = 4
N = 1000
BURN_IN = 100
STEPS = 10
LEARNERS = [("mple", {}), ("lap", {}), ("1-smci", {}), ("cd", {}), ("pcd", {}),
            ("smci-pcd", {}), ("smci-pcd", {"estimator": "mci"})]
EXTRA_COLUMNS = ["peak_bytes"]


def _coupling_error(model, truth) -> float:
    """Mean |J_fit - J_true| over the pair factors (normalized tables: the diagonal
    entries ``(a, a)``, ``a >= 1``, are ``J``; the truth's tables are ``J I``)."""
    errs = [np.mean(np.abs(np.diag(t)[1:] - s[0, 0]))
            for t, s, scope in zip(model.log_tables, truth.log_tables, truth.scopes)
            if len(scope) == 2]
    return float(np.mean(errs))


def _measure(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    finally:
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return out, seconds, peak


def run(quick: bool = False, side: int | None = None) -> list[dict]:
    if side is None:
        side = 16 if quick else int(os.environ.get("MRFLIB_BENCH_SCALE_SIDE", "32"))
    truth = lattices.potts_lattice(side, side, Q, coupling=0.4, rng=0)
    data, t_data, peak_data = _measure(lambda: factor_gibbs.gibbs(
        truth, N, burn_in=BURN_IN, n_chains=N, rng=1))
    case = f"{side}x{side} Potts lattice, q = {Q}, N = {N}"
    base = dict(benchmark="Factor-graph learners at scale", case=case, baseline="",
                ratio=None, rate=None, rate_unit="", size=side * side, size_unit="variables")
    rows = [dict(base, method="data: gibbs", seconds=t_data, peak_bytes=peak_data,
                 note=f"{N} chains, {BURN_IN} sweeps; peak {format_bytes(peak_data)}")]
    try:
        learning.fit(data, truth, "mle")
        mle_note = "ran"
    except ValueError as err:
        mle_note = f"refused: {err}"
    rows.append(dict(base, method="mle", seconds=None, peak_bytes=None, note=mle_note))
    for method, options in LEARNERS:
        kw = dict(options, record=False)
        if method not in ("mple", "lap"):
            kw.update(max_steps=STEPS, rng=2)
        fit, seconds, peak = _measure(lambda m=method, k=kw: learning.fit(data, truth, m,
                                                                          **k))
        name = method + (f" ({options['estimator']})" if options else "")
        rows.append(dict(base, method=name, seconds=seconds, peak_bytes=peak,
                         note=(f"{fit.n_steps} steps, {fit.stop_reason}; mean |J error| "
                               f"{_coupling_error(fit.model, truth):.3f}; peak "
                               f"{format_bytes(peak)}")))
    return rows
