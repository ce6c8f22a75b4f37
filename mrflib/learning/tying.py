"""Tied parameters of a factor graph: a few free parameters ``φ`` shared by many tables.

A learner of :func:`mrflib.learning.learners.fit` on a
:class:`~mrflib.models.factor_graph.FactorGraph` gives every factor a free table by default.
:class:`Tie` replaces that family by a smaller one: the factors are put in groups, every
factor of a group has the group's one table, and that table has a *form*:

``"free"``
    every entry but the first one (state 0 of every variable, the reference, held at 0)
    is a parameter: ``|table| - 1`` of them.
``"symmetric"``
    the table is the same under any permutation of the scope's variables (their
    cardinalities must be equal): one parameter per multiset of states but the all-zero
    one; for a pair, ``t(a, b) = t(b, a)``, ``q (q + 1) / 2 - 1`` parameters.
``"potts"``
    ``t(x) = J [x_1 = x_2 = ... = x_r]``: one parameter ``J`` (scopes of two variables or
    more, equal cardinalities).

The flat log tables (every factor's table raveled, in factor order) are then the linear
map ``t = B φ`` of a sparse matrix ``B`` with one non-zero per table entry at most.
Every learner optimizes ``φ`` through ``B``: the log-likelihood's gradient is
``B^T (p̂ - p_φ)`` (data minus model factor marginals), the pseudo-likelihood's is
``B^T`` times its gradient in the tables, and the ridge ``l2`` of
:func:`~mrflib.learning.learners.fit` is on ``φ``. ``Fit.params`` holds ``φ``;
``Fit.model`` is the fitted model with normalized tables
(:func:`mrflib.learning.potentials.normalize`), so it compares entry by entry with any
other fit.

A group's "free" and "symmetric" tables keep the functions of one variable they contain
(a pair table's rows and columns), which a unary factor on the same variable also holds:
the family is then over-parameterized in ``φ`` (the model is not, and the likelihood is
convex in ``φ``: the optimizers reach the same model), and the ridge picks one ``φ``.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from mrflib._support.validation import check_array, require_memory
from mrflib.learning._layout import flat_tables, model_of
from mrflib.models._factor_bulk import group_by
from mrflib.models.factor_graph import FactorGraph

__all__ = ["FORMS", "Tie"]

FORMS = ("free", "symmetric", "potts")


class Tie:
    """Factors in groups sharing one table of a given form (see the module docstring).

    Parameters
    ----------
    structure : FactorGraph
        The family's scopes and cardinalities (its tables are ignored).
    groups : sequence of hashable or None, default None
        One label per factor; factors with the same label share one table and must have
        the same table shape. ``None``: every factor its own group (labelled by its index).
    form : str or mapping, default "free"
        ``"free"``, ``"symmetric"`` or ``"potts"`` for every group, or a mapping
        ``{label: form}`` (groups it does not name are "free").

    Attributes
    ----------
    labels : list
        The group labels, in order of first appearance; group ``g``'s parameters are
        ``φ[offsets[g]:offsets[g + 1]]``.
    forms : list of str
        The form of each group.
    n_params : int
        The length of ``φ``.
    param_offsets : ndarray of int64, shape (len(labels) + 1,)
        Where each group's parameters start in ``φ``.
    A : scipy.sparse.csr_matrix
        ``B``, shape (table entries, ``n_params``).
    offsets : ndarray of int64, shape (n_factors + 1,)
        Factor ``k``'s raveled table is ``B φ`` at ``offsets[k]:offsets[k + 1]``.
    shares : ndarray (n_params,)
        The number of factors sharing each parameter (its group's size).

    Examples
    --------
    A 3x3 Potts lattice whose couplings are one ``J`` on all horizontal and one on all
    vertical edges, and one field table shared by every variable:

    >>> import numpy as np
    >>> from mrflib import learning
    >>> from mrflib.inference import exact
    >>> from mrflib.learning.tying import Tie
    >>> from mrflib.models.lattices import potts_lattice
    >>> truth = potts_lattice(3, 3, 3, coupling=0.5, rng=0)
    >>> groups = ["field" if len(s) == 1 else
    ...           ("h" if s[1] == s[0] + 1 else "v") for s in truth.scopes]
    >>> tie = Tie(truth, groups, form={"h": "potts", "v": "potts"})
    >>> tie.n_params  # 2 free field entries, J_h, J_v
    4
    >>> data = exact.sample(truth, 500, rng=1)
    >>> fit = learning.fit(data, truth, "mle", tie=tie)
    >>> sorted(fit.tied)  # each group's fitted parameters, by label
    ['field', 'h', 'v']
    >>> fit.tied["h"].shape  # one Potts coupling
    (1,)
    """

    def __init__(self, structure: FactorGraph, groups: Sequence[Hashable] | None = None,
                 form: str | Mapping = "free") -> None:
        if not isinstance(structure, FactorGraph):
            raise TypeError(f"structure must be a FactorGraph, got {type(structure).__name__}")
        flat_tables(self, structure)
        # B has one non-zero per table entry at most, so B φ is no normalized potential:
        # a fit's model is normalized on the way out
        self.one_term_per_entry = False
        members = _groups(groups, len(self.scopes))
        self.labels = list(members)
        self.forms = [_form_of(form, label) for label in self.labels]
        if isinstance(form, Mapping):
            extra = [k for k in form if k not in members]
            if extra:
                raise ValueError(f"form names groups that no factor has: {extra[:5]}")
        require_memory(48.0 * float(self.offsets[-1]), f"the map from tied parameters to "
                       f"the {int(self.offsets[-1])} table entries")
        self.A, self.param_offsets, self.shares = self._matrix(members)

    @property
    def n_params(self) -> int:
        """The number of free parameters, the length of ``φ``."""
        return int(self.param_offsets[-1])

    def _matrix(self, members: dict) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        rows, cols, starts, shares = [], [], [0], []
        for label, form in zip(self.labels, self.forms):
            ks = np.asarray(members[label], dtype=np.int64)
            shape = self.shapes[ks[0]]
            bad = [int(k) for k in ks if self.shapes[k] != shape]
            if bad:
                raise ValueError(f"groups: factors of group {label!r} must have the same table "
                                 f"shape; factor {int(ks[0])} has {shape}, factor {bad[0]} "
                                 f"{self.shapes[bad[0]]}")
            entries, params = _form_entries(shape, form, label)
            rows.append((self.offsets[ks][:, None] + entries[None, :]).ravel())
            cols.append(np.tile(params + starts[-1], len(ks)))
            count = int(params.max()) + 1 if params.size else 0
            starts.append(starts[-1] + count)
            shares.append(np.full(count, float(len(ks))))
        T = int(self.offsets[-1])
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        A = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(T, starts[-1]))
        return (A, np.asarray(starts, dtype=np.int64),
                np.concatenate(shares) if shares else np.zeros(0))

    def tables(self, phi: Any) -> np.ndarray:
        """The flat log tables ``B φ``.

        Parameters
        ----------
        phi : array_like of float, shape (n_params,)
            The tied parameters ``φ``.

        Returns
        -------
        ndarray of float64, shape (table entries,)
            Every factor's log table raveled, in factor order at ``offsets``.
        """
        return self.A @ check_array(phi, "phi", ndim=1, shape=(self.n_params,))

    def model(self, phi: Any) -> FactorGraph:
        """The factor graph of parameters ``φ`` (tables ``B φ``, not normalized).

        Parameters
        ----------
        phi : array_like of float, shape (n_params,)
            The tied parameters ``φ``.

        Returns
        -------
        FactorGraph
            The structure's scopes and cardinalities with log tables ``B φ``.
        """
        return model_of(self, self.tables(phi))

    def parameters(self, phi: Any) -> dict:
        """Each group's parameters in ``φ``, by label.

        Parameters
        ----------
        phi : array_like of float, shape (n_params,)
            The tied parameters ``φ``.

        Returns
        -------
        dict
            ``{label: phi[param_offsets[g]:param_offsets[g + 1]]}`` (copies), in the order
            of ``labels``: a ``"potts"`` group's one coupling, a ``"symmetric"``
            group's upper triangle, a ``"free"`` group's entries past its reference.
        """
        phi = check_array(phi, "phi", ndim=1, shape=(self.n_params,))
        return {label: phi[self.param_offsets[g]:self.param_offsets[g + 1]].copy()
                for g, label in enumerate(self.labels)}

    def __repr__(self) -> str:
        counts = {f: self.forms.count(f) for f in FORMS if f in self.forms}
        return (f"Tie({len(self.scopes)} factors in {len(self.labels)} groups "
                f"{counts}, {self.n_params} parameters)")


def _groups(groups: Any, n_factors: int) -> dict:
    """``{label: [factor, ...]}`` in order of first appearance."""
    if groups is None:
        return {k: [k] for k in range(n_factors)}
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__len__"):
        raise ValueError(f"groups must be a sequence of {n_factors} labels (one per factor), "
                         f"got {type(groups).__name__}")
    labels = groups.tolist() if isinstance(groups, np.ndarray) else list(groups)
    if len(labels) != n_factors:
        raise ValueError(f"groups must have one label per factor ({n_factors}), got "
                         f"{len(labels)}")
    try:
        distinct = dict.fromkeys(labels)
    except TypeError:  # an unhashable label: the loop below names it
        distinct = None
    if distinct is not None and not any(map(_missing, distinct)):
        return {label: idx.tolist() for label, idx in group_by(labels)[0]}
    out: dict = {}
    for k, label in enumerate(labels):
        if _missing(label):
            raise ValueError(f"groups[{k}] must be a label (an int or a string), got {label!r}")
        try:
            out.setdefault(label, []).append(k)
        except TypeError:
            raise ValueError(f"groups[{k}] must be hashable, got {type(label).__name__}"
                             ) from None
    return out


def _missing(label: Any) -> bool:
    """A label that stands for no group: ``None`` or a float NaN."""
    return label is None or isinstance(label, float) and np.isnan(label)


def _form_of(form: Any, label: Hashable) -> str:
    f = form.get(label, "free") if isinstance(form, Mapping) else form
    if not isinstance(f, str) or f not in FORMS:
        raise ValueError(f"form must be one of {FORMS} (or a mapping from group labels to "
                         f"them), got {f!r}" + (f" for group {label!r}"
                                                if isinstance(form, Mapping) else ""))
    return f


def _form_entries(shape: tuple, form: str, label: Hashable) -> tuple[np.ndarray, np.ndarray]:
    """The flat entries of a table of ``shape`` that hold a parameter in ``form`` and
    the parameter (``0, 1, ...``) each holds."""
    size = int(np.prod(shape, dtype=np.int64))
    if not shape:  # a constant factor: nothing to fit
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if form == "free":
        return np.arange(1, size, dtype=np.int64), np.arange(size - 1, dtype=np.int64)
    if len(set(shape)) > 1:
        raise ValueError(f"form {form!r} of group {label!r} needs variables of one "
                         f"cardinality, got a table of shape {shape}")
    if form == "potts":
        if len(shape) < 2:
            raise ValueError(f"form 'potts' of group {label!r} needs scopes of two variables "
                             f"or more (a unary Potts table is a constant), got shape {shape}")
        q = shape[0]
        diag = np.ravel_multi_index((np.arange(q),) * len(shape), shape)
        return diag.astype(np.int64), np.zeros(q, dtype=np.int64)
    # symmetric: one parameter per multiset of states (sorted state tuples), the
    # all-zero one the reference
    states = np.indices(shape).reshape(len(shape), -1).T
    keys = np.sort(states, axis=1)
    classes = list(itertools.combinations_with_replacement(range(shape[0]), len(shape)))
    index = {c: j - 1 for j, c in enumerate(classes)}
    params = np.array([index[tuple(k)] for k in keys.tolist()], dtype=np.int64)
    keep = params >= 0
    return np.flatnonzero(keep).astype(np.int64), params[keep]


# ------------------------------------------------------------------ learners' parameters
def tied_parameters(lay: Any, phi: np.ndarray) -> dict | None:
    """``lay.parameters(phi)`` for a :class:`Tie` (a tied fit's groups by label), else
    ``None`` (an untied fit's parameters are its model's tables)."""
    return lay.parameters(phi) if isinstance(lay, Tie) else None
