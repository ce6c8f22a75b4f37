"""The optimizers every learner drives (private).

:func:`gradient_ascent` is the update of section 5 of Yasuda (2018),
``theta <- theta + eta * Delta(theta)``, shared by every method. :func:`lbfgs` is the one
place the library calls scipy's L-BFGS-B, with one convergence rule (:func:`lbfgs_verdict`)
for every fit that uses it: exact ML of either model family, the pseudo-likelihood,
ratio-matching and MPF learners, the full-span log-linear fit and LAP's reference clique
fit. :func:`local_lbfgs` is L-BFGS on the (convex) objective of a local method (MPLE, RM, MPF),
evaluated from the data's local-pattern counts.

A :class:`Deadline` bounds any of them in wall time: the gradient loop polls it after
every step and L-BFGS after every iteration (through scipy's callback, which stops the
solver by raising ``StopIteration``), and the fit keeps the iterate it stopped at. Both
loops report their progress through :mod:`mrflib._support.progress`.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mrflib._support import progress as _progress
from mrflib._support.validation import require_memory


class Deadline:
    """A wall-time limit of ``seconds`` from its creation (``None``: no limit), polled by
    a fit's step loop.

    The loop that stops on it sets ``hit``, so that the fit reports the one stop reason
    every learner gives (:meth:`reason`). ``clock`` is :func:`time.monotonic` (a test may
    give a fake one).
    """

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self.start = clock()
        self.hit = False

    def expired(self) -> bool:
        """Whether the limit has passed (never without one)."""
        return self.seconds is not None and self.clock() - self.start >= self.seconds

    def fraction(self) -> float:
        """The share of the limit used so far (0 without a limit)."""
        if self.seconds is None:
            return 0.0
        used = self.clock() - self.start
        return 1.0 if self.seconds <= 0 else min(1.0, used / self.seconds)

    def reason(self, done: int, what: str = "steps") -> str:
        """The stop reason of a fit this limit ended after ``done`` ``what``."""
        return f"time limit of {self.seconds:g} s reached after {done} {what}"


#: The deadline :func:`lbfgs` obeys, and the name its progress lines give it, when its
#: caller passes none: set by :func:`time_limited` around a solver whose signature takes
#: neither.
_ACTIVE: dict[str, Any] = {"deadline": None, "desc": "L-BFGS"}


@contextlib.contextmanager
def time_limited(deadline: Deadline | None, desc: str = "L-BFGS") -> Iterator[None]:
    """Make ``deadline`` the one every :func:`lbfgs` call in the block obeys, and ``desc``
    the name of its progress lines."""
    old = dict(_ACTIVE)
    _ACTIVE.update(deadline=deadline, desc=desc)
    try:
        yield
    finally:
        _ACTIVE.update(old)


def step_ticker(what: str, max_steps: int,
                deadline: Deadline | None) -> Callable[[int], None] | None:
    """A progress ticker over steps: the share done is ``step / max_steps`` or the share
    of the time limit used, whichever is nearer the end; ``None`` when no one listens."""
    if not _progress.active():
        return None
    state = {"step": 0}
    tick = _progress.ticker(what, 1.0, detail=lambda: f" (step {state['step']} of {max_steps})")

    def step_tick(step: int) -> None:
        state["step"] = step
        by_steps = step / max_steps if max_steps else 1.0
        tick(max(by_steps, deadline.fraction() if deadline is not None else 0.0))
    return step_tick


class DivergenceError(FloatingPointError, ValueError):
    """Gradient ascent diverged: a ``FloatingPointError`` (as before) and a ``ValueError``
    naming the arguments to change (``learning_rate``, ``init``, ``solver``)."""


def gradient_ascent(direction: Callable[[np.ndarray], np.ndarray], theta0: np.ndarray,
                    free: np.ndarray, *, learning_rate: float, max_steps: int, tol: float,
                    ref_coupling: np.ndarray | None, n: int, record: bool,
                    progress: bool | None, desc: str, deadline: Deadline | None = None,
                    averaged: Any = None, accelerated: Any = None) -> tuple:
    """The shared driver: ``theta <- theta + eta * Delta(theta)`` until ``max|Delta| < tol``,
    ``max_steps`` or, after at least one step, the ``deadline`` (which it then marks
    ``hit``): a fit stopped by its deadline at step ``k`` is the fit of ``max_steps = k``.

    With ``accelerated``, an :class:`mrflib._support.anderson.Anderson` (for a
    deterministic ``Delta`` only), that object takes each step instead of the plain
    update and may send the iteration back to its last kept iterate, which the step then
    records; the stopping rule is the same.

    With ``averaged``, an :class:`mrflib._support.averaging.AveragedRule`, the stopping
    rule is that object's instead of ``max|Delta| < tol`` (``tol`` is unused): it takes
    every ``(theta, Delta)``, and the parameters returned and recorded at each step are
    its estimate (the window's average of the iterates), what a fit stopped there returns.

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
    hint = ("lower learning_rate, start from a smaller init, or use solver='lbfgs' (MPLE, "
            "RM, MPF)" if averaged is None else "lower learning_rate or start from a smaller "
            "init")
    converged = False
    step = 0
    # None: a bar only on a terminal (a notebook's or a log's stderr would keep every
    # redraw); no total: a fit stops at its rule, usually long before max_steps, so a
    # bar sized to max_steps would promise a wait that never comes; it shows the steps,
    # their rate and what the rule looks at instead
    shown = progress if progress is not None else sys.stderr.isatty()
    bar = tqdm(total=None, desc=desc, delay=2.0, leave=False, disable=not shown,
               mininterval=0.5, unit="step")
    tick = step_ticker(desc, max_steps, deadline)
    try:
        while True:
            d = direction(theta)
            d[~free] = 0.0
            if accelerated is not None:
                theta, d = accelerated.check(theta, d)
            g = float(np.max(np.abs(d))) if d.size else 0.0
            if not np.isfinite(g):
                raise DivergenceError(f"{desc}: the ascent direction became non-finite at "
                                      f"step {step}; {hint}")
            if averaged is None:
                converged, est = g < tol, theta
            else:
                converged, est = averaged.add(theta, d), averaged.estimate()
            if record:
                params[step] = est
                gmax[step] = g
                if errs is not None:
                    errs[step] = np.mean(np.abs(est[n:] - ref_coupling)) if est.size > n else 0
            if converged or step == max_steps:
                break
            if step and deadline is not None and deadline.expired():
                deadline.hit = True
                break
            if accelerated is None:
                theta += learning_rate * d
            else:
                theta = accelerated.step(theta, d)
            step += 1
            if step % 64 == 0 and not bar.disable:
                bar.set_postfix_str(_watched(g, tol, averaged), refresh=False)
            bar.update(1)
            if tick is not None:
                tick(step)
    finally:
        bar.close()
    if record:
        params = params[: step + 1]
        gmax = gmax[: step + 1]
        if errs is not None:
            errs = errs[: step + 1]
    final = theta if averaged is None else averaged.estimate().copy()
    return final, step, converged, params, gmax, errs


def _watched(g: float, tol: float, averaged: Any) -> str:
    """What the stopping rule looks at, for the progress bar."""
    if averaged is None:
        return f"max|grad| {g:.2e} (tol {tol:g})"
    c = averaged.last
    return "" if c is None else f"|avg grad| {c['grad_norm']:.2e} (SE {c['se_norm']:.2e})"


#: float64's unit roundoff, the relative error of an evaluated objective's last bits.
_EPS = float(np.finfo(np.float64).eps)
#: The rounding of an objective summed over many terms, in units of ``eps |f|``: a decrease
#: predicted below it cannot be told from rounding by a line search.
ROUNDING = 4.0


def lbfgs(fun: Callable, x0: np.ndarray, *, max_iter: int, tol: float, memory: int = 10,
          max_evals: int = 15_000, trace: list | None = None, polish: int = 0,
          deadline: Deadline | None = None, desc: str | None = None,
          precondition: tuple[Any, Any] | None = None) -> Any:
    """Minimize ``fun(x) -> (f, gradient)`` by scipy's L-BFGS-B, then judge the result.

    scipy runs with ``gtol = tol`` (its test is ``max |gradient| <= tol``), ``ftol = 0``
    (no stop on a small relative decrease), ``maxcor = memory`` and ``maxfun =
    max_evals`` (scipy's own defaults are 10 and 15,000). ``trace``, a list, receives a
    copy of every iterate. ``polish`` allows up to that many quasi-Newton steps
    (:func:`_polish`) after scipy stops short of ``tol``, within the iterations
    ``max_iter`` leaves. ``deadline`` (default: the one of an enclosing
    :func:`time_limited`) stops it after the iteration during which it expires, at that
    iterate, unpolished; ``desc`` (default: that block's, else ``"L-BFGS"``) names it in
    progress lines.

    ``precondition``, a pair ``(M, M_inv)`` of square matrices (scipy sparse or dense,
    inverse of each other), preconditions the search: scipy minimizes ``z -> fun(M z)``
    from ``z = M_inv x0``, with gradient ``M^T g``; an ``M`` that makes the Hessian in
    ``z`` nearer a multiple of the identity saves iterations. The rule stays the one of
    ``x``: the search stops once ``max |gradient|`` in ``x`` is at most ``tol`` (checked
    after every iteration, scipy's own gradient test off), and the result, its
    gradient and ``trace`` are in ``x``.

    Returns scipy's ``OptimizeResult`` with three more fields from :func:`lbfgs_verdict`:
    ``grad_max``, ``converged`` and ``stop_reason``.
    """
    from scipy.optimize import minimize

    if deadline is None:
        deadline = _ACTIVE["deadline"]
    if desc is None:
        desc = _ACTIVE["desc"]
    limited = deadline is not None and deadline.seconds is not None
    tick = step_ticker(desc, max_iter, deadline)
    scaled = None if precondition is None else _Preconditioned(fun, *precondition)
    callback = None
    if trace is not None or limited or tick is not None or scaled is not None:
        done = [0]

        def callback(xk):
            if trace is not None:
                trace.append(np.array(xk, copy=True) if scaled is None else scaled.M @ xk)
            done[0] += 1
            if tick is not None:
                tick(done[0])
            if scaled is not None and scaled.met(xk, tol):
                raise StopIteration  # the rule in x met: scipy stops at this iterate
            if limited and deadline.expired():
                deadline.hit = True
                raise StopIteration  # scipy >= 1.11 stops at this iterate

    res = minimize(fun if scaled is None else scaled,
                   x0 if scaled is None else scaled.M_inv @ x0,
                   jac=True, method="L-BFGS-B", callback=callback,
                   options={"maxiter": max_iter, "gtol": tol if scaled is None else 0.0,
                            "ftol": 0.0, "maxcor": memory, "maxfun": max_evals})
    if scaled is not None:
        scaled.to_x(res)
    res.deadline = deadline if limited and deadline.hit else None
    if polish and res.deadline is None:
        _polish(res, fun, tol, min(polish, max(0, max_iter - int(res.nit))),
                None if scaled is None else scaled.M)
    res.decrement = _decrement(res, None if scaled is None else scaled.Mt)
    res.grad_max, res.converged, res.stop_reason = lbfgs_verdict(res, tol, max_iter)
    return res


def _decrement(res: Any, Mt: Any = None) -> float | None:
    """``g^T H^-1 g`` at the result: ``g`` its gradient, ``H^-1`` L-BFGS's inverse Hessian
    (in the preconditioned variables ``z`` when ``Mt``, the transposed preconditioner, is
    given: the gradient in ``z`` is ``M^T g``). Half of it is the decrease a full
    quasi-Newton step predicts. None when scipy gave no inverse Hessian."""
    H = getattr(res, "hess_inv", None)
    g = np.asarray(res.jac, dtype=np.float64).ravel()
    if H is None or not g.size:
        return None
    if Mt is not None:
        g = np.asarray(Mt @ g, dtype=np.float64).ravel()
    hg = H.matvec(g) if hasattr(H, "matvec") else np.asarray(H, dtype=np.float64) @ g
    d = float(g @ np.asarray(hg, dtype=np.float64).ravel())
    return d if math.isfinite(d) and d >= 0.0 else None


class _Preconditioned:
    """``z -> fun(M z)`` and its gradient ``M^T g`` in ``z``, remembering the last point's
    gradient in ``x`` (where scipy's iterations end: its line search accepts the last
    point it evaluated)."""

    def __init__(self, fun: Callable, M: Any, M_inv: Any) -> None:
        self.fun, self.M, self.M_inv, self.Mt = fun, M, M_inv, M.T
        self.z = self.g = None

    def __call__(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.fun(self.M @ z)
        self.z, self.g = np.array(z, copy=True), np.asarray(g)
        return f, self.Mt @ g

    def _gradient_at(self, z: np.ndarray) -> np.ndarray | None:
        """The gradient in ``x`` at ``z`` if it was the last point evaluated."""
        return self.g if self.z is not None and np.array_equal(z, self.z) else None

    def met(self, z: np.ndarray, tol: float) -> bool:
        """Whether ``max |gradient|`` in ``x`` at the iterate ``z`` is at most ``tol``."""
        g = self._gradient_at(z)
        return g is not None and (not g.size or float(np.max(np.abs(g))) <= tol)

    def to_x(self, res: Any) -> None:
        """Scipy's result in ``z`` turned into one in ``x``: the point and its gradient
        (``res.hess_inv`` stays the inverse Hessian in ``z``)."""
        g = self._gradient_at(res.x)
        res.jac = g if g is not None else self.fun(self.M @ res.x)[1]
        res.x = self.M @ res.x


def _polish(res: Any, fun: Callable, tol: float, steps: int, M: Any = None) -> None:
    """Quasi-Newton steps ``x <- x - H g`` (L-BFGS's inverse Hessian; with ``M``, the
    inverse Hessian in ``z`` of ``x = M z``: ``x <- x - M H M^T g``) while ``max |g|``
    falls: they finish a fit whose line search stopped because the objective's change
    fell below its rounding error (about ``1e-16 |f|``) before ``max |g| <= tol``. Each
    step counts as an iteration (``res.nit``)."""
    g = res.jac
    for _ in range(steps):
        if not g.size or np.max(np.abs(g)) < tol:
            break
        if M is None:
            x = res.x - res.hess_inv.matvec(g)
        else:
            x = res.x - M @ res.hess_inv.matvec(M.T @ g)
        f, g2 = fun(x)
        if np.max(np.abs(g2)) >= np.max(np.abs(g)):
            break
        res.x, res.fun, res.jac, g = x, f, g2, g2
        res.nit += 1
        res.nfev += 1


def resolution(f: float) -> float:
    """The smallest ``max |gradient|`` a line search can resolve on an objective of value
    ``f``: ``sqrt(eps max(1, |f|))``.

    An objective evaluated in float64 is known to about ``eps |f|``; a step along a
    gradient ``g`` of a function of curvature ``h`` lowers it by at most ``g^2 / (2 h)``,
    so once ``g^2 / (2 h) < eps |f|`` no line search can tell a better point from a worse
    one. The learners' objectives are averages over the data (log-likelihoods, pseudo-,
    ratio-matching and MPF objectives) whose curvature in each parameter is a variance of
    a bounded statistic, of order one, so the gradient they can reach is about
    ``sqrt(eps |f|)``: 1.5e-8 for ``|f| = 1``, 6e-7 for a pseudo-likelihood summed over
    the 1,600 variables of a 40 x 40 lattice.
    """
    return math.sqrt(_EPS * max(1.0, abs(float(f))))


#: What scipy's L-BFGS-B status words mean, said for a reader (its message is "STATUS: TASK",
#: such as "ABNORMAL: " when the line search failed without a task message).
_LBFGS_WORDS = {
    "ABNORMAL": "its line search found no step that lowers the objective",
    "NORM OF PROJECTED GRADIENT <= PGTOL": "its projected gradient fell below its tolerance",
    "PROJECTED GRADIENT IS SUFFICIENTLY SMALL": "its projected gradient fell below its tolerance",
    "RELATIVE REDUCTION OF F <= FACTR*EPSMCH": "the objective stopped changing by more than "
                                               "its relative tolerance",
    "TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT": "it reached its limit of evaluations",
    "TOTAL NO. OF ITERATIONS REACHED LIMIT": "it reached its limit of iterations",
    "ROUNDING ERRORS PREVENT PROGRESS": "rounding errors kept it from progressing",
    "CALLBACK REQUESTED HALT": "it was asked to halt",
}


def lbfgs_in_words(message: object) -> str:
    """scipy's L-BFGS-B ``message`` ("ABNORMAL: ", "CONVERGENCE: RELATIVE REDUCTION OF F <=
    FACTR*EPSMCH", ...) as words a reader understands; an unknown message in lower case."""
    text = " ".join(str(message).replace("_", " ").split()).strip().rstrip(":").strip()
    status, _, task = text.partition(":")
    for key in (task.strip().upper(), status.strip().upper()):
        if key in _LBFGS_WORDS:
            return _LBFGS_WORDS[key]
    return text.lower() or "no reason given"


def lbfgs_verdict(res: Any, tol: float, max_iter: int) -> tuple[float, bool, str]:
    """``(grad_max, converged, stop_reason)`` of an L-BFGS result: the one rule.

    Converged when ``max |gradient| <= tol`` at the returned point; or when L-BFGS
    stopped by itself (its line search found no decrease, not an iteration or
    evaluation limit) with ``max |gradient|`` within the objective's floating-point
    :func:`resolution`, or with a full quasi-Newton step predicted to lower the objective
    by no more than the rounding of its value (``g^T H^-1 g / 2 <= ROUNDING eps |f|``,
    ``res.decrement`` from :func:`lbfgs`: the test that holds whatever the curvature,
    where :func:`resolution` assumes one of order one): a ``tol`` below what float64
    resolves on this objective cannot be met by any line search, and the point is as
    good as float64 allows. Otherwise not
    converged, saying whether a limit was reached or the search stalled above that
    resolution.
    """
    g = float(np.max(np.abs(res.jac))) if np.size(res.jac) else 0.0
    if g <= tol:
        return g, True, f"converged: max |gradient| {g:.3g} <= tol {tol:g}"
    if getattr(res, "deadline", None) is not None:
        return g, False, (res.deadline.reason(int(res.nit))
                          + f" (max |gradient| {g:.3g} > tol {tol:g})")
    floor = resolution(res.fun)
    message = lbfgs_in_words(getattr(res, "message", ""))
    limit = int(res.status) == 1  # scipy's status for its iteration or evaluation limit
    if not limit and g <= floor:
        return g, True, (
            f"converged at float64 resolution: max |gradient| {g:.3g} is within the "
            f"{floor:.2g} a line search can resolve on an objective of {float(res.fun):.4g} "
            f"(tol {tol:g} is finer than that; L-BFGS stopped because {message})")
    dec = getattr(res, "decrement", None)
    rounding = ROUNDING * _EPS * max(1.0, abs(float(res.fun)))
    if not limit and dec is not None and 0.5 * dec <= rounding:
        return g, True, (
            f"converged at float64 resolution: a full quasi-Newton step would lower the "
            f"objective of {float(res.fun):.4g} by {0.5 * dec:.2g}, within the "
            f"{rounding:.2g} to which float64 knows it (max |gradient| {g:.3g}: a large "
            f"curvature, as of parameters tied over many factors, keeps the gradient above "
            f"{floor:.2g}; L-BFGS stopped because {message})")
    if limit:
        return g, False, (f"not converged: the limit of {max_iter} iterations or its "
                          f"evaluations was reached at max |gradient| {g:.3g} > tol {tol:g}")
    return g, False, (f"not converged: L-BFGS stopped because {message}, at max |gradient| "
                      f"{g:.3g}, above tol {tol:g} and the objective's resolution {floor:.2g}")


def local_lbfgs(prob: Any, method: str, theta0: np.ndarray, free: np.ndarray, *,
                max_steps: int, tol: float, ref_coupling: np.ndarray | None, record: bool,
                deadline: Deadline | None = None) -> tuple:
    """Quasi-Newton path of the ±1 learners: :func:`lbfgs` on the (convex) objective of a
    local method (``prob.solver_objective(method)``: MPLE, RM, MPF), over the ``free``
    entries of ``theta`` (the others held at ``theta0``'s).

    Returns ``(theta, n_steps, converged, stop_reason, params, grad_max, mae)``; the last
    three are ``None`` without ``record`` (``mae`` also without ``ref_coupling``)."""
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
    if max_steps:
        res = lbfgs(fun, theta0[idx], max_iter=max_steps, tol=tol, memory=20, trace=trail,
                    deadline=deadline, desc=f"fit {method} (L-BFGS)")
        x, nit, converged, reason = res.x, int(res.nit), res.converged, res.stop_reason
    else:  # scipy's L-BFGS-B makes one iteration even with maxiter=0
        x, nit = theta0[idx].copy(), 0
        gmax0 = np.max(np.abs(fun(x)[1])) if idx.size else 0.0
        converged = bool(gmax0 <= tol)
        reason = (f"converged: max |gradient| {gmax0:.3g} <= tol {tol:g}" if converged
                  else "not converged: max_steps = 0")
    theta = full(x)
    params = gmax = errs = None
    if record:
        params = np.array([full(z) for z in trail])
        gmax = np.array([np.max(np.abs(fun(z)[1])) if len(z) else 0.0 for z in trail])
        if ref_coupling is not None:
            errs = np.mean(np.abs(params[:, n:] - ref_coupling), axis=1)
    return theta, nit, converged, reason, params, gmax, errs
