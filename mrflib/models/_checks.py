"""The checks of a factor graph's states and evidence, shared by every engine that takes them.

:func:`check_states` checks rows of integer states against the cardinalities (the
:class:`~mrflib.models.factor_graph.FactorGraph` methods, the exact, sampling, SMCI and
approximate engines, the learners and the file readers take states through it), and
:func:`check_evidence` a mapping ``{variable: value}`` of indices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mrflib._support.validation import format_count, integer_values, require_memory

__all__ = ["check_states", "check_evidence"]


def check_states(states: Any, cardinalities: np.ndarray, name: str = "states") -> np.ndarray:
    """Integer states ``(N, n)`` within ``0..cardinality-1``; one row ``(n,)`` is ``(1, n)``.

    Parameters
    ----------
    states : array_like of int, shape (N, n) or (n,)
        The states to check (a float array holding integers is accepted).
    cardinalities : ndarray of int, shape (n,)
        Number of states of each variable (not checked).
    name : str, default "states"
        What the ``ValueError`` calls the argument.

    Returns
    -------
    ndarray of int64, shape (N, n)
        The states, refused before their copy is allocated when it would not fit in
        memory.
    """
    n = len(cardinalities)
    arr = np.asarray(states)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(f"{name} must have shape (N, {n}) (one column per variable), "
                         f"got {np.shape(states)}")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must contain integer states, got dtype {arr.dtype}")
    # the int64 copy and the checks' temporaries (a float input: its rounded copy and
    # masks): refused before allocating, also for a broadcast view of a huge N
    require_memory(24.0 * arr.size, f"{name} ({format_count(arr.shape[0])} rows of {n} "
                   "states) as int64 with its checks")
    arr = integer_values(arr, f"{name} must contain integer states")
    bad = (arr < 0) | (arr >= cardinalities[None, :])
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}[{r}, {c}] = {int(arr[r, c])} is outside 0..{cardinalities[c] - 1}"
                         f" (variable {c} has {cardinalities[c]} states)")
    return arr


def check_evidence(evidence: Any, cardinalities: np.ndarray) -> dict[int, int]:
    """``{variable: value}`` with integer keys in ``0..n-1`` and values in range.

    Parameters
    ----------
    evidence : mapping
        Variables to values, both integers (names are resolved by the caller).
    cardinalities : ndarray of int, shape (n,)
        Number of states of each variable (not checked).

    Returns
    -------
    dict of int to int
        The evidence with plain ``int`` keys and values; a ``ValueError`` naming
        ``evidence`` for a variable or value out of range, or a variable named twice.
    """
    if not isinstance(evidence, Mapping):
        raise ValueError("evidence must be a mapping {variable: value}, got "
                         f"{type(evidence).__name__}")
    n = len(cardinalities)
    out: dict[int, int] = {}
    for v, x in evidence.items():
        for what, val in (("variable", v), ("value", x)):
            if isinstance(val, (bool, np.bool_)) or not isinstance(val, (int, np.integer)):
                raise ValueError(f"evidence must map integer variables to integer values, "
                                 f"got {what} {val!r}")
        v, x = int(v), int(x)
        if not 0 <= v < n:
            raise ValueError(f"evidence names variable {v}, but n = {n} (variables are "
                             f"0..{n - 1})")
        if not 0 <= x < cardinalities[v]:
            raise ValueError(f"evidence sets variable {v} to {x}, outside "
                             f"0..{cardinalities[v] - 1}")
        if v in out:  # a mapping whose keys are distinct objects but the same integer
            raise ValueError(f"evidence names variable {v} twice")
        out[v] = x
    return out


def check_spin_evidence(evidence: Any) -> dict[Any, int]:
    """``{variable: spin}`` of a Boltzmann machine's evidence, each spin ``-1`` or ``+1``.

    Parameters
    ----------
    evidence : mapping
        Variables to spins (the variables are checked by the caller, against its model).

    Returns
    -------
    dict
        The evidence with plain ``int`` spins; a ``ValueError`` naming ``evidence`` for
        anything but a mapping or a spin other than ``-1``/``+1``.
    """
    if not isinstance(evidence, Mapping):
        raise ValueError("evidence must be a mapping {variable: spin}, got "
                         f"{type(evidence).__name__}")
    out: dict[Any, int] = {}
    for v, s in evidence.items():
        if (isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer))
                or s not in (-1, 1)):
            raise ValueError("evidence of a BoltzmannMachine sets spins -1 or +1, got "
                             f"{s!r} for variable {v!r}")
        out[v] = int(s)
    return out
