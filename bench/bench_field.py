"""Fit time of every learner on real data: scikit-learn's digits as 64 spins.

The 1000-image training split of the field-test chapter (plus its 8 pseudo-images) is fitted
on the 8x8 square and king's-move lattices by every learner of ``mrflib.repro.field_test``
with the chapter's default options. The same-run baseline is scikit-learn's node-wise
logistic regression (the usual pseudo-likelihood estimator, one ``LogisticRegression`` per
node); ratio = baseline seconds / learner seconds (> 1: the learner is faster). Each time is
the wall time of one fit after a warm-up fit on a 4x4 crop (numba compilation excluded).
Quick mode: the 4x4 crop only.
"""

from __future__ import annotations

import time

import numpy as np

from mrflib import datasets
from mrflib.repro import field_test as ft

BASELINE = "sklearn node-wise logistic"


def _row(case, method, seconds, base_seconds, note):
    return dict(benchmark="field", case=case, method=method, seconds=float(seconds),
                baseline=None if method == BASELINE else BASELINE,
                ratio=None if method == BASELINE else base_seconds / seconds,
                rate=None, rate_unit="", note=note)


def run(quick: bool = False) -> list[dict]:
    x_all, _ = datasets.digits()
    tr, _ = ft.split(len(x_all), 1000, 0)
    small = np.vstack([ft.crop(x_all[tr], 4), ft.pseudo_images(4)])
    for learner in ft.LEARNERS:  # warm-up: compile every kernel once
        ft.fit_learner(small, ft.lattice("king", 4), learner, rng=0,
                       **({"max_steps": 5} if learner not in ("mle", "lap") else {}))
    rows = []
    side = 4 if quick else 8
    train = np.vstack([ft.crop(x_all[tr], side), ft.pseudo_images(side)])
    for kind in ("square", "king"):
        edges = ft.lattice(kind, side)
        case = f"digits {side}x{side}, {kind} lattice ({len(edges)} edges), N = {len(train)}"
        t0 = time.perf_counter()
        ft.nodewise_logistic(train, edges)
        base = time.perf_counter() - t0
        rows.append(_row(case, BASELINE, base, base, "C = 1e6, lbfgs, one fit per node"))
        for learner in ft.LEARNERS:
            _, seconds, info = ft.fit_learner(train, edges, learner, rng=0)
            note = f"{info['n_steps']} steps, converged {info['converged']}; " + \
                ", ".join(f"{k}={v}" for k, v in ft.DEFAULT_OPTIONS[learner].items())
            rows.append(_row(case, learner, seconds, base, note))
            print(f"  {kind} {learner}: {seconds:.2f} s", flush=True)
    return rows


if __name__ == "__main__":
    import sys

    for r in run(quick="--quick" in sys.argv):
        print(r)
