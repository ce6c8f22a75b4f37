"""Learning from data: the one entry point :func:`fit`, and the learners of Boltzmann machines.

:func:`fit` chooses a backend by the structure it is given: an edge array or a
:class:`~mrflib.models.boltzmann.BoltzmannMachine` goes to the pairwise binary backend
(:mod:`mrflib.learning._spin_learners`: one gradient-ascent driver shared by every method,
Yasuda 2018, section 5: ``w <- w + eta * Delta``, and the solvers with a loop of their own),
a :class:`~mrflib.models.factor_graph.FactorGraph` to the learners of free log-tables
(:mod:`mrflib.learning.table_learners`, and :mod:`mrflib.learning.stochastic_learning` for
the methods that draw). The methods, as the Boltzmann machines' backend runs them:

``"mle"``
    exact maximum likelihood, eq. (2), (5) of Yasuda (2018) -- the reference; by
    default by L-BFGS-B on the exact likelihood (:mod:`mrflib.learning._maximum_likelihood`),
    or ``solver="gradient"`` for gradient ascent on eq. (5) with exact moments; option
    ``engine`` (``"auto"``, ``"enumerate"``, ``"junction-tree"``) picks the exact engine of
    ``log Z`` and the moments.
``"mple"``
    maximum pseudo-likelihood, eq. (7); ascent direction eq. (13) (half of eq. (10)).
``"rm"``
    ratio matching for binary data (Hyvarinen 2007):
    ``J_RM = (1/N) sum_mu sum_i g(P(x)/P(x^{-i}))^2`` with ``g(r) = 1/(1 + r)``.
``"mpf"``
    minimum probability flow with single-spin-flip connectivity (Sohl-Dickstein et
    al. 2011): ``K = (1/N) sum_mu sum_i exp((E(x) - E(x^{-i})) / 2)``.
``"1-smci"``
    1-SMCI learning, eq. (23)-(27): the model moments are replaced by the 1-SMCI
    estimates of :func:`mrflib.inference.smci.moments` with the sample set fixed to the data;
    ``solver="anderson"`` accelerates its fixed-point iteration
    (:mod:`mrflib._support.anderson`; the same fixed point and stopping rule).
``"s2-smci"``
    the same with the s2-SMCI estimates, eq. (22)-(26) of Yasuda & Uchizawa (GSMCI),
    the sample set fixed to the data (the "(fix)" curves of their Figure 7).
``"cd"``, ``"pcd"``
    contrastive divergence (chains restarted at the data) and persistent
    contrastive divergence (Tieleman 2008), both with sequential Gibbs sweeps of
    :func:`mrflib.inference.sampling.sweep`.
``"smci-pcd"``
    Algorithm 2 of Yasuda & Uchizawa (GSMCI): the sample set starts as the
    ``extension_rate``-replicated data; every step updates the parameters with the
    GSMCI gradients eq. (30)-(31) computed on the current sample set (``estimator``
    "1-smci" or "s2-smci"; "mci" gives plain PCD in the same loop), then advances all
    ``M = eN`` chains by ``kappa`` Gibbs sweeps under the new parameters.
``"lap"``
    the LAP estimator of Mizrahi, de Freitas & Tenorio (section 4.2),
    :func:`mrflib.learning.lap.fit_ising`: clique by clique, no gradient loop.

The learners are the rows of one table (:data:`mrflib.learning._fit_arguments.TABLE`:
default and allowed solvers, extra options, whether the method draws, the scaling of a
local gradient), whose checks of :func:`fit`'s arguments live beside it; the ascent
directions are :mod:`mrflib.learning._ascent_directions`. Every learner returns a
:class:`Fit` with ``model``, ``converged``, ``n_steps``, ``stop_reason``, ``seconds`` and
``history``.

Here ``x^{-i}`` is ``x`` with spin ``i`` flipped; ``x`` is in ``{-1, +1}^n`` and
the model is ``P(x) ~ exp(sum_i b_i x_i + sum_(ij) J_ij x_i x_j)`` (the paper's
model has no bias: ``bias=False``).

Cost. MPLE, RM, MPF and 1-SMCI depend on the data only through the counts of local
configurations ``(x_i, x_N(i))`` (and, for 1-SMCI pairs, of each edge's boundary): the
data are compressed once per fit (:mod:`mrflib.learning._local`) and every step costs the same
whatever N, in memory linear in nodes + edges (no dense ``n x n`` matrix). ``fit`` runs
with BLAS on one thread (:mod:`mrflib._support.threads`) unless the user set the BLAS threads.

Scaling of the ascent directions. Eq. (13) halves the coupling gradient of the
pseudo-likelihood "to fit the magnitude of the gradient to that of the MLE". We
apply the same rule to every objective: its gradient is rescaled, per parameter
type, so that at ``theta = 0`` it equals the log-likelihood gradient of eq. (5)
(``<x_i>_data`` for a bias, ``<x_i x_j>_data`` for a coupling). That is a constant
diagonal preconditioner, so stationary points do not change: MPLE and MPF use
factors (1, 1/2) for (bias, coupling), RM uses (2, 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib._support.threads import blas_single_threaded
from mrflib._support.validation import (
    as_rng,
    check_array,
    check_spins,
    is_choice,
    require_memory,
)
from mrflib.learning import _flow, _local, _spin_learners
from mrflib.learning._ascent_directions import SMCI_ESTIMATORS as SMCI_ESTIMATORS
from mrflib.learning._ascent_directions import direction_fn
from mrflib.learning._fit_arguments import (
    METHODS,
    TABLE,
    check_factor_graph_call,
    check_method,
)
from mrflib.learning._problem import problem_from_model
from mrflib.learning.fit_result import Fit
from mrflib.models.boltzmann import check_model
from mrflib.models.structure import is_pairwise_binary

__all__ = ["METHODS", "LOCAL_METHODS", "STOCHASTIC_METHODS", "Fit", "fit", "objective",
           "objective_gradient", "mpf_log_flow", "ascent_direction", "estimator_variances",
           "mple_rho", "mae"]

LOCAL_METHODS = _local.LOCAL_METHODS
STOCHASTIC_METHODS = tuple(m.name for m in TABLE.values() if m.stochastic)


# --------------------------------------------------------------------------- results
def mae(a: Any, b: Any) -> float:
    """Mean absolute error between the couplings of two machines (or two arrays).

    This is the error measure of Figures 2 and 3 of Yasuda (2018):
    ``sum_(ij) |w_ij^MLE - w_ij^approx| / |E|``.

    Parameters
    ----------
    a : BoltzmannMachine or array_like of float, shape (E,)
        A machine (its ``coupling`` is used) or a coupling vector; one-dimensional.
    b : BoltzmannMachine or array_like of float, shape (E,)
        The same, with as many couplings as ``a``.

    Returns
    -------
    float
        The mean of ``|a - b|`` over the couplings; ``0.0`` when there are none.
    """
    ca = getattr(a, "coupling", a)
    cb = getattr(b, "coupling", b)
    ca = check_array(ca, "a", ndim=1)
    cb = check_array(cb, "b", ndim=1, shape=(ca.shape[0],))
    return float(np.mean(np.abs(ca - cb))) if ca.size else 0.0


def _local_terms_numpy(
    bm: Any, data: Any, method: str
) -> tuple[float, np.ndarray, np.ndarray]:
    """Per-sample plain-numpy evaluation of a local objective and its raw gradient.

    The reference the tests compare the fitting path against: :func:`objective`,
    :func:`objective_gradient` and :func:`fit` evaluate the same formulas in numba from
    the data's local-pattern counts (:class:`mrflib.learning._local.LocalObjective`).

    Parameters
    ----------
    bm : BoltzmannMachine
    data : array (N, n) of spins
    method : {"mple", "rm", "mpf"}

    Returns
    -------
    value : float
        The objective to maximise, averaged over the data: the pseudo-likelihood
        eq. (7) of Yasuda (2018), ``-J_RM`` or ``-K_MPF``.
    grad_bias, grad_coupling : ndarray (n,), (E,)
        Its exact (unscaled) gradient.
    """
    if not is_choice(method, LOCAL_METHODS):
        raise ValueError(f"method must be one of {LOCAL_METHODS}, got {method!r}")
    prob = problem_from_model(bm, data)
    return _local.local_terms_numpy(prob.x, np.asarray(bm.bias, dtype=np.float64),
                                    np.asarray(bm.coupling, dtype=np.float64), prob.edges,
                                    method)


def _table_objective(model: Any, data: Any, method: str) -> float:
    """:func:`objective` of a factor graph: its log-likelihood or pseudo-likelihood."""
    from mrflib.learning import table_learners

    if method == "mle":
        from mrflib import exact

        return float(exact.log_likelihood(model, data))
    if method != "mple":
        raise ValueError(f"method {method!r} has no objective on a FactorGraph (its "
                         "objectives are 'mle' and 'mple')")
    return float(table_learners.pseudo_log_likelihood(model, data))


@renamed_argument("bm", "model")
def objective(model, data, method: str) -> float:
    """The objective a method maximises, averaged over the data.

    Parameters
    ----------
    model : BoltzmannMachine or FactorGraph
        The model at which the objective is evaluated.
    data : array_like of int, shape (N, n)
        Spins -1/+1 (states of a FactorGraph), one configuration per row, ``N >= 1``.
    method : str
        One of :data:`METHODS`. ``"mle"``: the log-likelihood eq. (2); ``"mple"``: the
        pseudo-likelihood eq. (7); ``"rm"``: ``-J_RM``; ``"mpf"``: ``-K``. 1-SMCI, CD and
        PCD have no known objective (Yasuda 2018, section 6) and raise ``ValueError``. A
        factor graph has the first two (the pseudo-likelihood of
        :func:`mrflib.learning.table_learners.pseudo_log_likelihood`, the same value on a
        machine's factor graph); RM and MPF are defined on spins.

    Returns
    -------
    float
        The objective's value, averaged over the data.

    Raises
    ------
    ValueError
        For a method without an objective, and where ``K`` exceeds float64
        (``exp(709.78)``): the message gives ``log K``, which :func:`mpf_log_flow` returns
        for every finite model.
    """
    check_method(method)
    if not is_pairwise_binary(model):
        return _table_objective(model, data, method)
    bm = check_model(model, "model")
    if method == "mle":
        from mrflib import exact

        return float(exact.log_likelihood(bm, check_spins(data, bm.n, "data")))
    if not is_choice(method, LOCAL_METHODS):
        raise ValueError(f"method {method!r} has no objective function; use ascent_direction")
    prob = problem_from_model(bm, data)
    value, _, _ = prob.local(method)(bm.params)
    if method == "mpf":
        _flow.check_flow_finite(prob.local(method), bm.params, value)
    return float(value)


@renamed_argument("bm", "model")
def objective_gradient(model, data, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact (unscaled) gradient ``(d/db, d/dJ)`` of :func:`objective` (local methods;
    for MPF where it overflows float64, :func:`mpf_log_flow` gives ``grad K / K``).

    Parameters
    ----------
    model : BoltzmannMachine
        The machine at which the gradient is evaluated.
    data : array_like of int, shape (N, n)
        Spins -1/+1, one configuration per row, ``N >= 1``.
    method : {"mple", "rm", "mpf"}
        A local method (:data:`LOCAL_METHODS`); any other is a ``ValueError``.

    Returns
    -------
    grad_bias : ndarray of float64, shape (n,)
        The derivative of the objective with respect to the biases.
    grad_coupling : ndarray of float64, shape (E,)
        Its derivative with respect to the couplings, in the order of ``model.edges``.
    """
    if not is_choice(method, LOCAL_METHODS):
        raise ValueError(f"method must be one of {LOCAL_METHODS}, got {method!r}")
    bm = check_model(model, "model")
    prob = problem_from_model(bm, data)
    _, gb, gj = prob.local(method)(bm.params, False)
    if method == "mpf":
        _flow.check_flow_finite(prob.local(method), bm.params, float(np.sum(gb) + np.sum(gj)),
                                "gradient")
    return gb, gj


@renamed_argument("bm", "model")
def mpf_log_flow(model: Any, data: Any) -> tuple[float, np.ndarray, np.ndarray]:
    """Logarithm of the MPF flow and its gradient, finite for every finite model.

    ``K = (1/N) sum_mu sum_i exp((E(x^mu) - E(x^{mu,-i})) / 2)`` with single-spin-flip
    connectivity (Sohl-Dickstein et al. 2011; ``learning.objective(model, data, "mpf")`` is
    ``-K``), evaluated as a shifted log-sum-exp: ``log K = c + log sum w exp(-u - c)``,
    ``c`` the largest exponent. Where ``K`` itself overflows float64 (a term with
    ``-x_i h_i > 709.78``) this stays exact.

    Parameters
    ----------
    model : BoltzmannMachine
        The machine at which the flow is evaluated.
    data : array_like of int, shape (N, n)
        Spins -1/+1, one configuration per row, ``N >= 1``.

    Returns
    -------
    log_k : float
        ``log K``.
    grad_bias : ndarray of float64, shape (n,)
        ``d log K / db`` (the gradient of ``K`` with respect to the biases divided by ``K``).
    grad_coupling : ndarray of float64, shape (E,)
        ``d log K / dJ``, in the order of ``model.edges``.
    """
    bm = check_model(model, "model")
    x = check_spins(data, bm.n, "data")
    if x.shape[0] == 0:
        raise ValueError("data must contain at least one configuration")
    local = _local.LocalObjective(x, bm.graph, "mpf")
    return _flow.log_flow(local, np.asarray(bm.params, dtype=np.float64))


@renamed_argument("bm", "model")
def ascent_direction(model, data, method: str, *, rng: Any = None, **options) -> tuple:
    """The update direction ``Delta = (Delta_b, Delta_J)`` of a method at ``model``.

    Parameters
    ----------
    model : BoltzmannMachine
        The machine at which the direction is computed.
    data : array_like of int, shape (N, n)
        Spins -1/+1, one configuration per row, ``N >= 1``.
    method : str
        One of :data:`METHODS` but ``"lap"`` (which fits clique by clique and has no
        ascent direction: ``ValueError``). ``"mle"``: eq. (5); ``"mple"``: eq. (13);
        ``"1-smci"``: eq. (26); ``"rm"``, ``"mpf"``: their objective gradients, scaled as
        explained in the module docstring; ``"s2-smci"``: eq. (31) of the GSMCI paper on
        the data; ``"cd"``/``"pcd"``/``"smci-pcd"``: the first stochastic estimate (needs
        ``rng``).
    rng : Generator or int, default None
        Used by the stochastic methods (:data:`STOCHASTIC_METHODS`) only, which refuse
        ``None``; ignored by the others.
    **options
        The stochastic methods' options of :func:`fit` (``k``, ``n_chains``,
        ``extension_rate``, ``estimator``, ``kappa``, ``samples``).

    Returns
    -------
    tuple of ndarray
        ``(Delta_b, Delta_J)``: float64 arrays of shape ``(n,)`` and ``(E,)``.
    """
    check_method(method)
    if method == "lap":
        raise ValueError("method 'lap' fits clique by clique and has no ascent direction")
    bm = check_model(model, "model")
    prob = problem_from_model(bm, data)
    if method in STOCHASTIC_METHODS:
        rng = as_rng(rng)
    fn = direction_fn(prob, method, rng, options)
    d = fn(np.asarray(bm.params, dtype=np.float64).copy())
    return d[: prob.n], d[prob.n :]


@blas_single_threaded
def fit(
    data: Any,
    structure: Any,
    method: str,
    *,
    n: int | None = None,
    rng: Any = None,
    bias: bool = True,
    solver: str | None = None,
    learning_rate: float | None = None,
    max_steps: int | None = None,
    tol: float | None = None,
    init: Any = None,
    reference: Any = None,
    record: bool = True,
    progress: bool | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Fit:
    """Learn a model of ``structure`` from data (the one learner entry point).

    Parameters
    ----------
    data : array (N, n) of -1/+1
        The data points D of eq. (2) of Yasuda (2018).
    structure : Graph, array (E, 2), BoltzmannMachine or FactorGraph
        The graph of the learning machine: a :class:`mrflib.models.graphs.Graph`, its edge
        array (``i < j``, sorted rows) or a
        :class:`~mrflib.models.boltzmann.BoltzmannMachine` (its graph and spins; its
        parameters are ignored). A :class:`mrflib.models.factor_graph.FactorGraph` (its
        scopes and cardinalities define the family, each factor a free table) learns a
        general discrete MRF from integer data with ``"mle"``, ``"mple"`` or ``"lap"`` (see
        :mod:`mrflib.learning.table_learners`) or the stochastic ``"1-smci"``,
        ``"cd"``, ``"pcd"``, ``"smci-pcd"`` (:mod:`mrflib.learning.stochastic_learning`),
        with a ridge (``l2``) for every one and tied parameters (``tie``,
        :class:`mrflib.learning.tying.Tie`) for every one but ``"lap"``, which estimates
        each factor from its own auxiliary model and refuses ``tie``; ``Fit.model`` is
        then a FactorGraph with normalized potentials, and a tied fit's parameters are
        ``Fit.tied[label]``, by group.
    method : {"mle", "mple", "rm", "mpf", "1-smci", "s2-smci", "cd", "pcd", "smci-pcd", "lap"}
        See the module docstring. Every learner returns the same :class:`Fit`. A
        FactorGraph structure takes ``"mle"``, ``"mple"``, ``"lap"``, ``"1-smci"``,
        ``"cd"``, ``"pcd"`` and ``"smci-pcd"``.
    n : int or None, default None
        Number of nodes (``None``: the columns of ``data``, or the spins of a
        BoltzmannMachine structure).
    rng : Generator or int or None, default None
        Needed by ``"cd"``, ``"pcd"`` and ``"smci-pcd"`` only, for both model families
        (accepted and unused by the others); the same seed gives the same fit (and the
        same final chains).
    bias : bool, default True
        Learn the biases (default) or fix them at zero, the paper's model eq. (1).
    solver : {"gradient", "anderson", "lbfgs", "exact", "lap"} or None, default None
        ``None`` picks the method's default solver. ``"gradient"`` (default except for
        MLE and LAP): the gradient ascent of section 5, ``w <- w + eta Delta``.
        ``"anderson"`` (1-SMCI, of either model family; a FactorGraph structure takes no
        other solver): the same fixed-point iteration with Anderson acceleration
        (:mod:`mrflib._support.anderson`), which stops at the same rule
        ``max |Delta| < tol`` at the same fixed point, usually in far fewer steps.
        ``"lbfgs"``: scipy L-BFGS on the objective (MPLE, RM, MPF). ``"exact"`` (default
        for MLE): L-BFGS-B on the exact likelihood, its ``log Z`` and moments from
        :func:`mrflib.inference.exact.calibrator`. ``"lap"`` (LAP only):
        :func:`mrflib.learning.lap.fit_ising`, whose ``max_iter`` and ``tol`` are
        ``max_steps`` and ``tol`` when given (else its own defaults).
    learning_rate : float or None, default None
        ``eta`` (``None``: 0.2, the paper's; for CD, PCD and SMCI-PCD of a FactorGraph
        under the averaged schedule 1.0, see
        :mod:`mrflib.learning.stochastic_learning`). Used by the gradient solver and
        the stochastic learners of a FactorGraph.
    max_steps : int or None, default None
        Maximum updates (``None``: 10000; 1000 for the stochastic methods; for the exact
        and LAP solvers, their own defaults). A FactorGraph structure has its own defaults
        (:mod:`mrflib.learning.table_learners`).
    tol : float or None, default None
        Stop when ``max |Delta| < tol`` (``None``: 1e-6). For L-BFGS, the tolerance on the
        max-abs objective gradient. The stochastic methods CD, PCD, SMCI-PCD, under their
        default ``schedule="constant"``, default to 0, with which this rule never fires:
        they have no stopping rule, run ``max_steps`` (or until ``time_limit``) and
        always report ``converged=False``, as their stop reason says; a ``tol > 0`` stops
        them once the noisy estimate falls below it, still reported as not converged (a
        small noisy estimate proves no convergence). Under ``schedule="averaged"``,
        ``tol`` is the largest standard error of the averaged gradient's coordinates at
        which their stopping rule may hold (``None``: ``1 / (20 sqrt(N))``, a twentieth
        of the largest sampling error ``1 / sqrt(N)`` of a data average of spins).
        The exact solver fits at its own tolerance (``1e-9``, and at most 10,000
        iterations) unless ``tol`` (``max_steps``) is given, and LAP at
        :func:`mrflib.learning.lap.fit_ising`'s; a FactorGraph structure has its own defaults
        (:mod:`mrflib.learning.table_learners`).
    init : BoltzmannMachine or array (n + E,) or None, default None
        Initial parameters (``None``: zeros, as in section 5). LAP takes none.
    reference : BoltzmannMachine or array (E,) or None, default None
        The machine whose couplings the per-step MAE is measured against
        (Figure 3 uses the exact MLE).
    record : bool, default True
        Keep the per-step history (parameters, ``max |Delta|``, MAE).
    progress : bool or None, default None
        ``True`` shows a tqdm bar when a fit runs for more than two seconds, ``False`` never;
        the default ``None`` shows it only on a terminal (stderr a TTY), so that a notebook
        run by papermill or a log file gets no bar; in a log file or batch job, instead, a
        fit that runs longer than 5 s logs a line to stderr every 5 s (``fit 1-smci: 34%
        done (step 3421 of 10000)``, the share being that of ``max_steps`` or of
        ``time_limit``, whichever is nearer its end), and in a Jupyter kernel nothing (its
        stderr would become part of the page). Inside
        ``with mrflib._support.progress.reporting(say, every)`` the lines go to ``say``
        whatever ``progress`` is. Every learner follows this rule
        (:mod:`mrflib.learning._limits`).
    time_limit : float or None, default None
        Seconds the fit may run, counted from the call (``None``: no limit; ``0``:
        one step). When it runs out the fit stops after the step (gradient step, L-BFGS
        iteration) in progress and returns the parameters of that moment as its model, with
        ``converged=False`` and ``stop_reason`` ``"time limit of 2 s reached after 341
        steps ..."``; a gradient fit stopped at step ``k`` is the fit of ``max_steps=k``.
        LAP polls it between its local fits and returns the cliques (factors) fitted so
        far with the others at zero, the stop reason saying how many were fitted: not a
        LAP estimate of the whole model.
    **options
        CD, PCD and SMCI-PCD: ``schedule``, ``"constant"`` (the default for a Boltzmann
        machine: the last iterate of a constant-step ascent, no stopping rule) or
        ``"averaged"`` (the default for a FactorGraph structure): a constant step, the
        average of the iterates over a window of recent steps (Polyak-Ruppert) as the
        model, and ``converged`` when, at three consecutive checks, the averaged gradient
        is within its batch-means standard error and that error is at most ``tol``
        (``mrflib._support.averaging``; ``Fit.checks`` keeps every check).
        CD/PCD: ``k`` (Gibbs sweeps per step, default 1) and ``n_chains`` (default N
        for CD, ``min(N, 1000)`` for PCD, started at random data points), or, for PCD,
        ``extension_rate`` e (the chains start as the e-replicated data).
        SMCI-PCD: ``estimator`` ("1-smci" default, "s2-smci", "mci", "2-smci"),
        ``extension_rate`` e (default 1), ``kappa`` (sweeps per step, default 1) and
        optionally ``samples``, an explicit initial sample set instead of the
        replicated data. MLE: ``engine``, the exact engine of ``log Z`` and the moments
        (``"auto"``, the default: enumeration up to 20 spins, the junction tree beyond;
        ``"enumerate"``; ``"junction-tree"``). LAP: ``cliques``, ``scheduler``, ``n_jobs``,
        ``l2`` of :func:`mrflib.learning.lap.fit_ising`.

    Returns
    -------
    Fit
        The learned model (a BoltzmannMachine, or a FactorGraph for a FactorGraph
        structure), whether and why the fit stopped, and its history.

    Raises
    ------
    ValueError
        For an unknown method, solver or option, one that does not apply to the method or
        the model family, and invalid data or structure.
    """
    from mrflib.models.factor_graph import FactorGraph

    if isinstance(structure, FactorGraph):
        return _fit_factor_graph(data, structure, method, n, bias, solver, reference, options,
                                 max_steps=max_steps, tol=tol, init=init, record=record,
                                 rng=rng, learning_rate=learning_rate, progress=progress,
                                 time_limit=time_limit)
    return _spin_learners.fit(data, structure, method, n, rng, bias, solver, learning_rate,
                              max_steps, tol, init, reference, record, progress, time_limit,
                              options)


def _fit_factor_graph(data: Any, structure: Any, method: str, n: Any, bias: Any, solver: Any,
                      reference: Any, options: dict, **kw: Any) -> Fit:
    """A FactorGraph structure's fit (:func:`mrflib.learning.table_learners.fit`), refused
    the Boltzmann-machine options; ``kw`` are the options both families take."""
    check_factor_graph_call(n, bias, solver, reference, method)
    from mrflib.learning import table_learners
    if solver is not None:  # 1-SMCI's (the check above refused it for the others)
        options = dict(options, solver=solver)
    return table_learners.fit(data, structure, method, **kw, **options)


# --------------------------------------------------------------------------- Theorem 1
@renamed_argument("bm", "model")
def mple_rho(model, x: Any) -> np.ndarray:
    """Per-configuration MPLE estimate rho^MPLE_ij(x) of <x_i x_j>, eq. (28) of Yasuda (2018).

    ``rho_ij(x) = (x_j M_i(x) + x_i M_j(x)) / 2`` with ``M_i = tanh(h_i)``, eq. (11)-(12)
    (biases included in the local field).

    Parameters
    ----------
    model : BoltzmannMachine
        The machine whose local fields give ``M_i``.
    x : array_like of int, shape (M, n)
        Spins -1/+1, one configuration per row.

    Returns
    -------
    ndarray of float64, shape (M, E)
        ``rho_ij`` of each configuration (row) and edge (column, in the order of
        ``model.edges``).
    """
    bm = check_model(model, "model")
    xs = check_spins(x, bm.n, "x").astype(np.float64)
    t = np.tanh(bm.local_field(xs))
    e = np.asarray(bm.edges)
    return 0.5 * (xs[:, e[:, 1]] * t[:, e[:, 0]] + xs[:, e[:, 0]] * t[:, e[:, 1]])


#: Bytes of one block of states in :func:`estimator_variances` (the 2^n states are visited
#: in blocks, so only the probability table grows with n).
_ESTIMATOR_BLOCK_BYTES = 32 * 2**20


@renamed_argument("bm", "model")
def estimator_variances(model) -> tuple[np.ndarray, np.ndarray]:
    """Exact asymptotic variances ``N v^MPLE_ij`` and ``N v^1SMCI_ij``, eq. (30)-(31).

    Computed by enumeration of all ``2^n`` states (refused, with the memory it
    would need, when too large). Theorem 1 of Yasuda (2018) states
    ``v^MPLE_ij >= v^1SMCI_ij`` for every edge. The 1-SMCI variance is eq. (12) of
    Yasuda & Uchizawa (GSMCI) with ``T = A = {i, j}``, from
    :func:`mrflib.inference.smci.asymptotic_variance`.

    Parameters
    ----------
    model : BoltzmannMachine
        The machine whose distribution the variances are taken under; its ``2^n`` states
        are enumerated.

    Returns
    -------
    v_mple : ndarray of float64, shape (E,)
        ``N v^MPLE_ij`` per edge: the variance multiplied by N (i.e. for N = 1).
    v_smci : ndarray of float64, shape (E,)
        ``N v^1SMCI_ij`` per edge, likewise.

    Raises
    ------
    ValueError
        When the enumeration would not fit in memory (the refusal states what it would
        need and what is available).
    """
    from mrflib import exact, smci

    bm = check_model(model, "model")
    n, E = bm.n, len(bm.edges)
    # rho^MPLE of a block of states: spins, fields, tanh, products (measured 17 n + 32 E)
    per_state = 24.0 * n + 40.0 * E + 64.0
    rows = int(max(1, min(2**n, _ESTIMATOR_BLOCK_BYTES // per_state)))
    # held: P (8 per state); then one of the block's rho or asymptotic_variance (72 per state)
    require_memory(8.0 * 2.0**n + max(72.0 * 2.0**n, rows * per_state) + 2**16,
                   f"estimator_variances over 2^{n} states (n={n})")
    p = exact.probabilities(bm)
    _, pair = exact.moments(bm)
    second = np.zeros(E)
    for start in range(0, 2**n, rows):
        stop = min(start + rows, 2**n)
        rho = mple_rho(bm, exact.index_to_states(np.arange(start, stop), n))
        second += p[start:stop] @ rho**2
    v_mple = second - pair**2
    e = np.asarray(bm.edges)
    v_smci = np.array([smci.asymptotic_variance(bm, e[k], e[k]) for k in range(e.shape[0])])
    return np.maximum(v_mple, 0.0), np.asarray(v_smci, dtype=np.float64)

