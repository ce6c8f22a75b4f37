"""The pairwise binary backend of :func:`mrflib.learning.fit`: Boltzmann machines.

The front (:func:`mrflib.learning.learners.fit`) chooses this backend when the structure is
an edge array or a :class:`~mrflib.models.boltzmann.BoltzmannMachine`, and documents the
methods. Here: the arguments checked into one record (:class:`_Run`), the solvers with a loop
of their own (exact maximum likelihood by L-BFGS-B, LAP clique by clique), and the shared
gradient-ascent or L-BFGS driver of every other method (Yasuda 2018, section 5:
``w <- w + eta * Delta``), with the ascent directions of
:mod:`mrflib.learning._ascent_directions`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.anderson import Anderson
from mrflib._support.averaging import AveragedRule, default_tol
from mrflib._support.optimizers import (
    Deadline,
    gradient_ascent,
    lbfgs_verdict,
    local_lbfgs,
    time_limited,
)
from mrflib._support.validation import check_positive
from mrflib.learning import _limits
from mrflib.learning._ascent_directions import direction_fn
from mrflib.learning._fit_arguments import (
    TABLE,
    initial_theta,
    reference_coupling,
    settings,
)
from mrflib.learning._maximum_likelihood import fit_exact
from mrflib.learning._problem import Problem
from mrflib.learning.fit_result import Fit

__all__ = ["fit"]


def fit(data: Any, structure: Any, method: str, n: Any, rng: Any, bias: Any, solver: Any,
        learning_rate: Any, max_steps: Any, tol: Any, init: Any, reference: Any, record: Any,
        progress: Any, time_limit: Any, options: dict) -> Fit:
    """:func:`mrflib.learning.learners.fit` of a Boltzmann machine, its arguments as the
    front received them (checked here)."""
    run = _validated(data, structure, method, n, rng, bias, solver, learning_rate, max_steps,
                     tol, init, reference, record, progress, time_limit, options)
    with _limits.fit_reporting(progress):
        if run.solver in ("exact", "lap"):
            return _fit_own_loop(run)
        out, state, rule = _iterate(run)
    return _iterative_fit(run, out, state, rule)


def _fit_exact_mle(prob, bias, init, max_steps, tol, ref_coupling, record, t0,
                   deadline: Deadline, engine: str = "auto") -> Fit:
    """``solver="exact"``: :func:`mrflib.learning._maximum_likelihood.fit_exact` (L-BFGS-B
    on the exact likelihood; ``engine`` enumeration up to 20 spins, the junction tree
    beyond), with its ``max_iter`` = ``max_steps`` and ``tol`` when given, else its own
    defaults (``10000``, ``1e-9``). ``converged`` is true only if the MLE exists and
    ``max |gradient| < tol`` at the returned point (``tol`` defaulting to ``1e-6`` as for
    the other methods); ``stop_reason`` says why it stopped."""
    n = prob.n
    kw = {}
    if max_steps is not None:
        kw["max_iter"] = check_positive(max_steps, "max_steps", integer=True)
    if tol is not None:
        kw["tol"] = check_positive(tol, "tol")
    with time_limited(deadline, "fit mle (L-BFGS)"):  # fit_exact's L-BFGS obeys it
        model, res = fit_exact(prob.x, prob.edges, n, bias=bool(bias), init=init,
                               engine=engine, **kw)
    theta = np.concatenate([np.asarray(model.bias, float), np.asarray(model.coupling, float)])
    params = theta[None, :] if record else None
    errs = None
    if record and ref_coupling is not None:
        errs = np.array([np.mean(np.abs(theta[n:] - ref_coupling)) if prob.E else 0.0])
    # judged at the caller's tol (1e-6 by default, as for the other methods) by the rule
    # of every L-BFGS fit; the fit itself ran at fit_exact's tol
    tol = kw.get("tol", 1e-6)
    _, converged, reason = lbfgs_verdict(res, tol, kw.get("max_iter", 10_000))
    converged = bool(res.mle_exists and converged)
    if not res.mle_exists:
        reason = str(res.message)
    return Fit(model, "mle", "exact", int(res.nit), converged,
               time.perf_counter() - t0, params, None, errs,
               dict(kw, bias=bool(bias)), stop_reason=reason)


def _fit_lap(prob, bias, init, max_steps, tol, ref_coupling, record, t0, options,
             deadline: Deadline) -> Fit:
    """``method="lap"``: :func:`mrflib.learning.lap.fit_ising` on the problem's graph (the same
    machine); ``n_steps`` is the most Newton iterations a clique took, ``converged``
    that every clique's Newton iteration converged. Stopped by ``deadline``, the cliques
    not yet fitted keep their parameters at zero
    (:func:`mrflib.learning._lap_ising.fit_ising_info`)."""
    from mrflib.learning._lap_ising import fit_ising_info, stopped_reason

    if not bias:
        raise ValueError("method 'lap' estimates the biases; bias must be True")
    if init is not None:
        raise ValueError("method 'lap' has no initial parameters; init must be None")
    kw = dict(options)
    if max_steps is not None:
        kw["max_iter"] = check_positive(max_steps, "max_steps", integer=True)
    if tol is not None:
        kw["tol"] = check_positive(tol, "tol")
    model, info = fit_ising_info(prob.x, prob.graph, prob.n, deadline=deadline, **kw)
    theta = model.params
    errs = None
    if record and ref_coupling is not None:
        errs = np.array([np.mean(np.abs(theta[prob.n:] - ref_coupling)) if prob.E else 0.0])
    iters = np.asarray(info["iterations"])
    converged = bool(np.all(info["converged"])) and not info["missing"]
    bad = int(np.sum(~np.asarray(info["converged"], dtype=bool)))
    reason = (f"converged: every one of {info['n_cliques']} clique fits" if converged
              else f"{bad} of {info['n_cliques']} clique fits reached max_iter")
    if info["missing"]:
        reason = f"the LAP estimate does not exist: {'; '.join(info['missing'])} ({reason})"
    if deadline.hit:
        converged, reason = False, stopped_reason(deadline, info)
    return Fit(model, "lap", "lap", int(iters.max(initial=0)), converged,
               time.perf_counter() - t0, theta[None, :] if record else None, None, errs,
               {k: v for k, v in kw.items() if k != "scheduler"}, stop_reason=reason)


@dataclass(frozen=True)
class _Run:
    """The validated arguments of one fit of a Boltzmann machine, the defaults filled in
    (:func:`mrflib.learning._fit_arguments.settings`). ``max_steps_given`` and
    ``tol_given`` are the caller's own, which the exact and LAP solvers take (``None``:
    their own defaults); ``t0`` and ``deadline`` count from the call."""

    prob: Problem
    method: str
    solver: str
    learning_rate: float
    max_steps: int
    tol: float
    max_steps_given: Any
    tol_given: Any
    bias: bool
    init: Any
    ref_coupling: np.ndarray | None
    record: bool
    progress: bool | None
    rng: Any
    options: dict
    t0: float
    deadline: Deadline


def _validated(data, structure, method, n, rng, bias, solver, learning_rate, max_steps, tol,
               init, reference, record, progress, time_limit, options) -> _Run:
    """:func:`fit`'s arguments for a Boltzmann machine, checked in this order (the first
    bad one is the error): time limit, method and options, data and structure, reference;
    ``init`` and a method's own options are checked where they are used."""
    t0 = time.perf_counter()
    deadline = _limits.deadline(time_limit)
    solver, learning_rate, steps, tolerance, rng = settings(
        method, options, bias, solver, learning_rate, max_steps, tol, progress, rng)
    prob = Problem(data, structure, n)
    ref_coupling = reference_coupling(reference, prob.E)
    if options.get("schedule", "constant") == "averaged" and tol is None:
        # spins and their products: standard deviation <= 1
        tolerance = default_tol(prob.x.shape[0], 1.0)
    return _Run(prob, method, solver, learning_rate, steps, tolerance, max_steps, tol, bias,
                init, ref_coupling, record, progress, rng, options, t0, deadline)


def _fit_own_loop(run: _Run) -> Fit:
    """The fit of a solver with its own loop and defaults: ``"exact"`` (MLE by L-BFGS-B,
    :func:`_fit_exact_mle`) or ``"lap"`` (:func:`_fit_lap`)."""
    head = (run.prob, run.bias, run.init, run.max_steps_given, run.tol_given,
            run.ref_coupling, run.record, run.t0)
    if run.solver == "exact":
        return _fit_exact_mle(*head, run.deadline, run.options.get("engine", "auto"))
    return _fit_lap(*head, run.options, run.deadline)


def _iterate(run: _Run) -> tuple[tuple, dict | None, AveragedRule | None]:
    """The L-BFGS run or the gradient ascent (``"anderson"``: accelerated) of a fit from
    its initial parameters: the loop's output, the chains' state of a method that keeps
    them, and the rule of the averaged schedule."""
    prob = run.prob
    P = prob.n + prob.E
    theta0, free = initial_theta(run.init, run.bias, prob.n, P)
    if run.solver == "lbfgs":
        out = local_lbfgs(prob, run.method, theta0, free, max_steps=run.max_steps, tol=run.tol,
                          ref_coupling=run.ref_coupling, record=run.record, deadline=run.deadline)
        return out, None, None
    averaged = run.options.get("schedule", "constant") == "averaged"
    rule = AveragedRule(P, run.tol) if averaged else None
    direction = direction_fn(prob, run.method, run.rng, run.options)
    accelerated = Anderson(P, run.learning_rate) if run.solver == "anderson" else None
    theta, steps, converged, *history = gradient_ascent(
        direction, theta0, free, learning_rate=run.learning_rate, max_steps=run.max_steps,
        tol=run.tol, ref_coupling=run.ref_coupling, n=prob.n, record=run.record,
        progress=run.progress, desc=f"fit {run.method}", deadline=run.deadline,
        averaged=rule, accelerated=accelerated,
    )
    return (theta, steps, converged, None, *history), getattr(direction, "state", None), rule


def _iterative_fit(run: _Run, out: tuple, state: dict | None,
                   rule: AveragedRule | None = None) -> Fit:
    """The :class:`Fit` of a gradient-ascent or L-BFGS run: its model, history and the
    reason it stopped."""
    theta, steps, converged, reason, params, gmax, errs = out
    model = run.prob.model(theta)
    opts = {k: v for k, v in run.options.items() if k != "samples"}
    if rule is not None:
        converged, reason = _limits.averaged_verdict(rule, steps, run.max_steps, run.deadline)
    elif reason is None:  # gradient ascent (L-BFGS's verdict comes with it)
        converged, reason = _limits.gradient_verdict(
            converged, steps, run.max_steps, run.tol, run.deadline,
            stochastic=TABLE[run.method].stochastic)
    return Fit(model, run.method, run.solver, steps, converged, time.perf_counter() - run.t0,
               params, gmax, errs,
               dict(opts, learning_rate=run.learning_rate, tol=run.tol, bias=bool(run.bias)),
               None if state is None else state["chains"], reason,
               checks=None if rule is None else rule.history())
