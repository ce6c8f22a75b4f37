"""Exact marginals by counting, for two exchangeable groups of binary variables.

A Markov logic network grounded over two sets of objects gives a model of this shape: binary
variables ``A`` (one per object of the first set) and ``B`` (one per object of the second),
and for every pair ``(a, b)`` a variable ``c_ab`` that appears in one factor only, the same
table ``f(x_a, x_c, x_b)`` for every pair, with unary factors equal within each group. The
UAI 2014 problem ``relational_4`` is one (100 + 100 objects, 10,000 pairs): its treewidth is
100, beyond any elimination order, yet its exact marginals take a few milliseconds.

Summing ``c_ab`` out leaves the pairwise factor ``phi(x, y) = sum_c f(x, c, y) u_C(c)``
between every ``a`` and every ``b``. The weight of a joint state then depends on the numbers
``K`` and ``M`` of ones among ``A`` and ``B`` only,

    ``log W(K, M) = K M phi11 + K (nB - M) phi10 + (nA - K) M phi01 + (nA - K)(nB - M) phi00
    + K uA1 + (nA - K) uA0 + M uB1 + (nB - M) uB0`` (logarithms),

so the distribution of ``(K, M)`` is a table of ``(nA + 1)(nB + 1)`` entries, each weighted
by the binomial number of states that have it. Given ``(K, M)`` the ones are spread
uniformly, independently over ``A`` and over ``B``, which gives every pair's joint and, by
``P(c = 1 | x, y) = f(x, 1, y) u_C(1) / phi(x, y)``, every ``c_ab``'s marginal. Evidence on
hub variables fixes them; the counts run over the free ones.

A model without leaves, one pairwise factor of a shared table ``phi`` between every ``a``
and every ``b`` (UAI 2014's ``relational_1``: 250 + 250 objects, 62,500 factors, treewidth
250), is the same count with ``phi`` given: :func:`bipartite_log_partition` is its exact
``log Z``.

One consequence needs no computation: ``P(c_ab = 1)`` is an average of the four conditionals
``P(c = 1 | x, y)``, so it lies between their smallest and largest (:func:`leaf_bounds`). A
published answer outside that interval is wrong, whatever the rest of the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

from mrflib._support.validation import check_instance, check_real
from mrflib.models.factor_graph import FactorGraph

__all__ = ["Exchangeable", "structure", "marginals", "leaf_bounds", "relational_model",
           "bipartite_log_partition", "MAX_LEAVES"]

#: The most pairs :func:`relational_model` builds (a model object holds two factors each).
MAX_LEAVES = 10**7


@dataclass(frozen=True)
class Exchangeable:
    """The two groups, the leaves and the shared tables of an exchangeable bipartite model
    (log weights). ``leaf[i, j]`` is the leaf between ``a_rows[i]`` and ``b_cols[j]``;
    ``table[x, c, y]`` the shared factor, in the order hub of ``A``, leaf, hub of ``B``."""

    a_vars: np.ndarray
    b_vars: np.ndarray
    leaf: np.ndarray
    table: np.ndarray
    unary_a: np.ndarray
    unary_b: np.ndarray
    unary_c: np.ndarray


def _fail(what: str) -> ValueError:
    return ValueError("model must be an exchangeable bipartite model of binary variables "
                      f"(see mrflib.repro.counting): {what}")


def _unaries(model: FactorGraph) -> np.ndarray:
    """Each variable's unary log weights, the product of its unary factors."""
    out = np.zeros((model.n, 2))
    for scope, table in zip(model.scopes, model.log_tables):
        if len(scope) == 1:
            out[scope[0]] += table
    return out


def _shared(rows: np.ndarray, what: str) -> np.ndarray:
    if not np.all(rows == rows[0]):
        raise _fail(f"the unary factors of {what} differ")
    return rows[0]


def structure(model: FactorGraph) -> Exchangeable:
    """Recognize the exchangeable bipartite shape; ``ValueError`` saying what departs from it.

    Every variable is binary; every factor has one or three variables; the three-variable
    factors share one table and hold their leaf (a variable in no other of them) at the same
    position; the hubs at the other two positions form the groups ``A`` (first) and ``B``,
    two hubs at least in each, with exactly one factor per pair ``(a, b)``; unary factors
    are equal within each group.
    """
    check_instance(model, FactorGraph, "model")
    if np.any(model.cardinalities != 2):
        raise _fail("every variable must have 2 states")
    triples = [(s, t) for s, t in zip(model.scopes, model.log_tables) if len(s) == 3]
    if any(len(s) not in (1, 3) for s in model.scopes) or not triples:
        raise _fail("every factor must have 1 or 3 variables, and one at least 3")
    scopes = np.array([s for s, _ in triples])
    degree = np.bincount(scopes.ravel(), minlength=model.n)
    leaf_pos = [int(np.flatnonzero(degree[s] == 1)[0]) if np.sum(degree[s] == 1) == 1 else -1
                for s in scopes]
    if len(set(leaf_pos)) != 1 or leaf_pos[0] < 0:
        raise _fail("each three-variable factor must hold one leaf, at the same position")
    pos = leaf_pos[0]
    hub = [p for p in range(3) if p != pos]
    table = np.moveaxis(triples[0][1], pos, 1)
    if not all(np.array_equal(np.moveaxis(t, pos, 1), table) for _, t in triples):
        raise _fail("the three-variable factors must share one table")
    a_vars, ai = np.unique(scopes[:, hub[0]], return_inverse=True)
    b_vars, bi = np.unique(scopes[:, hub[1]], return_inverse=True)
    if np.intersect1d(a_vars, b_vars).size:
        raise _fail("a variable is a hub of both groups")
    leaf = np.full((a_vars.size, b_vars.size), -1, dtype=np.int64)
    leaf[ai, bi] = scopes[:, pos]
    if len(triples) != leaf.size or np.any(leaf < 0):
        raise _fail("every pair (a, b) of hubs must have exactly one factor")
    alone = np.setdiff1d(np.arange(model.n), scopes.ravel())
    if alone.size:
        raise _fail(f"variable {int(alone[0])} is in no three-variable factor")
    u = _unaries(model)
    return Exchangeable(a_vars, b_vars, leaf, table, _shared(u[a_vars], "group A"),
                        _shared(u[b_vars], "group B"), _shared(u[leaf.ravel()], "the leaves"))


def _kinds(vars_: np.ndarray, evidence: Mapping[int, int]) -> np.ndarray:
    """Each hub's kind: 0 or 1, observed in that state; 2, free."""
    return np.array([evidence.get(int(v), 2) for v in vars_], dtype=np.int64)


def _log_binomial(n: int, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _check_evidence(ex: Exchangeable, evidence: Mapping[int, int] | None) -> dict[int, int]:
    if evidence is not None and not isinstance(evidence, Mapping):
        raise ValueError("evidence must be a mapping of hub variables to states 0 or 1, got "
                         f"{type(evidence).__name__}")
    evidence = dict(evidence or {})
    hubs = set(ex.a_vars.tolist()) | set(ex.b_vars.tolist())
    for v, x in evidence.items():
        if v not in hubs:
            raise ValueError(f"evidence must observe hub variables only; variable {v} is not "
                             "a hub of either group")
        if x not in (0, 1):
            raise ValueError(f"evidence must give states 0 or 1; variable {v} has {x}")
    return evidence


def _leaf_conditionals(ex: Exchangeable) -> tuple[np.ndarray, np.ndarray]:
    """``phi[x, y]``, the log weight of a hub pair with its leaf summed out, and
    ``P(c = 1 | x, y)`` (NaN where ``phi`` is a zero weight)."""
    phi = logsumexp(ex.table + ex.unary_c[None, :, None], axis=1)
    with np.errstate(invalid="ignore"):
        cond = np.exp(ex.table[:, 1, :] + ex.unary_c[1] - phi)
    return phi, cond


def _count_distribution(ex: Exchangeable, phi: np.ndarray, free: tuple[int, int],
                        ones: tuple[int, int]) -> np.ndarray:
    """``P(k, m)``: ``k`` ones among the free hubs of ``A``, ``m`` among those of ``B``."""
    n_a, n_b = ex.leaf.shape
    k = np.arange(free[0] + 1)[:, None]
    m = np.arange(free[1] + 1)[None, :]
    big_k, big_m = k + ones[0], m + ones[1]
    terms = [(big_k, ex.unary_a[1]), (n_a - big_k, ex.unary_a[0]),
             (big_m, ex.unary_b[1]), (n_b - big_m, ex.unary_b[0]),
             (big_k * big_m, phi[1, 1]), (big_k * (n_b - big_m), phi[1, 0]),
             ((n_a - big_k) * big_m, phi[0, 1]), ((n_a - big_k) * (n_b - big_m), phi[0, 0])]
    log_w = _log_binomial(free[0], k) + _log_binomial(free[1], m)
    for count, log_weight in terms:
        # a zero weight raised to the power 0 is 1: no count of it, no term
        log_w = log_w + np.where(count == 0, 0.0, count * log_weight)
    if not np.isfinite(log_w).any():
        raise ValueError("model has no state of positive weight under the evidence")
    return np.exp(log_w - logsumexp(log_w))


def marginals(model: FactorGraph, evidence: Mapping[int, int] | None = None
              ) -> list[np.ndarray]:
    """Every variable's exact marginal, by counting (see the module's text).

    Parameters
    ----------
    model : FactorGraph
        An exchangeable bipartite model (:func:`structure` says what that requires).
    evidence : mapping of int to int, optional
        Observed states of hub variables; an observed variable's marginal is a point mass.

    Returns
    -------
    list of ndarray
        ``P(x_v)`` for every variable, shape ``(2,)``.
    """
    ex = structure(model)
    evidence = _check_evidence(ex, evidence)
    phi, cond = _leaf_conditionals(ex)
    kind_a, kind_b = _kinds(ex.a_vars, evidence), _kinds(ex.b_vars, evidence)
    free = (int(np.sum(kind_a == 2)), int(np.sum(kind_b == 2)))
    p = _count_distribution(ex, phi, free, (int(np.sum(kind_a == 1)), int(np.sum(kind_b == 1))))
    # Given the counts, a free hub is 1 with probability k / free, independently across the
    # groups; an observed one is fixed.
    ones = [np.arange(free[0] + 1) / max(free[0], 1), np.arange(free[1] + 1) / max(free[1], 1)]
    hubs = [[ones[g] if t == 2 else np.full(free[g] + 1, float(t)) for t in range(3)]
            for g in (0, 1)]
    pa, pb = p.sum(axis=1), p.sum(axis=0)
    hub_one = np.array([[0.0, 1.0, float(pa @ ones[0])], [0.0, 1.0, float(pb @ ones[1])]])
    leaf_one = np.empty((3, 3))
    for ta, xa in enumerate(hubs[0]):
        for tb, yb in enumerate(hubs[1]):
            joint = np.array([[float(np.sum(p * np.outer(xa if x else 1 - xa,
                                                         yb if y else 1 - yb)))
                               for y in (0, 1)] for x in (0, 1)])
            leaf_one[ta, tb] = float(np.sum(joint * np.nan_to_num(cond)))
    one = np.empty(model.n)
    one[ex.a_vars] = hub_one[0, kind_a]
    one[ex.b_vars] = hub_one[1, kind_b]
    one[ex.leaf] = leaf_one[kind_a[:, None], kind_b[None, :]]
    one = np.clip(one, 0.0, 1.0)
    return [np.array([1.0 - q, q]) for q in one]


def leaf_bounds(model: FactorGraph) -> tuple[float, float]:
    """The interval that holds every leaf's ``P(c = 1)``, whatever the hubs do: the smallest
    and largest of the four conditionals ``P(c = 1 | x, y)``."""
    _, cond = _leaf_conditionals(structure(model))
    cond = cond[np.isfinite(cond)]
    return float(cond.min()), float(cond.max())


def relational_model(n_a: int = 100, n_b: int = 100, weights: tuple[float, float, float, float]
                     = (0.01, 0.05, 0.02, 0.075)) -> FactorGraph:
    """The Markov logic network of UAI 2014's ``relational_4``, laid out as its file is.

    Hubs ``a = 0..n_a-1``, leaves ``n_a + n_b a + j``, hubs ``b_j = n_a + n_a n_b + j``;
    ``weights = (w_a, w_c, w_b, w)``: each hub of ``A`` has the unary log weight ``w_a`` on
    state 1, each leaf ``w_c``, each hub of ``B`` ``w_b``, and every pair the formula
    ``a ∧ c ⇒ b`` with weight ``w`` (log table ``w`` but 0 at ``a = c = 1, b = 0``).
    The defaults are the file's (``exp(0.01) = 1.01005016708`` and so on); its evidence
    sets hub 35 to 1.
    """
    for name, value in (("n_a", n_a), ("n_b", n_b)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
            raise ValueError(f"{name} must be an integer of at least 2, got {value!r}")
    if n_a * n_b > MAX_LEAVES:
        raise ValueError(f"n_a * n_b must be at most {MAX_LEAVES:,} (one leaf variable and "
                         f"two factors per pair), got {n_a} * {n_b}")
    try:
        parts = list(weights)
    except TypeError:
        parts = []
    if len(parts) != 4:
        raise ValueError(f"weights must be four numbers (w_a, w_c, w_b, w), got {weights!r}")
    w_a, w_c, w_b, w = (check_real(x, f"weights[{i}]") for i, x in enumerate(parts))
    rule = np.full((2, 2, 2), w)
    rule[1, 1, 0] = 0.0
    first_b = n_a + n_a * n_b
    scopes = [(a, n_a + n_b * a + j, first_b + j) for a in range(n_a) for j in range(n_b)]
    unary = [np.array([0.0, w_a])] * n_a + [np.array([0.0, w_c])] * (n_a * n_b) + \
        [np.array([0.0, w_b])] * n_b
    return FactorGraph([2] * (first_b + n_b), scopes + [(v,) for v in range(first_b + n_b)],
                       [rule] * len(scopes) + unary)


def bipartite_log_partition(model: FactorGraph, evidence: Mapping[int, int] | None = None
                            ) -> float:
    """Exact ``log Z`` of a complete bipartite pairwise model, by counting.

    The shape: every variable binary; every factor of one or two variables; the
    two-variable factors share one table and hold every pair ``(a, b)`` of two disjoint
    groups exactly once, ``a`` first; unary factors equal within each group. The weight of
    a state depends on the numbers of ones in each group only (see the module's text, with
    no leaf to sum out).

    Parameters
    ----------
    model : FactorGraph
        The model, without evidence applied.
    evidence : mapping or None, default None
        ``{variable: 0 or 1}``: the ``Z`` of the states that agree with it.

    Returns
    -------
    float
        The natural ``log Z``.
    """
    check_instance(model, FactorGraph, "model")
    if np.any(model.cardinalities != 2):
        raise _fail("every variable must have 2 states")
    pairs = [(s, t) for s, t in zip(model.scopes, model.log_tables) if len(s) == 2]
    if any(len(s) not in (1, 2) for s in model.scopes) or not pairs:
        raise _fail("every factor must have 1 or 2 variables, and one at least 2")
    scopes = np.array([s for s, _ in pairs])
    table = np.asarray(pairs[0][1], dtype=np.float64)
    if not all(np.array_equal(t, table) for _, t in pairs):
        raise _fail("the two-variable factors must share one table")
    a_vars, b_vars = np.unique(scopes[:, 0]), np.unique(scopes[:, 1])
    if np.intersect1d(a_vars, b_vars).size or len({tuple(s) for s in scopes.tolist()}) != \
            len(pairs) or len(pairs) != a_vars.size * b_vars.size:
        raise _fail("the pairs must be every (a, b) of two disjoint groups, once each")
    alone = np.setdiff1d(np.arange(model.n), scopes.ravel())
    if alone.size:
        raise _fail(f"variable {int(alone[0])} is in no two-variable factor")
    u = _unaries(model)
    ua, ub = _shared(u[a_vars], "group A"), _shared(u[b_vars], "group B")
    evidence = dict(evidence or {})
    for v, x in evidence.items():
        if x not in (0, 1) or not 0 <= v < model.n:
            raise ValueError(f"evidence must give variables of the model states 0 or 1; "
                             f"got {v}: {x}")
    counts = []
    for group in (a_vars, b_vars):
        seen = [evidence[int(v)] for v in group if int(v) in evidence]
        counts.append((group.size, group.size - len(seen), sum(seen)))
    (n_a, free_a, ones_a), (n_b, free_b, ones_b) = counts
    k = np.arange(free_a + 1)[:, None] + ones_a
    m = np.arange(free_b + 1)[None, :] + ones_b
    log_w = _log_binomial(free_a, k - ones_a) + _log_binomial(free_b, m - ones_b)
    terms = [(k, ua[1]), (n_a - k, ua[0]), (m, ub[1]), (n_b - m, ub[0]),
             (k * m, table[1, 1]), (k * (n_b - m), table[1, 0]),
             ((n_a - k) * m, table[0, 1]), ((n_a - k) * (n_b - m), table[0, 0])]
    for count, log_weight in terms:
        # a zero weight raised to the power 0 is 1: no count of it, no term
        log_w = log_w + np.where(count == 0, 0.0, count * log_weight)
    return float(logsumexp(log_w))
