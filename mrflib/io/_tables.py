"""Tables between mrflib and the formats it reads and writes: the weights of log tables
written back exactly (UAI files and pgmpy models, :func:`exact_weights`) and pgmpy's tables
read with their axes in a given order (:func:`values_on`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["exact_weights", "values_on"]

#: float64's machine epsilon.
_EPS = float(np.finfo(np.float64).eps)


def exact_weights(table: np.ndarray, k: int) -> np.ndarray:
    """``exp(table)``, each entry the float whose ``log`` gives the entry back when one
    within two units in the last place does (always so for a table read from a file).

    Parameters
    ----------
    table : ndarray
        A log table of the model (``-inf``: a zero weight).
    k : int
        Its factor's index, which a refusal names (``model.log_tables[k]``).

    Returns
    -------
    ndarray of float64
        The weights, of the table's shape; a ``ValueError`` for a log-weight whose weight
        overflows, underflows to zero or to a subnormal float that would be read back as
        another log-weight.
    """
    target = np.asarray(table, dtype=np.float64).reshape(-1)
    with np.errstate(over="ignore", under="ignore"):
        w = np.exp(target)
    if np.isinf(w).any():
        raise ValueError(f"model.log_tables[{k}] holds the log-weight {target.max()!r}, whose "
                         "exp overflows float64: the table cannot be written as UAI weights "
                         "(subtract a constant from it first)")
    if ((w == 0) & np.isfinite(target)).any():
        raise ValueError(f"model.log_tables[{k}] holds the log-weight "
                         f"{target[np.isfinite(target)].min()!r}, whose exp underflows to 0: "
                         "it would be written as a zero weight (add a constant to the table "
                         "first)")
    with np.errstate(divide="ignore"):
        miss = np.flatnonzero(np.log(w) != target)
        for step in (1, -1, 2, -2):
            if not miss.size:
                break
            c = w[miss]
            for _ in range(abs(step)):
                c = np.nextafter(c, np.inf if step > 0 else 0.0)
            hit = np.log(c) == target[miss]
            w[miss[hit]] = c[hit]
            miss = miss[~hit]
        # a subnormal weight has too few digits: exp(-745) is read back as exp(-744.44)
        off = np.abs(np.log(w[miss]) - target[miss]) > 8 * _EPS * np.maximum(
            1.0, np.abs(target[miss]))
    if off.any():
        bad = float(target[miss[off][0]])
        raise ValueError(f"model.log_tables[{k}] holds the log-weight {bad!r}, whose exp is "
                         f"a subnormal float read back as the log-weight "
                         f"{float(np.log(w[miss[off][0]]))!r}: the table cannot be written "
                         "as UAI weights without changing the model (add a constant to it "
                         "first)")
    return w.reshape(np.shape(table))


def values_on(factor: Any, variables: Sequence[Any]) -> np.ndarray:
    """The float64 values of a pgmpy ``TabularCPD`` or ``DiscreteFactor`` with one axis per
    name of ``variables``, in that order (a permutation of ``factor.variables``).

    pgmpy keeps ``values`` with the axes of ``factor.variables``, a conditional table's
    child first; every conversion of pgmpy's tables into mrflib's reads them here
    (:mod:`mrflib.io.pgmpy_models` and the expert networks of :mod:`mrflib.io.datasets`).

    Parameters
    ----------
    factor : pgmpy TabularCPD or DiscreteFactor
        The table.
    variables : sequence
        Its variables in the order wanted.

    Returns
    -------
    ndarray of float64
        The values, one axis per variable of ``variables``.
    """
    own = list(factor.variables)
    return np.transpose(np.asarray(factor.values, dtype=np.float64),
                        [own.index(v) for v in variables])
