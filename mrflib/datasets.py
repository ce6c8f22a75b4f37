"""Artificial datasets with known true distributions.

The six training sets of section 3.4 of Takabatake & Akaho ({cite}`fsll-takabatake-akaho`):
``Ising5x4S/L``, ``BN20-37S/L`` and ``BN20-54S/L`` (``S``: 1000 samples, ``L``: 100,000),
each an i.i.d. draw from a stated true distribution ``p*`` over 20 binary variables. Every
dataset comes with its ``p*`` as a table over all ``2^20`` states, so ``KL(p*||p_theta)`` is
computable exactly.

Conventions
-----------
Variables take values ``x_i in {0, 1}``; data are ``int8`` arrays of shape ``(N, 20)``. The
table ``p_star`` is in the flat order of :mod:`mrflib.fsll` (bit ``i`` of the index is ``x_i``).
The paper's Ising spins are ``s_i = 2 x_i - 1`` (``s_i = +1`` iff ``x_i = 1``); this is also
the order of :func:`mrflib.exact.states` (bit ``k`` set iff spin ``k`` is ``+1``), so the
Boltzmann machine tables of :mod:`mrflib.exact` are directly comparable with ``p_star``.

The paper draws the networks' structure and conditional tables "randomly" without saying
how; we draw each node's parents uniformly without replacement from the earlier nodes and
each table entry ``P(x_i = 1 | parents)`` uniformly from ``(0, 1)``, with fixed seeds. Our
datasets are therefore draws of our own, not the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import as_rng, check_array, check_positive, require_memory

__all__ = [
    "NAMES",
    "Dataset",
    "bayesian_network",
    "bn20_37",
    "bn20_54",
    "bn_probabilities",
    "bn_sample",
    "ising5x4",
    "load",
    "sample_table",
    "to_binary",
]

#: The six datasets of section 3.4 and their sizes.
NAMES = {
    "Ising5x4S": 1000,
    "Ising5x4L": 100_000,
    "BN20-37S": 1000,
    "BN20-37L": 100_000,
    "BN20-54S": 1000,
    "BN20-54L": 100_000,
}
# Fixed seeds: the structure of each network, and one seed per training set.
STRUCTURE_SEEDS = {"BN20-37": 2037, "BN20-54": 2054}
SAMPLE_SEEDS = {
    "Ising5x4S": 101,
    "Ising5x4L": 102,
    "BN20-37S": 371,
    "BN20-37L": 372,
    "BN20-54S": 541,
    "BN20-54L": 542,
}


@dataclass(frozen=True)
class Dataset:
    """A training set with its true distribution.

    Attributes
    ----------
    name : str
    data : ndarray of int8, shape (N, n)
        Samples ``x`` in ``{0, 1}^n``.
    p_star : ndarray, shape (2^n,)
        The true distribution in the flat order (bit ``i`` of the index is ``x_i``).
    cardinalities : tuple of int
    structure : dict
        How ``p_star`` was built (edges and coupling, or parents and tables).
    """

    name: str
    data: np.ndarray
    p_star: np.ndarray
    cardinalities: tuple[int, ...]
    structure: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(self.data.shape[0])

    def empirical(self) -> np.ndarray:
        """The empirical distribution ``p_d`` of ``data`` in the flat order."""
        idx = self.data.astype(np.int64) @ (1 << np.arange(self.data.shape[1], dtype=np.int64))
        return np.bincount(idx, minlength=self.p_star.size) / self.n_samples


def to_binary(index: Any, n: int) -> np.ndarray:
    """Bits of flat indices: ``(M,)`` -> ``int8 (M, n)`` with column ``i`` = bit ``i``."""
    idx = np.asarray(index, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(np.int8)


def sample_table(p: Any, n_samples: int, rng: Any) -> np.ndarray:
    """``n_samples`` i.i.d. flat indices drawn from the table ``p`` (inverse CDF)."""
    p = check_array(p, "p", ndim=1)
    if np.any(p < 0) or p.sum() <= 0:
        raise ValueError("p must be non-negative with a positive sum")
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    require_memory(32.0 * n_samples, f"sample_table(n_samples={n_samples})")
    rng = as_rng(rng)
    cdf = np.cumsum(p)
    idx = np.searchsorted(cdf, rng.random(n_samples) * cdf[-1], side="right")
    return np.minimum(idx, p.size - 1).astype(np.int64)


# --------------------------------------------------------------------------- Ising5x4
def ising5x4(n_samples: int, rng: Any, *, coupling: float = 0.5) -> Dataset:
    """Samples of the 5x4 Ising model of section 3.4, ``p*(x) ~ exp(1/2 sum_<ij> s_i s_j)``.

    ``s_i = 2 x_i - 1``; the grid is :func:`mrflib.graphs.square_grid` ``(5, 4)`` (row-major
    nodes), no field. ``p*`` is :func:`mrflib.exact.probabilities` of the Boltzmann machine
    with zero bias and coupling ``1/2`` on every edge (same state order).
    """
    from . import exact, graphs
    from .model import BoltzmannMachine

    edges = graphs.square_grid(5, 4)
    bm = BoltzmannMachine(np.zeros(20), edges, np.full(len(edges), float(coupling)))
    return _binary_dataset("Ising5x4", exact.probabilities(bm), n_samples, rng,
                           {"edges": edges, "coupling": float(coupling), "model": bm})


def _binary_dataset(name: str, p: np.ndarray, n_samples: int, rng: Any,
                    structure: dict) -> Dataset:
    """``n_samples`` draws from the table ``p`` over 20 binary variables, as a Dataset."""
    return Dataset(
        name=f"{name} (N={n_samples})",
        data=to_binary(sample_table(p, n_samples, rng), 20),
        p_star=p,
        cardinalities=(2,) * 20,
        structure=structure,
    )


# --------------------------------------------------------------------------- Bayesian nets
def bayesian_network(
    n: int, max_parents: int, rng: Any
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A random Bayesian network over binary ``X_0..X_{n-1}`` as in section 3.4.

    Node ``i`` has ``min(i, max_parents)`` distinct parents drawn uniformly from
    ``X_0..X_{i-1}`` (so ``X_0`` has none, ``X_1`` has ``X_0``, ...), and a conditional table
    ``q_i[c] = P(x_i = 1 | parents in configuration c)`` with entries uniform on ``(0, 1)``;
    ``c = sum_j x_{parent_j} 2^j``. ``n = 20`` gives 37 edges for ``max_parents = 2`` and 54
    for 3.
    """
    n = check_positive(n, "n", integer=True)
    max_parents = check_positive(max_parents, "max_parents", integer=True, allow_zero=True)
    rng = as_rng(rng)
    parents, tables = [], []
    for i in range(n):
        k = min(i, max_parents)
        par = np.sort(rng.choice(i, size=k, replace=False)) if k else np.zeros(0, np.int64)
        parents.append(par.astype(np.int64))
        tables.append(rng.random(2**k))
    return parents, tables


def bn_probabilities(parents: list[np.ndarray], tables: list[np.ndarray]) -> np.ndarray:
    """``p*(x) = prod_i P(x_i | parents)`` over all ``2^n`` states in the flat order."""
    n = len(parents)
    require_memory(2 * 8 * 2**n, f"bn_probabilities over 2^{n} states")
    idx = np.arange(2**n, dtype=np.int64)
    p = np.ones(2**n)
    for i, (par, q) in enumerate(zip(parents, tables)):
        conf = np.zeros(2**n, dtype=np.int64)
        for j, v in enumerate(par.tolist()):
            conf |= ((idx >> v) & 1) << j
        qi = q[conf]
        p *= np.where((idx >> i) & 1, qi, 1.0 - qi)
    return p / p.sum()


def bn_sample(
    parents: list[np.ndarray], tables: list[np.ndarray], n_samples: int, rng: Any
) -> np.ndarray:
    """Ancestral sampling of a network from :func:`bayesian_network`: ``int8 (N, n)``.

    Needs no ``2^n`` table, so it serves networks too large to enumerate.
    """
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    rng = as_rng(rng)
    n = len(parents)
    x = np.zeros((n_samples, n), dtype=np.int8)
    for i, (par, q) in enumerate(zip(parents, tables)):
        conf = np.zeros(n_samples, dtype=np.int64)
        for j, v in enumerate(par.tolist()):
            conf |= x[:, v].astype(np.int64) << j
        x[:, i] = rng.random(n_samples) < q[conf]
    return x


def _bn_dataset(name: str, max_parents: int, n_samples: int, rng: Any, structure_seed: int):
    parents, tables = bayesian_network(20, max_parents, structure_seed)
    return _binary_dataset(name, bn_probabilities(parents, tables), n_samples, rng, {
        "parents": parents,
        "tables": tables,
        "n_edges": int(sum(len(v) for v in parents)),
    })


def bn20_37(
    n_samples: int, rng: Any, *, structure_seed: int = STRUCTURE_SEEDS["BN20-37"]
) -> Dataset:
    """Samples of the random Bayesian network BN20-37 (20 nodes, two parents each, 37 edges)."""
    return _bn_dataset("BN20-37", 2, n_samples, rng, structure_seed)


def bn20_54(
    n_samples: int, rng: Any, *, structure_seed: int = STRUCTURE_SEEDS["BN20-54"]
) -> Dataset:
    """Samples of the random Bayesian network BN20-54 (20 nodes, three parents each, 54 edges)."""
    return _bn_dataset("BN20-54", 3, n_samples, rng, structure_seed)


def load(name: str, n_samples: int | None = None, rng: Any | None = None) -> Dataset:
    """One of the six datasets of section 3.4 by name, with its fixed seed.

    ``n_samples`` and ``rng`` override the paper's size and our fixed sample seed (the true
    distribution, i.e. the network, stays the same).
    """
    if name not in NAMES:
        raise ValueError(f"name must be one of {list(NAMES)}, got {name!r}")
    N = NAMES[name] if n_samples is None else n_samples
    rng = SAMPLE_SEEDS[name] if rng is None else rng
    family = name[:-1]
    if family == "Ising5x4":
        ds = ising5x4(N, rng)
    elif family == "BN20-37":
        ds = bn20_37(N, rng)
    else:
        ds = bn20_54(N, rng)
    return Dataset(name, ds.data, ds.p_star, ds.cardinalities, ds.structure)
