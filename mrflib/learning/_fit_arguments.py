"""What :func:`mrflib.learning.learners.fit` accepts: its learners, one row of a table each
(:data:`TABLE`), and the checks of its arguments, with the defaults they fill in.

A row names a method's solvers (the first its default), the extra keyword options it
takes, whether it draws, and the scaling of a local method's ascent direction. The checks
raise ``ValueError`` naming the argument and what was expected, in the order
:func:`~mrflib.learning.learners.fit` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_array, check_positive, is_choice
from mrflib.learning import _limits

__all__ = ["ENGINES", "Method", "TABLE", "METHODS", "check_method", "settings",
           "initial_theta", "check_factor_graph_call", "reference_coupling"]

#: The exact engines of ``"mle"`` (option ``engine``), those of ``mrflib.inference.exact``.
ENGINES = ("auto", "enumerate", "junction-tree")


@dataclass(frozen=True)
class Method:
    """One learner of :func:`~mrflib.learning.learners.fit`: the dispatch table's row.

    ``solvers[0]`` is the default solver; ``scale`` the (bias, coupling) factors making a
    local method's ascent direction equal eq. (5) at ``theta = 0``; ``options`` the extra
    keyword options :func:`~mrflib.learning.learners.fit` accepts for it.
    """

    name: str
    solvers: tuple[str, ...] = ("gradient",)
    options: frozenset = frozenset()
    stochastic: bool = False
    scale: tuple[float, float] | None = None


TABLE = {m.name: m for m in (
    Method("mle", ("exact", "gradient"), options=frozenset({"engine"})),
    Method("mple", ("gradient", "lbfgs"), scale=(1.0, 0.5)),
    Method("rm", ("gradient", "lbfgs"), scale=(2.0, 1.0)),
    Method("mpf", ("gradient", "lbfgs"), scale=(1.0, 0.5)),
    Method("1-smci", ("gradient", "anderson")),
    Method("s2-smci"),
    Method("cd", options=frozenset({"k", "n_chains", "schedule"}), stochastic=True),
    Method("pcd", options=frozenset({"k", "n_chains", "extension_rate", "schedule"}),
           stochastic=True),
    Method("smci-pcd", options=frozenset({"estimator", "extension_rate", "kappa", "samples",
                                          "schedule"}), stochastic=True),
    Method("lap", ("lap",), options=frozenset({"cliques", "scheduler", "n_jobs", "l2"})),
)}
METHODS = tuple(TABLE)


def check_method(method: Any) -> None:
    """Refuse a method that is not one of :data:`METHODS`."""
    if not is_choice(method, METHODS):
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def settings(method: Any, options: dict, bias: Any, solver: Any, learning_rate: Any,
             max_steps: Any, tol: Any, progress: Any, rng: Any
             ) -> tuple[str, float, int, float, Any]:
    """Validate the options of :func:`~mrflib.learning.learners.fit`; returns ``(solver,
    learning_rate, max_steps, tol, rng)`` with the defaults filled in."""
    check_method(method)
    spec = TABLE[method]
    unknown = set(options) - spec.options
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)} for method {method!r}")
    if not isinstance(bias, (bool, np.bool_)):
        raise ValueError(f"bias must be True or False, got {bias!r}")
    if solver is None:
        solver = spec.solvers[0]
    if not is_choice(solver, spec.solvers):
        raise ValueError(f"solver for method {method!r} must be one of {spec.solvers}, "
                         f"got {solver!r}")
    learning_rate = check_positive(0.2 if learning_rate is None else learning_rate,
                                   "learning_rate")
    stochastic = spec.stochastic
    max_steps = check_positive(
        (1000 if stochastic else 10000) if max_steps is None else max_steps,
        "max_steps", integer=True, allow_zero=True,
    )
    tol = check_positive((0.0 if stochastic else 1e-6) if tol is None else tol, "tol",
                         allow_zero=True)
    if "engine" in options and not is_choice(options["engine"], ENGINES):
        raise ValueError(f"engine must be one of {ENGINES}, got {options['engine']!r}")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise ValueError(f"progress must be True, False or None, got {progress!r}")
    if stochastic:
        rng = as_rng(rng)
        _limits.check_schedule(options.get("schedule", "constant"))
    return solver, learning_rate, max_steps, tol, rng


def initial_theta(init: Any, bias: bool, n: int, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Initial parameters (zeros, as in section 5, unless ``init``) and the free mask
    (biases held at zero when ``bias`` is false)."""
    if init is None:
        theta0 = np.zeros(P)
    else:
        theta0 = np.asarray(getattr(init, "params", init), dtype=np.float64)
        theta0 = check_array(theta0, "init", ndim=1, shape=(P,)).copy()
    free = np.ones(P, dtype=bool)
    if not bias:
        free[:n] = False
        theta0[:n] = 0.0
    return theta0, free


def _given(value: Any, default: Any) -> bool:
    """Whether an option differs from its default; an array (which has no single truth
    value) always counts as given."""
    if value is default:
        return False
    try:
        return bool(value != default)
    except (TypeError, ValueError):
        return True


def check_factor_graph_call(n: Any, bias: Any, solver: Any, reference: Any, method: Any
                            ) -> None:
    """A FactorGraph structure takes none of the Boltzmann-machine options (and ``rng``,
    which its learners do not need) but 1-SMCI's ``solver``."""
    given = [name for name, value, default in (("n", n, None), ("bias", bias, True),
                                                 ("solver", solver, None),
                                                 ("reference", reference, None))
             if _given(value, default) and not (name == "solver" and method == "1-smci")]
    if given:
        raise ValueError(f"options {given} apply to Boltzmann machines only; a FactorGraph "
                         "structure takes max_steps, tol, init, record, l2, tie, the "
                         "stochastic learners' rng, learning_rate, progress, time_limit, "
                         "1-SMCI's solver and options, "
                         "and, for 'lap', gauge, n_jobs, scheduler")


def reference_coupling(reference: Any, n_edges: int) -> np.ndarray | None:
    """The couplings ``(E,)`` of ``reference`` (a machine or an array) the per-step MAE is
    measured against, or ``None``."""
    if reference is None:
        return None
    ref = getattr(reference, "coupling", reference)
    return check_array(ref, "reference", ndim=1, shape=(n_edges,))
