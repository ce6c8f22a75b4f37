"""Factor-graph pseudo-likelihood against scikit-learn, measured in the same run.

3-state Potts lattices (``factor_models.potts_lattice``: unary and pairwise free tables),
data from 20 Gibbs sweeps (mean coupling 0.4, well below the q = 3 transition at 1.005:
the chains mix in a few sweeps). ``learning.fit(data, structure, "mple")`` (the data's
distinct contexts, a variable and a state of its Markov blanket, counted once; numba
kernel; L-BFGS to max |gradient| < 1e-6) against the standard Potts pseudo-likelihood
baseline: one unpenalized multinomial ``LogisticRegression`` per variable (L-BFGS, tol
1e-6) on the one-hot states of its neighbours (state 0 dropped), BLAS on one thread. The
node-wise regressions do not tie an edge's two estimates, so their summed conditional
log-likelihood is at least the joint pseudo-likelihood's maximum; the check: that gap is
non-negative and below (untied parameters) / N per sample (its chi-square scale), and the
pair potentials agree (mrflib's normalized ``V_ij`` against the mean of the two regressions'
estimates) within 0.1. Target: at least 10x at every size.
"""

from __future__ import annotations

import warnings

import numpy as np

from bench.bench_learning import _best
from mrflib import graphs, learning
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import potentials, table_learners
from mrflib.models import lattices as factor_models

Q = 3


def _one_hot(x: np.ndarray) -> np.ndarray:
    """States ``(N, k)`` to indicators of states ``1..Q-1`` ``(N, k (Q - 1))``."""
    return (x[:, :, None] == np.arange(1, Q)[None, None, :]).reshape(len(x), -1).astype(float)


def sklearn_potts_pseudolikelihood(data, nbrs, tol=1e-6):
    """The peer: one multinomial logistic regression of ``x_i`` on its neighbours' one-hot
    states per variable; returns the fitted models (``None`` for a constant variable)."""
    from sklearn.linear_model import LogisticRegression

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, nb in enumerate(nbrs):
            y = data[:, i]
            if np.all(y == y[0]):
                out.append(None)
                continue
            lr = LogisticRegression(penalty=None, solver="lbfgs", tol=tol, max_iter=1000)
            lr.fit(_one_hot(data[:, nb]), y)
            out.append(lr)
    return out


def _agreement(fit_model, regressions, data, nbrs, edges):
    """(joint PL gap per sample, max |V_ij - mean of the regressions' V_ij|)."""
    untied = 0.0
    for i, lr in enumerate(regressions):
        proba = lr.predict_proba(_one_hot(data[:, nbrs[i]]))
        untied += np.mean(np.log(proba[np.arange(len(data)), data[:, i]]))
    gap = untied - table_learners.pseudo_log_likelihood(fit_model, data)
    V = potentials.factor_graph_potentials(fit_model)
    worst = 0.0
    for i, j in edges.tolist():
        est = []
        for a, b in ((i, j), (j, i)):
            lr = regressions[a]
            col = int(np.flatnonzero(nbrs[a] == b)[0]) * (Q - 1)
            coef = lr.coef_[:, col:col + Q - 1]          # (classes, states 1..Q-1 of b)
            rel = coef[1:] - coef[0]                      # V(x_a = 1.., x_b = 1..)
            est.append(rel if a == i else rel.T)
        worst = max(worst, float(np.max(np.abs(V[(i, j)][1:, 1:] - np.mean(est, axis=0)))))
    return gap, worst


def _case(side, N, repeats):
    from threadpoolctl import threadpool_limits

    truth = factor_models.potts_lattice(side, side, Q, coupling=0.4, rng=side)
    data = factor_gibbs.gibbs(truth, N, burn_in=20, rng=side + 1)
    edges = graphs.square_grid(side, side)
    nbrs = graphs.neighbours(edges, side * side)

    def ours():
        return learning.fit(data, truth, "mple", tol=1e-6, record=False)

    ours()  # warm-up: numba compilation
    t_ours, fit = _best(ours, repeats)
    with threadpool_limits(limits=1, user_api="blas"):
        sklearn_potts_pseudolikelihood(data[:200], nbrs[:1])  # warm-up (imports)
        t_sk, regs = _best(lambda: sklearn_potts_pseudolikelihood(data, nbrs),
                           max(1, repeats // 2))
    gap, worst = _agreement(fit.model, regs, data, nbrs, edges)
    extra = len(edges) * (Q - 1) ** 2  # parameters the regressions do not tie
    if not (-1e-9 <= gap < extra / N and worst < 0.1):
        raise AssertionError(f"{side}x{side}, N = {N}: the peers disagree (PL gap {gap:.3g} "
                             f"per sample, max |V_ij difference| {worst:.3g})")
    return dict(
        benchmark="Potts pseudo-likelihood vs scikit-learn",
        case=f"{side}x{side} lattice, q = {Q}, N = {N}", method="mple (factor graph)",
        seconds=t_ours, baseline="scikit-learn multinomial LogisticRegression per node",
        ratio=t_sk / t_ours, rate=None, rate_unit="", size=N, size_unit="N",
        group=f"{side}x{side}",
        note=(f"{fit.n_steps} L-BFGS steps; scikit-learn (one BLAS thread) {t_sk:.3f} s; "
              f"untied-minus-joint PL {gap:.1e}/sample, max |dV_ij| {worst:.3f}"),
    )


def run(quick: bool = False) -> list[dict]:
    cases = [(4, 2_000)] if quick else [(8, 2_000), (8, 20_000), (16, 20_000)]
    repeats = 1 if quick else 3
    return [_case(side, N, repeats) for side, N in cases]
