"""mrflib: learning and inference in Boltzmann machines and Markov random fields.

The reference implementation behind the book: exact enumeration and Gibbs sampling
(:mod:`mrflib.exact`, :mod:`mrflib.sampling`), spatial Monte Carlo integration
(:mod:`mrflib.smci`), learning (:mod:`mrflib.learning`), the full-span log-linear model
(:mod:`mrflib.fsll`), LAP (:mod:`mrflib.lap`) and higher-order bounds on the partition
function (:mod:`mrflib.bounds`).

Submodules are imported on first use, so ``import mrflib`` stays cheap::

    from mrflib import BoltzmannMachine, graphs, exact, sampling, smci, learning
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from ._numba_cache import ensure_cache_dir as _ensure_cache_dir

# before any kernel module imports numba: its cache must have a writable folder
_ensure_cache_dir(os.path.dirname(os.path.abspath(__file__)))

from .factor_graph import FactorGraph  # noqa: E402
from .model import BoltzmannMachine  # noqa: E402

__version__ = "0.1.0"

_SUBMODULES = (
    "graphs",
    "model",
    "factor_graph",
    "exact",
    "elimination",
    "elimination_order",
    "factor_enumeration",
    "sampling",
    "smci",
    "learning",
    "factor_learning",
    "factor_models",
    "potentials",
    "fsll",
    "log_linear",
    "lap",
    "bounds",
    "datasets",
    "io",
    "precision",
)

# The experiment harness lives in :mod:`mrflib.repro`; these names stay importable from the
# top (``from mrflib import experiments, sweep``) without loading it with ``import mrflib``.
_HARNESS = {"experiments": "repro.experiments", "report": "repro.report", "sweep": "repro.sweep"}

__all__ = ["BoltzmannMachine", "FactorGraph", "__version__", *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _HARNESS:
        return importlib.import_module(f".{_HARNESS[name]}", __name__)
    raise AttributeError(f"module 'mrflib' has no attribute {name!r}")
