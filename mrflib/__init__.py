"""mrflib: learning and inference in Boltzmann machines and Markov random fields.

The reference implementation behind the book. The package is laid out by layer, each
importing only from the layers below it (import-linter checks it):

=====================  ================================================================
``mrflib.repro``       the book's harness: profiles, recording, trials, sweeps, the paper
                       runner (nothing below knows it)
``mrflib.io``          the UAI file format, the ``solve`` command, the papers' data sets
``mrflib.learning``    one :func:`~mrflib.learning.fit` and the learners: ML, the local
                       objectives, SMCI learning, LAP, FSLL
``mrflib.inference``   exact engines, sampling, SMCI, approximate inference, bounds on Z
``mrflib.models``      graphs, the Boltzmann machine, the factor graph, model generators
``mrflib._support``    input validation, files, threads, optional imports (private)
=====================  ================================================================

The names users call are importable from the top; submodules load on first use, so
``import mrflib`` stays cheap::

    from mrflib import BoltzmannMachine, FactorGraph, graphs, exact, sampling, smci, learning
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from mrflib._support import deprecation as _deprecation
from mrflib._support.deprecation import ModuleAliases as _ModuleAliases
from mrflib._support.numba_cache import ensure_cache_dir as _ensure_cache_dir

# before any kernel module imports numba: its cache must have a writable folder
_ensure_cache_dir(os.path.dirname(os.path.abspath(__file__)))

from mrflib.models.boltzmann import BoltzmannMachine  # noqa: E402
from mrflib.models.factor_graph import FactorGraph  # noqa: E402

__version__ = "0.1.0"

#: Short names of the public modules, and where each lives: ``mrflib.<short>`` is the module
#: itself, both as an attribute (``from mrflib import approx``) and as a module path
#: (``import mrflib.approx``).
_PUBLIC = {
    "graphs": "mrflib.models.graphs",
    "exact": "mrflib.inference.exact",
    "sampling": "mrflib.inference.sampling",
    "smci": "mrflib.inference.smci",
    "bounds": "mrflib.inference.bounds",
    "approx": "mrflib.inference.approx",
    "learning": "mrflib.learning",
    "lap": "mrflib.learning.lap",
    "fsll": "mrflib.learning.fsll",
    "io": "mrflib.io",
    "datasets": "mrflib.io.datasets",
    "precision": "mrflib.models.precision",
    "models": "mrflib.models",
    "inference": "mrflib.inference",
    # The experiment harness: importable from the top, never loaded by ``import mrflib``.
    "repro": "mrflib.repro",
}

#: Harness modules once reachable from the top; they live in :mod:`mrflib.repro`.
_MOVED = {name: f"mrflib.repro.{name}" for name in ("experiments", "report", "sweep")}

#: Functions that left a module for one of a higher layer, which the old module cannot
#: import: reached from the old module for one release, warning when called.
_deprecation.MOVED_NAMES.update({
    "mrflib.inference.exact.fit_mle": "mrflib.learning._maximum_likelihood:fit_mle",
})

__all__ = ["BoltzmannMachine", "FactorGraph", "__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return importlib.import_module(_PUBLIC[name])
    if name in _MOVED:
        from mrflib._support.deprecation import warn_deprecated

        warn_deprecated(f"mrflib.{name}", _MOVED[name])
        return importlib.import_module(_MOVED[name])
    raise AttributeError(f"module 'mrflib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


_ModuleAliases("mrflib", _PUBLIC).install()
