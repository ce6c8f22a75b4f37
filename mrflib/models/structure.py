"""Which backend serves a model: the one place the library tells the model kinds apart.

Every algorithm has one public front (``exact``, ``approx``, ``sampling``, ``smci``,
``bounds``, ``learning.fit``) and, behind it, backends specialised to a model's structure:

* :data:`PAIRWISE_BINARY`: a :class:`~mrflib.models.boltzmann.BoltzmannMachine`, ±1 spins
  and pairwise couplings. Its backends are the closed forms of the papers (the tanh
  identities of 1-SMCI, the local fields of Gibbs sampling, mean-field equations) on flat
  bias and coupling arrays, and answer in spins.
* :data:`PAIRWISE`: a :class:`~mrflib.models.factor_graph.FactorGraph` whose factors hold at
  most two variables each (Potts, clock, any pairwise model with fields).
* :data:`GENERAL`: any other factor graph.

A factor graph with two states per variable and pairwise factors (``FactorGraph.from_boltzmann``
of a machine) is :data:`PAIRWISE`, not :data:`PAIRWISE_BINARY`: its answers are states
``0``/``1``, its own domain, and the table backends give them. The table backends serve
both :data:`PAIRWISE` and :data:`GENERAL` models. Their pairwise kernels are chosen inside
them, by the same test on the model they pack after the evidence
(``mrflib.inference.sampling._pairwise.is_pairwise`` on its scope boundaries), which this
layer, below inference, cannot call.

Fronts dispatch with ``structure(model) == PAIRWISE_BINARY`` rather than by the model's
class, so that a new backend (or a new model kind) is added here and in the fronts, never
in the engines.
"""

from __future__ import annotations

from typing import Any

from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph

__all__ = ["PAIRWISE_BINARY", "PAIRWISE", "GENERAL", "structure", "is_pairwise_binary"]

#: A Boltzmann machine: ±1 spins, pairwise couplings and fields.
PAIRWISE_BINARY = "pairwise binary"
#: A factor graph whose factors hold at most two variables each.
PAIRWISE = "pairwise"
#: Any other factor graph.
GENERAL = "general"


def structure(model: Any, name: str = "model") -> str:
    """The structure of ``model`` that chooses its backend.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model; anything else is a ``TypeError``.
    name : str, default "model"
        The argument named in that error.

    Returns
    -------
    str
        :data:`PAIRWISE_BINARY` for a Boltzmann machine, :data:`PAIRWISE` for a factor
        graph whose scopes hold at most two variables, :data:`GENERAL` otherwise.

    Raises
    ------
    TypeError
        If ``model`` is neither model.
    """
    if isinstance(model, BoltzmannMachine):
        return PAIRWISE_BINARY
    if isinstance(model, FactorGraph):
        return PAIRWISE if all(len(s) <= 2 for s in model.scopes) else GENERAL
    raise TypeError(f"{name} must be a BoltzmannMachine or a FactorGraph, got "
                    f"{type(model).__name__}")


def is_pairwise_binary(model: Any, name: str = "model") -> bool:
    """True when ``model`` is served by the ±1 backends: the fronts' one test.

    Parameters
    ----------
    model, name
        As in :func:`structure`.

    Returns
    -------
    bool
        ``structure(model, name) == PAIRWISE_BINARY``, without reading a factor graph's
        scopes.
    """
    if isinstance(model, FactorGraph):
        return False
    return structure(model, name) == PAIRWISE_BINARY
