"""pyAgrum (aGrUM's C++ engine) as a peer of the exact engine on factor graphs.

A Python user who wants exact marginals of a discrete Markov random field may reach for
pyAgrum: a ``MarkovRandomField`` and its ``ShaferShenoyMRFInference`` (a junction tree,
Shafer-Shenoy messages, in linear space). This module builds that model from a
:class:`~mrflib.models.factor_graph.FactorGraph` and asks it for every single-variable
marginal with evidence, as a benchmark peer (the conversion is kept out of the timed call,
as reading a file is).

The model is built by hand, not by pyAgrum's UAI reader: an aGrUM tensor lists its
variables first-fastest (its first variable varies fastest in ``fillWith``'s flat order),
while a UAI table and a ``FactorGraph`` table list the last scope variable fastest, and
pyAgrum 3.3.1's reader fills the tables in its own order, which transposes every
non-symmetric table. Here each factor is declared over its scope *reversed*, so that the
table's C-order entries fill it as they are.

The tables are the model's own weights ``exp θ_k`` (the numbers of a UAI file): pyAgrum
multiplies them in linear space, so on a large model its products can overflow or vanish
and its marginals come out NaN. :func:`pyagrum_marginals` reports that, and an allocation
failure (``std::bad_alloc``), as the peer's failure instead of raising.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.optional import optional_import
from mrflib.models.factor_graph import FactorGraph

__all__ = ["PeerMarginals", "pyagrum_model", "pyagrum_marginals"]

#: What the peer needs, for the error raised when pyAgrum is missing.
_PURPOSE = "the pyAgrum peer (mrflib.repro.pyagrum_peer)"


class PeerMarginals(NamedTuple):
    """What the peer answered: ``marginals`` (one array per variable, or ``None``) and
    ``failure`` (``None``, or why it has no answer: ``"std::bad_alloc"``,
    ``"NaN marginals (k of n)"`` or the exception's text)."""

    marginals: list[np.ndarray] | None
    failure: str | None


def _name(i: int) -> str:
    return f"x{i}"


def pyagrum_model(model: FactorGraph) -> Any:
    """The factor graph as a ``pyagrum.MarkovRandomField``: variable ``i`` named ``x<i>``
    with ``|X_i|`` states, and one factor per set of variables holding the product of the
    weights ``exp θ_k`` of the factors over that set.

    Each factor is declared over its scope reversed (aGrUM fills its first variable
    fastest), so the table's C-order entries are its entries in aGrUM's order. A constant
    factor (empty scope) changes no marginal and is left out.
    """
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    gum = optional_import("pyagrum", _PURPOSE, "book")
    mrf = gum.MarkovRandomField()
    for i, c in enumerate(model.cardinalities.tolist()):
        mrf.add(gum.RangeVariable(_name(i), _name(i), 0, int(c) - 1))
    for scope, table in _merged_factors(model):
        factor = mrf.addFactor([_name(v) for v in reversed(scope)])
        with np.errstate(over="ignore"):  # an infinite weight is the peer's to report
            factor.fillWith(np.exp(table).ravel().tolist())
    return mrf


def _merged_factors(model: FactorGraph) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """``(scope, log-table)`` with one entry per set of variables: pyAgrum keeps one factor
    per set, so factors over the same set (in any order) are summed in log space, each
    table's axes put in the order of the set's first scope."""
    merged: dict[frozenset, tuple[tuple[int, ...], np.ndarray]] = {}
    for scope, table in zip(model.scopes, model.log_tables):
        if not scope:
            continue
        key = frozenset(scope)
        if key not in merged:
            merged[key] = (tuple(scope), np.array(table, dtype=np.float64))
            continue
        first, acc = merged[key]
        acc += np.asarray(table, dtype=np.float64).transpose([scope.index(v) for v in first])
    return list(merged.values())


def _failure(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, MemoryError) or "bad_alloc" in text:
        return "std::bad_alloc"
    return f"{type(exc).__name__}: {text}"


def pyagrum_marginals(mrf: Any, n: int, evidence: Mapping[int, int] | None = None
                      ) -> PeerMarginals:
    """Every variable's marginal by pyAgrum's ``ShaferShenoyMRFInference`` on ``mrf``
    (from :func:`pyagrum_model`) with hard ``evidence`` ``{variable: state}``; an observed
    variable gets a point mass.

    The inference object, its junction tree and its messages are all built in the call.
    pyAgrum's failures are returned, not raised: an allocation failure as
    ``"std::bad_alloc"``, any other exception by its type and text, and marginals that are
    not finite (its linear-space products overflowing or vanishing) as ``"NaN marginals"``.
    """
    gum = optional_import("pyagrum", _PURPOSE, "book")
    evidence = {int(v): int(s) for v, s in dict(evidence or {}).items()}
    try:
        ie = gum.ShaferShenoyMRFInference(mrf)
        if evidence:
            ie.setEvidence({_name(v): s for v, s in evidence.items()})
        ie.makeInference()
        out = []
        for i in range(int(n)):
            # the posterior of an observed variable is its point mass in pyAgrum too
            out.append(np.asarray(ie.posterior(_name(i)).toarray(), dtype=np.float64))
    except Exception as exc:  # noqa: BLE001 - the peer's failure, reported by its text
        return PeerMarginals(None, _failure(exc))
    bad = sum(not np.all(np.isfinite(m)) for m in out)
    if bad:
        return PeerMarginals(None, f"NaN marginals ({bad} of {len(out)})")
    return PeerMarginals(out, None)
