"""Exact inference: the front of every exact engine, for both model kinds.

For a Boltzmann machine ``P(x) ∝ exp(Σ b_i x_i + Σ J_ij x_i x_j)`` (eq. (3) of the GSMCI
paper) two engines answer: :mod:`mrflib.inference.exact.enumeration` enumerates all
``2^n`` spin configurations (state order: bit ``k`` of a state's index is spin ``k``, set
means ``x_k = +1``, the flat order of ``book/notation.md``), and
its pairwise binary backend (``_spin_plan``) runs the variable elimination of factor
graphs (:mod:`mrflib.inference.exact.elimination`) on the machine's tables, in time and
memory exponential in the treewidth only. ``log_partition``, ``moments``,
``log_likelihood``, ``sample`` and :func:`calibrator` take
``method="auto" | "enumerate" | "junction-tree"``; ``"auto"`` enumerates for
``n <= 20`` (``AUTO_ENUMERATE_MAX_N``) and uses the junction tree beyond. :func:`plan`
shows the elimination order and treewidth the engine chose. Both engines keep a model whose
log-weights would pass the float range exact and finite (its parameters scaled by ``2^-k``,
:func:`mrflib.models.boltzmann.overflow_exponent`): ``log Z`` is ``+inf`` (with a warning)
only when it is beyond the range.

Precision limit: float64 sums of log-weights are exact to about their magnitude times
``2^-52``, so every function here warns with a :class:`~mrflib.models.precision.PrecisionWarning`
when the largest ``|log-weight|`` of the factors (of a Boltzmann machine, ``Σ|b_i| +
Σ|J_ij|``) add up past :data:`~mrflib.models.precision.PRECISE_LOG_WEIGHT` ``= 2^32``: the answer
may then be wrong, and within the limit it is exact (see :mod:`mrflib.models.precision`).

Where the treewidth is beyond the junction tree but the model is full of zeros (clauses,
deterministic tables, evidence),
:func:`mrflib.inference.exact.conditioning.conditioned_log_partition` sums ``log Z`` over
the states of one variable at a time, propagating the zeros, splitting and caching
components, and eliminating a component once it is narrow enough.

The same functions take a discrete :class:`~mrflib.models.factor_graph.FactorGraph` (any number of
states, factors over any variables): :mod:`mrflib.inference.exact.enumeration` enumerates it (the
reference; ``"auto"`` up to ``2^14`` joint states for sums, ``2^20`` for samples and
maxima) and :mod:`mrflib.inference.exact.elimination` runs
variable elimination on a junction tree after clamping evidence and dropping barren
conditional probability tables. :func:`marginals`, :func:`factor_marginals` and
:func:`map_assignment` are defined for both model types (a Boltzmann machine through
:meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann`, state 0 = spin -1).

Every function takes the model first, ``(model, data)``, and answers in the model's own
domain: configurations (samples, the MAP state, ``data``) are what ``model.log_weight``
accepts, ``int8`` spins ``-1/+1`` of a Boltzmann machine and ``int64`` states
``0..|X_i|-1`` of a factor graph (:func:`mrflib.models.boltzmann.to_states` and
:func:`~mrflib.models.boltzmann.to_spins` convert between the two), and flat tables
(:func:`probabilities`) are in the flat order of ``book/notation.md`` (variable 0 the
least significant digit) for both. The moments of a factor graph are its mean
parameters, the expected sufficient statistics of its tables: the variable and factor
marginals.

The Kullback-Leibler divergences (:func:`kl_data_model`, :func:`kl_model`,
:func:`kl_divergence`) live in :mod:`mrflib.inference.exact.divergence`. Exact maximum
likelihood is a learner: ``learning.fit(data, edges, "mle")``, which asks :func:`calibrator`
for ``log Z`` and the moments at every step (``exact.fit_mle`` still reaches it, deprecated,
for one release).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mrflib._support.deprecation import ModuleAliases as _ModuleAliases
from mrflib._support.deprecation import moved_names
from mrflib._support.validation import (
    as_rng,
    check_edges,
    check_positive,
    is_choice,
    require_memory,
)
from mrflib.inference.exact import _spin_plan, elimination, enumeration, sliced
from mrflib.inference.exact._data_checks import check_factor_samples, check_samples
from mrflib.inference.exact.divergence import kl_data_model, kl_divergence, kl_model
from mrflib.inference.exact.elimination_order import Plan
from mrflib.inference.exact.enumeration import (
    MAX_STATE_BYTES_FACTOR,
    correlation_matrix,
    covariance_matrix,
    index_to_states,
    log_probabilities,
    log_weights,
    states,
    states_to_index,
)
from mrflib.models import graphs
from mrflib.models.boltzmann import (
    BoltzmannMachine,
    check_model,
    overflow_exponent,
    to_spins,
    unscale_log_partition,
)
from mrflib.models.factor_graph import (
    FactorGraph,
    as_factor_graph,
    with_evidence,
)
from mrflib.models.precision import checked
from mrflib.models.structure import is_pairwise_binary

__all__ = [
    "states",
    "index_to_states",
    "states_to_index",
    "log_weights",
    "log_probabilities",
    "log_partition",
    "probabilities",
    "moments",
    "correlation_matrix",
    "covariance_matrix",
    "sufficient_statistics",
    "empirical_distribution",
    "log_likelihood",
    "calibrator",
    "kl_divergence",
    "kl_data_model",
    "kl_model",
    "sample",
    "marginals",
    "factor_marginals",
    "map_assignment",
    "plan",
    "METHODS",
    "AUTO_ENUMERATE_MAX_N",
    "MAX_STATE_BYTES_FACTOR",
]

#: Engines of ``method=``; ``"auto"`` enumerates up to ``AUTO_ENUMERATE_MAX_N`` spins.
METHODS = ("auto", "enumerate", "junction-tree")
AUTO_ENUMERATE_MAX_N = 20
#: ``"auto"`` enumerates a factor graph with at most this many joint states.
AUTO_ENUMERATE_MAX_STATES = 2**20
#: ... but only this many for the sums (log Z, marginals, likelihoods): past about 2^15
#: joint states the junction tree is faster (on lattices, 3x at 2^16 states, 30-60x at
#: 2^20). ``sample`` and ``map_assignment`` keep enumerating up to 2^20, so that a seed
#: gives the draws and a tie the maximum they always gave.
_AUTO_SUM_MAX_STATES = 2**14


def _engine(method: Any, n: int) -> str:
    """``"enumerate"`` or ``"junction-tree"`` for ``method`` on ``n`` spins."""
    if not is_choice(method, METHODS):
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        return "enumerate" if n <= AUTO_ENUMERATE_MAX_N else "junction-tree"
    return method


def _factor_engine(method: Any, model: FactorGraph,
                   max_states: int = AUTO_ENUMERATE_MAX_STATES) -> Any:
    """The module (:mod:`factor_enumeration`, or :mod:`sliced`: :mod:`elimination`, with
    reduced domains or slices where its plan does not fit) for ``method``; ``"auto"``
    enumerates up to ``max_states`` joint states."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        small = math.prod(model.cardinalities.tolist()) <= max_states
        method = "enumerate" if small else "junction-tree"
    return enumeration if method == "enumerate" else sliced




def plan(model: Any, n: int | None = None) -> Plan:
    """What the junction-tree engine will do.

    A :class:`~mrflib.models.factor_graph.FactorGraph` gives an
    :class:`~mrflib.inference.exact.elimination_plan.EliminationPlan` (the plan of
    :func:`marginals`: evidence clamped, barren tables kept; where its tables hold far more
    entries than the model's, the answers come from the smaller plan of the states that can
    occur, see :mod:`mrflib.inference.exact.sliced`); a
    :class:`~mrflib.models.boltzmann.BoltzmannMachine` or an edge list on ``n`` nodes the
    cached plan of its graph, an ``EliminationPlan`` whose methods also take the machine's
    parameters (``log_partition``, ``calibrate`` and ``sample`` of ``bias, coupling``).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine or array_like of int, shape (E, 2)
        The model, or the edge list of a graph.
    n : int or None, default None
        The number of nodes of an edge list (ignored for a model).

    Returns
    -------
    Plan
        A :class:`~mrflib.inference.exact.elimination_order.Plan`, the one plan type of
        both kinds: its ``order``, ``heuristic``, ``treewidth``, ``cliques``,
        ``max_table_bytes``, ``total_bytes``, ``fits`` and ``treewidth_lower_bound``. A
        factor graph too large for the available memory gives its plan with ``fits``
        false rather than an error, and where no order was found, ``treewidth`` ``None``
        and ``treewidth_lower_bound``, a proved lower bound.
    """
    if isinstance(model, FactorGraph):
        # (searched no more than marginals would search it: a hopeless model in a second)
        return elimination.plan(model, check=False, give_up=sliced.give_up(model, "MAR"))
    if model is None or isinstance(model, (str, bytes, int, float, dict)):
        raise TypeError("model must be a BoltzmannMachine, a FactorGraph, a Graph or an (E, 2) "
                        f"edge array, got {type(model).__name__}")
    return _spin_plan.plan(model, n)


@checked
def log_partition(model: BoltzmannMachine | FactorGraph, method: str = "auto", *,
                  evidence: Mapping[Any, Any] | None = None) -> float:
    """``log Z = log Σ_x exp(Σ b_i x_i + Σ J_ij x_i x_j)`` (natural log), or of a
    :class:`~mrflib.models.factor_graph.FactorGraph`, ``log Σ_x exp Σ_k θ_k(x_{S_k})``.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine: ``"enumerate"`` sums all states, ``"junction-tree"`` eliminates the
        variables on :func:`plan`'s junction tree, ``"auto"`` enumerates for ``n <= 20``
        spins (a factor graph: at most ``2^14`` joint states) and uses the junction tree
        beyond.
    evidence : mapping or None, default None
        ``{variable: value}`` (indices, or the model's names): the answer is that of the
        model conditioned on it (:func:`~mrflib.models.factor_graph.with_evidence`).

    Returns
    -------
    float
        ``log Z``; ``+inf`` with a warning beyond the float range, ``-inf`` when ``Z = 0``.

    Warns
    -----
    RuntimeWarning
        When ``Z = 0`` (a factor graph whose evidence has probability zero): returns
        ``-inf``.
    """
    model = with_evidence(model, evidence)
    if not is_pairwise_binary(model):
        logz = _factor_engine(method, model, _AUTO_SUM_MAX_STATES).log_partition(model)
        if logz == -np.inf:
            warnings.warn("the model has Z = 0 (every state has zero weight, e.g. evidence "
                          "of probability zero): log Z = -inf", RuntimeWarning, stacklevel=2)
        return logz
    bm = check_model(model, "model")
    if _engine(method, bm.n) == "junction-tree":
        return _spin_plan.plan(bm).log_partition(bm.bias, bm.coupling)
    lw, k = enumeration.log_weight_table(bm.bias, bm.edges, bm.coupling)
    return unscale_log_partition(enumeration.scaled_log_partition(lw.ravel(), k), k)


@checked
def probabilities(model: BoltzmannMachine | FactorGraph) -> np.ndarray:
    """``P(x)`` for all ``2^n`` states (``Π_i |X_i|`` of a factor graph) in flat index
    order, variable 0 the least significant digit.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64
        The probabilities, flat.
    """
    if not is_pairwise_binary(model):
        return enumeration.joint_probabilities(model).ravel(order="F")
    bm = check_model(model, "model")
    lw, k = enumeration.log_weight_table(bm.bias, bm.edges, bm.coupling)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log Z = inf is not returned
        enumeration.normalize_in_place(lw, k)
    return lw.ravel()


@checked
def moments(model: BoltzmannMachine | FactorGraph, method: str = "auto"
            ) -> tuple[Any, Any]:
    """Exact moments of a Boltzmann machine; of a factor graph its mean parameters.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        ``"enumerate"`` (all ``2^n`` states), ``"junction-tree"`` (upward and downward pass
        of :func:`plan`'s junction tree) or ``"auto"`` (enumeration for ``n <= 20``, else
        the junction tree).

    Returns
    -------
    tuple
        Of a Boltzmann machine ``(mean, pair)``: ``⟨x_i⟩``, shape ``(n,)``, and
        ``⟨x_i x_j⟩`` for each edge, shape ``(E,)``. Of a factor graph
        ``(marginals(model), factor_marginals(model))``: lists of arrays, each variable's
        and each factor's.
    """
    if not is_pairwise_binary(model):
        return (marginals(model, method=method), factor_marginals(model, method=method))
    bm = check_model(model, "model")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log Z = inf is not returned
        if _engine(method, bm.n) == "junction-tree":
            _, mean, pair = _spin_plan.plan(bm).calibrate(bm.bias, bm.coupling)
            return mean, pair
        _, mean, C = enumeration.enumerated_moments(bm)
    return mean, C[bm.edges[:, 0], bm.edges[:, 1]]


def sufficient_statistics(
    data: Any, edges: Any, n: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sample means ``(1/N) Σ_μ x_i^(μ)`` and ``(1/N) Σ_μ x_i^(μ) x_j^(μ)`` for each edge.

    Parameters
    ----------
    data : array_like of int, shape (N, n)
        Spins ``-1/+1``; at least one sample.
    edges : array_like of int, shape (E, 2)
        The edges ``i < j``.
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).

    Returns
    -------
    mean : ndarray of float64, shape (n,)
        The sample means of the spins.
    pair : ndarray of float64, shape (E,)
        The sample means of each edge's product.
    """
    s = check_samples(data, n)
    edges = check_edges(edges, s.shape[1])
    sf = s.astype(np.float64)
    pair = np.einsum("mi,mi->i", sf[:, edges[:, 0]], sf[:, edges[:, 1]]) / len(s)
    return sf.mean(axis=0), pair


def empirical_distribution(data: Any, n: int | None = None) -> np.ndarray:
    """The empirical distribution of ``data`` over all ``2^n`` states, flat index order.

    Parameters
    ----------
    data : array_like of int, shape (N, n)
        Spins ``-1/+1``; at least one sample.
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).

    Returns
    -------
    ndarray of float64, shape (2^n,)
        The frequency of each state.
    """
    s = check_samples(data, n)
    n = s.shape[1]
    require_memory(8 * 2.0**n, f"an empirical distribution over 2^{n} states")
    counts = np.bincount(states_to_index(s), minlength=2**n)
    return counts / len(s)


@checked
def log_likelihood(model: BoltzmannMachine | FactorGraph, data: Any, method: str = "auto"
                   ) -> float:
    """Average log-likelihood ``(1/N) Σ_μ log P(x^(μ))`` of the data under ``model``.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    data : array_like of int, shape (N, n)
        Samples in the model's domain (spins ``-1/+1`` of a Boltzmann machine, integer
        states of a factor graph); at least one.
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine of ``log Z``, as in :func:`log_partition` (enumeration for ``n <= 20``
        under ``"auto"``, the junction tree beyond).

    Returns
    -------
    float
        The average log-likelihood in nats; a sample of zero weight gives ``-inf``.

    Raises
    ------
    ValueError
        When a factor graph has ``Z = 0``: its likelihood is undefined.
    """
    if not is_pairwise_binary(model):
        x = check_factor_samples(model, data)
        logz = _factor_engine(method, model, _AUTO_SUM_MAX_STATES).log_partition(model)
        if logz == -np.inf:
            raise ValueError("model has Z = 0 (every state has zero weight): its "
                             "likelihood is undefined")
        return float(np.mean(model.log_weight(x)) - logz)
    bm = check_model(model, "model")
    s = check_samples(data, bm.n)
    k = overflow_exponent(bm.bias, bm.coupling)
    if not k:
        return float(np.mean(bm.log_weight(s)) - log_partition(bm, method=method))
    # log-weights beyond the float range: both terms times 2^-k, their difference scaled back
    scaled = BoltzmannMachine(np.ldexp(bm.bias, -k), bm.edges, np.ldexp(bm.coupling, -k))
    if _engine(method, bm.n) == "junction-tree":
        logz, _ = _spin_plan.plan(bm).log_partition_scaled(bm.bias, bm.coupling)
    else:
        lw, _ = enumeration.log_weight_table(bm.bias, bm.edges, bm.coupling)
        logz = enumeration.scaled_log_partition(lw, k)
    with np.errstate(over="ignore"):
        return float(np.ldexp(np.mean(scaled.log_weight(s)) - logz, k))


def calibrator(edges: Any, n: int | None = None, method: str = "auto"
               ) -> Callable[[Any, Any], tuple[float, np.ndarray, np.ndarray]]:
    """``log Z`` and the moments of every Boltzmann machine on one graph, as a function of
    its parameters: what exact maximum likelihood asks at each step.

    The engine is chosen, and its tables sized or its junction tree built, once; each call
    then costs one enumeration or one upward and downward pass.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2), or Graph
        The graph.
    n : int or None, default None
        Number of spins (``None``: one more than the largest node of ``edges``).
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine, as in :func:`log_partition`: ``"auto"`` enumerates for ``n <= 20``
        and uses the junction tree beyond.

    Returns
    -------
    callable
        ``calibrate(bias, coupling) -> (log_z, mean, pair)``: ``bias`` of shape ``(n,)``
        and ``coupling`` of shape ``(E,)``, one per edge, in; ``log Z``, ``⟨x_i⟩`` of shape
        ``(n,)`` and ``⟨x_i x_j⟩`` of each edge, shape ``(E,)``, out. Its attribute
        ``engine`` names the engine chosen.

    Raises
    ------
    ValueError
        For a bad graph or ``method``, and when the enumeration's tables would not fit in
        memory.
    """
    n = graphs.num_nodes(edges, n)
    edges = check_edges(edges, n)
    engine = _engine(method, n)
    if engine == "junction-tree":
        calibrate_tree = _spin_plan.plan(edges, n).calibrate

        def calibrate(bias: Any, coupling: Any) -> tuple[float, np.ndarray, np.ndarray]:
            return calibrate_tree(bias, coupling)
    else:
        enumeration.check_enumerable(n, "exact log Z and moments")
        ei, ej = edges[:, 0], edges[:, 1]

        def calibrate(bias: Any, coupling: Any) -> tuple[float, np.ndarray, np.ndarray]:
            P, k = enumeration.log_weight_table(bias, edges, coupling)
            logz = enumeration.normalize_in_place(P, k)
            mean, C = enumeration.moments_matrix(P, n)
            return logz, mean, C[ei, ej]

    calibrate.engine = engine
    return calibrate


@checked
def sample(model: BoltzmannMachine | FactorGraph, n_samples: int, method: str = "auto", *,
           rng: Any) -> np.ndarray:
    """Exact i.i.d. samples in the model's own domain.

    ``method="enumerate"``: inverse-CDF over the enumerated distribution, one uniform
    per sample from ``rng``. ``"junction-tree"``: forward filtering / backward sampling
    on :func:`plan`'s junction tree, one uniform per spin. ``"auto"``: enumeration for
    ``n <= 20``, else the junction tree. The same seed gives the same samples.

    A :class:`~mrflib.models.factor_graph.FactorGraph` is sampled by inverse CDF over its
    enumerated states (``"enumerate"``; ``"auto"`` up to ``2^20`` states) or on the junction
    tree of :mod:`mrflib.inference.exact.elimination` (dropped barren tables sampled forward
    last).

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    n_samples : int
        Number of samples, at least 1.
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine, as above.
    rng : int or numpy.random.Generator
        Seed or generator.

    Returns
    -------
    ndarray, shape (n_samples, n)
        ``int8`` spins of a Boltzmann machine, ``int64`` states of a factor graph (what
        ``model.log_weight`` takes; :func:`~mrflib.models.boltzmann.to_states` converts
        spins).
    """
    if not is_pairwise_binary(model):
        n_samples = check_positive(n_samples, "n_samples", integer=True)
        return _factor_engine(method, model).sample(model, n_samples, rng=as_rng(rng))
    bm = check_model(model, "model")
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    require_memory((20.0 * bm.n + 40) * n_samples,
                   f"exact.sample: n_samples = {n_samples} samples of {bm.n} spins")
    rng = as_rng(rng)
    if _engine(method, bm.n) == "junction-tree":
        return _spin_plan.plan(bm).sample(bm.bias, bm.coupling, n_samples, rng=rng)
    cdf = np.cumsum(probabilities(bm))
    u = rng.random(n_samples) * cdf[-1]
    idx = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)
    return index_to_states(idx, bm.n)


@checked
def marginals(model: FactorGraph | BoltzmannMachine, method: str = "auto", *,
              evidence: Mapping[Any, Any] | None = None) -> list[np.ndarray]:
    """Exact single-variable marginals ``P(x_i)``.

    An observed variable is a point mass at its value; a Boltzmann machine's state 0 is
    spin -1.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model.
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine: ``"enumerate"`` sums all states, ``"junction-tree"`` eliminates the
        variables on :func:`plan`'s junction tree, ``"auto"`` enumerates for ``n <= 20``
        spins (a factor graph: at most ``2^14`` joint states) and uses the junction tree
        beyond.
    evidence : mapping or None, default None
        ``{variable: value}`` (indices, or the model's names): the answer is that of the
        model conditioned on it (:func:`~mrflib.models.factor_graph.with_evidence`).

    Returns
    -------
    list of ndarray of float64
        One ``(|X_i|,)`` array per variable.

    Raises
    ------
    ValueError
        When ``Z = 0`` (the marginals are undefined).
    """
    model = as_factor_graph(with_evidence(model, evidence))
    return _factor_engine(method, model, _AUTO_SUM_MAX_STATES).marginals(model)


@checked
def factor_marginals(model: FactorGraph | BoltzmannMachine, method: str = "auto"
                     ) -> list[np.ndarray]:
    """Exact marginal ``P(x_{S_k})`` of every factor's scope: the expected sufficient
    statistics of maximum-likelihood gradients.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model.
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine: ``"enumerate"`` sums all states, ``"junction-tree"`` eliminates the
        variables on :func:`plan`'s junction tree, ``"auto"`` enumerates for ``n <= 20``
        spins (a factor graph: at most ``2^14`` joint states) and uses the junction tree
        beyond.

    Returns
    -------
    list of ndarray of float64
        One array per factor, shaped like ``model.log_tables[k]`` (axes in scope order).

    Raises
    ------
    ValueError
        When ``Z = 0``.
    """
    model = as_factor_graph(model)
    return _factor_engine(method, model, _AUTO_SUM_MAX_STATES).factor_marginals(model)


@checked
def map_assignment(model: FactorGraph | BoltzmannMachine, method: str = "auto", *,
                   evidence: Mapping[Any, Any] | None = None) -> tuple[np.ndarray, float]:
    """A most probable configuration (max-product on the junction tree, or the enumerated
    maximum) and its log-weight.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model.
    method : {"auto", "enumerate", "junction-tree"}, default "auto"
        The engine: ``"auto"`` enumerates up to ``2^20`` joint states.
    evidence : mapping or None, default None
        ``{variable: value}`` as in :func:`log_partition` (a Boltzmann machine's: spins;
        its answer then is spins too).

    Returns
    -------
    x : ndarray, shape (n,)
        ``int64`` states of a factor graph, ``int8`` spins of a Boltzmann machine.
    log_weight : float
        ``Σ_k θ_k(x_{S_k})`` of a factor graph, ``model.log_weight`` of a Boltzmann
        machine.

    Raises
    ------
    ValueError
        When every state has zero weight.
    """
    if is_pairwise_binary(model):
        x, logw = map_assignment(as_factor_graph(with_evidence(model, evidence)), method=method)
        return to_spins(x), logw
    model = as_factor_graph(with_evidence(model, evidence))
    return _factor_engine(method, model).map_assignment(model)


#: ``exact.fit_mle``, a learner, moved to the learning layer, which this one cannot import;
#: the top-level package declares where (``mrflib._support.deprecation.MOVED_NAMES``).
__getattr__ = moved_names(__name__)

#: Module paths named for a model kind, and the module named for the idea that replaced
#: them: importing one warns and gives its replacement (for one release).
MOVED = {"spin_enumeration": "mrflib.inference.exact.enumeration"}

_ModuleAliases(__name__, MOVED, warn=True).install()
