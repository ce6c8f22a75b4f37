"""Small random factor graphs for the sampling, SMCI and MAP tests: cardinalities 1-5, scopes
of 1-4 variables, zero weights, and optionally evidence, with a planted state of positive
weight (so that ``Z > 0``) agreeing with the evidence; and colouring grids, whose zeros leave
many states of positive weight but few decodings of marginals among them."""

from __future__ import annotations

import numpy as np

from mrflib import FactorGraph


def random_factor_graph(rng, n=6, n_factors=8, zeros=0.25, max_card=5, max_scope=4,
                        scale=1.0, evidence=0):
    card = rng.integers(1, max_card + 1, n)
    planted = np.array([rng.integers(c) for c in card])
    scopes, tables = [(i,) for i in range(n)], [rng.normal(scale=scale, size=c) for c in card]
    for _ in range(n_factors):
        k = int(rng.integers(1, max_scope + 1))
        s = tuple(rng.choice(n, size=min(k, n), replace=False).tolist())
        t = rng.normal(scale=scale, size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < zeros] = -np.inf
        t[tuple(planted[v] for v in s)] = rng.normal(scale=scale)
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    if evidence:
        chosen = rng.choice(n, size=evidence, replace=False).tolist()
        model = model.condition({v: int(planted[v]) for v in chosen})
    return model


def zeroed_model(seed: int, most_evidence: int = 1) -> FactorGraph:
    """1-7 variables and 0-8 factors with zeros, up to ``most_evidence`` variables observed
    on every third seed; the odd seeds get extra zeros that may remove the planted state (so
    some have ``Z = 0``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    model = random_factor_graph(rng, n=n, n_factors=int(rng.integers(0, 9)), zeros=0.5,
                                max_card=3, evidence=min(n, most_evidence) * int(seed % 3 == 0))
    if seed % 2:
        tables = [np.array(t) for t in model.log_tables]
        for t in tables:
            if t.ndim >= 2:
                t[rng.random(t.shape) < 0.4] = -np.inf
        model = FactorGraph(model.cardinalities, model.scopes, tables)
    return model


def constraint_model(model: FactorGraph, rng: np.random.Generator) -> FactorGraph:
    """``model`` with every table's finite entries replaced by one random constant: a
    constraint model, whose ``Z`` is a scaled model count."""
    tables = []
    for t in model.log_tables:
        t = np.array(t, dtype=float)
        t[np.isfinite(t)] = rng.normal()
        tables.append(t)
    return FactorGraph(model.cardinalities, model.scopes, tables)


def formula(n: int = 14, seed: int = 0, zero: float = -np.inf, graded: bool = False
             ) -> FactorGraph:
    """A random 3-SAT formula of ``2n`` clauses, each a factor with one row of log-weight
    ``zero`` (``-inf``: a zero); ``graded``: the other rows random, not all one."""
    rng = np.random.default_rng(seed)
    scopes, tables = [], []
    for _ in range(2 * n):
        scope = tuple(rng.choice(n, size=3, replace=False).tolist())
        t = rng.normal(size=(2, 2, 2)) if graded else np.zeros((2, 2, 2))
        t[tuple(rng.integers(0, 2, 3).tolist())] = zero
        scopes.append(scope)
        tables.append(t)
    return FactorGraph(np.full(n, 2), scopes, tables)


def colouring(rows: int, cols: int, seed: int, q: int = 3) -> FactorGraph:
    """A grid whose neighbours must differ (zeros), with random soft unary and pairwise
    weights: many states of positive weight, and few decodings of marginals among them."""
    rng = np.random.default_rng(seed)
    n = rows * cols
    scopes = [(v,) for v in range(n)]
    tables = [rng.normal(scale=0.5, size=q) for _ in range(n)]
    differ = np.where(np.eye(q) > 0, -np.inf, 0.0)
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            for u, ok in ((v + 1, c + 1 < cols), (v + cols, r + 1 < rows)):
                if ok:
                    scopes.append((v, u))
                    tables.append(differ + rng.normal(scale=0.5, size=(q, q)))
    return FactorGraph(np.full(n, q), scopes, tables)
