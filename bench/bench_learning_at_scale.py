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

The committed results are of the full 256x256 lattice, on this machine's two cores, from one
run on one data draw (``MRFLIB_BENCH_SCALE_SIDE=256``, every learner but smci-pcd (mci) and
the two started at the pseudo-likelihood estimate, ``STEPS`` 100,000 and ``TIME_LIMIT``
600, so each gradient learner ran to its stopping rule or for ten minutes, 49 min in all),
with the machine otherwise idle (load 0.7 to 2: the run itself on its two threads). Every
row notes its CPU seconds (``time.process_time``, all threads) and the one-minute load
averages before and after it. The two rows "(from mple)" come from a second run of those
two learners alone, with the same settings and the same data draw (the data and the fits
are seeded), on the same idle machine; each starts at its own pseudo-likelihood fit, whose
seconds its row includes. smci-pcd (mci) runs the general kernels, from an earlier full run
with its own data draw (107 min at loads of 3 to 4; its note says so).

What the run shows: the data take 13 s; MPLE converges in 28 s (57 L-BFGS steps) and LAP in
197 s (196,096 auxiliary fits on two threads); a 1-SMCI step takes 0.47 s, a CD or PCD step
0.36 s and an SMCI-PCD step 0.79 s. CD and PCD meet their stopping rule (the averaged
gradient within its noise) after 1,535 steps in about 9 min, and 1-SMCI with Anderson
acceleration (``solver="anderson"``, the solver the learning-beyond-the-treewidth chapter
uses) meets its own (``max |gradient| < 1e-6``) after 341 steps in under 7 min, each with a
parameter error of 0.208 to 0.210 against MPLE's 0.211 and LAP's 0.208. Two do not finish
in ten minutes from zero: plain 1-SMCI at its default learning rate of 0.2 (1,273 steps,
error 0.367: the fixed-step ascent is still far from the fixed point that Anderson
reaches), and SMCI-PCD (761 steps, error 0.257, its averaged gradient still 9.7 standard
errors from zero; alone for 25 minutes it was at error 0.209 after 1,814 steps, its rule
not yet held). Started at the pseudo-likelihood estimate, both learners that draw finish
well within ten minutes, that fit included: SMCI-PCD after 287 steps in 4.4 min and PCD
after 1,151 in 7.5 min, each at error 0.208. The start removes the approach, which
SMCI-PCD's low noise otherwise makes its rule wait out (see
:mod:`mrflib.learning.stochastic_learning`).
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
#: The ``init`` option of the rows whose learner starts at the pseudo-likelihood estimate (the
#: ``mple`` row's fit, or its own when that row is not run).
START = "mple"
LEARNERS = [("mple", {}), ("lap", {}), ("1-smci", {}), ("1-smci", {"solver": "anderson"}),
            ("cd", {}), ("pcd", {}), ("smci-pcd", {}), ("smci-pcd", {"estimator": "mci"}),
            ("pcd", {"init": START}), ("smci-pcd", {"init": START})]
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


def _name(method: str, options: dict) -> str:
    """A row's method: the learner, then its options' values (``from mple`` for a start at
    the pseudo-likelihood estimate)."""
    values = [f"from {v}" if k == "init" else str(v) for k, v in options.items()]
    return method + (f" ({', '.join(values)})" if values else "")


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
    start = None  # the pseudo-likelihood fit and its seconds, once measured
    for method, options in LEARNERS:
        name = _name(method, options)
        if chosen is not None and name not in chosen:
            rows.append(dict(base, method=name, seconds=None, peak_bytes=None,
                             note="not run (MRFLIB_BENCH_SCALE_LEARNERS)"))
            continue
        kw = dict(options, record=False)
        if method == "lap":
            kw.update(n_jobs=os.cpu_count() or 1)
        if method not in ("mple", "lap"):
            kw.update(max_steps=steps, rng=2, time_limit=time_limit)
        begun = ""
        if kw.get("init") == START:
            if start is None:
                start = _measure(lambda: learning.fit(data, truth, START))[:2]
            kw["init"] = start[0].model
            begun = (f"started at the {START} estimate (its fit {start[1]:.1f} s, included in "
                     "seconds); ")
        fit, seconds, peak, cpu = _measure(lambda m=method, k=kw: learning.fit(data, truth,
                                                                               m, **k))
        if method == START and start is None:
            start = fit, seconds
        rate = fit.n_steps / seconds if method not in ("mple", "lap") else None
        if begun:
            seconds += start[1]
        rows.append(dict(base, method=name, seconds=seconds, peak_bytes=peak, rate=rate,
                         rate_unit="steps/s" if rate else "",
                         note=(f"{fit.n_steps} steps, {fit.stop_reason}; mean |J error| "
                               f"{_coupling_error(fit.model, truth):.3f}; {begun}peak "
                               f"{format_bytes(peak)}; {cpu}")))
        _report(rows[-1])
    return rows
