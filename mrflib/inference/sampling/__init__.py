"""Gibbs sampling, many independent chains at once: the front for every model.

:func:`gibbs` draws samples, :func:`sweep` advances chains, :func:`sweep_order` says in
which order a sweep visits the variables. The backend is chosen by the model's structure
(:func:`mrflib.models.structure.structure`):

* a Boltzmann machine (pairwise binary) is swept by the ±1 kernels of
  :mod:`mrflib.inference.sampling._spin_gibbs`: local fields ``h_i = b_i + Σ_j J_ij x_j``
  and ``P(x_i = +1 | x_rest) = 1 / (1 + exp(-2 h_i))``, in index order, or in checkerboard
  order on bipartite graphs of at least 1024 spins; its samples are spins (``int8``);
* a factor graph is swept by :mod:`mrflib.inference.sampling.chains` (pairwise kernels
  colour class by colour class where every factor holds at most two variables, the general
  kernel otherwise), with evidence, zero weights, marginals and their standard errors; its
  samples are states (``int64``).

Each backend's draws depend only on the seed, not on the number of threads. The backends'
seeded bits differ from each other (a machine and its ``FactorGraph.from_boltzmann`` give the
same distribution, not the same draws).

I.i.d. samples by enumeration or the junction tree, for models that fit, are
:func:`mrflib.inference.exact.sample`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib._support.threads import blas_single_threaded
from mrflib._support.validation import check_positive
from mrflib.inference.sampling import _spin_gibbs, chains
from mrflib.models._checks import check_states
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.structure import is_pairwise_binary

__all__ = ["gibbs", "sweep", "sweep_order", "UNIFORM_BLOCK"]

#: Uniforms a Boltzmann machine's sampler draws per block (bounds its buffer at 32 MiB).
UNIFORM_BLOCK = _spin_gibbs.UNIFORM_BLOCK


@renamed_argument("bm", "model")
def sweep_order(model: BoltzmannMachine | FactorGraph) -> np.ndarray:
    """The order in which a sweep visits the variables.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model whose sweeps are asked about.

    Returns
    -------
    numpy.ndarray of int, shape (n,) or fewer
        A Boltzmann machine: ``0..n-1``, or colour blocks on bipartite graphs of at least
        :data:`mrflib.inference.sampling._checkerboard.MIN_NODES` spins. A factor graph:
        the variables a sweep updates (the observed ones are never updated), colour class
        by colour class where every factor holds at most two variables, else in index
        order.
    """
    if is_pairwise_binary(model):
        return _spin_gibbs.sweep_order(model)
    return chains.sweep_order(model)


@renamed_argument("bm", "model")
@blas_single_threaded
def sweep(model: BoltzmannMachine | FactorGraph, states: Any, n_sweeps: int, *,
          rng: Any) -> np.ndarray:
    """Advance each chain (row of ``states``) by ``n_sweeps`` Gibbs sweeps.

    This is the chain update of persistent contrastive divergence (Tieleman 2008)
    and of Algorithm 2 of the GSMCI paper.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model whose conditionals the sweeps draw from.
    states : array_like of int, shape (n_chains, n)
        The chains: spins in ``{-1, +1}`` of a Boltzmann machine, states of positive
        weight of a factor graph; not modified.
    n_sweeps : int
        Sweeps of every variable (``0`` returns a copy of ``states``).
    rng : numpy.random.Generator or int
        The source of the uniforms.

    Returns
    -------
    numpy.ndarray of int8 (int64 for a FactorGraph), shape (n_chains, n)
        The chains after the sweeps, a new array. A factor graph's draws are those of
        :func:`mrflib.inference.sampling.chains.advance`.
    """
    if is_pairwise_binary(model):
        return _spin_gibbs.sweep(model, states, n_sweeps, rng)
    x = np.ascontiguousarray(check_states(states, model.cardinalities, "states"),
                             dtype=np.int64).copy()
    n_sweeps = check_positive(n_sweeps, "n_sweeps", integer=True, allow_zero=True)
    return chains.advance(model, x, n_sweeps, rng=rng)


def gibbs(
    model: BoltzmannMachine | FactorGraph,
    n_samples: int,
    *,
    burn_in: int,
    thin: int = 1,
    n_chains: int | None = None,
    init: Any = None,
    evidence: Mapping[Any, Any] | None = None,
    rng: Any,
) -> np.ndarray:
    """Draw ``n_samples`` configurations by Gibbs sampling.

    ``n_chains`` independent chains (default: one per sample) start from uniformly
    random spins (or ``init``), run ``burn_in`` sweeps, then each records a sample
    every ``thin`` sweeps until ``n_samples`` are collected. Rows are ordered by
    recording time, then chain: row ``t * n_chains + c`` is chain ``c``'s ``t``-th sample.

    A :class:`~mrflib.models.factor_graph.FactorGraph` is sampled by
    :func:`mrflib.inference.sampling.chains.gibbs` (the same chains, burn-in and thinning)
    and gives ``int64`` states, as every sampler answers in its model's own domain.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model to sample.
    n_samples : int
        Configurations to draw (positive).
    burn_in : int
        Sweeps discarded before the first sample (keyword-only: choose it).
    thin : int, default 1
        Sweeps between successive samples of one chain.
    n_chains : int or None, default None
        Independent chains; at most ``n_samples``. ``None``: one per sample.
    init : array_like, shape (n_chains, n), optional
        Starting spins (states of a FactorGraph). Default: uniformly random.
    evidence : mapping or None, default None
        ``{variable: value}``: observed variables, never updated, at their values in every
        sample (spins ``-1``/``+1`` of a Boltzmann machine, whose free spins are drawn from
        their conditional, :func:`mrflib.models.boltzmann.clamp`; a factor graph's states,
        or names, as :meth:`~mrflib.models.factor_graph.FactorGraph.condition` takes them).
    rng : numpy.random.Generator or int
        The source of the starts and the uniforms.

    Returns
    -------
    ndarray of int8 (int64 for a FactorGraph), shape (n_samples, n)
        The samples, row ``t * n_chains + c`` chain ``c``'s ``t``-th.
    """
    if is_pairwise_binary(model):
        return _spin_gibbs.gibbs(model, n_samples, burn_in, thin, n_chains, init, rng,
                                 evidence)
    return chains.gibbs(model, n_samples, burn_in=burn_in, thin=thin, n_chains=n_chains,
                        init=init, evidence=evidence, rng=rng)
