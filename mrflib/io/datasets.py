"""Artificial datasets with known true distributions.

The six training sets of section 3.4 of Takabatake & Akaho ({cite}`fsll-takabatake-akaho`):
``Ising5x4S/L``, ``BN20-37S/L`` and ``BN20-54S/L`` (``S``: 1000 samples, ``L``: 100,000),
each an i.i.d. draw from a stated true distribution ``p*`` over 20 binary variables. Every
dataset comes with its ``p*`` as a table over all ``2^20`` states, so ``KL(p*||p_theta)`` is
computable exactly.

Conventions
-----------
Variables take values ``x_i in {0, 1}``; data are ``int8`` arrays of shape ``(N, 20)``. The
table ``p_star`` is in the flat order of :mod:`mrflib.learning.fsll` (bit ``i`` of the index is
``x_i``).
The paper's Ising spins are ``s_i = 2 x_i - 1`` (``s_i = +1`` iff ``x_i = 1``); this is also
the order of :func:`mrflib.inference.exact.states` (bit ``k`` set iff spin ``k`` is ``+1``), so the
Boltzmann machine tables of :mod:`mrflib.inference.exact` are directly comparable with ``p_star``.

The paper draws the networks' structure and conditional tables "randomly" without saying
how; we draw each node's parents uniformly without replacement from the earlier nodes and
each table entry ``P(x_i = 1 | parents)`` uniformly from ``(0, 1)``, with fixed seeds. Our
datasets are therefore draws of our own, not the paper's.

The other data the book uses come from here too: scikit-learn's handwritten digits
(:func:`digits`), the UAI 2014 problems shipped with the package (:func:`uai_problem`) and
pgmpy's expert networks (:func:`expert_network`, from :mod:`mrflib.io.expert_networks`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from mrflib._support.optional import optional_import
from mrflib._support.validation import (
    as_rng,
    check_array,
    check_nodes,
    check_positive,
    check_real,
    is_choice,
    require_memory,
)
from mrflib.io.expert_networks import (
    EXPERT_NETWORKS,
    ExpertNetwork,
    expert_network,
    pgmpy_model,
    pgmpy_network_file,
)
from mrflib.io.expert_networks import MAX_JOINT_STATES as MAX_JOINT_STATES
from mrflib.models.factor_graph import FactorGraph

__all__ = [
    "EXPERT_NETWORKS",
    "UAI_PROBLEMS",
    "UAIProblem",
    "NAMES",
    "Dataset",
    "ExpertNetwork",
    "digits",
    "expert_network",
    "pgmpy_model",
    "pgmpy_network_file",
    "bayesian_network",
    "bn20_37",
    "bn20_54",
    "bn_probabilities",
    "bn_sample",
    "ising5x4",
    "load",
    "sample_table",
    "to_binary",
    "uai_problem",
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

    Parameters
    ----------
    name, data, p_star, cardinalities, structure
        The attributes below, in this order (``structure`` defaults to an empty dict).

    Attributes
    ----------
    name : str
        The dataset's name and size, e.g. ``"Ising5x4 (N=1000)"``.
    data : ndarray of int8, shape (N, n)
        Samples ``x`` in ``{0, 1}^n``.
    p_star : ndarray, shape (2^n,)
        The true distribution in the flat order (bit ``i`` of the index is ``x_i``).
    cardinalities : tuple of int
        Number of states of each variable.
    structure : dict
        How ``p_star`` was built (edges and coupling, or parents and tables).
    n_samples : int
        Number of samples ``N``.
    """

    name: str
    data: np.ndarray
    p_star: np.ndarray
    cardinalities: tuple[int, ...]
    structure: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        """Number of samples ``N``."""
        return int(self.data.shape[0])

    def empirical(self) -> np.ndarray:
        """The empirical distribution ``p_d`` of ``data`` in the flat order.

        Returns
        -------
        ndarray of float64, shape (2^n,)
            The fraction of samples in each state (bit ``i`` of the index is ``x_i``).
        """
        idx = self.data.astype(np.int64) @ (1 << np.arange(self.data.shape[1], dtype=np.int64))
        return np.bincount(idx, minlength=self.p_star.size) / self.n_samples


def to_binary(index: Any, n: int) -> np.ndarray:
    """Bits of flat indices.

    Parameters
    ----------
    index : array_like of int, shape (M,)
        Flat indices in ``0..2^n - 1``.
    n : int
        Number of bits (variables).

    Returns
    -------
    ndarray of int8, shape (M, n)
        Column ``i`` is bit ``i`` of each index.
    """
    from mrflib.inference.exact import index_to_states

    return (index_to_states(index, n) + 1) // 2  # spins -1/+1 -> bits 0/1


def sample_table(p: Any, n_samples: int, *, rng: Any) -> np.ndarray:
    """``n_samples`` i.i.d. flat indices drawn from the table ``p`` (inverse CDF).

    Parameters
    ----------
    p : array_like of float, shape (K,)
        Non-negative weights with a positive sum (normalized here).
    n_samples : int
        Number of draws, positive.
    rng : numpy.random.Generator or int
        Generator or non-negative seed: one uniform per draw.

    Returns
    -------
    ndarray of int64, shape (n_samples,)
        Indices into ``p``.
    """
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
def ising5x4(n_samples: int, *, rng: Any, coupling: float = 0.5) -> Dataset:
    """Samples of the 5x4 Ising model of section 3.4, ``p*(x) ~ exp(1/2 sum_<ij> s_i s_j)``.

    ``s_i = 2 x_i - 1``; the grid is :func:`mrflib.models.graphs.square_grid` ``(5, 4)`` (row-major
    nodes), no field. ``p*`` is :func:`mrflib.inference.exact.probabilities` of the Boltzmann
    machine
    with zero bias and coupling ``1/2`` on every edge (same state order).

    Parameters
    ----------
    n_samples : int
        Number of samples, positive.
    rng : numpy.random.Generator or int
        Generator or non-negative seed of the samples.
    coupling : float, default 0.5
        The coupling of every edge, a real number.

    Returns
    -------
    Dataset
        The samples, ``p*`` and the structure (``edges``, ``coupling`` and the ``model``).
    """
    from mrflib.inference import exact
    from mrflib.models import graphs
    from mrflib.models.boltzmann import BoltzmannMachine

    coupling = check_real(coupling, "coupling")
    edges = graphs.square_grid(5, 4)
    bm = BoltzmannMachine(np.zeros(20), edges, np.full(len(edges), coupling))
    return _binary_dataset("Ising5x4", exact.probabilities(bm), n_samples, rng,
                           {"edges": edges, "coupling": coupling, "model": bm})


def _binary_dataset(name: str, p: np.ndarray, n_samples: int, rng: Any,
                    structure: dict) -> Dataset:
    """``n_samples`` draws from the table ``p`` over 20 binary variables, as a Dataset."""
    return Dataset(
        name=f"{name} (N={n_samples})",
        data=to_binary(sample_table(p, n_samples, rng=rng), 20),
        p_star=p,
        cardinalities=(2,) * 20,
        structure=structure,
    )


# --------------------------------------------------------------------------- Bayesian nets
def bayesian_network(
    n: int, max_parents: int, *, rng: Any
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A random Bayesian network over binary ``X_0..X_{n-1}`` as in section 3.4.

    Node ``i`` has ``min(i, max_parents)`` distinct parents drawn uniformly from
    ``X_0..X_{i-1}`` (so ``X_0`` has none, ``X_1`` has ``X_0``, ...), and a conditional table
    ``q_i[c] = P(x_i = 1 | parents in configuration c)`` with entries uniform on ``(0, 1)``;
    ``c = sum_j x_{parent_j} 2^j``. ``n = 20`` gives 37 edges for ``max_parents = 2`` and 54
    for 3.

    Parameters
    ----------
    n : int
        Number of variables, positive.
    max_parents : int
        The most parents of a node, ``>= 0``.
    rng : numpy.random.Generator or int
        Generator or non-negative seed: node by node, the parents, then the table.

    Returns
    -------
    parents : list of ndarray of int64
        The sorted parents of each node.
    tables : list of ndarray of float64
        ``tables[i][c] = P(x_i = 1 | parents in configuration c)``, ``2^len(parents[i])``
        entries.
    """
    n = check_positive(n, "n", integer=True)
    max_parents = check_positive(max_parents, "max_parents", integer=True, allow_zero=True)
    k_max = min(n - 1, max_parents, 1000)
    require_memory(n * (8.0 * 2.0**k_max + 8.0 * k_max + 256.0),
                   f"bayesian_network(n={n}, max_parents={max_parents})")
    rng = as_rng(rng)
    parents, tables = [], []
    for i in range(n):
        k = min(i, max_parents)
        par = np.sort(rng.choice(i, size=k, replace=False)) if k else np.zeros(0, np.int64)
        parents.append(par.astype(np.int64))
        tables.append(rng.random(2**k))
    return parents, tables


def _check_network(parents: Any, tables: Any) -> tuple[list, list]:
    """A network as :func:`bayesian_network` returns it: ``parents[i]`` distinct nodes
    ``< i`` (topological order), ``tables[i]`` ``2^len(parents[i])`` probabilities."""
    for name, value in (("parents", parents), ("tables", tables)):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{name} must be a list with one array per node, "
                             f"got {type(value).__name__}")
    if len(tables) != len(parents):
        raise ValueError(f"tables must have one entry per node ({len(parents)}), "
                         f"got {len(tables)}")
    par = [check_nodes(p, i, "parents") if np.size(p) else np.zeros(0, np.int64)
           for i, p in enumerate(parents)]
    tab = [check_array(q, "tables", shape=(2 ** len(p),)) for p, q in zip(par, tables)]
    if any(np.any((q < 0) | (q > 1)) for q in tab):
        raise ValueError("tables must hold probabilities in [0, 1]")
    return par, tab


def bn_probabilities(parents: list[np.ndarray], tables: list[np.ndarray]) -> np.ndarray:
    """``p*(x) = prod_i P(x_i | parents)`` over all ``2^n`` states in the flat order.

    Parameters
    ----------
    parents : list of ndarray of int
        ``parents[i]``: distinct nodes ``< i`` (topological order), as
        :func:`bayesian_network` returns them.
    tables : list of ndarray of float
        ``tables[i]``: ``2^len(parents[i])`` probabilities in ``[0, 1]``.

    Returns
    -------
    ndarray of float64, shape (2^n,)
        The joint distribution (bit ``i`` of the index is ``x_i``).
    """
    parents, tables = _check_network(parents, tables)
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
    parents: list[np.ndarray], tables: list[np.ndarray], n_samples: int, *, rng: Any
) -> np.ndarray:
    """Ancestral sampling of a network from :func:`bayesian_network`: ``int8 (N, n)``.

    Needs no ``2^n`` table, so it serves networks too large to enumerate.

    Parameters
    ----------
    parents : list of ndarray of int
        ``parents[i]``: distinct nodes ``< i``, as :func:`bayesian_network` returns them.
    tables : list of ndarray of float
        ``tables[i]``: ``2^len(parents[i])`` probabilities in ``[0, 1]``.
    n_samples : int
        Number of samples ``N``, positive.
    rng : numpy.random.Generator or int
        Generator or non-negative seed: one uniform per sample, node by node.

    Returns
    -------
    ndarray of int8, shape (N, n)
        The samples, states ``0/1``.
    """
    parents, tables = _check_network(parents, tables)
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    rng = as_rng(rng)
    n = len(parents)
    require_memory(n_samples * (n + 32.0), f"bn_sample: n_samples = {n_samples} samples")
    x = np.zeros((n_samples, n), dtype=np.int8)
    for i, (par, q) in enumerate(zip(parents, tables)):
        conf = np.zeros(n_samples, dtype=np.int64)
        for j, v in enumerate(par.tolist()):
            conf |= x[:, v].astype(np.int64) << j
        x[:, i] = rng.random(n_samples) < q[conf]
    return x


def _bn_dataset(name: str, max_parents: int, n_samples: int, rng: Any, structure_seed: int):
    structure_seed = as_rng(structure_seed, "structure_seed")
    parents, tables = bayesian_network(20, max_parents, rng=structure_seed)
    return _binary_dataset(name, bn_probabilities(parents, tables), n_samples, rng, {
        "parents": parents,
        "tables": tables,
        "n_edges": int(sum(len(v) for v in parents)),
    })


def bn20_37(
    n_samples: int, *, rng: Any, structure_seed: int = STRUCTURE_SEEDS["BN20-37"]
) -> Dataset:
    """Samples of the random Bayesian network BN20-37 (20 nodes, two parents each, 37 edges).

    Parameters
    ----------
    n_samples : int
        Number of samples, positive.
    rng : numpy.random.Generator or int
        Generator or non-negative seed of the samples.
    structure_seed : int, default 2037
        The seed of the network (:func:`bayesian_network`).

    Returns
    -------
    Dataset
        The samples, ``p*`` and the structure (``parents``, ``tables``, ``n_edges``).
    """
    return _bn_dataset("BN20-37", 2, n_samples, rng, structure_seed)


def bn20_54(
    n_samples: int, *, rng: Any, structure_seed: int = STRUCTURE_SEEDS["BN20-54"]
) -> Dataset:
    """Samples of the random Bayesian network BN20-54 (20 nodes, three parents each, 54 edges).

    Parameters
    ----------
    n_samples, rng
        As in :func:`bn20_37`.
    structure_seed : int, default 2054
        The seed of the network (:func:`bayesian_network`).

    Returns
    -------
    Dataset
        As :func:`bn20_37` returns it, of this network.
    """
    return _bn_dataset("BN20-54", 3, n_samples, rng, structure_seed)


def load(name: str, n_samples: int | None = None, *, rng: Any | None = None) -> Dataset:
    """One of the six datasets of section 3.4 by name, with its fixed seed.

    Parameters
    ----------
    name : str
        One of :data:`NAMES`.
    n_samples : int or None, default None
        Overrides the paper's size (``None``: 1000 for ``...S``, 100,000 for ``...L``).
    rng : numpy.random.Generator or int or None, default None
        Overrides our fixed sample seed of the dataset (``None``: that seed). The true
        distribution, i.e. the network, stays the same.

    Returns
    -------
    Dataset
        The training set, named ``name``.
    """
    if not is_choice(name, NAMES):
        raise ValueError(f"name must be one of {list(NAMES)}, got {name!r}")
    N = NAMES[name] if n_samples is None else n_samples
    rng = SAMPLE_SEEDS[name] if rng is None else rng
    family = name[:-1]
    if family == "Ising5x4":
        ds = ising5x4(N, rng=rng)
    elif family == "BN20-37":
        ds = bn20_37(N, rng=rng)
    else:
        ds = bn20_54(N, rng=rng)
    return Dataset(name, ds.data, ds.p_star, ds.cardinalities, ds.structure)


# --------------------------------------------------------------------------- real data
def digits(levels: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's handwritten digits: ``(x (1797, 64), labels int64)``.

    ``levels=None`` (default): spins, ``x int8``, ``x[m, r * 8 + c] = +1`` where pixel
    ``(r, c)`` of image ``m`` (grey level ``0..16``) is ``>= 8``, else ``-1``.

    ``levels=q`` (``2..17``): grey levels quantized into ``q`` states ``0..q-1``
    (``x int8``), state ``min(floor(q * pixel / 16), q - 1)``: the intensity range
    ``[0, 16]`` cut into ``q`` bins of width ``16 / q``, the top value 16 joining the last
    bin. For ``q = 4`` the bins are ``[0, 4), [4, 8), [8, 12), [12, 16]``; ``q = 2`` is the
    default threshold at 8 with states ``0, 1`` in place of ``-1, +1``.

    Nodes are row-major, the numbering of :func:`mrflib.models.graphs.square_grid` and
    :func:`mrflib.models.graphs.king_grid` ``(8, 8)``. The images ship with scikit-learn (UCI
    optical digits, 8x8 downsampled); nothing is downloaded.

    Parameters
    ----------
    levels : int or None, default None
        ``None`` for spins, or the number of grey levels ``q`` in ``2..17``.

    Returns
    -------
    x : ndarray of int8, shape (1797, 64)
        The images, one row each: spins or quantized levels.
    labels : ndarray of int64, shape (1797,)
        The digit each image shows.
    """
    load_digits = optional_import("sklearn.datasets", "datasets.digits()", "datasets").load_digits
    if levels is not None:
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not (
                2 <= levels <= 17):
            raise ValueError(f"levels must be None or an integer in 2..17, got {levels!r}")
    d = load_digits()
    labels = np.asarray(d.target, dtype=np.int64)
    if levels is None:
        return np.where(np.asarray(d.data) >= 8, 1, -1).astype(np.int8), labels
    pixels = np.asarray(d.data).astype(np.int64)
    return np.minimum(levels * pixels // 16, levels - 1).astype(np.int8), labels


#: The public UAI 2014 partition-function problems shipped in ``mrflib/data/uai/``.
UAI_PROBLEMS = ("Grids_12", "ObjectDetection_11", "Promedus_24", "CSP_12")


@dataclass(frozen=True)
class UAIProblem:
    """One of the shipped UAI 2014 competition problems (:data:`UAI_PROBLEMS`) and its
    exact answers, as the competition published them.

    Parameters
    ----------
    name, path, evidence_path, evidence, model, log10_partition, marginals
        The attributes below, in this order.

    Attributes
    ----------
    name : str
        The problem's name.
    path, evidence_path : pathlib.Path
        The model (``NAME.uai``) and evidence (``NAME.uai.evid``) files.
    evidence : Mapping
        ``{variable: value}`` from the evidence file (read-only).
    model : FactorGraph
        The model with the evidence applied
        (:meth:`~mrflib.models.factor_graph.FactorGraph.condition`): the problem
        the answers are about.
    log10_partition : float
        ``log10 Z`` of ``model`` from ``NAME.uai.PR`` (6 significant digits).
    marginals : tuple of ndarray
        Each variable's marginal given the evidence, from ``NAME.uai.MAR`` (6 significant
        digits; an observed variable is a point mass).
    """

    name: str
    path: Path
    evidence_path: Path
    evidence: Mapping[int, int]
    model: FactorGraph
    log10_partition: float
    marginals: tuple[np.ndarray, ...] = field(repr=False)


@functools.cache
def uai_problem(name: str) -> UAIProblem:
    """The shipped UAI problem ``name`` (one of :data:`UAI_PROBLEMS`), read once per process.

    The four are public problems of the UAI 2014 inference competition (partition-function
    track), with the competition's exact answers: a 10x10 Ising grid (``Grids_12``),
    multi-state variables with many zero weights (``ObjectDetection_11``), a diagnosis
    network with evidence (``Promedus_24``) and mixed cardinalities with three-variable
    factors (``CSP_12``). Reading them needs no network access.

    Parameters
    ----------
    name : str
        One of :data:`UAI_PROBLEMS`.

    Returns
    -------
    UAIProblem
        The problem, its evidence and answers (the same object on every call).
    """
    from importlib.resources import files

    from mrflib.io import uai as io

    if name not in UAI_PROBLEMS:
        raise ValueError(f"name must be one of {UAI_PROBLEMS}, got {name!r}")
    path = Path(str(files("mrflib") / "data" / "uai" / f"{name}.uai"))
    evid = path.with_name(path.name + ".evid")
    model = io.read_uai(path)
    evidence = io.read_evidence(evid, model)
    marginals = io.read_answer(path.with_name(path.name + ".MAR")).value
    for m in marginals:
        m.flags.writeable = False
    return UAIProblem(name, path, evid, MappingProxyType(evidence), model.condition(evidence),
                      io.read_answer(path.with_name(path.name + ".PR")).value,
                      tuple(marginals))
