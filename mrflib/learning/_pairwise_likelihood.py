"""The pseudo-likelihood of a pairwise factor graph and its gradient, over the data's
distinct contexts or row by row.

A factor graph whose factors all hold at most two variables is packed once into the
per-variable rows of :mod:`mrflib.inference.sampling._pairwise` (a variable's unary row and,
per neighbour, the sum of the pair tables oriented for it). The conditional
``P(x_i | x_{-i})`` of a row is then its unary row times one row per neighbour, and the
gradient of ``log P(x_i^μ | x_{-i}^μ)`` in those rows is ``[v = x_i^μ] - P(x_i = v | ...)``
on each row read. The kernel (:mod:`._pairwise_likelihood_kernels`) walks, for each
variable, its distinct contexts with their counts (found once per fit, where the blanket's
states are few) or else its data rows, the variables in parallel; its gradient in the packed
rows maps back to the factors' tables through the packing's ``src -> dst`` map. Memory: the
data transposed, the contexts, the packed rows and their gradient, nothing of size ``N x
factors``: this is why it replaces the distinct contexts of :mod:`._contexts` on pairwise
models, whose ``min(N, |blanket states|)`` contexts per variable, each with its factors'
positions, reach gigabytes on a 256x256 lattice.

:func:`_pseudo_log_likelihood_numpy` is the plain-numpy reference (the same sums,
vectorised over rows).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from mrflib._support.threads import parallel_ok
from mrflib._support.validation import require_memory
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import _pairwise_likelihood_kernels as _k

__all__ = ["PairwisePL", "objective"]


class PairwisePL:
    """``(1/N) Σ_μ Σ_i log P(x_i^μ | x_{-i}^μ)`` of a pairwise structure over the data
    ``x`` and its gradient in the flat tables, as a callable of the flat log-tables (the
    interface of :class:`mrflib.learning._contexts.Contexts`).

    Parameters
    ----------
    pw : Pairwise
        The structure's packing (:func:`mrflib.inference.sampling._pairwise.structure`).
    x : ndarray of int64, shape (N, n)
        The data (trusted).
    contexts : bool or None
        Evaluate every variable over its distinct contexts (``True``: a table of its
        blanket's code space each, for small blankets), every variable row by row
        (``False``), or each as its blanket's states make cheaper (``None``).
    """

    rows = None  # the objective reads every table entry (no pooling of tied variables)

    def __init__(self, pw: _pairwise.Pairwise, x: np.ndarray,
                 contexts: bool | None = None) -> None:
        N, n = x.shape
        # the data checked and transposed, the packed weights and their logs, their
        # gradient, and the gradient mapped
        require_memory(12.0 * N * n + 8.0 * (4 * pw.size + 2 * len(pw.src)),
                       f"the pseudo-likelihood of {n} variables over {N} rows")
        self.pw = pw
        self.N = N
        # the rows transposed (a variable's states contiguous), in the smallest integer type
        self.xt = np.ascontiguousarray(x.T, dtype=np.uint8 if pw.card.max(initial=1) <= 256
                                       else np.int32)
        self._contexts(contexts)

    def _contexts(self, contexts: bool | None) -> None:
        """The distinct contexts of the variables whose blanket states are few: a variable
        is evaluated over them when its blanket's code space (times its states) is at
        most ``4 N`` and the data show at most ``N / 2`` of its blanket states, else row
        by row (``contexts``: all one way or the other instead)."""
        pw, N = self.pw, self.N
        n = len(pw.card)
        nb_card = pw.card[pw.nbr].astype(np.float64)
        cum = np.concatenate([[0.0], np.cumsum(np.log2(nb_card))])
        log_space = cum[pw.nptr[1:]] - cum[pw.nptr[:-1]]
        chosen = log_space + np.log2(pw.card) <= np.log2(4.0 * N)
        if contexts is not None:
            chosen[:] = contexts
        radix, space = _blanket_radix(pw, chosen)
        n_ctx = np.zeros(n, dtype=np.int64)
        hist = np.zeros((space * pw.card)[chosen].max(initial=0), dtype=np.int32)
        # the kernel's first pass counts the contexts (the arrays it fills next unread)
        none = np.zeros(0, dtype=np.int64)
        _k.context_fill(False, self.xt, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, radix,
                        space, chosen, hist, n_ctx, none, none, none,
                        np.zeros(0, dtype=self.xt.dtype), np.zeros(0, dtype=np.int32),
                        np.zeros(0), np.zeros(0, dtype=np.int32))
        if contexts is None:
            chosen &= 2 * n_ctx <= N
        n_ctx[~chosen] = 0
        cptr = np.concatenate([[0], np.cumsum(n_ctx)]).astype(np.int64)
        qoff = np.concatenate([[0], np.cumsum(n_ctx * pw.card)]).astype(np.int64)
        soff = np.concatenate([[0], np.cumsum(n_ctx * np.diff(pw.nptr))]).astype(np.int64)
        require_memory(4.0 * (soff[-1] + qoff[-1]),
                       f"the pseudo-likelihood contexts of {int(chosen.sum())} variables")
        require_memory(8.0 * pw.size + 4.0 * cptr[-1],
                       "the pseudo-likelihood's observed counts")
        # the blankets' states decoded once (no division in the evaluations), as the rows,
        # and the part linear in the log-weights, counted once: how often each entry is
        # read at the observed state, and the rows of each context
        states = np.zeros(soff[-1], dtype=self.xt.dtype)
        counts = np.zeros(qoff[-1], dtype=np.int32)
        lin = np.zeros(pw.size)
        self.seen = np.zeros(cptr[-1], dtype=np.int32)
        _k.context_fill(True, self.xt, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, radix,
                        space, chosen, hist, n_ctx, cptr, qoff, soff, states, counts, lin,
                        self.seen)
        self.chosen, self.cptr, self.qoff, self.soff = chosen, cptr, qoff, soff
        self.states, self.counts = states, counts
        self.lin = lin
        # every variable over its contexts with at most four states: the kernels of that
        # path alone (decided by the structure and the data, once per fit), and their
        # scratch (a row of neighbour offsets per block of variables)
        self.narrow = bool(chosen.all() and pw.card.max(initial=1) <= 4)
        n_blocks = max(1, -(-n // _k.VARIABLE_BLOCK))
        self.kbase = np.zeros((n_blocks, max(1, int(np.diff(pw.nptr).max(initial=0)))),
                              dtype=np.int64) if self.narrow else None

    def data_marginals(self, size: int) -> np.ndarray | None:
        """The data's factor marginals, flat as the ``size`` table entries, from the counts
        of the contexts, when every variable goes over them and every entry feeds a
        weight (else ``None``: the caller counts the rows).

        ``lin`` holds how often the data show each entry of a variable's rows at its
        observed state: a unary row's entry, the rows in that state; a pair table's,
        the rows in both its states (the pair's two orientations, the same count). Each
        table entry takes the count of a weight it feeds (``src -> dst``): the integers
        a pass over the rows would count, divided by ``N`` alike, so the same bits, and a
        fit's existence test compiles no counting kernel."""
        pw = self.pw
        if not self.chosen.all() or not np.bincount(pw.src, minlength=size).all():
            return None
        counts = np.empty(size)
        counts[pw.src] = self.lin[pw.dst]
        return counts / self.N

    def __call__(self, flat: np.ndarray, want_grad: bool = True
                 ) -> tuple[float, np.ndarray]:
        pw = self.pw
        w, logs = _pairwise.weights(pw, flat)
        grad = self.lin.copy() if want_grad else np.zeros(pw.size)
        values = np.zeros(len(pw.card))
        work = float(self.N) * (len(pw.card) + len(pw.nbr)) * 8
        # blocks of variables handed out one at a time: one idle core is enough
        parallel = parallel_ok(work, min_idle=1.0)
        if self.narrow:
            args = (bool(want_grad), pw.nptr, pw.noff, pw.uoff, pw.card, self.cptr,
                    self.qoff, self.soff, self.states, self.counts, self.seen, self.lin, grad,
                    values)
            if parallel:
                with numba.parallel_chunksize(1):
                    _k.pl_narrow_parallel(w, bool(logs), *args, self.kbase)
            else:  # the kernel of the weights' kind alone
                kernel = _k.pl_narrow_logs if logs else _k.pl_narrow_products
                kernel(0, len(pw.card), w, *args, self.kbase[0])
        else:
            args = (self.xt, w, bool(logs), bool(want_grad), pw.nptr, pw.nbr, pw.noff,
                    pw.uoff, pw.card, self.chosen, self.cptr, self.qoff, self.soff,
                    self.states, self.counts, self.seen, self.lin, grad, values)
            if parallel:
                with numba.parallel_chunksize(1):
                    _k.pl_parallel(*args)
            else:
                _k.pl_serial(*args)
        value = float(values.sum()) / self.N
        if not want_grad:
            return value, np.zeros(len(flat))
        return value, _table_gradient(pw, grad, len(flat)) / self.N


def _blanket_radix(pw: _pairwise.Pairwise, chosen: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The mixed radix of each chosen variable's blanket codes (its neighbours in list
    order, the first the lowest digit) and the size of its code space (1 and 1 for the
    others): one pass per position in the neighbour lists, the lists' entries at that
    position at once."""
    radix = np.ones(len(pw.nbr), dtype=np.int64)
    space = np.ones(len(pw.card), dtype=np.int64)
    degree = np.diff(pw.nptr)
    digits = pw.card[pw.nbr]
    for p in range(int(degree.max(initial=0))):
        at = np.flatnonzero(chosen & (degree > p))
        k = pw.nptr[at] + p
        radix[k] = space[at]
        space[at] = space[at] * digits[k]
    return radix, space


def _table_gradient(pw: _pairwise.Pairwise, grad: np.ndarray, size: int) -> np.ndarray:
    """The gradient in the packed weights mapped to the flat tables: each entry sums the
    weights it feeds. When every weight comes from exactly one entry
    (``pw.gather``), an entry feeds at most two (its pair's two orientations), whose sum
    is the same in either order: one pass over ``grad`` in its own order, no gather."""
    if pw.gather is not None:
        return np.bincount(pw.gather, weights=grad, minlength=size)
    return np.bincount(pw.src, weights=grad[pw.dst], minlength=size)


def objective(structure: Any, x: np.ndarray) -> PairwisePL | None:
    """The pseudo-likelihood objective of the data ``x`` over ``structure``'s family when
    every factor holds at most two variables, else ``None``.

    Parameters
    ----------
    structure : FactorGraph
        The family (its tables are not read).
    x : ndarray of int64, shape (N, n)
        The data (trusted).

    Returns
    -------
    PairwisePL or None
    """
    if max(map(len, structure.scopes), default=0) > 2:
        return None
    packed = factor_gibbs.pack(structure)
    card = np.ascontiguousarray(structure.cardinalities, dtype=np.int64)
    pw = _pairwise.structure(*packed[4:], card, colouring=False)  # no sweeps here
    return None if pw is None else PairwisePL(pw, x)


def _pseudo_log_likelihood_numpy(pw: _pairwise.Pairwise, flat: np.ndarray, x: np.ndarray
                                 ) -> tuple[float, np.ndarray]:
    """Plain-numpy reference of :class:`PairwisePL`: the value and the gradient in the flat
    tables, from the log-weights (no exponentiated rows), vectorised over rows."""
    lw = _pairwise.log_weights(pw, flat)
    N = x.shape[0]
    g = np.zeros(pw.size)
    total = 0.0
    for i in range(len(pw.card)):
        c = int(pw.card[i])
        idx = [np.repeat((pw.uoff[i] + np.arange(c))[None, :], N, axis=0)]
        for k in range(pw.nptr[i], pw.nptr[i + 1]):
            idx.append(pw.noff[k] + x[:, pw.nbr[k]][:, None] * c + np.arange(c)[None, :])
        score = sum(lw[ix] for ix in idx)
        mx = score.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.exp(score - mx)
            lse = mx[:, 0] + np.log(p.sum(axis=1))
            p /= p.sum(axis=1, keepdims=True)
        obs = score[np.arange(N), x[:, i]]
        dead = mx[:, 0] == -np.inf
        total += -np.inf if dead.any() else float(np.sum(obs - lse))
        d = -p
        d[np.arange(N), x[:, i]] += 1.0
        d[dead] = 0.0
        for ix in idx:
            np.add.at(g, ix, d)
    return total / N, np.bincount(pw.src, weights=g[pw.dst], minlength=len(flat)) / N
