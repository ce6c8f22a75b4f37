"""Every factor-graph learner that scales, on a 256x256 Potts lattice (q = 4, 65,536 variables).

The truth is ``lattices.potts_lattice(256, 256, 4, coupling=0.4)`` (ferromagnetic couplings
uniform on [0, 0.8], fields on [-0.2, 0.2]: below the q = 4 transition at log(1 + 2) =
1.10, so Gibbs chains mix in tens of sweeps); the N = 1,000 samples are drawn by
:func:`mrflib.inference.sampling.chains.gibbs`, ``CHAINS`` chains from random states, each
recording a state every ``THIN`` sweeps after ``BURN_IN``; the data row's note gives the
Gelman-Rubin R-hat of the samples' log-weight across the chains (near 1: the chains agree).
Each learner's row gives its wall time and peak memory (tracemalloc, numpy buffers
included) for a fixed budget of work: MPLE and LAP to their tolerances (LAP's independent
auxiliary fits on every core: ``n_jobs=os.cpu_count()``, threads in this process for this
pairwise model, so its peak memory is the whole fit's); the gradient
learners (1-SMCI, CD, PCD, SMCI-PCD) for ``STEPS`` steps, so their rows are the cost of
that many steps (their time grows linearly with the steps; ``rate`` is steps per second),
not of a converged fit; each row's note gives the mean absolute error of the fitted pair
tables against the truth's (both in normalized form). Exact ML is refused by name (its row
records the refusal). ``--quick``: a 16x16 lattice.

Size. ``make bench`` runs a 32x32 lattice (a few minutes); the environment variable
``MRFLIB_BENCH_SCALE_SIDE`` sets the side, 256 for the full size, and
``MRFLIB_BENCH_SCALE_LEARNERS`` (comma-separated row names, for example
``mple,1-smci,cd,pcd``) the learners run; the others' rows say they were not run;
``MRFLIB_BENCH_SCALE_STEPS`` the gradient learners' most steps (default 5) and
``MRFLIB_BENCH_SCALE_TIME_LIMIT`` their ``time_limit`` in seconds (default none): with
enough steps a learner that draws runs to its stopping rule or to that limit, and its
row says which ended it. Each row is printed
to stderr as it is measured, so a long run shows where it is.

The committed results are of the full 256x256 lattice, 2 gradient steps each, on this
machine's two cores shared with other work; every row measured by the current kernels
notes its CPU seconds (``time.process_time``, the fair measure on a shared machine) and
the one-minute load averages before and after it. They come from several runs on the
same data draw (bit for bit), each row from the last run of its learner:

* data, cd and pcd: the pairwise Gibbs kernel compiled for q states on site-major uint8
  chains, CD and PCD holding the data and their chains in that layout (loads 4.2 to 4.7):
  the data 22 s of CPU (27 s wall, numba's cache loads included), CD 10 s and PCD 11 s of
  CPU for the fit (setup, the data's counts, and three direction evaluations of about
  1.3 s of CPU each: one sweep of 1,000 chains and the counting pass);
* 1-smci: 1-SMCI of the scopes by tables over the configurations of each variable's
  neighbours (:mod:`mrflib.inference.smci._scope_patterns`; loads 4 to 6.5): 15.7 s of
  CPU for the fit. Profiled alone, one evaluation takes 2.8 to 4.0 s of CPU on one thread
  (the kernel 2.2 to 3.5 s of it); the kernels run on one thread unless two cores are
  idle (:func:`mrflib._support.threads.parallel_ok`);
* smci-pcd: the same 1-SMCI, its persistent chains held site-major as uint8 for the whole
  fit as CD's and PCD's are (the sweep runs in place, the keys of the neighbours'
  configurations read the chains with no transpose, the data's counts read the unswept
  chains) and the log-weights summed once a step (loads 3.2 to 3.6): 22.8 s of CPU for
  the fit, of which about 5 s is its setup (packing the structure, laying out and
  counting the data, the final chains in rows). One evaluation, from runs of its own on
  the same data (a 3-step fit less a 1-step fit, halved; loads 3.1 to 3.6), takes 2.3 s
  of CPU (4.3 s with the chains in rows: three transposes a step and the weights summed
  twice), 5.2 s against 7.5 s with numba held to one thread: the figures move by a
  factor of two with the other work on the machine, the difference of about 2 s does not;
* mple: the pseudo-likelihood over contexts whose part linear in the log-weights is counted
  once per fit, L-BFGS (10 pairs) on centred, curvature-scaled parameters
  (:mod:`mrflib.learning._centering`) with scipy's BLAS on one thread (loads 3.6 to 3.9,
  the machine's two cores shared with two other engineers' work): 124 s of CPU for 58
  L-BFGS steps to the stopping rule, 186 s wall (the same run at loads 6.5 to 5.6 took
  the same 124 s of CPU and 450 s wall, same bits; on an idle machine the wall time is
  at most the CPU time, less where the kernel runs on both cores). The previous kernels
  took 283 s of CPU (407 s wall, loads 6.2 falling to 2.6) for 133 steps: the plain
  parameters took more than twice the steps, and scipy's L-BFGS-B ran on OpenBLAS's two
  threads, about five times its single-thread CPU on the loaded machine. Mean |J error|
  0.211 either way;
* lap: the pairwise LAP kernels (:mod:`mrflib.learning._pairwise_lap_kernels`: the Hessian
  summed by the base functions of the scope, kept near the optimum) on two threads, the
  same estimates as the general kernels (mean |J error| 0.208 in both runs): 1,493 s of
  CPU (both threads, the Python setup of each batch included) for 196,096 auxiliary fits,
  2,807 s wall at loads of 7.4 falling to 3.2, the machine shared with other benchmarks
  (about half a core for this run on average);
* smci-pcd (mci): the general kernels, from an earlier full run with its own data draw (107
  min at loads of 3 to 4; its note says so).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc

import numpy as np

from mrflib import learning
from mrflib._support.validation import format_bytes
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning.potentials import normalize
from mrflib.models import lattices

Q = 4
N = 1000
CHAINS = 100
BURN_IN = 100
THIN = 10
STEPS = 5
LEARNERS = [("mple", {}), ("lap", {}), ("1-smci", {}), ("cd", {}), ("pcd", {}),
            ("smci-pcd", {}), ("smci-pcd", {"estimator": "mci"})]
EXTRA_COLUMNS = ["peak_bytes"]


def _coupling_error(model, truth) -> float:
    """Mean absolute error of the pair tables, both in normalized form (every fit returns
    it: entries with a state 0 are zero; a Potts table ``J [a = b]`` normalizes to
    ``J ([a = b] + 1)`` for ``a, b >= 1``), over the entries ``a, b >= 1``."""
    truth = normalize(truth)
    errs = [np.mean(np.abs(t[1:, 1:] - s[1:, 1:]))
            for t, s, scope in zip(model.log_tables, truth.log_tables, truth.scopes)
            if len(scope) == 2]
    return float(np.mean(errs))


def _r_hat(log_weights: np.ndarray, n_chains: int) -> float:
    """Gelman-Rubin R-hat of a scalar recorded by ``n_chains`` chains (rows laid out as
    :func:`mrflib.inference.sampling.chains.gibbs` lays them out: time, then chain)."""
    per_chain = log_weights.reshape(-1, n_chains).T
    n = per_chain.shape[1]
    within = per_chain.var(axis=1, ddof=1).mean()
    between = n * per_chain.mean(axis=1).var(ddof=1)
    return float(np.sqrt(((n - 1) / n * within + between / n) / within))


def _load() -> str:
    """The one-, five- and fifteen-minute load averages (``/proc/loadavg``), or "n/a"."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def _measure(fn):
    """``fn()``, its wall seconds and peak memory, and a note of its CPU seconds
    (``time.process_time``: the fair measure on a loaded machine) and the load averages
    before and after."""
    before = _load()
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        out = fn()
    finally:
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return out, seconds, peak, (f"{cpu:.1f} CPU s (process_time); load average {before} "
                                f"before, {_load()} after")


def _report(row: dict) -> None:
    seconds = "" if row["seconds"] is None else f" {row['seconds']:.1f} s"
    print(f"[learning at scale] {row['method']}:{seconds} {row['note']}", file=sys.stderr,
          flush=True)


def run(quick: bool = False, side: int | None = None) -> list[dict]:
    if side is None:
        side = 16 if quick else int(os.environ.get("MRFLIB_BENCH_SCALE_SIDE", "32"))
    steps = int(os.environ.get("MRFLIB_BENCH_SCALE_STEPS", str(STEPS)))
    limit = os.environ.get("MRFLIB_BENCH_SCALE_TIME_LIMIT")
    time_limit = None if limit is None else float(limit)
    truth = lattices.potts_lattice(side, side, Q, coupling=0.4, rng=0)
    data, t_data, peak_data, cpu_data = _measure(lambda: factor_gibbs.gibbs(
        truth, N, burn_in=BURN_IN, thin=THIN, n_chains=CHAINS, rng=1))
    case = f"{side}x{side} Potts lattice, q = {Q}, N = {N}"
    base = dict(benchmark="Factor-graph learners at scale", case=case, baseline="",
                ratio=None, rate=None, rate_unit="", size=side * side, size_unit="variables")
    rows = [dict(base, method="data: gibbs", seconds=t_data, peak_bytes=peak_data,
                 note=(f"{CHAINS} chains, {BURN_IN} sweeps of burn-in, one state every "
                       f"{THIN} sweeps; R-hat of the log-weight "
                       f"{_r_hat(truth.log_weight(data), CHAINS):.3f}; peak "
                       f"{format_bytes(peak_data)}; {cpu_data}"))]
    _report(rows[-1])
    try:
        learning.fit(data, truth, "mle")
        mle_note = "ran"
    except ValueError as err:
        mle_note = f"refused: {err}"
    rows.append(dict(base, method="mle", seconds=None, peak_bytes=None, note=mle_note))
    _report(rows[-1])
    chosen = os.environ.get("MRFLIB_BENCH_SCALE_LEARNERS")
    chosen = None if chosen is None else {c.strip() for c in chosen.split(",")}
    for method, options in LEARNERS:
        name = method + (f" ({options['estimator']})" if options else "")
        if chosen is not None and name not in chosen:
            rows.append(dict(base, method=name, seconds=None, peak_bytes=None,
                             note="not run (MRFLIB_BENCH_SCALE_LEARNERS)"))
            continue
        kw = dict(options, record=False)
        if method == "lap":
            kw.update(n_jobs=os.cpu_count() or 1)
        if method not in ("mple", "lap"):
            kw.update(max_steps=steps, rng=2, time_limit=time_limit)
        fit, seconds, peak, cpu = _measure(lambda m=method, k=kw: learning.fit(data, truth,
                                                                               m, **k))
        rate = fit.n_steps / seconds if method not in ("mple", "lap") else None
        rows.append(dict(base, method=name, seconds=seconds, peak_bytes=peak, rate=rate,
                         rate_unit="steps/s" if rate else "",
                         note=(f"{fit.n_steps} steps, {fit.stop_reason}; mean |J error| "
                               f"{_coupling_error(fit.model, truth):.3f}; peak "
                               f"{format_bytes(peak)}; {cpu}")))
        _report(rows[-1])
    return rows
