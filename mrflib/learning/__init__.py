"""Learning: data in, a model out.

:func:`~mrflib.learning.learners.fit` is the one entry point for every learner and both model
types (it returns a :class:`~mrflib.learning.fit_result.Fit`). Behind it, the backend is chosen
by the structure: the Boltzmann machines' learners (private, ``learning._spin_learners``, with
the ±1 objectives of :mod:`~mrflib.learning.learners`), and the family of free log-tables over
any scopes (:mod:`~mrflib.learning.table_learners`, :mod:`~mrflib.learning.stochastic_learning`);
:mod:`~mrflib.learning.lap` (LAP) and beside them :mod:`~mrflib.learning.fsll` (the full-span
log-linear model).
"""

from mrflib._support.deprecation import ModuleAliases as _ModuleAliases
from mrflib.learning.learners import (
    LOCAL_METHODS,
    METHODS,
    STOCHASTIC_METHODS,
    Fit,
    ascent_direction,
    estimator_variances,
    fit,
    mae,
    mpf_log_flow,
    mple_rho,
    objective,
    objective_gradient,
)

__all__ = [
    "METHODS",
    "LOCAL_METHODS",
    "STOCHASTIC_METHODS",
    "Fit",
    "fit",
    "objective",
    "objective_gradient",
    "mpf_log_flow",
    "ascent_direction",
    "estimator_variances",
    "mple_rho",
    "mae",
]

#: Module paths named for a model kind, and the modules named for their idea that replaced
#: them: importing one warns and gives its replacement (for one release).
MOVED = {
    "factor_learning": "mrflib.learning.table_learners",
    "factor_layout": "mrflib.learning.parameter_layout",
}

_ModuleAliases(__name__, MOVED, warn=True).install()
