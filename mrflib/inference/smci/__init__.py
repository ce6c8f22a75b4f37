"""Spatial Monte Carlo integration (SMCI) and its generalization (GSMCI).

Yasuda & Uchizawa, "A generalization of spatial Monte Carlo integration" (GSMCI paper)
and section 3 of Yasuda, "Learning algorithm of Boltzmann machine based on spatial
Monte Carlo integration method" (SMCI learning paper).

For a target region ``T`` and a sum region ``A ⊇ T``, GSMCI (eq. 8) estimates
``⟨f(x_T)⟩`` by averaging, over the sample points, the exact conditional expectation
of ``f`` over ``x_A`` given the sample's values on the boundary ``∂A``:

.. math::

    m_T(A; S) = \\frac{1}{M} \\sum_{\\ell=1}^M \\sum_{x_A} f(x_T)
                P(x_A \\mid s^{(\\ell)}_{\\partial A}).

Here ``f(x_T) = Π_{i ∈ T} x_i``. Special cases on a pairwise Boltzmann machine:

* standard MCI: no sum region (the sample average of ``f``);
* 1-SMCI: ``A = T`` (closed forms eq. 14-17);
* s2-SMCI: ``A = T ∪ I_1(T)`` with ``I_1(T)`` a greedy independent set of ``N_1(T)``
  (Algorithm 1; closed forms eq. 21-26);
* k-SMCI: ``A = R_{k-1}(T)`` (eq. 7); in particular 2-SMCI: ``A = R_1(T)``.

Node labels are 0-based here; the papers number nodes from 1.

One front serves both model kinds; the backend is chosen by the model's structure
(:func:`mrflib.models.structure.structure`). A Boltzmann machine's estimators are the closed
forms above (:mod:`mrflib.inference.smci._spin_estimators`); :func:`moments` of a factor graph
gives its mean parameters, by sample frequencies on any and by those closed forms on a binary
pairwise one. The marginals of general factor graphs (any number of states, factors of any
arity) by SMCI of any order are :mod:`mrflib.inference.smci.regions`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib.inference.smci import _spin_estimators
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.structure import is_pairwise_binary

__all__ = [
    "METHODS",
    "MAX_REGION",
    "moments",
    "gsmci",
    "gsmci_values",
    "sum_region",
    "s2_region",
    "s2_independent_set",
    "asymptotic_variance",
    "covariances",
    "ais_moments",
]

#: The estimators :func:`moments` knows.
METHODS = _spin_estimators.METHODS

#: Largest sum region (in spins) the enumeration of :func:`gsmci` accepts.
MAX_REGION = _spin_estimators.MAX_REGION


def moments(model: BoltzmannMachine | FactorGraph, samples: Any, method: str = "1-smci"
            ) -> tuple[Any, Any]:
    """Estimates of every ``⟨x_i⟩`` and every edge's ``⟨x_i x_j⟩`` from sample points.

    A :class:`~mrflib.models.factor_graph.FactorGraph` gets the estimates of its mean
    parameters, ``(variable marginals, factor marginals)`` as
    :func:`mrflib.inference.exact.moments` returns them: ``"mci"`` (sample frequencies)
    for any, the SMCI estimators for a binary pairwise one, computed on its
    :meth:`~mrflib.models.factor_graph.FactorGraph.to_boltzmann` machine.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
    samples : array_like, (M, n) spins in {-1, +1} (states of a FactorGraph)
        Sample points; for 1-SMCI learning these are the data (SMCI learning paper, eq. 23).
    method : {"mci", "1-smci", "s2-smci", "2-smci"}, default "1-smci"
        ``"mci"``: sample averages; ``"1-smci"``: eq. (14)-(17) of the GSMCI paper;
        ``"s2-smci"``: eq. (22)-(26) with the sum regions of :func:`s2_region`;
        ``"2-smci"``: exact sums over ``R_1(T)`` (eq. 7 with ``k = 2``).

    Returns
    -------
    mean : (n,) float64
    pair : (E,) float64, in the order of ``model.edges``

    Notes
    -----
    The first three methods run as numba kernels vectorized over samples (``O(M (n + E))``
    work plus the independent-set sizes for s2-SMCI). "2-smci" enumerates ``2^{|R_1(T)|}``
    states per target and distinct boundary configuration.
    """
    if is_pairwise_binary(model):
        return _spin_estimators.moments(model, samples, method)
    return _spin_estimators.factor_moments(model, samples, method)


@renamed_argument("bm", "model")
def gsmci(model: BoltzmannMachine, samples: Any, target: Any, region: Any) -> float:
    """GSMCI estimate of ``⟨Π_{i∈T} x_i⟩``, eq. (8) of the GSMCI paper.

    Parameters
    ----------
    model : BoltzmannMachine
    samples : array_like, (M, n) spins in {-1, +1}
        Sample points (e.g. Gibbs samples of ``model``, or data).
    target : sequence of int
        The target region ``T`` (``f(x_T) = Π_{i ∈ T} x_i``).
    region : sequence of int
        The sum region ``A ⊇ T``; the sum over ``x_A`` is done exactly by enumeration
        (``2^|A|`` states) conditioned on each sample's values on ``∂A``. An empty
        region gives standard MCI.

    Returns
    -------
    float
        The mean of :func:`gsmci_values`.
    """
    return _spin_estimators.gsmci(model, samples, target, region)


@renamed_argument("bm", "model")
def gsmci_values(model: BoltzmannMachine, samples: Any, target: Any, region: Any) -> np.ndarray:
    """Per-sample terms ``ρ_T(A; s^(ℓ)_{∂A})`` of eq. (8)/(13), by exact summation over ``A``.

    Their mean is :func:`gsmci`. Samples sharing a boundary configuration are summed once.

    Parameters
    ----------
    model : BoltzmannMachine
    samples : array_like, (M, n) spins in {-1, +1}
        Sample points, at least one.
    target : sequence of int
        The target region ``T`` (``f(x_T) = Π_{i ∈ T} x_i``).
    region : sequence of int
        The sum region ``A ⊇ T`` (at most :data:`MAX_REGION` nodes); an empty ``region``
        gives the standard MCI terms ``f(s^(ℓ)_T)``.

    Returns
    -------
    numpy.ndarray of float64, shape (M,)
        The term of each sample.
    """
    return _spin_estimators.gsmci_values(model, samples, target, region)


@renamed_argument("bm", "model")
def sum_region(model: BoltzmannMachine, target: Any, method: str = "1-smci",
               k: int | None = None) -> np.ndarray:
    """The sum region ``A`` each estimator uses for target ``T``.

    Parameters
    ----------
    model : BoltzmannMachine
    target : sequence of int
        The target region ``T``: distinct node labels, at least one.
    method : {"mci", "1-smci", "s2-smci", "2-smci", "k-smci"}, default "1-smci"
        ``"mci"``: empty (no summation); ``"1-smci"``: ``T``; ``"s2-smci"``:
        :func:`s2_region`; ``"2-smci"``: ``R_1(T)``; ``"k-smci"``: ``R_{k-1}(T)`` of
        eq. (5) and (7).
    k : int or None, default None
        ``k >= 1`` of ``"k-smci"``; any other method refuses it.

    Returns
    -------
    numpy.ndarray of int64
        The nodes of ``A``.
    """
    return _spin_estimators.sum_region(model, target, method, k)


@renamed_argument("bm", "model")
def s2_region(model: BoltzmannMachine, target: Any) -> np.ndarray:
    """The s2-SMCI sum region ``A = T ∪ I_1(T)`` (section 4.1, Algorithm 1).

    Parameters
    ----------
    model : BoltzmannMachine
    target : sequence of int
        The target region ``T``: distinct node labels, at least one.

    Returns
    -------
    numpy.ndarray of int64
        The nodes of ``A``, sorted.
    """
    return _spin_estimators.s2_region(model, target)


@renamed_argument("bm", "model")
def s2_independent_set(model: BoltzmannMachine, target: Any) -> np.ndarray:
    """The greedy independent set ``I_1(T) ⊆ N_1(T)`` of Algorithm 1 (GSMCI paper).

    Ties of the minimum degree (> 0) are broken by the largest
    ``W_j = Σ_{i ∈ T ∩ ∂j} |w_{i,j}|`` (section 4.1), then by the smallest label.

    Parameters
    ----------
    model : BoltzmannMachine
    target : sequence of int
        The target region ``T``: distinct node labels, at least one.

    Returns
    -------
    numpy.ndarray of int64
        The nodes of ``I_1(T)``, sorted.
    """
    return _spin_estimators.s2_independent_set(model, target)


@renamed_argument("bm", "model")
def asymptotic_variance(model: BoltzmannMachine, target: Any, region: Any) -> float:
    """``M v(A)``, the asymptotic variance of GSMCI times ``M``, eq. (12), exactly.

    .. math::

        M v(A) = \\sum_{x_{\\partial A}} \\rho_T(A; x_{\\partial A})^2 P(x_{\\partial A})
                 - \\langle f(x_T) \\rangle^2,

    by enumerating all ``2^n`` states (so ``n`` must be small). Theorem 2:
    ``T ⊆ U_1 ⊆ U_2`` implies ``v(U_1) >= v(U_2) >= 0``.

    Parameters
    ----------
    model : BoltzmannMachine
        Small enough for its ``2^n`` states to fit in memory.
    target : sequence of int
        The target region ``T``.
    region : sequence of int
        The sum region ``A ⊇ T``; an empty ``region`` gives standard MCI,
        ``Var f = 1 - ⟨f⟩^2``.

    Returns
    -------
    float
        ``M v(A)``, non-negative.

    Raises
    ------
    ValueError
        When the enumeration of the ``2^n`` states does not fit in memory.
    """
    return _spin_estimators.asymptotic_variance(model, target, region)


@renamed_argument("bm", "model")
def covariances(model: BoltzmannMachine, mean: Any, pair: Any) -> np.ndarray:
    """Edge covariances ``χ_ij = ⟨x_i x_j⟩ - ⟨x_i⟩⟨x_j⟩`` (section 4.2) from moment estimates.

    Parameters
    ----------
    model : BoltzmannMachine
    mean : array_like, shape (n,)
        Estimates of ``⟨x_i⟩`` (as :func:`moments` returns them).
    pair : array_like, shape (E,)
        Estimates of ``⟨x_i x_j⟩``, in the order of ``model.edges``.

    Returns
    -------
    numpy.ndarray of float64, shape (E,)
        ``χ_ij`` of every edge.
    """
    return _spin_estimators.covariances(model, mean, pair)


@renamed_argument("bm", "model")
def ais_moments(
    model: BoltzmannMachine, n_samples: int, *, beta_step: float = 1e-4, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Moments by annealed importance sampling (Neal 2001), the baseline of section 4.2.

    ``n_samples`` independent AIS runs start from the uniform distribution over
    ``{-1, +1}^n`` (inverse temperature 0) and move to ``beta = 1`` in steps of
    ``beta_step`` (``1e-4`` in the GSMCI paper), one Gibbs sweep per step.

    Parameters
    ----------
    model : BoltzmannMachine
    n_samples : int
        Independent AIS runs (positive).
    beta_step : float, default 0.0001
        Step of the inverse temperature, in (0, 1].
    rng : numpy.random.Generator or int
        The source of the starts and the uniforms.

    Returns
    -------
    mean : numpy.ndarray of float64, shape (n,)
        The self-normalized importance-weighted average of each ``x_i``.
    pair : numpy.ndarray of float64, shape (E,)
        That of each edge's ``x_i x_j``, in the order of ``model.edges``.
    """
    return _spin_estimators.ais_moments(model, n_samples, beta_step=beta_step, rng=rng)
