"""The optimizers :func:`mrflib.learning.learners.fit` drives (private).

``_gradient_ascent`` is the update of section 5 of Yasuda (2018),
``theta <- theta + eta * Delta(theta)``, shared by every method; ``_lbfgs`` is scipy's
L-BFGS-B on the (convex) objective of a local method (MPLE, RM, MPF), evaluated from the
data's local-pattern counts.
"""

from __future__ import annotations

import sys

import numpy as np

from mrflib._support.validation import require_memory


class DivergenceError(FloatingPointError, ValueError):
    """Gradient ascent diverged: a ``FloatingPointError`` (as before) and a ``ValueError``
    naming the arguments to change (``learning_rate``, ``init``, ``solver``)."""


def _gradient_ascent(direction, theta0, free, *, learning_rate, max_steps, tol, ref_coupling,
                     n, record, progress, desc):
    """The shared driver: ``theta <- theta + eta * Delta(theta)`` until ``max|Delta| < tol``.

    Returns ``(theta, n_steps, converged, params, grad_max, mae)``.
    """
    from tqdm import tqdm

    theta = theta0.copy()
    if record:
        require_memory(8.0 * (max_steps + 1) * (theta.size + 2),
                       f"the history of max_steps = {max_steps} steps of {theta.size} "
                       "parameters (record=False keeps none)")
    params = np.empty((max_steps + 1, theta.size)) if record else None
    gmax = np.empty(max_steps + 1) if record else None
    errs = np.empty(max_steps + 1) if (record and ref_coupling is not None) else None
    converged = False
    step = 0
    # None: a bar only on a terminal; a notebook's or a log's stderr would keep every redraw
    shown = progress if progress is not None else sys.stderr.isatty()
    bar = tqdm(total=max_steps, desc=desc, delay=2.0, leave=False, disable=not shown,
               mininterval=0.5)
    try:
        while True:
            d = direction(theta)
            d[~free] = 0.0
            g = float(np.max(np.abs(d))) if d.size else 0.0
            if not np.isfinite(g):
                raise DivergenceError(
                    f"{desc}: the ascent direction became non-finite at step {step}; lower "
                    "learning_rate, start from a smaller init, or use solver='lbfgs' (MPLE, "
                    "RM, MPF)"
                )
            if record:
                params[step] = theta
                gmax[step] = g
                if errs is not None:
                    errs[step] = np.mean(np.abs(theta[n:] - ref_coupling)) if theta.size > n else 0
            if g < tol:
                converged = True
                break
            if step == max_steps:
                break
            theta += learning_rate * d
            step += 1
            bar.update(1)
    finally:
        bar.close()
    if record:
        params = params[: step + 1]
        gmax = gmax[: step + 1]
        if errs is not None:
            errs = errs[: step + 1]
    return theta, step, converged, params, gmax, errs


def _lbfgs(prob, method, theta0, free, *, max_steps, tol, ref_coupling, record):
    """Quasi-Newton path: scipy L-BFGS on the (convex) objective of a local method."""
    from scipy.optimize import minimize

    n = prob.n
    idx = np.flatnonzero(free)

    def full(z):
        theta = theta0.copy()
        theta[idx] = z
        return theta

    local = prob.solver_objective(method)

    def fun(z):
        value, gb, gj = local(full(z), True)
        grad = np.concatenate([gb, gj])[idx]
        return -value, -grad

    trail = [theta0[idx].copy()]

    def callback(intermediate_result):
        trail.append(np.array(intermediate_result.x, copy=True))

    if max_steps:
        res = minimize(fun, theta0[idx], jac=True, method="L-BFGS-B", callback=callback,
                       options=dict(maxiter=max_steps, gtol=tol, ftol=0.0, maxcor=20))
        x, nit = res.x, int(res.nit)
    else:  # scipy's L-BFGS-B makes one iteration even with maxiter=0
        x, nit = theta0[idx].copy(), 0
    theta = full(x)
    params = gmax = errs = None
    if record:
        params = np.array([full(z) for z in trail])
        gmax = np.array([np.max(np.abs(fun(z)[1])) if len(z) else 0.0 for z in trail])
        if ref_coupling is not None:
            errs = np.mean(np.abs(params[:, n:] - ref_coupling), axis=1)
    gfinal = np.max(np.abs(fun(x)[1])) if idx.size else 0.0
    return theta, nit, bool(gfinal < tol), params, gmax, errs
