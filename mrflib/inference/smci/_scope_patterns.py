"""1-SMCI of a pairwise factor graph's scopes by the configurations of each variable's
neighbours, the path of :mod:`mrflib.inference.smci._pairwise_scopes` when a variable's
neighbours have few configurations.

Every conditional that 1-SMCI of a pairwise scope sums depends on a row only through the
states of the scope's neighbours. When a variable's neighbours have few joint
configurations (a lattice of q = 4: 256; a sample set of ``N = 1000`` rows of a 256x256
Potts lattice below its transition shows 246 of them at a variable, on average), tabulating
every cavity over all configurations costs less than computing it for every row, and the
rows are read only through the keys of their configurations (:func:`keys`, which depend on
the rows alone: a fixed sample set, as in 1-SMCI learning, finds them once). A step then
costs ``O(Σ_i K_i q)`` for the tables (``K_i`` configurations of ``i``'s neighbours) and,
per pair and row, one dot product and one ``q``-vector update
(:mod:`._scope_patterns_kernels`). The sums equal the row-by-row kernels' up to the order
of summation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.threads import parallel_ok
from mrflib._support.validation import require_memory
from mrflib.inference.smci import _scope_patterns_kernels as _k

__all__ = ["LARGEST", "configurations", "applies", "keys", "pattern_sums"]

#: The most configurations of a variable's neighbours the tables cover (the keys fit in
#: 16 bits).
LARGEST = 1 << 16


def configurations(pw: Any) -> np.ndarray:
    """Each variable's number of configurations of its neighbours (as float64: a product
    past the integers' range stays finite in order)."""
    logs = np.log2(pw.card.astype(np.float64))
    per = np.zeros(len(pw.card))
    deg = np.diff(pw.nptr)
    has = deg > 0
    if len(pw.nbr):
        per[has] = np.add.reduceat(logs[pw.nbr], pw.nptr[:-1][has])
    return np.round(2.0 ** per)


def applies(pw: Any, n_rows: int) -> bool:
    """Whether the tables over the configurations are the cheaper way for ``n_rows`` rows:
    every variable's neighbours have at most :data:`LARGEST` configurations, and all the
    tables together (each variable's and both ends of each pair's) hold no more entries
    than four per row and neighbour entry."""
    if len(pw.card) == 0:
        return False
    K = configurations(pw)
    return bool(K.max() <= LARGEST
                and float(np.sum(K * (1 + np.diff(pw.nptr)))) <= 4.0 * max(n_rows, 64)
                * max(len(pw.nbr), len(pw.card)))


def keys(pw: Any, xt: np.ndarray, n_rows: int) -> np.ndarray:
    """The key of every row's configuration of every variable's neighbours.

    Parameters
    ----------
    pw : Pairwise
        The structure (:func:`applies` holds).
    xt : ndarray, shape (n, M)
        :func:`mrflib.inference.smci._pairwise_scopes.transposed` rows (trusted).
    n_rows : int
        The rows (``M`` may hold padding past them).

    Returns
    -------
    ndarray of uint8 or uint16, shape (n, n_rows)
        Row ``r``'s key at variable ``i``: its neighbours' states in mixed radix, the
        first neighbour the most significant digit.
    """
    n = len(pw.card)
    dtype = np.uint8 if configurations(pw).max(initial=1) <= 256 else np.uint16
    require_memory(float(np.dtype(dtype).itemsize) * n * n_rows,
                   f"the neighbours' configurations of {n_rows} rows of {n} variables")
    ids = np.empty((n, n_rows), dtype=dtype)
    _k.boundary_keys(xt, n_rows, pw.nptr, pw.nbr, pw.card, ids)
    return ids


def pattern_sums(sp: Any, w: np.ndarray, pe: np.ndarray, ids: np.ndarray, vacc: np.ndarray,
                 pacc: np.ndarray) -> None:
    """Add the sums over the rows of every variable's conditional to ``vacc (V,)`` and of
    every pair's to ``pacc (PA,)``.

    Parameters
    ----------
    sp : PairwiseScopes
        :func:`mrflib.inference.smci._pairwise_scopes.plan` of the structure.
    w, pe : ndarray of float64
        Exponentiated rows and pair tables with no zero weight
        (:func:`mrflib.inference.smci._pairwise_scopes._weights`).
    ids : ndarray, shape (n, N)
        :func:`keys` of the rows.
    vacc, pacc : ndarray of float64
        The sums, added to.
    """
    pw = sp.pw
    width = int(configurations(pw).max(initial=1)) * int(pw.card.max(initial=1))
    n_rows = ids.shape[1]
    work = float(n_rows) * 4 * max(len(sp.plo), 1) * int(pw.card.max(initial=1))
    kernel = _k.pattern_sums_parallel if parallel_ok(work) else _k.pattern_sums_serial
    kernel(ids, n_rows, w, pe, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, sp.voff,
           sp.pslot, sp.poff, sp.khi, vacc, pacc, width)
