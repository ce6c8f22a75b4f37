"""The result of a learner: :class:`Fit`, what :func:`mrflib.learning.learners.fit` returns.

In its own module so that every learner (:mod:`mrflib.learning.learners` for Boltzmann machines,
:mod:`mrflib.learning.table_learners` for factor graphs) returns the same type without importing
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
    ``tied``, ``checks``).

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
        Whether the fit's stopping rule held before ``max_steps`` or the time limit: for a
        deterministic ascent ``max |Delta| < tol``; for the learners that draw (CD, PCD,
        SMCI-PCD) under ``schedule="averaged"`` the averaged gradient within its own
        noise (``mrflib._support.averaging``; ``checks`` holds what the rule saw);
        never for them under ``schedule="constant"``, which has no stopping rule.
    seconds : float
        Wall time of the fit (validation included, history table excluded).
    params : ndarray, shape (steps + 1, n + E) or None
        Parameters ``(bias, coupling)`` at every step, from the initial ones on: what a fit
        stopped at that step returns (under ``schedule="averaged"``, the averaged iterate,
        which changes when an averaging batch completes).
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
    checks : dict or None
        Under ``schedule="averaged"``, the stopping rule's checks, one entry each (arrays):
        ``step``, ``window_start``, ``batches``, ``grad_norm`` (``|ḡ|_2`` of the averaged
        gradient), ``se_norm`` (its batch-means standard error ``s``), ``max_se`` and
        ``held``; else ``None``.
    stop_reason : str
        Why the fit stopped: converged (and the rule), ``max_steps`` reached, the
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
    checks: dict | None = None

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
        """Per-step records as a pandas DataFrame (step, grad_max, mae if a reference; under
        ``schedule="averaged"`` the stopping rule's ``avg_grad_norm``, ``avg_grad_se`` and
        ``rule_held`` at the steps it checked, missing at the others)."""
        import pandas as pd

        if self.params is None:
            return pd.DataFrame(columns=["step", "grad_max", "mae"])
        steps = np.arange(self.params.shape[0])
        cols = {"step": steps}
        if self.grad_max is not None:
            cols["grad_max"] = self.grad_max
        if self.mae is not None:
            cols["mae"] = self.mae
        frame = pd.DataFrame(cols)
        if self.checks is not None and len(self.checks["step"]):
            rule = pd.DataFrame({"step": self.checks["step"],
                                 "avg_grad_norm": self.checks["grad_norm"],
                                 "avg_grad_se": self.checks["se_norm"],
                                 "rule_held": self.checks["held"]})
            frame = frame.merge(rule, on="step", how="left")
        return frame
