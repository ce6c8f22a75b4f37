"""Maximum-likelihood log-linear models on a fixed set of full-span basis functions.

The full-span log-linear model of Takabatake & Akaho ({cite}`fsll-takabatake-akaho`),

.. math::

    p_\\theta(x) = Z(\\theta)^{-1} \\exp \\sum_{y \\in S} \\theta_y \\Phi_y(x)     \\quad (3)

restricted to a chosen set ``S`` of basis functions (a boolean ``mask`` over the flat basis
indices ``y``), is an exponential family whose sufficient statistics are the ``Phi_y``.
:func:`mrflib.learning.fsll.fit` chooses ``S`` greedily by the MDL cost of eq. (7); here ``S`` is
given -- for instance every ``Phi_y`` of order at most 2 (:func:`order_mask`), which on
binary variables is the fully connected Boltzmann machine with biases -- and
:func:`fit_log_linear` finds the maximum-likelihood ``theta`` by L-BFGS. Every evaluation
is one synthesis (:func:`mrflib.learning.fsll.synthesize`) and one dual transform
(:func:`mrflib.learning.fsll.dual`, eq. (8), (10)-(12)), ``O(|X| log |X|)``.

Flat state and basis indices follow :mod:`mrflib.learning.fsll` (``x_0`` the least significant
digit).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from mrflib import fsll
from mrflib._support.optimizers import lbfgs
from mrflib._support.validation import (
    check_array,
    check_counts,
    check_positive,
    require_memory,
)

__all__ = ["order_mask", "fit_log_linear"]


def _size(cardinalities: Any) -> tuple[list[int], int]:
    """Validated cardinalities (positive integers) and ``|X|``, their product."""
    cards = check_counts(cardinalities, "cardinalities")
    return cards, math.prod(cards)


def order_mask(cardinalities: Any, max_order: int) -> np.ndarray:
    """Boolean mask over flat basis indices ``y``: ``1 <= order(y) <= max_order``.

    The order of ``Phi_y`` (eq. (3)) is the number of variables it depends on, the non-zero
    digits of ``y``. ``max_order = 1`` gives the independence model, ``2`` every bias and
    pairwise interaction.

    Parameters
    ----------
    cardinalities : sequence of int
        ``|X_i|`` of every variable (each at least 2).
    max_order : int
        The largest order kept (non-negative; 0 gives an empty mask).

    Returns
    -------
    ndarray of bool, shape (|X|,)
        True at the flat indices ``y`` of the orders kept (never at ``y = 0``).
    """
    cards, X = _size(cardinalities)
    max_order = check_positive(max_order, "max_order", integer=True, allow_zero=True)
    require_memory(3 * 8 * X, f"order_mask over {X} states (cardinalities)")
    order = np.zeros(X, dtype=np.int64)
    stride = 1
    idx = np.arange(X, dtype=np.int64)
    for k in cards:
        order += (idx // stride) % k != 0
        stride *= k
    return (order >= 1) & (order <= max_order)


def _check_target(target: Any, X: int) -> np.ndarray:
    p = check_array(target, "target", ndim=1)
    if p.shape[0] != X:
        raise ValueError(f"target must have one entry per state (|X| = {X} for these "
                         f"cardinalities), got {p.shape[0]}")
    if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"target must be a probability table (non-negative, sum 1), got sum "
                         f"{p.sum():.17g} and minimum {p.min():.3g}")
    return p


def _check_mask(mask: Any, X: int) -> np.ndarray:
    m = np.asarray(mask)
    if m.ndim != 1 or m.shape[0] != X:
        raise ValueError(f"mask must be a 1-d boolean array over the |X| = {X} basis indices, "
                         f"got shape {m.shape}")
    if m.dtype.kind in "iu" and np.all((m == 0) | (m == 1)):
        m = m.astype(bool)
    if m.dtype.kind != "b":
        raise ValueError(f"mask must be boolean (or 0/1), got dtype {m.dtype}")
    if m[0]:
        raise ValueError("mask[0] must be False: Phi_0 = 1 is the normalization, not a free "
                         "parameter")
    return m


def fit_log_linear(target: Any, cardinalities: Any, mask: Any, *, max_iter: int = 500,
                   tol: float = 1e-7) -> tuple[np.ndarray, dict[str, Any]]:
    """Maximum-likelihood full-span log-linear model on the basis functions in ``mask``.

    Minimizes the cross-entropy ``-sum_x target(x) log p_theta(x) = log Z(theta) - theta . d``
    over ``theta_y``, ``y`` in ``mask``, where ``d_y = <Phi_y>_target`` (the dual
    coordinates of eq. (8) of Takabatake & Akaho), by L-BFGS-B. Its gradient is
    ``<Phi_y>_{p_theta} - d_y`` (``d log Z / d theta_y``, eq. (8)), so at the optimum the
    model matches every moment in ``mask``: with ``target`` the empirical distribution this
    is maximum likelihood, with a true distribution ``p*`` the information projection
    ``argmin_theta KL(p* || p_theta)`` onto the family.

    The objective is convex. When its infimum is not attained (a moment of ``target`` on the
    boundary of the family's marginal polytope, e.g. zero probability on a state the mask
    can isolate) ``theta`` grows along a ray while the gradient decays exponentially: the
    fit stops, with finite ``theta``, once ``max |gradient| <= tol`` or at ``max_iter``.

    Parameters
    ----------
    target : array_like, shape (|X|,)
        A probability table over the flat states (non-negative, sum 1).
    cardinalities : sequence of int
        ``|X_i|`` of every variable (flat order of :mod:`mrflib.learning.fsll`).
    mask : array_like of bool, shape (|X|,)
        The basis functions of the model (``mask[0]``, the constant, must be False);
        :func:`order_mask` gives the families of bounded order.
    max_iter : int, default 500
        Most L-BFGS iterations.
    tol : float, default 1e-7
        L-BFGS stops when ``max |gradient| <= tol``.

    Returns
    -------
    p : ndarray, shape (|X|,)
        The fitted distribution ``p_theta``.
    info : dict
        ``n_iter``, ``converged`` (the rule of every L-BFGS fit,
        :func:`mrflib._support.optimizers.lbfgs_verdict`: the gradient test was met, or the line
        search stalled within the objective's float64 resolution), ``stop_reason``,
        ``theta`` (the dense ``(|X|,)`` parameter table, zero outside ``mask``).

    References
    ----------
    K. Takabatake and S. Akaho, *Full-Span Log-Linear Model and Fast Learning Algorithm*,
    eq. (3), (8), (10)-(12).
    """
    cards, X = _size(cardinalities)
    target = _check_target(target, X)
    mask = _check_mask(mask, X)
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    tol = check_positive(tol, "tol", allow_zero=True)
    require_memory(8.0 * 8 * X, f"fit_log_linear over {X} states (cardinalities)")
    d = fsll.dual(target, cards)[mask]
    theta = np.zeros(X)
    if not d.size:  # no free parameter: the uniform distribution
        return fsll.probabilities(theta, cards), {
            "n_iter": 0, "converged": True, "stop_reason": "converged: no free parameter",
            "theta": theta}

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        theta[mask] = z
        log_w = fsll.synthesize(theta, cards)
        log_z = float(logsumexp(log_w))
        p = np.exp(log_w - log_z)
        return log_z - float(z @ d), fsll.dual(p, cards)[mask] - d

    res = lbfgs(fun, np.zeros(int(mask.sum())), max_iter=max_iter, tol=tol)
    theta[mask] = res.x
    return fsll.probabilities(theta, cards), {"n_iter": int(res.nit),
                                              "converged": res.converged,
                                              "stop_reason": res.stop_reason, "theta": theta}
