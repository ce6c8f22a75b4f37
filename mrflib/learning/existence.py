"""When a learner's estimate does not exist: data on the boundary of what the family can fit.

A log-linear family ``P_θ(x) ∝ exp(θ · f(x))`` has no maximum-likelihood estimate when
some direction ``v`` raises the likelihood without end: ``v · f(x^μ) = max_x v · f(x)`` for
every sample ``μ`` while ``v · f`` is not constant. Along ``v`` the likelihood increases
strictly (its derivative is the data's mean of ``v · f`` minus the model's, which stays
below the maximum for every finite ``θ``), so the supremum is approached as parameters
diverge, and an optimizer that stops reports a point that is no estimate. The tests here
find such directions from the data's factor marginals alone. They are sufficient, not
necessary: a direction mixing several factors' states (a frustrated cycle whose every
sample breaks exactly two of its three bonds) is not looked for.

Free tables (the normalized potentials of :class:`~mrflib.learning._layout.Layout`)
    A factor state the data never show: lowering its entry alone is such a direction.
Tied tables (:class:`~mrflib.learning.tying.Tie`)
    The entries of a group's table fall in *classes*: the entries each parameter ``φ_j``
    holds, and the *reference* class of the entries no parameter holds (state 0 of a free
    or symmetric table, the unequal states of a Potts table). A class the data never show
    in any factor of the group is such a direction: lowering ``φ_j`` for a parameter's
    class, raising all the group's parameters together for the reference class (every
    factor of the group is then in a state some parameter holds, in every sample: a Potts
    coupling whose every bond agrees in every sample grows without bound).

Pseudo-likelihood sums the conditionals ``P(x_i | x_{-i})`` of the samples, so it moves
along a direction only through states one change of one variable away from a sample: a
state (or class) counts only if some sample meets it that way (``in_context``). LAP's
condition is the MLE's (see ``warn_if_undefined``). The stochastic learners (1-SMCI,
CD, PCD, SMCI-PCD) estimate the model's factor marginals and follow the likelihood's
gradient, so they take the MLE's test. A ridge (``l2 > 0``) gives every learner a finite
optimum: no test then.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from mrflib._support.stacklevel import user_stacklevel
from mrflib.models._factor_bulk import group_by

__all__ = ["unbounded"]  # the rest is the learners' plumbing


def _met(lay: Any, d: np.ndarray) -> np.ndarray:
    """Which table entries some sample meets on all but one variable of the factor's scope
    (flat as ``d``): a state whose margin along some axis the data show. Factors are
    taken by groups of equal table shape, each group in one numpy step."""
    met = np.zeros(d.shape, dtype=bool)
    groups, _ = group_by(list(lay.shapes))
    for shape, ks in groups:
        size = int(np.prod(shape, dtype=np.int64))
        idx = lay.offsets[ks][:, None] + np.arange(size)
        c = d[idx].reshape((len(ks),) + tuple(shape))
        m = np.zeros(c.shape, dtype=bool)
        for a in range(len(shape)):
            m |= c.sum(axis=a + 1, keepdims=True) > 0
        met[idx] = m.reshape(len(ks), size)
    return met


def _unseen_factor_state(lay: Any, d: np.ndarray, in_context: bool) -> str:
    """Free tables: a factor state the data never show (``""`` if none), named with how
    many there are and the first (the lowest factor, then its states in C order).

    Every finite ``θ`` gives every state of every factor positive probability, and the MLE
    must match the data's factor marginals ``d`` (eq. (5)). With ``in_context`` only a zero
    state ``x*_S`` some sample meets on all but one variable ``i`` of ``S`` counts:
    lowering its potential raises that sample's ``P(x_i | x_{-i})`` and lowers no term; a
    zero state no sample meets that way does not enter the pseudo-likelihood at all."""
    bad = d == 0
    if in_context and bad.any():
        bad &= _met(lay, d)
    count = int(np.count_nonzero(bad))
    if not count:
        return ""
    first = int(np.argmax(bad))
    k = int(np.searchsorted(lay.offsets, first, side="right")) - 1
    state = tuple(int(v) for v in np.unravel_index(first - int(lay.offsets[k]),
                                                    lay.shapes[k]))
    where = " in a context the data meet" if in_context else ""
    return (f"{count} factor state(s) never occur{where}, the first: factor {k} over "
            f"{tuple(lay.scopes[k])} in state {state}")


def _entry_classes(tie: Any) -> np.ndarray:
    """Every table entry's class (flat as the tables): parameter ``j``'s class is ``j``,
    the reference class of group ``g`` is ``n_params + g``, and ``-1`` marks the entries
    of a factor no parameter reaches (a table of one entry)."""
    A = tie.A.tocsr()
    held = np.diff(A.indptr) > 0
    cls = np.full(A.shape[0], -1, dtype=np.int64)
    cls[held] = A.indices  # one non-zero per table entry at most
    factor = np.repeat(np.arange(len(tie.shapes)), np.diff(tie.offsets))
    # a factor's group, from any parameter its table holds
    group = np.full(len(tie.shapes), -1, dtype=np.int64)
    group[factor[held]] = np.searchsorted(tie.param_offsets, cls[held], side="right") - 1
    free = ~held & (group[factor] >= 0)
    cls[free] = tie.n_params + group[factor[free]]
    return cls


def _unseen_classes(tie: Any, d: np.ndarray, in_context: bool) -> np.ndarray:
    """Which classes (numbered as :func:`_entry_classes` does) hold entries but none the
    data show; with ``in_context``, only those with an entry some sample meets."""
    cls = _entry_classes(tie)
    n_classes = tie.n_params + len(tie.labels)
    known = cls >= 0
    present = np.bincount(cls[known], minlength=n_classes) > 0
    mass = np.bincount(cls[known], weights=d[known], minlength=n_classes)
    bad = present & (mass == 0)
    if in_context and bad.any():
        met = _met(tie, d)
        bad &= np.bincount(cls[known], weights=met[known], minlength=n_classes) > 0
    return bad


def _unseen_class(tie: Any, d: np.ndarray, in_context: bool) -> str:
    """Tied tables: a class of a group's entries (see the module docstring) the data never
    show in any factor of the group (``""`` if none), named with how many there are."""
    bad = _unseen_classes(tie, d, in_context)
    count = int(np.count_nonzero(bad))
    if not count:
        return ""
    j = int(np.argmax(bad))
    where = " in a context the data meet" if in_context else ""
    head = f"{count} class(es) of tied table entries never occur{where}, the first: "
    if j < tie.n_params:
        g = int(np.searchsorted(tie.param_offsets, j, side="right")) - 1
        return head + (f"parameter phi[{j}] of group {tie.labels[g]!r} ({tie.forms[g]} "
                       "form) holds no state the data show, so it diverges to -inf")
    g = j - tie.n_params
    return head + (f"the reference entries of group {tie.labels[g]!r} ({tie.forms[g]} form, "
                   "the entries no parameter holds): every factor of the group is in a "
                   "state its parameters hold in every sample, so they diverge to +inf")


def unbounded(lay: Any, d: np.ndarray, in_context: bool = False) -> str:
    """Why the estimate does not exist (``""`` when the tests find nothing).

    The first direction of unbounded ascent found from the data's factor marginals. See
    the module docstring.

    Parameters
    ----------
    lay : Layout or Tie
        The parameter map of the fit: free tables
        (:class:`~mrflib.learning._layout.Layout`) or tied ones
        (:class:`~mrflib.learning.tying.Tie`).
    d : ndarray of float64, shape (table entries,)
        The data's factor marginals, flat as the tables (every factor's table raveled, in
        factor order at ``lay.offsets``).
    in_context : bool, default False
        Test for the pseudo-likelihood: a state (or class) counts only if some sample
        meets it on all but one variable of its scope. ``False`` tests for the likelihood.

    Returns
    -------
    str
        How many factor states (or classes of tied entries) the data never show and the
        first of them; ``""`` when none is found.
    """
    from mrflib.learning.tying import Tie

    if isinstance(lay, Tie):
        return _unseen_class(lay, d, in_context)
    return _unseen_factor_state(lay, d, in_context)


def warn_if_undefined(lay: Any, d: np.ndarray, method: str) -> str:
    """:func:`unbounded` for ``method`` ("mle", "mple", "lap" or a stochastic learner),
    with a :class:`RuntimeWarning` at the user's call when it finds a reason.

    LAP's condition is the MLE's: the auxiliary model of the factor owning a scope's
    clique holds that scope's whole table (every clique of it meets ``Q``), conditioned
    on variables outside the scope, so its ML must give an unseen state of the scope
    conditional probability zero in every sample: no finite ``θ`` does. With every
    factor state seen, no auxiliary moment sits on the boundary."""
    missing = unbounded(lay, d, in_context=method == "mple")
    if missing:
        warnings.warn(f"the {method.upper()} does not exist for this data ({missing}): "
                      "parameters diverge and the fit is reported as not converged",
                      RuntimeWarning, stacklevel=user_stacklevel())
    return missing


def check_existence(lay: Any, d: np.ndarray | Callable[[], np.ndarray], method: str,
                    l2: float) -> str:
    """:func:`warn_if_undefined` unless a ridge (``l2 > 0``) gives a finite optimum; ``d``
    the data's factor marginals, or a function computing them (called only when needed)."""
    if l2 > 0:
        return ""
    return warn_if_undefined(lay, d() if callable(d) else d, method)


def not_converged_if(missing: str, method: str, conv: bool, reason: str
                     ) -> tuple[bool, str]:
    """``(converged, stop_reason)``, saying so when the estimate does not exist."""
    if missing:
        return False, f"the {method.upper()} does not exist: {missing} ({reason})"
    return conv, reason
