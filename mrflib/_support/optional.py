"""Optional dependencies: import one, or say which extra of mrflib installs it.

The core of mrflib needs numpy, scipy and numba only; a few parts use packages that
``pip install mrflib`` does not bring (scikit-learn's digits, pgmpy's expert networks, a
Dask cluster, papermill for sweeps). Those parts import them through
:func:`optional_import`, so that a missing package is an ``ImportError`` that says what
needs it and the one command that installs it, not a bare ``No module named ...``.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

__all__ = ["DISTRIBUTIONS", "optional_import", "importable"]

#: The pip distribution of each optional top-level module.
DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "pgmpy": "pgmpy",
    "distributed": "dask[distributed]",
    "papermill": "papermill",
    "pyagrum": "pyagrum",
    "py_d4": "d4solver",
    "pysat": "python-sat",
}


def optional_import(name: str, purpose: str, extra: str) -> ModuleType:
    """``importlib.import_module(name)`` for an optional dependency.

    Parameters
    ----------
    name : str
        The module, e.g. ``"sklearn.datasets"``.
    purpose : str
        What needs it, e.g. ``"datasets.digits()"``; starts the error message.
    extra : str
        The extra of mrflib that installs it (``pyproject.toml``), e.g. ``"datasets"``.

    Raises
    ------
    ImportError
        When the package cannot be imported: ``"<purpose> needs <distribution>, which is
        not installed: pip install "mrflib[<extra>]""``, chained to the original error.
    """
    top = name.partition(".")[0]
    try:
        with warnings.catch_warnings():
            # what a package says while it is imported concerns its internals or its own
            # setup, not any call of ours: pgmpy's init imports its deprecated StructureScore
            # (FutureWarning) and tqdm.auto, which warns in a kernel without ipywidgets
            warnings.simplefilter("ignore")
            importlib.import_module(top)  # first, so a cached submodule cannot hide its absence
            return importlib.import_module(name)
    except ImportError as err:
        dist = DISTRIBUTIONS.get(top, top)
        raise ImportError(f"{purpose} needs {dist}, which is not installed (or does not "
                          f'import): pip install "mrflib[{extra}]"') from err


def importable(name: str, purpose: str, extra: str) -> bool:
    """Whether :func:`optional_import` of ``name`` succeeds: what an optional part answers
    when asked whether it can run.

    Parameters
    ----------
    name, purpose, extra : str
        As :func:`optional_import` takes them.

    Returns
    -------
    bool
        ``True`` when the module imports.
    """
    try:
        optional_import(name, purpose, extra)
    except ImportError:
        return False
    return True
