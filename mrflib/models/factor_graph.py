"""Discrete factor graphs: any number of states per variable, factors over any variables.

.. math::

    P(x) = \\frac{1}{Z} \\prod_k \\psi_k(x_{S_k})
         = \\frac{1}{Z} \\exp\\Big(\\sum_k \\theta_k(x_{S_k})\\Big),
    \\qquad x_i \\in \\{0, \\dots, |X_i| - 1\\},

the general discrete Markov random field of the LAP paper (its eq. (1), with one potential
per clique ``S_k``) and the model of the UAI file format. ``θ_k = log ψ_k`` is stored as a
natural-log table; ``-inf`` is a zero weight (a hard constraint, or a zero entry of a
conditional probability table).

Log-weights are float64: exact inference answers exactly while the tables' largest
``|log-weight|`` add up to at most :data:`mrflib.models.precision.PRECISE_LOG_WEIGHT` (``2^32``),
warns (:class:`~mrflib.models.precision.PrecisionWarning`) beyond it, and refuses a model beyond
:data:`MAX_LOG_WEIGHT`.

A :class:`FactorGraph` is immutable and validated once, in its constructor; every exact
routine of :mod:`mrflib.inference.exact` takes one beside a
:class:`~mrflib.models.boltzmann.BoltzmannMachine`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib._support.validation import (
    check_array,
    format_bytes,
    format_count,
    integer_values,
    require_memory,
)
from mrflib.models._checks import check_evidence, check_spin_evidence, check_states
from mrflib.models._factor_bulk import check_factors
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.precision import magnitude

__all__ = ["FactorGraph", "as_factor_graph", "with_evidence", "all_states", "flat_strides",
           "flat_index", "flat_states", "slice_factor", "MAX_TABLE_ENTRIES", "MAX_LOG_WEIGHT"]

#: A factor table may hold at most this many entries (2^40: 8 TiB of float64); larger ones
#: are refused by size before anything is allocated.
MAX_TABLE_ENTRIES = 2**40
#: The largest ``|log-weight|`` of the factors may add up to at most this: then every
#: state's log-weight, ``log Z`` and their differences are finite float64 numbers (1e308
#: in two factors would sum to ``inf`` and give ``log Z = inf``, marginals NaN).
MAX_LOG_WEIGHT = 1e300


def _check_magnitude(tables: Sequence[np.ndarray], name: str = "log_tables") -> None:
    """Refuse tables whose largest finite ``|log-weight|`` add up past :data:`MAX_LOG_WEIGHT`."""
    total = magnitude(tables)
    if not total <= MAX_LOG_WEIGHT:
        shown = f"{total:.3g}" if math.isfinite(total) else "more than 1.8e308"
        raise ValueError(f"{name}: the largest |log-weight| of the factors add up to "
                         f"{shown}, beyond {MAX_LOG_WEIGHT:g}: the model's log-weights and "
                         "log Z would overflow float64 (subtract a constant from each table)")


def _check_cardinalities(cardinalities: Any) -> np.ndarray:
    arr = np.asarray(cardinalities)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            "cardinalities must be a non-empty 1-d collection of integers >= 1 (one per "
            f"variable), got shape {arr.shape}")
    if arr.dtype.kind == "b":
        raise ValueError("cardinalities must contain integers >= 1, got booleans")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"cardinalities must contain integers >= 1, got dtype {arr.dtype}")
    # the int64 copy and the checks' temporaries, refused before allocating (a broadcast
    # view of 10^12 variables costs nothing until copied)
    require_memory(24.0 * arr.size, f"cardinalities ({format_count(arr.size)} variables) as "
                   "int64 with its checks")
    arr = integer_values(arr, "cardinalities must contain integers >= 1")
    if np.any(arr < 1):
        bad = int(np.flatnonzero(arr < 1)[0])
        raise ValueError(f"cardinalities must be >= 1, got {int(arr[bad])} for variable {bad}")
    return arr


def _check_scope(scope: Any, k: int, n: int) -> tuple[int, ...]:
    where = f"scopes[{k}]"
    if (isinstance(scope, (str, bytes)) or not isinstance(scope, (Sequence, np.ndarray))
            or getattr(scope, "ndim", 1) == 0):  # a 0-d array cannot be iterated
        raise ValueError(f"{where} must be a tuple of variable indices, got {scope!r}")
    out = []
    for v in scope:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{where} must contain integer variable indices, got {v!r}")
        if not 0 <= int(v) < n:
            raise ValueError(f"{where} refers to variable {int(v)}, but n = {n} "
                             f"(variables are 0..{n - 1})")
        out.append(int(v))
    if len(set(out)) != len(out):
        raise ValueError(f"{where} must not repeat a variable, got {tuple(out)}")
    return tuple(out)


def _check_table(table: Any, k: int, shape: tuple[int, ...]) -> np.ndarray:
    where = f"log_tables[{k}]"
    entries = math.prod(shape)
    if entries > MAX_TABLE_ENTRIES:
        axes = str(shape) if len(shape) <= 8 else f"{len(shape)} axes"
        raise ValueError(f"{where} would have {format_count(entries)} entries ({axes}): more "
                         f"than {MAX_TABLE_ENTRIES} ({format_bytes(8 * entries)})")
    arr = check_array(table, where, dtype=np.float64, finite=False)
    if arr.shape != shape:
        raise ValueError(f"{where} must have shape {shape} (the cardinalities of its scope, "
                         f"in scope order), got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{where} must not contain NaN")
    if np.isposinf(arr).any():
        raise ValueError(f"{where} must not contain +inf (a weight of +inf has no "
                         "normalization); use -inf for a zero weight")
    arr = np.array(arr, dtype=np.float64, order="C")  # an owned copy
    arr.flags.writeable = False
    return arr


def _check_factors(card: np.ndarray, scopes: Sequence, log_tables: Sequence
                   ) -> tuple[tuple, tuple]:
    """The scopes and tables checked factor by factor: every scope, then every table, then
    their magnitudes; the first offending ``scopes[k]`` or ``log_tables[k]`` is named."""
    n = len(card)
    sc = tuple(_check_scope(s, k, n) for k, s in enumerate(scopes))
    tables = tuple(_check_table(t, k, tuple(int(card[v]) for v in s))
                   for k, (s, t) in enumerate(zip(sc, log_tables)))
    _check_magnitude(tables)
    return sc, tables


def flat_strides(cardinalities: Any) -> np.ndarray:
    """The place values of the flat state index, ``int64``: ``1, |X_0|, |X_0| |X_1|, ...``.

    With :func:`flat_index` and :func:`flat_states` the library's one codec of flat state
    indices (spins use it with two states each, state 0 = spin -1).

    Parameters
    ----------
    cardinalities : array_like of int, shape (n,)
        Number of states of each variable (not checked).

    Returns
    -------
    ndarray of int64, shape (n,)
        The place value of each variable, variable 0 the least significant digit (the flat
        order of ``book/notation.md``).
    """
    card = np.asarray(cardinalities, dtype=np.int64)
    return np.concatenate(([1], np.cumprod(card[:-1]))).astype(np.int64)


def flat_index(states: np.ndarray, cardinalities: Any) -> np.ndarray:
    """Flat indices ``x_0 + |X_0| (x_1 + |X_1| (...))`` of checked integer states.

    Parameters
    ----------
    states : array_like of int, shape (M, n)
        States within the cardinalities (callers validate; the index must fit in int64).
    cardinalities : array_like of int, shape (n,)
        Number of states of each variable.

    Returns
    -------
    ndarray of int64, shape (M,)
        The flat index of each state.
    """
    return np.asarray(states, dtype=np.int64) @ flat_strides(cardinalities)


def flat_states(index: np.ndarray, cardinalities: Any) -> np.ndarray:
    """The states of checked flat indices: :func:`flat_index` inverted.

    One digit at a time (bit shifts when every variable has two states).

    Parameters
    ----------
    index : array_like of int, shape (M,)
        Flat indices in ``0..prod |X_i| - 1`` (callers validate).
    cardinalities : array_like of int, shape (n,)
        Number of states of each variable.

    Returns
    -------
    ndarray of int64, shape (M, n)
        The state of each index.
    """
    card = np.asarray(cardinalities, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    if card.size and np.all(card == 2):
        return (index[:, None] >> np.arange(len(card), dtype=np.int64)) & 1
    out = np.empty((len(index), len(card)), dtype=np.int64)
    idx = index.copy()
    for i, c in enumerate(card.tolist()):
        out[:, i] = idx % c
        idx //= c
    return out


def slice_factor(scope: tuple[int, ...], table: np.ndarray, evidence: Mapping[int, int]
                 ) -> tuple[tuple[int, ...], np.ndarray]:
    """A factor with the variables of ``evidence = {variable: value}`` fixed.

    Parameters
    ----------
    scope : tuple of int
        The factor's variables.
    table : ndarray
        Its table, one axis per variable of ``scope``.
    evidence : mapping of int to int
        Checked variable indices and their values.

    Returns
    -------
    scope : tuple of int
        The scope without the observed variables.
    table : ndarray
        A view of ``table`` at the observed values; the factor itself when it holds none of
        them (most factors of a model with a few observations).
    """
    if evidence.keys().isdisjoint(scope):
        return scope, table
    keep = tuple(v for v in scope if v not in evidence)
    return keep, table[tuple(evidence[v] if v in evidence else slice(None) for v in scope)]


def all_states(cardinalities: Any) -> np.ndarray:
    """Every joint state, ``int64 (prod |X_i|, n)``, variable 0 the fastest-changing digit.

    The flat order of ``book/notation.md``: ``index = x_0 + |X_0| (x_1 + |X_1| (...))``.

    Parameters
    ----------
    cardinalities : array_like of int, shape (n,)
        Number of states ``>= 1`` of each variable (checked).

    Returns
    -------
    ndarray of int64, shape (prod |X_i|, n)
        The states in flat-index order.

    Raises
    ------
    ValueError
        Before allocating, when the table would not fit in memory.
    """
    card = _check_cardinalities(cardinalities)
    total = math.prod(card.tolist())
    require_memory(8 * total * (len(card) + 2),
                   f"the table of all {format_count(total)} joint states")
    return flat_states(np.arange(total, dtype=np.int64), card)


class FactorGraph:
    """A discrete factor graph (Markov network) with natural-log factor tables.

    Parameters
    ----------
    cardinalities : array_like of int, shape (n,)
        Number of states ``|X_i| >= 1`` of each variable; variable ``i`` takes values
        ``0..|X_i|-1``.
    scopes : sequence of tuples of int
        The variables of each factor, distinct within a factor (an empty scope is a
        constant factor).
    log_tables : sequence of array_like
        ``log_tables[k]`` has shape ``tuple(cardinalities[v] for v in scopes[k])``, axes in
        the scope's order; natural-log weights, ``-inf`` allowed (a zero weight), NaN and
        ``+inf`` refused, and the tables' largest ``|log-weight|`` may add up to at most
        :data:`MAX_LOG_WEIGHT` (so that ``log Z`` is a finite float64).
    names : sequence of str, optional
        One distinct name per variable, kept as a tuple; :meth:`index` and
        :meth:`condition` accept a name wherever they accept a variable's index.
    state_names : sequence of sequences of str, optional
        For every variable, one distinct name per state (``state_names[i][k]`` names
        state ``k`` of variable ``i``), kept as a tuple of tuples; :meth:`state_index`
        and :meth:`condition` accept a state's name wherever they accept its index.

    Attributes
    ----------
    cardinalities : ndarray of int64, shape (n,)
        Number of states of each variable, read-only.
    scopes : tuple of tuple of int
        The variables of each factor.
    log_tables : tuple of ndarray of float64
        The read-only natural-log tables, one per scope.
    names : tuple of str or None
        The variables' names, if given.
    state_names : tuple of tuple of str or None
        The states' names, if given.
    n : int
        Number of variables.
    n_factors : int
        Number of factors.

    Notes
    -----
    Instances are immutable: the tables are copied and made read-only, the scopes are
    tuples. ``P(x) ∝ exp(Σ_k log_tables[k][x_{scopes[k]}])``, the LAP paper's eq. (1).
    Names only label the variables and states: every computation is the same with or
    without them, and every operation that keeps the variables (:meth:`condition`,
    copying, pickling) keeps them.
    """

    __slots__ = ("cardinalities", "scopes", "log_tables", "names", "state_names", "_lookup")

    def __init__(self, cardinalities: Any, scopes: Any, log_tables: Any, *,
                 names: Any = None, state_names: Any = None) -> None:
        card = _check_cardinalities(cardinalities)
        card.flags.writeable = False
        if isinstance(scopes, (str, bytes)) or not isinstance(scopes, (Sequence, np.ndarray)):
            raise ValueError(f"scopes must be a sequence of tuples of variables, got {scopes!r}")
        if isinstance(log_tables, np.ndarray) or not isinstance(log_tables, Sequence):
            raise ValueError("log_tables must be a sequence of arrays (one per scope), got "
                             f"{type(log_tables).__name__}")
        if len(log_tables) != len(scopes):
            raise ValueError(f"log_tables must have one table per scope ({len(scopes)}), "
                             f"got {len(log_tables)}")
        checked = check_factors(card, scopes, log_tables, MAX_TABLE_ENTRIES, MAX_LOG_WEIGHT)
        if checked is None:  # some factor is refused: the first one is named by its checks
            checked = _check_factors(card, scopes, log_tables)
        self._set(card, *checked, _check_names(names, len(card)),
                  _check_state_names(state_names, card))

    def _set(self, card: np.ndarray, scopes: tuple, tables: tuple,
             names: tuple[str, ...] | None = None,
             state_names: tuple[tuple[str, ...], ...] | None = None) -> None:
        object.__setattr__(self, "cardinalities", card)
        object.__setattr__(self, "scopes", scopes)
        object.__setattr__(self, "log_tables", tables)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "state_names", state_names)
        object.__setattr__(self, "_lookup", None)  # {name: index}, built on first use

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FactorGraph is immutable; build a new one")

    @classmethod
    def _from_checked(cls, card: np.ndarray, scopes: tuple, tables: tuple,
                      names: tuple[str, ...] | None = None,
                      state_names: tuple[tuple[str, ...], ...] | None = None) -> FactorGraph:
        """Internal: a model from parts the caller has validated (read-only arrays, names
        checked by the constructor of a model with the same variables)."""
        fg = object.__new__(cls)
        fg._set(card, scopes, tables, names, state_names)
        return fg

    # ------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of variables."""
        return len(self.cardinalities)

    @property
    def n_factors(self) -> int:
        """Number of factors."""
        return len(self.scopes)

    def variable_factors(self) -> list[list[int]]:
        """For each variable, the indices of the factors whose scope holds it.

        Returns
        -------
        list of list of int
            ``n`` lists of factor indices, each increasing.
        """
        out: list[list[int]] = [[] for _ in range(self.n)]
        for k, s in enumerate(self.scopes):
            for v in s:
                out[v].append(k)
        return out

    def table_bytes(self) -> int:
        """Bytes of all factor tables (float64).

        Returns
        -------
        int
            ``8`` times the number of table entries.
        """
        return sum(8 * t.size for t in self.log_tables)

    # ------------------------------------------------------------------ names
    def index(self, variable: int | str) -> int:
        """The index of ``variable``, given by its name (``names``) or its index.

        Parameters
        ----------
        variable : int or str
            A variable's index ``0..n-1`` or its name.

        Returns
        -------
        int
            The variable's index.

        Raises
        ------
        ValueError
            For an unknown name (the message lists close names), an index out of range,
            or a name given to a model without names.
        """
        return self._variable(variable, "variable")

    def state_index(self, variable: int | str, state: int | str) -> int:
        """The index of ``state`` of ``variable``, each given by its name or its index.

        Parameters
        ----------
        variable : int or str
            A variable's index or name (as in :meth:`index`).
        state : int or str
            One of its states: an index ``0..|X_i|-1`` or a name of
            ``state_names``.

        Returns
        -------
        int
            The state's index.

        Raises
        ------
        ValueError
            For an unknown variable or state (the message lists close names).
        """
        return self._state(self._variable(variable, "variable"), state, "state")

    def _variable(self, v: Any, what: str) -> int:
        """The index of variable ``v`` (a name or an index); errors name the argument
        ``what``."""
        if isinstance(v, str):
            if self.names is None:
                raise ValueError(f"{what}: variable {v!r} is a name, but the model has no "
                                 f"variable names (give an index 0..{self.n - 1})")
            if self._lookup is None:  # a dict once, so that each look-up is O(1)
                object.__setattr__(self, "_lookup", {u: i for i, u in enumerate(self.names)})
            if v not in self._lookup:
                raise ValueError(f"{what}: unknown variable {v!r}{_close(v, self.names)}")
            return self._lookup[v]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{what}: a variable is an index or a name, got {v!r}")
        if not 0 <= int(v) < self.n:
            raise ValueError(f"{what}: variable {int(v)} does not exist: n = {self.n} "
                             f"(variables are 0..{self.n - 1})")
        return int(v)

    def _state(self, i: int, x: Any, what: str) -> int:
        """The index of state ``x`` (a name or an index) of variable ``i``."""
        card = int(self.cardinalities[i])
        label = repr(self.names[i]) if self.names is not None else str(i)
        if isinstance(x, str):
            if self.state_names is None:
                raise ValueError(f"{what}: state {x!r} of variable {label} is a name, but the "
                                 f"model has no state names (give an index 0..{card - 1})")
            states = self.state_names[i]
            if x not in states:
                shown = list(states) if card <= 20 else [*states[:20], "..."]
                raise ValueError(f"{what}: unknown state {x!r} of variable {label} (its "
                                 f"states are {shown}){_close(x, states)}")
            return states.index(x)
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise ValueError(f"{what}: a state of variable {label} is an index or a name, "
                             f"got {x!r}")
        if not 0 <= int(x) < card:
            raise ValueError(f"{what}: state {int(x)} of variable {label} is outside "
                             f"0..{card - 1}")
        return int(x)

    # ------------------------------------------------------------------ evaluation
    def log_weight(self, states: Any) -> np.ndarray | float:
        """Unnormalized log-weights ``Σ_k θ_k(x_{S_k})`` of integer states.

        Parameters
        ----------
        states : array_like of int, shape (n,) or (N, n)
            One state or ``N`` of them, each variable's value in ``0..|X_i|-1`` (checked).

        Returns
        -------
        float or ndarray of float64, shape (N,)
            ``states`` of shape ``(n,)`` gives a float, ``(N, n)`` an array ``(N,)``;
            ``-inf`` where some factor has zero weight.
        """
        single = np.ndim(states) == 1
        x = check_states(states, self.cardinalities)
        lw = np.zeros(len(x))
        for s, t in zip(self.scopes, self.log_tables):
            lw += t[tuple(x[:, v] for v in s)] if s else float(t)
        return float(lw[0]) if single else lw

    def condition(self, evidence: Mapping[Any, Any]) -> FactorGraph:
        """The model with ``evidence = {variable: value}`` applied.

        Every factor is sliced at the observed values (its scope loses the observed
        variables), and each observed variable gets a unary indicator factor (``0`` at
        its value, ``-inf`` elsewhere).

        Parameters
        ----------
        evidence : mapping
            Variables to values; variables and values are indices or names (``names``,
            ``state_names``). A variable named twice or a value out of range is a
            ``ValueError``.

        Returns
        -------
        FactorGraph
            A model with the same variables and cardinalities: its partition function is
            ``Z`` of the evidence (the UAI ``PR`` task), its marginals put a point mass on
            each observed value, and its MAP state and samples agree with the evidence.
        """
        ev = self._evidence(evidence)
        states = sum(int(self.cardinalities[v]) for v in ev)
        require_memory(8 * states, f"the indicator factors of {len(ev)} observed variables "
                       f"({states} states in all)")
        scopes, tables = [], []
        for s, t in zip(self.scopes, self.log_tables):
            s, view = slice_factor(s, t, ev)
            if view is not t:  # a new table of its own, read-only as the model's
                view = np.array(view, dtype=np.float64)
                view.flags.writeable = False
            scopes.append(s)
            tables.append(view)
        for v, value in sorted(ev.items()):
            ind = np.full(int(self.cardinalities[v]), -np.inf)
            ind[value] = 0.0
            ind.flags.writeable = False
            scopes.append((v,))
            tables.append(ind)
        return FactorGraph._from_checked(self.cardinalities, tuple(scopes), tuple(tables),
                                         self.names, self.state_names)

    def _evidence(self, evidence: Any) -> dict[int, int]:
        """``{variable: value}`` with names resolved to indices and every entry checked."""
        if not isinstance(evidence, Mapping):
            raise ValueError("evidence must be a mapping {variable: value}, got "
                             f"{type(evidence).__name__}")
        if not any(isinstance(k, str) or isinstance(x, str) for k, x in evidence.items()):
            return check_evidence(evidence, self.cardinalities)
        out: dict[int, int] = {}
        for v, x in evidence.items():
            i = self._variable(v, "evidence")
            if i in out:  # a name and an index of the same variable
                raise ValueError(f"evidence names variable {i} twice ({v!r} and another key)")
            out[i] = self._state(i, x, "evidence")
        return out

    # ------------------------------------------------------------------ conversions
    @classmethod
    @renamed_argument("bm", "model")
    def from_boltzmann(cls, model: BoltzmannMachine) -> FactorGraph:
        """The ±1 Boltzmann machine as a factor graph: state 0 is spin -1, state 1 is +1.

        One unary factor ``[-b_i, b_i]`` per spin (in node order), then one pairwise factor
        ``J_ij [[1, -1], [-1, 1]]`` per edge (in edge order).

        Parameters
        ----------
        model : BoltzmannMachine
            The machine; anything else is a ``TypeError``.

        Returns
        -------
        FactorGraph
            ``n`` binary variables whose log-weights, and so ``log Z``, the moments and the
            samples, are those of ``model``.
        """
        if not isinstance(model, BoltzmannMachine):
            raise TypeError(f"model must be a BoltzmannMachine, got {type(model).__name__}")
        sign = np.array([[1.0, -1.0], [-1.0, 1.0]])
        scopes = [(i,) for i in range(model.n)]
        tables = [np.array([-b, b]) for b in model.bias.tolist()]
        scopes += [(int(i), int(j)) for i, j in model.edges]
        tables += [J * sign for J in model.coupling.tolist()]
        for t in tables:
            t.flags.writeable = False
        _check_magnitude(tables, "model (its biases and couplings)")
        card = np.full(model.n, 2, dtype=np.int64)
        card.flags.writeable = False
        return cls._from_checked(card, tuple(scopes), tuple(tables))

    def to_boltzmann(self) -> BoltzmannMachine:
        """The ±1 Boltzmann machine of a binary pairwise factor graph, with the same distribution.

        Each table is written as ``c + h_i x_i + h_j x_j + J x_i x_j`` in the spins and
        the constants ``c`` dropped (``log Z`` changes by their sum; probabilities, moments
        and samples do not); factors on the same pair add. Every pair of a pairwise scope
        is an edge, also when its coupling is 0, so ``from_boltzmann(bm).to_boltzmann()``
        is ``bm``.

        Returns
        -------
        BoltzmannMachine
            The machine, state 0 as spin -1 (as :meth:`from_boltzmann` numbers them).

        Raises
        ------
        ValueError
            Unless every variable has two states, every scope at most two variables and
            every table is finite.
        """
        if np.any(self.cardinalities != 2) or any(len(s) > 2 for s in self.scopes):
            raise ValueError("model must be a binary pairwise factor graph (two states per "
                             "variable, scopes of at most two variables) to be a Boltzmann "
                             "machine")
        bias = np.zeros(self.n)
        pairs: dict[tuple[int, int], float] = {}
        for s, t in zip(self.scopes, self.log_tables):
            if not np.all(np.isfinite(t)):
                raise ValueError("model must have finite tables (no zero weight) to be a "
                                 "Boltzmann machine")
            if len(s) == 1:
                bias[s[0]] += (t[1] - t[0]) / 2
            elif len(s) == 2:
                i, j = s
                if i > j:
                    i, j, t = j, i, t.T
                bias[i] += ((t[1, 0] + t[1, 1]) - (t[0, 0] + t[0, 1])) / 4
                bias[j] += ((t[0, 1] + t[1, 1]) - (t[0, 0] + t[1, 0])) / 4
                J = ((t[0, 0] + t[1, 1]) - (t[0, 1] + t[1, 0])) / 4
                pairs[(i, j)] = pairs.get((i, j), 0.0) + J
        keys = sorted(pairs)
        edges = np.array(keys, dtype=np.int64).reshape(-1, 2)
        return BoltzmannMachine(bias, edges, np.array([pairs[k] for k in keys]))

    # ------------------------------------------------------------------ protocol
    def __repr__(self) -> str:
        width = max((len(s) for s in self.scopes), default=0)
        shown = ""
        if self.names is not None:
            more = ", ..." if self.n > 3 else ""
            shown = f", names=({', '.join(map(repr, self.names[:3]))}{more})"
        return (f"FactorGraph(n={self.n}, factors={self.n_factors}, "
                f"max_cardinality={int(self.cardinalities.max())}, max_scope={width}{shown})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FactorGraph):
            return NotImplemented
        return (np.array_equal(self.cardinalities, other.cardinalities)
                and self.scopes == other.scopes
                and self.names == other.names and self.state_names == other.state_names
                and all(np.array_equal(a, b) for a, b in zip(self.log_tables, other.log_tables)))

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        if self.names is None and self.state_names is None:
            return (FactorGraph, (self.cardinalities, self.scopes, self.log_tables))
        return (_named_factor_graph, (self.cardinalities, self.scopes, self.log_tables,
                                      self.names, self.state_names))


def _named_factor_graph(cardinalities: Any, scopes: Any, log_tables: Any, names: Any,
                        state_names: Any) -> FactorGraph:
    """A pickled model with names, rebuilt (and checked) by the constructor."""
    return FactorGraph(cardinalities, scopes, log_tables, names=names,
                       state_names=state_names)


def _close(name: str, candidates: Sequence[str]) -> str:
    """``"; close names: [...]"`` for the candidates close to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, candidates, n=5)
    return f"; close names: {close}" if close else ""


def _names_tuple(values: Any, what: str, count: int) -> tuple[str, ...]:
    """``count`` distinct strings as a tuple, checked in O(count); errors name ``what``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(f"{what} must be a sequence of {count} strings, got {values!r}")
    out = tuple(values)
    if len(out) != count:
        raise ValueError(f"{what} must hold {count} strings (one each), got {len(out)}")
    for k, v in enumerate(out):
        if not isinstance(v, str):
            raise ValueError(f"{what}[{k}] must be a string, got {v!r}")
    out = tuple(map(str, out))  # numpy's str_ as plain str
    if len(set(out)) != count:
        seen: set[str] = set()
        for v in out:
            if v in seen:
                raise ValueError(f"{what} must be distinct, got {v!r} twice")
            seen.add(v)
    return out


def _check_names(names: Any, n: int) -> tuple[str, ...] | None:
    """One distinct string per variable as a tuple, or None; O(n)."""
    return None if names is None else _names_tuple(names, "names", n)


def _check_state_names(state_names: Any, card: np.ndarray
                       ) -> tuple[tuple[str, ...], ...] | None:
    """For every variable a tuple of one distinct string per state, or None."""
    if state_names is None:
        return None
    n = len(card)
    if (isinstance(state_names, (str, bytes))
            or not isinstance(state_names, (Sequence, np.ndarray))):
        raise ValueError(f"state_names must be a sequence of {n} sequences of strings (one "
                         f"per variable), got {state_names!r}")
    if len(state_names) != n:
        raise ValueError(f"state_names must have one entry per variable ({n}), got "
                         f"{len(state_names)}")
    seen: dict[tuple[int, int], tuple[str, ...]] = {}  # one check per object and count
    out = []
    for i, (s, c) in enumerate(zip(state_names, card.tolist())):
        key = (id(s), c)  # the objects stay alive in state_names for the whole loop
        if key not in seen:
            seen[key] = _names_tuple(s, f"state_names[{i}]", c)
        out.append(seen[key])
    return tuple(out)


def with_evidence(model: BoltzmannMachine | FactorGraph,
                  evidence: Mapping[Any, Any] | None = None) -> BoltzmannMachine | FactorGraph:
    """``model`` with ``evidence = {variable: value}`` applied: the step the inference fronts
    take for their ``evidence=`` argument.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model. A Boltzmann machine with evidence becomes its factor graph
        (:meth:`FactorGraph.from_boltzmann`), its values given as spins ``-1``/``+1`` (its
        own domain; state 0 of the factor graph is spin -1).
    evidence : mapping or None, default None
        Variables to values, each an index or, on a factor graph with
        :attr:`~FactorGraph.names` / :attr:`~FactorGraph.state_names`, a name.

    Returns
    -------
    FactorGraph or BoltzmannMachine
        ``model`` itself when ``evidence`` is None, else ``model.condition(evidence)``.
    """
    if not isinstance(model, (BoltzmannMachine, FactorGraph)):
        raise TypeError("model must be a BoltzmannMachine or a FactorGraph, got "
                        f"{type(model).__name__}")
    if evidence is None:
        return model
    if isinstance(model, BoltzmannMachine):
        states = {v: (s + 1) // 2 for v, s in check_spin_evidence(evidence).items()}
        return FactorGraph.from_boltzmann(model).condition(states)
    return model.condition(evidence)


def as_factor_graph(model: BoltzmannMachine | FactorGraph) -> FactorGraph:
    """``model`` as a :class:`FactorGraph`.

    Every engine that works on factor graphs takes either model this way.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model; anything else is a ``TypeError``.

    Returns
    -------
    FactorGraph
        A Boltzmann machine through :meth:`FactorGraph.from_boltzmann`, a factor graph as it
        is.
    """
    if isinstance(model, BoltzmannMachine):
        return FactorGraph.from_boltzmann(model)
    if not isinstance(model, FactorGraph):
        raise TypeError("model must be a BoltzmannMachine or a FactorGraph, got "
                        f"{type(model).__name__}")
    return model
