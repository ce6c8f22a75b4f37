"""One state for a model too wide for exact MAP: the posterior-marginal mode and ICM.

::

    x_mpm, res = point_estimates.mpm(model, method="lbp")   # argmax of each marginal
    r = point_estimates.icm(model, x_mpm)                     # a local maximum of log P

* :func:`mpm`, *maximizer of the posterior marginals*: each variable's most probable state
  under the marginals of :func:`mrflib.inference.approx.marginals` (any of its methods). It
  minimizes the expected number of wrong variables when the marginals are exact (Marroquin,
  Mitter and Poggio, JASA 1987), the error an image restoration counts.
* :func:`icm`, *iterated conditional modes* (Besag, JRSS B 1986, section 2.5): sweeps over
  the variables in order, each set to the state of highest conditional probability given
  the others, until a sweep changes nothing. Each move raises ``log P(x)`` (ties keep the
  current state), so it ends at a local maximum (no single-variable change improves it),
  not the MAP in general: started from :func:`mpm`'s state it is the MAP estimate of this
  library on models beyond exact inference. :func:`mrflib.inference.exact.map_assignment`
  gives the true MAP where the junction tree fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive
from mrflib.inference import approx
from mrflib.inference.approx import _point_estimates_kernels as _k
from mrflib.inference.approx.result import ApproxResult
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.models._checks import check_states
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["ICMResult", "icm", "mpm", "modes"]


def modes(marginals: list) -> np.ndarray:
    """Each variable's most probable state.

    Parameters
    ----------
    marginals : list of numpy.ndarray
        One ``(|X_i|,)`` marginal per variable.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        The first of the largest entries of each marginal (vectorized when all variables
        have the same cardinality).
    """
    sizes = {len(m) for m in marginals}
    if len(sizes) == 1:
        return np.argmax(np.stack(marginals), axis=1).astype(np.int64)
    return np.array([int(np.argmax(m)) for m in marginals], dtype=np.int64)


def mpm(model: FactorGraph | BoltzmannMachine, method: str = "lbp", *, rng: Any = None,
        time_limit: float | None = None, **options: Any) -> tuple[np.ndarray, ApproxResult]:
    """The maximizer of the posterior marginals and the marginals it came from.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        As in :func:`mrflib.inference.approx.marginals`.
    method : str, default "lbp"
        One of :func:`mrflib.inference.approx.marginals`' methods.
    rng : numpy.random.Generator or int or None, default None
        The seed of the sampling methods.
    time_limit : float or None, default None
        As in :func:`mrflib.inference.approx.marginals`.
    **options
        The method's own options.

    Returns
    -------
    state : numpy.ndarray of int64, shape (n,)
        In the model's factor-graph states: :func:`modes` of ``result.marginals``.
    result : ApproxResult
        The marginals' :class:`~mrflib.inference.approx.result.ApproxResult`, whose
        ``converged`` says whether they met their method's stopping rule.
    """
    res = approx.marginals(model, method, rng=rng, time_limit=time_limit, **options)
    return modes(res.marginals), res


@dataclass(frozen=True)
class ICMResult:
    """The answer of :func:`icm`.

    Attributes
    ----------
    state : ndarray of int64, shape (n,)
        The final state.
    log_weight : float
        Its unnormalized log-weight ``Σ_k θ_k(x_{S_k})``.
    sweeps : int
        Sweeps done (the last one changed nothing when ``converged``).
    converged : bool
        Whether a sweep changed no variable: ``state`` is a local maximum.
    changes : list of int
        Variables changed in each sweep.
    """

    state: np.ndarray
    log_weight: float
    sweeps: int
    converged: bool
    changes: list


def _check_init(model: FactorGraph, init: Any) -> np.ndarray:
    x = check_states(init, model.cardinalities, "init")
    if len(x) != 1:
        raise ValueError(f"init must be one state of shape ({model.n},), got {np.shape(init)}")
    return np.array(x, dtype=np.int64, order="C")  # a copy: the sweeps write into it


def icm(model: FactorGraph | BoltzmannMachine, init: Any, *, max_sweeps: int = 100
        ) -> ICMResult:
    """Iterated conditional modes from ``init`` (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        A Boltzmann machine is taken as its factor graph (state 0 is spin -1).
    init : array_like of int, shape (n,)
        The starting state (for example :func:`mpm`'s).
    max_sweeps : int, default 100
        Largest number of sweeps.

    Returns
    -------
    ICMResult
        ``log_weight`` is never below ``init``'s.
    """
    fg = as_factor_graph(model)
    x = _check_init(fg, init)
    max_sweeps = check_positive(max_sweeps, "max_sweeps", integer=True)
    plan = factor_gibbs.pack(fg)
    card = np.ascontiguousarray(fg.cardinalities, dtype=np.int64)
    changes: list[int] = []
    while len(changes) < max_sweeps:
        changes.append(int(_k.icm_sweep(x, *plan, card)))
        if changes[-1] == 0:
            break
    return ICMResult(x[0].copy(), float(fg.log_weight(x[0])), len(changes),
                     changes[-1] == 0, changes)


def _icm_numpy(model: FactorGraph, init: Any, *, max_sweeps: int = 100) -> ICMResult:
    """Plain numpy reference of :func:`icm`: the same order, the same tie rule."""
    fg = as_factor_graph(model)
    x = _check_init(fg, init)[0]
    vf = fg.variable_factors()
    changes: list[int] = []
    while len(changes) < max_sweeps:
        changed = 0
        for i in range(fg.n):
            score = np.zeros(int(fg.cardinalities[i]))
            for k in vf[i]:
                s, t = fg.scopes[k], fg.log_tables[k]
                idx = tuple(slice(None) if v == i else int(x[v]) for v in s)
                score += t[idx]
            best = int(x[i])
            for v in range(len(score)):
                if score[v] > score[best]:
                    best = v
            if best != x[i]:
                x[i], changed = best, changed + 1
        changes.append(changed)
        if changed == 0:
            break
    return ICMResult(x, float(fg.log_weight(x)), len(changes), changes[-1] == 0, changes)
