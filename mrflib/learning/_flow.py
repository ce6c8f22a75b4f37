"""Minimum probability flow in numerically stable form (used by :mod:`mrflib.learning.learners`).

MPF with single-spin-flip connectivity (Sohl-Dickstein, Battaglino & DeWeese 2011,
{cite}`sohl-dickstein-2011-mpf`) minimises the flow out of the data

.. math::

    K(\\theta) = \\frac{1}{N} \\sum_\\mu \\sum_i \\exp\\big((E(x^\\mu) - E(x^{\\mu,-i})) / 2\\big)
               = \\frac{1}{N} \\sum_\\mu \\sum_i e^{-u_i^\\mu}, \\qquad
    u_i = x_i h_i,\\ h_i = b_i + \\sum_j J_{ij} x_j .

A single term overflows float64 once ``-u > 709.78`` (e.g. couplings of 1e3 against the
data), and ``K`` itself is then not representable. Its logarithm always is:
``log K = c + log sum_mu,i w exp(-u - c)`` with ``c = max(-u)`` over the data, a
log-sum-exp whose largest term is ``exp(0) = 1`` and whose sum lies in ``[1/N, n]``; its
gradient ``grad K / K`` is a convex combination of the ``-x_i d h_i`` and so is bounded.
:func:`log_flow` evaluates both from the data's local-pattern counts (one pass for ``c``,
one shifted pass of the same kernel as the plain objective).

:class:`BoundedFlow` is the function L-BFGS minimises: ``K`` itself wherever ``K <= T``
(the plain kernel, bit for bit), continued above ``T`` by ``T (1 + log(K / T))``, which has
the same value and slope at ``T``, increases with ``K`` (so the minimiser is unchanged) and
is finite for every finite model. ``T = n e^20``: an L-BFGS fit started at ``theta = 0``
(where ``K = n``) does not go above ``K = n`` in the fits we measured (the test suite's and
the digits of the field test), so those fits are unchanged bit for bit; far from the data
(``K / n >> e^20``, e.g. an initial model with couplings of 20 or more) ``K`` is so badly
conditioned that L-BFGS's first step ``1 / |grad K|`` does not move the parameters at all,
while ``log K`` is convex, with a bounded gradient, and L-BFGS reaches the optimum.
"""

from __future__ import annotations

import math

import numpy as np

from mrflib.learning._local import LocalObjective

__all__ = ["BoundedFlow", "log_flow", "check_flow_finite"]

#: ``log(T / n)``: :class:`BoundedFlow` is ``K`` up to ``T = n e^LOG_T_PER_NODE``.
LOG_T_PER_NODE = 20.0


def log_flow(local: LocalObjective, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(log K, d log K / db, d log K / dJ)`` of an MPF :class:`LocalObjective` at ``theta``,
    finite for every finite ``theta`` (module docstring)."""
    c = local.max_exponent(theta)
    value, gb, gj = local(theta, True, c)  # value = -K e^-c, gradients of -K e^-c
    s = -value
    return c + math.log(s), gb / value, gj / value


def check_flow_finite(local: LocalObjective, theta: np.ndarray, value: float,
                      what: str = "objective") -> None:
    """Refuse (ValueError naming ``model``) an MPF ``value`` that overflowed float64, giving
    ``log K`` instead."""
    if not np.isfinite(value):
        log_k = log_flow(local, theta)[0]
        raise ValueError(
            f"model: the MPF {what} overflows float64 on these data (the flow K = "
            f"exp({log_k:.6g}) > 1.8e308); learning.mpf_log_flow(model, data) gives log K and "
            "its gradient for every finite model")


class BoundedFlow:
    """The MPF objective L-BFGS maximises: ``-K`` where ``K <= T``, else
    ``-T (1 + log(K / T))`` (module docstring). Same call signature as
    :class:`LocalObjective`."""

    def __init__(self, local: LocalObjective):
        self.local = local
        self.log_t = math.log(local.n) + LOG_T_PER_NODE if local.n else LOG_T_PER_NODE

    def __call__(self, theta: np.ndarray, want_value: bool = True):
        value, gb, gj = self.local(theta, True)
        if np.isfinite(value) and -value <= math.exp(self.log_t):
            return value, gb, gj
        log_k, lb, lj = log_flow(self.local, theta)
        t = math.exp(self.log_t)
        return -t * (1.0 + log_k - self.log_t), -t * lb, -t * lj

