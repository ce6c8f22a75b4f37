"""Domain reduction of a discrete factor graph by the zeros of its tables.

A state ``a`` of variable ``v`` can occur (has positive probability) only if every factor
``ψ_k`` holding ``v`` has some configuration with ``x_v = a``, positive weight, and every
other variable at a state that can occur. Deleting the states that fail this test, until
none does, is *generalized arc consistency* (Mackworth 1977; Dechter, *Constraint
Processing*, ch. 3): unit propagation of evidence (a unary indicator leaves one state) and
of the zeros of deterministic tables (conditional probability tables with 0/1 entries,
constraint tables). Pedigrees are full of both: a genotype given the parents' genotypes
and an observed phenotype keeps only the states consistent with them, so the clique
tables of exact inference on the reduced model hold only the states that can occur.

The reduction removes only states of probability zero, so ``Z``, every marginal of the
states kept, and every most probable state are those of the original model; the answers
are mapped back with :meth:`Domains.expand` (removed states get probability 0).
"""

from __future__ import annotations

import numpy as np

from mrflib._support.validation import check_instance, require_memory
from mrflib.inference.exact import _domains_kernels as _kernels
from mrflib.models.factor_graph import FactorGraph

__all__ = ["Domains", "reduce_domains"]


class Domains:
    """The states kept of each variable and the model restricted to them.

    Parameters
    ----------
    original : FactorGraph
        The model whose domains were reduced.
    kept : list of ndarray of int
        ``kept[v]``: the original states of ``v`` that can occur, increasing.
    zero : bool, default False
        Some constant factor of ``original`` is zero (``Z = 0``): no model is made.

    Attributes
    ----------
    cardinalities : ndarray of int64, shape (n,)
        The original number of states of each variable.
    kept : list of ndarray of int
        ``kept[v]``: the original states of ``v`` that can occur, increasing.
    model : FactorGraph or None
        The model on the kept states (state ``i`` of ``v`` is ``kept[v][i]``), factors in the
        original order with the same scopes; ``None`` when some variable keeps no state
        (then ``Z = 0``), or a constant factor is zero.
    removed : int
        Number of states removed in all.
    """

    def __init__(self, original: FactorGraph, kept: list[np.ndarray],
                 zero: bool = False) -> None:
        self.cardinalities = original.cardinalities
        self.kept = kept
        self.removed = int(sum(int(c) - len(k) for c, k in zip(original.cardinalities, kept)))
        self.model: FactorGraph | None = None
        if not zero and all(len(k) for k in kept):
            self.model = _restrict(original, kept) if self.removed else original

    @property
    def empty(self) -> bool:
        """Some variable keeps no state: every state of the model has zero weight."""
        return self.model is None

    def expand(self, v: int, p: np.ndarray) -> np.ndarray:
        """The marginal ``p`` over the kept states of ``v`` on all its original states.

        Parameters
        ----------
        v : int
            The variable.
        p : ndarray of float64, shape (len(kept[v]),)
            A marginal over the kept states of ``v``.

        Returns
        -------
        ndarray of float64, shape (cardinalities[v],)
            ``p`` at the kept states, 0 at the removed ones.
        """
        out = np.zeros(int(self.cardinalities[v]))
        out[self.kept[v]] = p
        return out

    def expand_table(self, scope: tuple, table: np.ndarray) -> np.ndarray:
        """A factor marginal over the kept states of ``scope`` on all its original states.

        Parameters
        ----------
        scope : tuple of int
            The factor's variables.
        table : ndarray of float64
            The marginal over the kept states, one axis per variable of ``scope``.

        Returns
        -------
        ndarray of float64
            Shaped by the original numbers of states of ``scope``: ``table`` at the kept
            states, 0 elsewhere.
        """
        out = np.zeros(tuple(int(self.cardinalities[v]) for v in scope))
        out[np.ix_(*(self.kept[v] for v in scope))] = table
        return out

    def states(self, x: np.ndarray) -> np.ndarray:
        """Original states of reduced states ``x``.

        Parameters
        ----------
        x : ndarray of int
            States of the reduced model, shape ``(n,)`` or ``(M, n)``.

        Returns
        -------
        ndarray of int, shaped like ``x``
            State ``x[..., v]`` of the reduced model as the original state ``kept[v][x[..., v]]``.
        """
        out = np.empty_like(x)
        for v, k in enumerate(self.kept):
            out[..., v] = k[x[..., v]]
        return out


def _restrict(model: FactorGraph, kept: list[np.ndarray]) -> FactorGraph:
    card = np.array([len(k) for k in kept], dtype=np.int64)
    card.flags.writeable = False
    tables = []
    for s, t in zip(model.scopes, model.log_tables):
        if s and any(len(kept[v]) < t.shape[a] for a, v in enumerate(s)):
            t = np.ascontiguousarray(t[np.ix_(*(kept[v] for v in s))])
            t.flags.writeable = False
        tables.append(t)
    return FactorGraph._from_checked(card, model.scopes, tuple(tables))


def _supports(alive: np.ndarray, a: int) -> np.ndarray:
    """States of axis ``a`` with some positive-weight configuration in ``alive``."""
    other = tuple(b for b in range(alive.ndim) if b != a)
    return np.any(alive, axis=other) if other else alive


def reduce_domains(model: FactorGraph) -> Domains:
    """Generalized arc consistency on the zeros (``-inf`` entries) of ``model``'s tables.

    Each factor in turn removes the states of its variables that have zero weight in all
    of its rows where the other variables are at states still kept; a factor is visited
    again when a domain of its scope shrank, until nothing changes. Work per visit is the
    factor's table size times its arity, in a compiled loop
    (:func:`mrflib.inference.exact._domains_kernels.arc_consistency`;
    :func:`_reduce_domains_reference`
    is the same loop on numpy arrays).

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` otherwise).

    Returns
    -------
    Domains
        The states kept and the restricted model.

    Raises
    ------
    ValueError
        When the state lists (about 9 bytes a state, 2 a table entry) do not fit in memory.
    """
    check_instance(model, FactorGraph, "model")
    card = model.cardinalities
    sizes = np.fromiter((t.size for t in model.log_tables), dtype=np.int64,
                        count=model.n_factors)
    # a flag and a kept index per state (a variable in no table may have any number), and
    # two flags per table entry (whether it is positive, and again for the tables with a zero)
    require_memory(9 * sum(card.tolist()) + 2 * int(sizes.sum()),
                   f"the state lists of {len(card)} variables")
    zero = any(not s and t == -np.inf for s, t in zip(model.scopes, model.log_tables))
    if zero or not model.n_factors:
        return Domains(model, [np.arange(c) for c in card.tolist()], zero=zero)
    positive = np.concatenate([np.ravel(t) > -np.inf for t in model.log_tables])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    arity = np.fromiter((len(s) for s in model.scopes), dtype=np.int64, count=model.n_factors)
    zeros = ~np.logical_and.reduceat(positive, starts) & (arity > 0)
    held = np.flatnonzero(zeros).tolist()
    width = arity[zeros]
    fvars = np.fromiter((v for k in held for v in model.scopes[k]), dtype=np.int64,
                        count=int(width.sum()))
    fptr = np.concatenate([[0], np.cumsum(width)])
    order = np.argsort(fvars, kind="stable")  # a variable's factors in increasing order
    vfac = np.repeat(np.arange(len(held)), width)[order]
    vptr = np.concatenate([[0], np.cumsum(np.bincount(fvars, minlength=len(card)))])
    sptr = np.concatenate([[0], np.cumsum(card)])
    alive = np.ones(int(sptr[-1]), dtype=np.bool_)
    _kernels.arc_consistency(positive[np.repeat(zeros, sizes)],
                             np.concatenate([[0], np.cumsum(sizes[zeros])]), fptr, fvars,
                             vptr, vfac, card, alive, sptr)
    kept = np.flatnonzero(alive)
    counts = np.add.reduceat(alive, sptr[:-1], dtype=np.int64)
    bounds = np.cumsum(counts)[:-1]
    return Domains(model, np.split(kept - np.repeat(sptr[:-1], counts), bounds))


def _reduce_domains_reference(model: FactorGraph) -> Domains:
    """:func:`reduce_domains` on numpy arrays, factor by factor: the reference of its
    compiled loop, which visits the factors in the same order."""
    check_instance(model, FactorGraph, "model")
    card = model.cardinalities.tolist()
    # a flag and a kept index per state: a variable in no table may have any number
    require_memory(9 * sum(card), f"the state lists of {len(card)} variables")
    dom = [np.ones(c, dtype=bool) for c in card]
    if any(not s and t == -np.inf for s, t in zip(model.scopes, model.log_tables)):
        return Domains(model, [np.flatnonzero(d) for d in dom], zero=True)
    holders = model.variable_factors()
    positive = [np.isfinite(t) if s else None for s, t in zip(model.scopes, model.log_tables)]
    zeros = [bool(s) and not positive[k].all() for k, s in enumerate(model.scopes)]
    pending = [k for k in range(model.n_factors) if zeros[k]]
    queued = np.zeros(model.n_factors, dtype=bool)
    queued[pending] = True
    while pending:
        k = pending.pop()
        queued[k] = False
        s = model.scopes[k]
        alive = positive[k][np.ix_(*(dom[v] for v in s))]
        for a, v in enumerate(s):
            sup = _supports(alive, a)
            if sup.all():
                continue
            idx = np.flatnonzero(dom[v])
            dom[v][idx[~sup]] = False
            if not dom[v].any():
                return Domains(model, [np.flatnonzero(d) for d in dom])
            for j in holders[v]:
                if j != k and zeros[j] and not queued[j]:
                    queued[j] = True
                    pending.append(j)
            alive = positive[k][np.ix_(*(dom[u] for u in s))]
    return Domains(model, [np.flatnonzero(d) for d in dom])
