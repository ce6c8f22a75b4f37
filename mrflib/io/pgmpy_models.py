"""pgmpy's discrete models and the files it reads: BIF and XMLBIF.

:func:`from_pgmpy` turns a pgmpy ``DiscreteBayesianNetwork`` or ``DiscreteMarkovNetwork`` (or
``FactorGraph``) into a :class:`~mrflib.models.factor_graph.FactorGraph` that keeps pgmpy's
variable and state names (``FactorGraph.names``,
``FactorGraph.state_names``), so that evidence and marginals
can be given and read by name; :func:`to_pgmpy` goes back. :func:`read_bif` and
:func:`read_xmlbif` read a Bayesian network file through pgmpy's ``BIFReader`` /
``XMLBIFReader``. All need pgmpy (``pip install "mrflib[datasets]"``).

A conditional table ``P(child | evidence)`` becomes the factor of scope
``(child, *evidence)`` (pgmpy's axis order) and table ``log P`` (``-inf`` where the
probability is 0), so the model's log-weights are the network's joint log-probabilities
and ``log Z = 0`` up to rounding.
"""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mrflib._support.optional import optional_import
from mrflib.io._tables import exact_weights, values_on
from mrflib.models.factor_graph import FactorGraph

__all__ = ["from_pgmpy", "to_pgmpy", "read_bif", "read_xmlbif"]

PathLike = str | os.PathLike


def _pgmpy(what: str) -> tuple[Any, Any]:
    """pgmpy's ``models`` and ``factors.discrete`` modules (an optional dependency)."""
    return (optional_import("pgmpy.models", what, "datasets"),
            optional_import("pgmpy.factors.discrete", what, "datasets"))


def _classes(models: Any, *names: str) -> tuple[type, ...]:
    """The classes of ``models`` among ``names`` (pgmpy renamed its discrete models in 1.0:
    ``BayesianNetwork`` became ``DiscreteBayesianNetwork``)."""
    return tuple(c for c in (getattr(models, n, None) for n in names) if isinstance(c, type))


def _node_names(names: Any, what: str) -> list:
    """Distinct hashable node names as a list."""
    if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise TypeError(f"{what} must be a sequence of node names, got {type(names).__name__}")
    out = list(names)
    try:
        distinct = len(set(out)) == len(out)
    except TypeError:
        raise TypeError(f"{what} must be hashable node names, got {out}") from None
    if not distinct:
        raise ValueError(f"{what} must be distinct node names, got {out}")
    return out


def from_pgmpy(model: Any, variables: Sequence[Any] | None = None) -> FactorGraph:
    """A :class:`~mrflib.models.factor_graph.FactorGraph` of a pgmpy discrete model, with its
    variable and state names.

    Parameters
    ----------
    model : pgmpy DiscreteBayesianNetwork, DiscreteMarkovNetwork or FactorGraph
        A Bayesian network gives one factor per conditional table, scope
        ``(child, *evidence)`` and table ``log P(child | evidence)``; a Markov network or
        factor graph one factor per ``DiscreteFactor``, table ``log`` of its values.
        Factors come in pgmpy's order.
    variables : sequence or None, default None
        pgmpy's node of each variable: variable ``i`` is ``variables[i]`` (default
        ``list(model.nodes())``).

    Returns
    -------
    FactorGraph
        ``names[i]`` is ``str(variables[i])`` and ``state_names[i][k]`` the ``str`` of
        pgmpy's ``k``-th state of that variable (pgmpy's default states are the integers
        ``0..k-1``: their names are ``"0", "1", ...``).

    Raises
    ------
    TypeError
        For a model of another kind.
    ValueError
        For a variable in no factor (its cardinality is unknown), a variable with different
        cardinalities or state names in two factors, or nodes whose names coincide as
        strings.
    """
    models, _ = _pgmpy("io.from_pgmpy")
    if isinstance(model, _classes(models, "DiscreteBayesianNetwork", "BayesianNetwork")):
        factors = model.get_cpds()
    elif isinstance(model, _classes(models, "DiscreteMarkovNetwork", "MarkovNetwork",
                                    "FactorGraph")):
        factors = model.get_factors()
    else:
        raise TypeError("model must be a pgmpy DiscreteBayesianNetwork, DiscreteMarkovNetwork "
                         f"or FactorGraph, got {type(model).__name__}")
    nodes = _node_names(list(model.nodes()) if variables is None else variables, "variables")
    index = {v: i for i, v in enumerate(nodes)}
    card: dict[int, int] = {}
    states: dict[int, tuple[str, ...]] = {}
    scopes, tables = [], []
    for f in factors:
        missing = [v for v in f.variables if v not in index]
        if missing:
            raise ValueError(f"variables does not name {missing[0]!r}, a variable of a factor")
        scope = tuple(index[v] for v in f.variables)
        for node, v, c in zip(f.variables, scope, f.cardinality.tolist()):
            if card.setdefault(v, c) != c:
                raise ValueError(f"model: variable {nodes[v]!r} has {card[v]} states in one "
                                 f"factor and {c} in another")
            named = tuple(str(s) for s in f.state_names.get(node, range(c)))
            if states.setdefault(v, named) != named:
                raise ValueError(f"model: variable {nodes[v]!r} has the states "
                                 f"{list(states[v])} in one factor and {list(named)} in another")
        with np.errstate(divide="ignore"):
            tables.append(np.log(values_on(f, f.variables)))
        scopes.append(scope)
    lonely = [nodes[i] for i in range(len(nodes)) if i not in card]
    if lonely:
        raise ValueError(f"model: variable {lonely[0]!r} is in no factor, so its cardinality "
                         "is unknown")
    names = [str(v) for v in nodes]
    if len(set(names)) != len(names):
        raise ValueError(f"variables must have distinct names as strings, got {names}")
    return FactorGraph([card[i] for i in range(len(nodes))], scopes, tables, names=names,
                       state_names=[states[i] for i in range(len(nodes))])


def to_pgmpy(model: FactorGraph, names: Sequence[Any] | None = None) -> Any:
    """``model`` as a pgmpy ``DiscreteMarkovNetwork`` with the same joint weights and names.

    Parameters
    ----------
    model : FactorGraph
        The model.
    names : sequence or None, default None
        pgmpy's node for each variable. Default: the model's
        ``FactorGraph.names``, or the integers ``0..n-1``
        for a model without names (pgmpy's triangulation breaks ties by set order, which
        for string nodes follows ``PYTHONHASHSEED``: integers keep its elimination order,
        and so its rounding, the same in every process).

    Returns
    -------
    pgmpy.models.DiscreteMarkovNetwork
        One ``DiscreteFactor`` of weights ``exp(log_table)`` per factor with a scope, the
        constant factors folded into the first, and a factor of ones for each variable in no
        scope; the states carry the model's
        ``FactorGraph.state_names`` when it has them.

    Raises
    ------
    TypeError
        For a model that is not a FactorGraph.
    ValueError
        For names that are not ``n`` distinct nodes, or a log-weight whose ``exp`` overflows
        or underflows float64.
    """
    models, discrete = _pgmpy("io.to_pgmpy")
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    if names is None:
        names = model.names if model.names is not None else range(model.n)
    nodes = _node_names(names, "names")
    if len(nodes) != model.n:
        raise ValueError(f"names must be {model.n} distinct node names, got {nodes}")
    card = model.cardinalities.tolist()
    const = sum(float(t) for s, t in zip(model.scopes, model.log_tables) if not s)
    parts = [(k, s, t) for k, (s, t) in enumerate(zip(model.scopes, model.log_tables)) if s]
    covered = {v for _, s, _ in parts for v in s}
    parts += [(-1, (v,), np.zeros(card[v])) for v in range(model.n) if v not in covered]
    net = models.DiscreteMarkovNetwork()
    net.add_nodes_from(nodes)
    for j, (k, s, t) in enumerate(parts):
        net.add_edges_from((nodes[a], nodes[b]) for i, a in enumerate(s) for b in s[i + 1:])
        w = exact_weights(t + const if j == 0 else t, k)
        states = ({} if model.state_names is None
                  else {nodes[v]: list(model.state_names[v]) for v in s})
        net.add_factors(discrete.DiscreteFactor([nodes[v] for v in s], [card[v] for v in s], w,
                                                state_names=states))
    return net


def _read(path: Any, reader: str, kind: str) -> FactorGraph:
    """The model of the ``kind`` file ``path`` (plain or gzip), read by pgmpy's ``reader``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a path-like object, got {type(path).__name__}")
    path = Path(path)
    readwrite = optional_import("pgmpy.readwrite", f"io.read_{kind.lower()}({str(path)!r})",
                                "datasets")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot read this path as a {kind} file: "
                         f"{err.strerror or err}") from err
    try:
        text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: this path is not a {kind} file (not UTF-8 text, plain "
                         f"or gzip): {err}") from err
    pgmpy_log = logging.getLogger("pgmpy")
    level = pgmpy_log.level
    pgmpy_log.setLevel(logging.ERROR)  # its readers log every state name they coerce
    try:
        model = getattr(readwrite, reader)(string=text).get_model()
    except Exception as err:  # pgmpy's parsers raise whatever their grammar meets
        raise ValueError(f"{path}: pgmpy cannot read this path as a {kind} file: "
                         f"{type(err).__name__}: {err}") from err
    finally:
        pgmpy_log.setLevel(level)
    try:
        return from_pgmpy(model)
    except ValueError as err:
        raise ValueError(f"{path}: the network of this path: {err}") from err


def read_bif(path: PathLike) -> FactorGraph:
    """A Bayesian network from a BIF file (plain or gzip), through pgmpy's ``BIFReader``.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    FactorGraph
        :func:`from_pgmpy` of the network: one factor per conditional table, with the
        file's variable and state names.

    Raises
    ------
    ValueError
        Naming the file, when it cannot be read or pgmpy cannot parse it.
    """
    return _read(path, "BIFReader", "BIF")


def read_xmlbif(path: PathLike) -> FactorGraph:
    """A Bayesian network from an XMLBIF file (plain or gzip), through pgmpy's
    ``XMLBIFReader``.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    FactorGraph
        :func:`from_pgmpy` of the network: one factor per conditional table, with the
        file's variable and state names.

    Raises
    ------
    ValueError
        Naming the file, when it cannot be read or pgmpy cannot parse it.
    """
    return _read(path, "XMLBIFReader", "XMLBIF")
