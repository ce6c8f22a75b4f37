"""The result of a learner: :class:`Fit`, what :func:`mrflib.learning.learners.fit` returns.

In its own module so that every learner (:mod:`mrflib.learning.learners` for Boltzmann machines,
:mod:`mrflib.learning.factor_learning` for factor graphs) returns the same type without importing
the other; ``mrflib.learning.learners.Fit`` is the same class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Fit"]


@dataclass(repr=False)
class Fit:
    """The result of :func:`~mrflib.learning.learners.fit`.

    The learners build it; its constructor takes the attributes below, in their order
    (``model``, ``method``, ``solver``, ``n_steps``, ``converged``, ``seconds``, then the
    optional ``params``, ``grad_max``, ``mae``, ``options``, ``chains``, ``stop_reason``,
    ``tied``).

    Attributes
    ----------
    model : BoltzmannMachine or FactorGraph
        The learned model, of the structure's family: a Boltzmann machine, or a factor
        graph (normalized potentials) when the structure was one.
    method : str
        The learner that was run, one of :data:`mrflib.learning.learners.METHODS`.
    solver : str
        How it was run: ``"gradient"``, ``"lbfgs"``, ``"exact"`` or ``"lap"``.
    n_steps : int
        Parameter updates made (gradient steps, or L-BFGS iterations).
    converged : bool
        Whether the stopping tolerance was met before ``max_steps`` or the time limit
        (never for the learners that draw: CD, PCD, SMCI-PCD).
    seconds : float
        Wall time of the fit (validation included, history table excluded).
    params : ndarray, shape (steps + 1, n + E) or None
        Parameters ``(bias, coupling)`` at every step, from the initial ones on.
    grad_max : ndarray, shape (steps + 1,) or None
        ``max |Delta|`` of the ascent direction at every recorded step.
    mae : ndarray or None
        Mean absolute error of the couplings to the reference model at every step
        (the quantity of Figure 3), when a reference was given.
    options : dict
        The options the fit ran with.
    chains : ndarray or None
        The final persistent sample set (``"pcd"``, ``"smci-pcd"``).
    tied : dict or None
        With ``tie``: each group's fitted parameters by label
        (:meth:`mrflib.learning.tying.Tie.parameters`; ``fit.tied["J"]`` is a tied Potts
        coupling ``J``), whether or not the history was recorded; else ``None``.
    stop_reason : str
        Why the fit stopped: converged (and the tolerance), ``max_steps`` reached, the
        time limit reached (``"time limit of 2 s reached after 341 steps"``, the same
        words for every learner), or
        for ``"mle"`` with the exact solver the optimizer's message or that the MLE does
        not exist for the data.
    """

    model: Any
    method: str
    solver: str
    n_steps: int
    converged: bool
    seconds: float
    params: np.ndarray | None = None
    grad_max: np.ndarray | None = None
    mae: np.ndarray | None = None
    options: dict = field(default_factory=dict)
    chains: np.ndarray | None = None
    stop_reason: str = ""
    tied: dict | None = None

    def __repr__(self) -> str:
        """One line: what ran, how it ended and what it kept (never the history itself)."""
        kept = [f"{name} {getattr(self, name).shape}" for name in ("params", "grad_max", "mae",
                                                                   "chains")
                if getattr(self, name) is not None]
        reason = self.stop_reason if len(self.stop_reason) <= 80 \
            else self.stop_reason[:77] + "..."
        return (f"Fit({type(self.model).__name__}, method={self.method!r}, "
                f"solver={self.solver!r}, n_steps={self.n_steps}, converged={self.converged},"
                f" seconds={self.seconds:.3g}, stop_reason={reason!r}"
                + (f", kept: {', '.join(kept)}" if kept else "") + ")")

    @property
    def history(self):
        """Per-step records as a pandas DataFrame (step, grad_max, mae if a reference)."""
        import pandas as pd

        if self.params is None:
            return pd.DataFrame(columns=["step", "grad_max", "mae"])
        steps = np.arange(self.params.shape[0])
        cols = {"step": steps}
        if self.grad_max is not None:
            cols["grad_max"] = self.grad_max
        if self.mae is not None:
            cols["mae"] = self.mae
        return pd.DataFrame(cols)
