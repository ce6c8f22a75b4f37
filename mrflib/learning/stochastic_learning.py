"""Stochastic-gradient learners of discrete factor graphs: 1-SMCI, CD, PCD and SMCI-PCD.

:func:`mrflib.learning.learners.fit` comes here for these methods when its structure is a
:class:`~mrflib.models.factor_graph.FactorGraph`. Every one ascends the log-likelihood
along an estimate of its gradient. With the tables ``t = B φ`` (``B`` the normalized
potentials' map :class:`~mrflib.learning._layout.Layout`, or a
:class:`~mrflib.learning.tying.Tie`), the gradient of the averaged log-likelihood is
``B^T (p̂ - p_φ)``: the data's factor marginals minus the model's (eq. (5) of Yasuda 2018
written for factor tables). The learners differ in how they estimate ``p_φ``:

``"1-smci"``
    1-SMCI learning (Yasuda 2018, eq. (23)-(27)): the 1-SMCI estimate of every factor's
    marginal, ``P(x_S | x_rest)`` summed over the *data* as sample set
    (:func:`mrflib.inference.smci.regions.factor_marginals`, ``order=1``). No draw: the
    direction is a deterministic function of ``φ`` and the fit converges when
    ``max |Δ| < tol``.
``"cd"``, ``"pcd"``
    contrastive divergence (chains restarted at the data every step) and persistent
    contrastive divergence (Tieleman 2008): ``k`` Gibbs sweeps
    (:func:`mrflib.inference.sampling.chains.advance`), then the chains' empirical factor
    marginals.
``"smci-pcd"``
    Algorithm 2 of Yasuda & Uchizawa (GSMCI): the sample set ``S_0`` is the
    ``extension_rate``-replicated data (or ``samples``); step ``t`` estimates ``p_φ`` by
    SMCI on ``S_t`` (``estimator`` "1-smci", the default, "2-smci", or "mci", plain Monte
    Carlo, which makes it PCD), updates ``φ``, and ``S_{t+1}`` is ``S_t`` advanced by
    ``kappa`` sweeps under the new parameters.

The update is ``φ <- φ + η D^{-1} (B^T (p̂ - p̂_φ) - l2 φ)``, the ridge ``l2/2 |φ|²`` on
the free parameters, ``D`` the number of factors sharing each parameter (1 untied: a tied
coupling moves by the average of its factors' gradients, whatever the group's size; a
constant diagonal preconditioner, so the fixed points are the ridge-penalized estimator's).
The gradient ascent is the ±1 learners' driver (its progress bar included), with their
defaults ``learning_rate`` 0.2 and ``max_steps`` 1000 (10000 for 1-SMCI), except the step of
the learners that draw under the averaged schedule: 1.0. Their returned average has a
noise that does not grow with ``η`` (see ``mrflib._support.averaging``), while the ascent
approaches the fixed point, and its windows' averaged gradient falls within its noise,
faster the larger ``η``: at 0.2 a PCD fit of a 32x32 Potts lattice (q = 4, N = 1000) was
still drifting by three standard errors after 3,000 steps, at 1.0 it stopped by its rule
within 800. (An indicator's variance is at most 1/4, a spin's 1: 1.0 on indicators is a
step like the ±1 learners' 0.2 on spins.)

Convergence. 1-SMCI's direction is exact given the data: it converges when
``max |Δ| < tol`` (default 1e-6). Its plain ascent is a fixed-point iteration that
contracts only as fast as its slowest mode (thousands of steps on a 32x32 lattice);
``solver="anderson"`` runs the same iteration with Anderson acceleration
(:mod:`mrflib._support.anderson`) to the same rule and fixed point in a few hundred.
The learners that draw (CD, PCD, SMCI-PCD) see a noisy
direction that never vanishes, so by default (``schedule="averaged"``) they run the
schedule and stopping rule of ``mrflib._support.averaging``: a constant step ``η``,
the returned ``φ`` the average of the iterates over a window of recent steps
(Polyak-Ruppert; the windows, of two interleaved doubling sequences, each lie in the
later half of the run, and one is checked at nearly every batch end), and
``converged`` when, at three consecutive checks, the averaged gradient is within its
batch-means standard error (its rms in standard errors at most 1.5) and that standard
error is at most ``tol`` in every coordinate; ``tol`` defaults to ``1 / (40 sqrt(N))``, a
twentieth of the largest sampling error ``1 / (2 sqrt(N))`` of a data frequency.
``Fit.checks`` (and ``Fit.history``) keep every check. A fit that reaches ``max_steps``
or its ``time_limit`` first is not converged and says which limit ended it and how far
the rule was from holding. ``schedule="constant"`` is the plain ascent: the last
iterate, no stopping rule (``tol`` then defaults to 0, which ``max |Δ| < tol`` never
meets, and a given ``tol`` stops the fit unconverged once the noisy estimate falls
below it). When the data leave the likelihood without a maximum
(:mod:`mrflib.learning.existence`: a factor state, or a class of tied entries, the data
never show; no ridge), a warning says so and no learner reports convergence: 1-SMCI's
direction would vanish as a parameter diverges.

Starting point. From ``init=None`` (all zeros) the learners that draw spend most of their
steps on the approach: the averaged gradient of a window falls within its noise only once
the window no longer drifts. Started at the pseudo-likelihood estimate
(``init=fit(data, structure, "mple").model``, a deterministic fit of a few dozen L-BFGS
steps), they begin near the fixed point and the rule holds after a few
windows. On a 64x64 Potts lattice (q = 4, N = 1000, the learners-at-scale benchmark's
model at a sixteenth of its size) PCD then stops by its rule after 767 steps instead of
1,535, and SMCI-PCD after 287 instead of 2,303, at the same parameter error (0.210 each,
pseudo-likelihood's 0.213): SMCI-PCD's far smaller noise lets its rule hold as soon as the
drift is gone, while PCD's must wait for its windows to grow long enough that their
standard error falls below ``tol``. The fixed point does not depend on the start.

Cost per step. CD/PCD: ``k`` sweeps of the chains (``M n`` conditional draws) and one
counting pass by blocks of factors (:func:`mrflib.learning._layout.factor_counts`). On a pairwise
structure whose variables all have one small number of states (Potts and clock lattices,
Boltzmann machines) the chains (and CD's and PCD's data) are held site-major as uint8 for
the whole fit (:func:`mrflib.inference.sampling._pairwise.site_major`): the sweeps update
them in place, the counting pass reads each factor's variables as contiguous rows
(:func:`._stochastic_learning_kernels.site_major_counts`) and SMCI-PCD's 1-SMCI reads them
as its kernels' transposed rows, the same bits as the chains in rows; the final chains of
PCD and SMCI-PCD are returned in rows (int64). SMCI-PCD and
1-SMCI: the factor scopes' conditionals for each row of the sample set (on a structure whose
factors all hold at most two variables, by the pairwise kernels of
:mod:`mrflib.inference.smci._pairwise_scopes`: each pair's conditional from the two
variables' cavities; when a variable's neighbours have few joint configurations, as on a
lattice, the cavities are tabulated once per configuration and a row costs one dot product
and one ``q``-vector update per pair, :mod:`mrflib.inference.smci._scope_patterns`). All
linear in the model and in the rows; the structure of the sampler is packed once per fit,
the data's factor marginals are counted once, and 1-SMCI's data rows are laid out for the
pairwise kernel, and the keys of their neighbours' configurations found, once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.anderson import Anderson
from mrflib._support.averaging import AveragedRule, default_tol
from mrflib._support.optimizers import Deadline, gradient_ascent
from mrflib._support.threads import parallel_ok
from mrflib._support.validation import as_rng, check_positive, require_memory
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import _pairwise_scopes, _scope_patterns
from mrflib.inference.smci import regions as smci_factor_graph
from mrflib.learning import _limits, tying
from mrflib.learning import _stochastic_learning_kernels as _sk
from mrflib.learning._layout import check_data, data_marginals_numpy, factor_counts, model_of
from mrflib.learning._parameters import initial_parameters, parameter_map
from mrflib.learning.existence import check_existence, not_converged_if
from mrflib.learning.fit_result import Fit
from mrflib.learning.potentials import normalize
from mrflib.models._checks import check_states
from mrflib.models.factor_graph import FactorGraph

__all__ = ["METHODS", "ESTIMATORS", "SOLVERS"]

METHODS = ("1-smci", "cd", "pcd", "smci-pcd")
#: The solvers of 1-SMCI's deterministic fixed-point iteration: the plain ascent (the
#: default) and its Anderson acceleration (:mod:`mrflib._support.anderson`). The learners
#: that draw take the plain ascent only: a noisy direction defeats the extrapolation.
SOLVERS = ("gradient", "anderson")
#: SMCI-PCD's estimators, named as every SMCI function names them
#: (:func:`mrflib.inference.smci.regions.order_of` reads their order; 0: plain Monte Carlo).
ESTIMATORS = ("mci", "1-smci", "2-smci")
_COMMON = frozenset({"l2", "tie"})
_DRAWS = _COMMON | {"schedule"}
_OPTIONS = {"1-smci": _COMMON,
            "cd": _DRAWS | {"k", "n_chains"},
            "pcd": _DRAWS | {"k", "n_chains", "extension_rate"},
            "smci-pcd": _DRAWS | {"estimator", "extension_rate", "kappa", "samples"}}


class _Chains:
    """The sample set of a learner and how it moves: persistent chains (PCD, SMCI-PCD),
    or restarts at the data (CD), advanced by ``sweeps`` sweeps per step under the
    current model; ``marginals(model)`` the estimate of its factor marginals."""

    def __init__(self, lay: Any, x: np.ndarray, method: str, options: dict,
                 rng: np.random.Generator) -> None:
        self.lay, self.x, self.method, self.rng = lay, x, method, rng
        self.order = 0
        self.first = method in ("smci-pcd", "1-smci")  # S_0 is used before any sweep
        self.states = None
        N = x.shape[0]
        if method == "1-smci":
            self.order, self.sweeps, self.states = 1, 0, x
        elif method == "smci-pcd":
            estimator = options.get("estimator", "1-smci")
            if not isinstance(estimator, str) or estimator not in ESTIMATORS:
                raise ValueError(f"estimator must be one of {tuple(ESTIMATORS)}, got "
                                 f"{estimator!r}")
            self.order = smci_factor_graph.order_of(estimator, "estimator")
            self.sweeps = check_positive(options.get("kappa", 1), "kappa", integer=True)
            self.states = self._initial_set(options)
        # the structure's arrays, once per fit: the sampler's packing and SMCI's scopes
        packed = factor_gibbs.pack(lay.structure)
        self.structure = packed[1:]
        _, _, _, _, self.fptr, self.fvars, self.fstride, self.offsets = packed
        self.card = np.ascontiguousarray(lay.card, dtype=np.int64)
        self.pairwise = _pairwise.structure(*packed[4:], self.card)
        self.plan = self.xt = self.keys = None
        # CD, PCD and SMCI-PCD (by plain Monte Carlo or 1-SMCI) on a pairwise model of one
        # small number of states hold their chains site-major (uint8), CD and PCD their
        # data too: the sweeps, the counting passes and the keys of the neighbours'
        # configurations read them in place
        self.site = self.site_data = None
        self.patterns = self.holds_data = False
        if (method == "smci-pcd" and self.order <= 1 and self.pairwise is not None
                and _pairwise.fixed_states(self.pairwise)):
            self.site = _pairwise.site_major(self.states)
            # S_0 is the data itself (extension rate 1) until the first sweep
            self.holds_data = options.get("samples") is None and self.site.shape[1] == N
            self.states = None
            self.patterns = _scope_patterns.applies(self.pairwise, self.site.shape[1])
        if method in ("cd", "pcd"):
            self.sweeps = check_positive(options.get("k", 1), "k", integer=True)
            self.n_chains = self._chain_count(options, N)
            if self.pairwise is not None and _pairwise.fixed_states(self.pairwise):
                self.site_data = _pairwise.site_major(x)
                self.site = (self._site_replicated(options["extension_rate"])
                             if "extension_rate" in options else self._site_data_rows())
            else:
                self.states = (self._replicated(options["extension_rate"])
                               if "extension_rate" in options else self._data_rows())
        if self.order == 1:  # a pairwise structure's scopes by its own kernels
            self.plan = (_pairwise_scopes.plan(self.pairwise, *packed[4:])
                         if self.pairwise is not None
                         else smci_factor_graph.scope_plan(lay.structure, packed))

    def _chain_count(self, options: dict, N: int) -> int:
        if "extension_rate" in options:
            if "n_chains" in options:
                raise ValueError("give either n_chains or extension_rate, not both")
            return check_positive(options["extension_rate"], "extension_rate",
                                  integer=True) * N
        default = N if self.method == "cd" else min(N, 1000)
        return check_positive(options.get("n_chains", default), "n_chains", integer=True)

    def _require(self, rows: int, what: str) -> None:
        """Refuse before allocating a sample set of ``rows`` states: the states and the
        sweep's uniforms (8 bytes a variable each), a restart's copy, and the SMCI
        estimate's batch sums (32 batches of every table entry)."""
        n, T = self.x.shape[1], float(self.lay.offsets[-1])
        require_memory(8.0 * rows * n * 3 + 8.0 * 34 * T, f"{what} ({rows} chains of {n} "
                       "variables)")

    def _replicated(self, e: Any) -> np.ndarray:
        e = check_positive(e, "extension_rate", integer=True)
        self._require(e * self.x.shape[0], f"extension_rate = {e}")
        return np.tile(self.x, (e, 1))

    def _data_rows(self) -> np.ndarray:
        N = self.x.shape[0]
        self._require(self.n_chains, f"n_chains = {self.n_chains}")
        if self.method == "cd" and self.n_chains == N:
            return self.x.copy()
        return self.x[self.rng.choice(N, size=self.n_chains, replace=self.n_chains > N)]

    def _site_replicated(self, e: Any) -> np.ndarray:
        """:meth:`_replicated` site-major."""
        e = check_positive(e, "extension_rate", integer=True)
        self._require(e * self.x.shape[0], f"extension_rate = {e}")
        return np.tile(self.site_data, (1, e))

    def _site_data_rows(self) -> np.ndarray:
        """:meth:`_data_rows` site-major (the same draws)."""
        N = self.x.shape[0]
        self._require(self.n_chains, f"n_chains = {self.n_chains}")
        if self.method == "cd" and self.n_chains == N:
            return self.site_data.copy()
        rows = self.rng.choice(N, size=self.n_chains, replace=self.n_chains > N)
        return _pairwise.take_chains(self.site_data, rows)

    def data_counts(self) -> np.ndarray:
        """The counts of every factor's states over the data (the fit's fixed side)."""
        total = int(self.lay.offsets[-1])
        site = self.site_data
        if site is None and self.holds_data and self.first:
            site = self.site  # SMCI-PCD's unswept S_0: the data, site-major already
        if site is not None:
            return _site_major_counts(site, self.fptr, self.fvars, self.fstride, self.offsets,
                                      total)
        return factor_counts(self.x, self.fptr, self.fvars, self.fstride, self.offsets,
                             total)

    def final_states(self) -> np.ndarray:
        """The sample set as rows ``(M, n)`` of int64 states."""
        return self.states if self.site is None else _pairwise.chain_major(self.site)

    def _site_step(self, plan: tuple) -> np.ndarray:
        """:meth:`step` on site-major chains (CD, PCD, and SMCI-PCD of order 0 or 1)."""
        if self.method == "cd":
            self.site = self._site_data_rows()
        if self.first:
            self.first = False
        else:
            factor_gibbs.advance_site_major(self.site, self.sweeps, self.rng, plan,
                                            self.card, self.pairwise)
        if self.order == 1:
            M = self.site.shape[1]
            keys = _scope_patterns.keys(self.pairwise, self.site, M) if self.patterns else None
            return _pairwise_scopes.flat_marginals(self.plan, plan[0], None, self.site, keys,
                                                   n_rows=M)
        counts = _site_major_counts(self.site, self.fptr, self.fvars, self.fstride,
                                    self.offsets, int(self.lay.offsets[-1]))
        return counts / self.site.shape[1]

    def _initial_set(self, options: dict) -> np.ndarray:
        if options.get("samples") is None:
            return self._replicated(options.get("extension_rate", 1))
        if "extension_rate" in options:
            raise ValueError("give either samples or extension_rate, not both")
        s = check_states(options["samples"], self.lay.card, "samples")
        if s.ndim != 2 or s.shape[0] == 0:
            raise ValueError(f"samples must have shape (M, {self.x.shape[1]}) with M >= 1, "
                             f"got {np.shape(options['samples'])}")
        self._require(s.shape[0], "samples")
        return np.ascontiguousarray(s, dtype=np.int64).copy()

    def step(self, tables: np.ndarray) -> np.ndarray:
        """Move the sample set under the model of flat log-tables ``tables`` (none on the
        first step of SMCI-PCD, never for 1-SMCI) and return its flat factor-marginal
        estimate. The tables stay flat: at a step's scale (a lattice of a quarter of a
        million factors) building the model object, or lists of its tables, would cost more
        than the sweeps."""
        plan = (tables,) + tuple(self.structure)
        if self.site is not None:
            return self._site_step(plan)
        if self.first or self.sweeps == 0:
            self.first = False
        elif self.method == "cd":
            self.states = factor_gibbs.advance_packed(self._data_rows(), self.sweeps,
                                                      self.rng, plan, self.card,
                                                      self.pairwise)
        else:
            factor_gibbs.advance_packed(self.states, self.sweeps, self.rng, plan, self.card,
                                        self.pairwise)
        if self.order == 0:
            counts = factor_counts(self.states, self.fptr, self.fvars, self.fstride,
                                   self.offsets, int(self.lay.offsets[-1]))
            return counts / self.states.shape[0]
        if self.order == 1 and self.pairwise is not None:
            if self.method == "1-smci" and self.xt is None:  # a fixed set: laid out once
                self.xt = _pairwise_scopes.transposed(self.plan, self.states)
                if _scope_patterns.applies(self.pairwise, self.states.shape[0]):
                    self.keys = _scope_patterns.keys(self.pairwise, self.xt,
                                                     self.states.shape[0])
            return _pairwise_scopes.flat_marginals(self.plan, tables, self.states,
                                                   self.xt if self.method == "1-smci"
                                                   else None, self.keys)
        if self.order == 1:
            flat = smci_factor_graph.flat_scope_marginals(tables, self.states, self.plan)
            if flat is not None:
                return flat
        method = smci_factor_graph.method_name(self.order)
        values = smci_factor_graph.factor_marginals(model_of(self.lay, tables), self.states,
                                                    method=method, plan=self.plan)
        return np.concatenate([np.ravel(v) for v in values])


def _site_major_counts(xt: np.ndarray, fptr: np.ndarray, fvars: np.ndarray,
                       fstride: np.ndarray, offsets: np.ndarray, total: int) -> np.ndarray:
    """The counts of every factor's states over the site-major chains ``xt (n, M)``, on
    every core when the work is large and the cores are idle."""
    work = float(xt.shape[1]) * len(fvars)
    kernel = (_sk.site_major_counts if parallel_ok(work) else _sk.site_major_counts_serial)
    return kernel(xt, fptr, fvars, fstride, offsets, total)


def _factor_marginals_numpy(lay: Any, states: np.ndarray) -> np.ndarray:
    """Plain numpy reference of the chains' factor marginals (one ``bincount`` per
    factor), against which the tests check :func:`._stochastic_learning_kernels.factor_counts`."""
    return data_marginals_numpy(lay, states)


def _check_solver(solver: Any, method: str) -> str:
    """``solver`` validated for ``method`` (``None``: ``"gradient"``): one of
    :data:`SOLVERS` for 1-SMCI, ``"gradient"`` for the learners that draw."""
    allowed = SOLVERS if method == "1-smci" else SOLVERS[:1]
    if solver is None:
        return "gradient"
    if not isinstance(solver, str) or solver not in allowed:
        raise ValueError(f"solver for method {method!r} must be one of {allowed}, got "
                         f"{solver!r}")
    return solver


def _settings(method: str, options: dict, learning_rate: Any, max_steps: Any, tol: Any,
              progress: Any, n_rows: int) -> tuple[float, int, float, float, str | None]:
    unknown = set(options) - _OPTIONS[method]
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)} for method {method!r} on a "
                         "FactorGraph")
    draws = method != "1-smci"
    schedule = _limits.check_schedule(options.get("schedule", "averaged")) if draws else None
    if learning_rate is None:
        learning_rate = 1.0 if schedule == "averaged" else 0.2
    learning_rate = check_positive(learning_rate, "learning_rate")
    max_steps = check_positive((1000 if draws else 10_000) if max_steps is None
                               else max_steps, "max_steps", integer=True, allow_zero=True)
    if tol is None:
        # a factor state's indicator has a standard deviation of at most 1/2
        tol = (1e-6 if not draws else default_tol(n_rows, 0.5)
               if schedule == "averaged" else 0.0)
    tol = check_positive(tol, "tol", allow_zero=True)
    l2 = check_positive(options.get("l2", 0.0), "l2", allow_zero=True)
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise ValueError(f"progress must be True, False or None, got {progress!r}")
    return learning_rate, max_steps, float(tol), l2, schedule


def fit(data: Any, structure: FactorGraph, method: str, *, rng: Any = None,
        learning_rate: float | None = None, max_steps: int | None = None,
        tol: float | None = None, init: Any = None, record: bool = True,
        progress: bool | None = None, time_limit: float | None = None,
        solver: str | None = None, **options: Any) -> Fit:
    """Learn a factor graph by a stochastic-gradient learner (see the module docstring).

    :func:`mrflib.learning.table_learners.fit` delegates these four methods here.

    Parameters
    ----------
    data, structure
        As in :func:`mrflib.learning.table_learners.fit`.
    method : {"1-smci", "cd", "pcd", "smci-pcd"}
        The learner (see the module docstring).
    rng : Generator or int or None, default None
        The draws of CD, PCD and SMCI-PCD (unused by 1-SMCI, which accepts ``None``); the
        same seed gives the same fit and the same final chains.
    learning_rate : float or None, default None
        ``η`` (``None``: 1.0 for CD, PCD and SMCI-PCD under the averaged schedule, 0.2
        otherwise), constant under either schedule.
    max_steps : int or None, default None
        Parameter updates (``None``: 1000; 10000 for 1-SMCI).
    tol : float or None, default None
        1-SMCI: stop when ``max |Δ| < tol`` (``None``: 1e-6). The learners that draw,
        under ``schedule="averaged"``: the largest standard error of the averaged
        gradient's coordinates at which the stopping rule may hold (``None``:
        ``1 / (40 sqrt(N))``; 0: no precision test); under ``schedule="constant"``:
        stop, unconverged, when the noisy ``max |Δ| < tol`` (``None``: 0, never).
    init : FactorGraph or array or None, default None
        Initial tables (same scopes and cardinalities), or with ``tie`` the initial ``φ``.
        ``None``: all zeros. A start at the pseudo-likelihood estimate
        (``fit(data, structure, "mple").model``) shortens the approach of the learners
        that draw (see "Starting point" in the module docstring).
    record : bool, default True
        Keep the parameters ``φ`` of every step.
    progress : bool or None, default None
        A progress bar (``None``: only on a terminal, else a line on stderr every 5 s of
        a long fit), as for the ±1 learners (:func:`mrflib.learning.learners.fit`).
    time_limit : float or None, default None
        Seconds the fit may run (``None``: no limit; 0: one step), as for the ±1 learners:
        the fit stops after the step in progress, not converged, with the parameters and
        chains of that moment.
    solver : {"gradient", "anderson"} or None, default None
        1-SMCI only (``None``: ``"gradient"``). ``"gradient"``: the plain ascent
        ``φ <- φ + η Δ``. ``"anderson"``: the same iteration with Anderson acceleration
        (:mod:`mrflib._support.anderson`: memory 15, an accelerated step kept only when it
        lowers the direction's norm), which stops at the same rule ``max |Δ| < tol`` at the
        same fixed point, usually in far fewer steps. The learners that draw take
        ``"gradient"`` only.
    **options
        ``l2`` (ridge on ``φ``, default 0) and ``tie`` (a :class:`~mrflib.learning.tying.Tie`
        or group labels) for every method. CD, PCD and SMCI-PCD: ``schedule``
        (``"averaged"``, the default: iterate averaging and the stopping rule of the
        module docstring; ``"constant"``: the last iterate, no stopping rule). CD/PCD:
        ``k`` (Gibbs sweeps per step, default 1) and ``n_chains`` (default N for CD,
        ``min(N, 1000)`` for PCD, started at random data rows) or, for PCD,
        ``extension_rate`` e (the chains start as the e-replicated data). SMCI-PCD:
        ``estimator`` ("1-smci", "2-smci", "mci"), ``extension_rate`` e (default 1),
        ``kappa`` (sweeps per step, default 1),
        ``samples`` (an initial sample set instead of the replicated data).

    Returns
    -------
    Fit
        ``model`` with normalized tables; ``params`` the ``φ`` history (under the averaged
        schedule, the averaged ``φ`` a fit stopped at each step returns); ``chains`` the
        final sample set of PCD and SMCI-PCD; ``checks`` the stopping rule's checks
        (averaged schedule).

    Examples
    --------
    >>> from mrflib import learning
    >>> from mrflib.inference import exact
    >>> from mrflib.models.lattices import potts_lattice
    >>> truth = potts_lattice(3, 3, 3, coupling=0.4, rng=0)
    >>> data = exact.sample(truth, 300, rng=1)
    >>> fit = learning.fit(data, truth, "pcd", max_steps=50, n_chains=100, rng=2)
    >>> fit.converged, fit.n_steps
    (False, 50)
    >>> fit.stop_reason.startswith("max_steps = 50 reached before the stopping rule held")
    True
    """
    run = _checked(data, structure, method, learning_rate, max_steps, tol, progress,
                   time_limit, solver, options)
    problem = _set_up(run, structure, init, rng, options)
    return _result(run, problem, _ascend(run, problem, record, progress), options)


@dataclass(frozen=True)
class _Run:
    """:func:`fit`'s arguments, checked, with the defaults filled in (:func:`_settings`):
    the data ``x`` as int64 states; ``t0`` and ``deadline`` count from the call."""

    x: np.ndarray
    method: str
    learning_rate: float
    max_steps: int
    tol: float
    l2: float
    schedule: str | None
    solver: str
    t0: float
    deadline: Deadline


class _Problem(NamedTuple):
    """What a fit ascends: the parameter map ``lay``, the start ``phi0``, the sample set
    ``chains``, the ascent ``direction(phi)`` and the data's missing states (``missing``,
    :func:`~mrflib.learning.existence.check_existence`)."""

    lay: Any
    phi0: np.ndarray
    chains: _Chains
    direction: Callable[[np.ndarray], np.ndarray]
    missing: Any


def _checked(data: Any, structure: Any, method: Any, learning_rate: Any, max_steps: Any,
             tol: Any, progress: Any, time_limit: Any, solver: Any, options: dict) -> _Run:
    """:func:`fit`'s arguments checked in this order (the first bad one is the error): time
    limit, structure, method, data, options and settings, solver; ``tie``, ``init`` and a
    method's own options are checked where they are used."""
    t0 = time.perf_counter()
    deadline = _limits.deadline(time_limit)
    if not isinstance(structure, FactorGraph):
        raise TypeError(f"structure must be a FactorGraph, got {type(structure).__name__}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    x = np.ascontiguousarray(check_data(data, structure), dtype=np.int64)
    learning_rate, max_steps, tol, l2, schedule = _settings(
        method, options, learning_rate, max_steps, tol, progress, x.shape[0])
    solver = _check_solver(solver, method)
    return _Run(x, method, learning_rate, max_steps, tol, l2, schedule, solver, t0, deadline)


def _set_up(run: _Run, structure: FactorGraph, init: Any, rng: Any, options: dict
            ) -> _Problem:
    """The parameter map (with ``tie``), the start ``init``, the sample set and the data's
    side of the gradient, counted once: the direction ``D^{-1} (B^T (p̂ - p̂_φ) - l2 φ)``."""
    lay = parameter_map(structure, options.get("tie"))
    phi0 = initial_parameters(lay, structure, init)
    rng = as_rng(rng) if run.method != "1-smci" else None
    chains = _Chains(lay, run.x, run.method, options, rng)
    d = chains.data_counts() / run.x.shape[0]
    target = lay.A.T @ d
    missing = check_existence(lay, d, "mle", run.l2)  # the likelihood every learner here ascends
    At = lay.A.T.tocsr()
    scale = 1.0 / (lay.shares if isinstance(lay, tying.Tie) else np.ones(lay.n_params))
    l2 = run.l2

    def direction(phi: np.ndarray) -> np.ndarray:
        g = target - At @ chains.step(lay.tables(phi))
        if l2:
            g -= l2 * phi
        return scale * g

    return _Problem(lay, phi0, chains, direction, missing)


def _ascend(run: _Run, problem: _Problem, record: Any, progress: Any) -> tuple:
    """The step loop: the gradient ascent (``"anderson"``: accelerated; the averaged
    schedule: with its rule) from ``phi0``; its output and the rule."""
    lay = problem.lay
    rule = AveragedRule(lay.n_params, run.tol) if run.schedule == "averaged" else None
    accelerated = (Anderson(lay.n_params, run.learning_rate) if run.solver == "anderson"
                   else None)
    with _limits.fit_reporting(progress):
        phi, steps, converged, params, gmax, _ = gradient_ascent(
            problem.direction, problem.phi0, np.ones(lay.n_params, dtype=bool),
            learning_rate=run.learning_rate, max_steps=run.max_steps, tol=run.tol,
            ref_coupling=None, n=0, record=bool(record), progress=progress,
            desc=f"fit {run.method}", deadline=run.deadline, averaged=rule,
            accelerated=accelerated)
    return phi, steps, converged, params, gmax, rule


def _result(run: _Run, problem: _Problem, out: tuple, options: dict) -> Fit:
    """The :class:`~mrflib.learning.fit_result.Fit` of the ascent's output ``out``: its
    model, history, final chains and the reason it stopped."""
    phi, steps, converged, params, gmax, rule = out
    lay, method = problem.lay, run.method
    if rule is not None:
        verdict = _limits.averaged_verdict(rule, steps, run.max_steps, run.deadline)
    else:
        verdict = _limits.gradient_verdict(converged, steps, run.max_steps, run.tol,
                                           run.deadline, stochastic=method != "1-smci")
    converged, reason = not_converged_if(problem.missing, "mle", *verdict)
    model = lay.model(phi) if lay.one_term_per_entry else normalize(lay.model(phi))
    kept = {k: v for k, v in options.items() if k != "samples"}
    if run.schedule is not None:
        kept["schedule"] = run.schedule
    return Fit(model, method, run.solver, steps, converged, time.perf_counter() - run.t0,
               params, gmax, None, dict(kept, learning_rate=run.learning_rate, tol=run.tol,
                                        max_steps=run.max_steps),
               None if method in ("1-smci", "cd") else problem.chains.final_states(), reason,
               tying.tied_parameters(lay, phi), None if rule is None else rule.history())
