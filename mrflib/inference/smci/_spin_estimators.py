"""The pairwise binary backend of SMCI: the GSMCI paper's estimators on Boltzmann machines.

The front is :mod:`mrflib.inference.smci`, which documents every function here and chooses
this backend for :data:`~mrflib.models.structure.PAIRWISE_BINARY` models. The closed forms
(eq. 14-17 and 21-26 of the GSMCI paper) run as the numba kernels of
:mod:`mrflib.inference.smci._smci_kernels`; "2-smci" and :func:`gsmci` enumerate their sum
regions. :func:`factor_moments` serves a factor graph's ``moments``: sample frequencies on
any, and the estimators here on a binary pairwise one, through its Boltzmann machine.

Node labels are 0-based here; the papers number nodes from 1.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from mrflib._support.validation import (
    check_array,
    check_nodes,
    check_positive,
    check_spins,
    is_choice,
    require_memory,
)
from mrflib.inference import exact
from mrflib.inference.smci import _smci_kernels as K
from mrflib.models._checks import check_states
from mrflib.models.boltzmann import BoltzmannMachine, check_model, to_spins
from mrflib.models.factor_graph import FactorGraph

#: The estimators :func:`moments` knows.
METHODS = ("mci", "1-smci", "s2-smci", "2-smci")

#: Largest sum region (in spins) the enumeration of :func:`gsmci` accepts.
MAX_REGION = 26


# ----------------------------------------------------------------------------- validation
def _check_bm(bm: Any) -> BoltzmannMachine:
    return check_model(bm, "model")


def _check_method(method: Any) -> str:
    if not is_choice(method, METHODS):
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _check_target(bm: BoltzmannMachine, target: Any) -> np.ndarray:
    T = check_nodes(target, bm.n, "target")
    if T.size == 0:
        raise ValueError("target must contain at least one node")
    return T


def _check_region(bm: BoltzmannMachine, T: np.ndarray, region: Any) -> np.ndarray:
    if region is None:
        raise ValueError("region must be a collection of node labels (empty for MCI), got None")
    A = (np.zeros(0, dtype=np.int64) if np.size(region) == 0
         else check_nodes(region, bm.n, "region"))
    if A.size and not np.all(np.isin(T, A)):
        raise ValueError(
            f"region must contain the target (T ⊆ A), got target {T.tolist()} "
            f"and region {A.tolist()}; use an empty region for standard MCI"
        )
    if A.size > MAX_REGION:
        raise ValueError(f"region has {A.size} nodes; exact summation allows at most {MAX_REGION}")
    return A


def _samples(bm: BoltzmannMachine, samples: Any) -> np.ndarray:
    s = check_spins(samples, bm.n, "samples")
    if s.shape[0] == 0:
        raise ValueError("samples must contain at least one sample point")
    return s


# ----------------------------------------------------------------------------- regions
def _neighbour_sets(bm: BoltzmannMachine) -> list[set[int]]:
    return [set(a.tolist()) for a in bm.graph.neighbours()]


def _coupling_lookup(bm: BoltzmannMachine) -> dict[tuple[int, int], float]:
    return {(int(i), int(j)): float(w) for (i, j), w in zip(bm.edges, bm.coupling)}


def _independent_set(cands: Sequence[int], nb: list[set[int]], W: dict[int, float]) -> list[int]:
    """Algorithm 1 (greedy MIS) with the paper's tie-break; loops until U is empty.

    Among the nodes of minimum degree in the remaining subgraph ``U``: if that degree
    is zero any choice gives the same result (we take the smallest label); otherwise
    the node with the largest ``W_j`` is taken, remaining ties going to the smallest
    label. (The paper's printed "until U ≠ ∅" must read "until U = ∅".)
    """
    U = set(cands)
    chosen: list[int] = []
    while U:
        deg = {j: len(nb[j] & U) for j in U}
        dmin = min(deg.values())
        ties = [j for j in U if deg[j] == dmin]
        if dmin == 0:
            r = min(ties)
        else:
            r = max(ties, key=lambda j: (W[j], -j))
        chosen.append(r)
        U -= nb[r] | {r}
    return sorted(chosen)


def _s2_set(T: np.ndarray, nb: list[set[int]], wabs: dict[tuple[int, int], float]) -> list[int]:
    Tset = set(T.tolist())
    N1 = sorted(set().union(*(nb[i] for i in Tset)) - Tset)
    W = {
        j: sum(wabs[(min(i, j), max(i, j))] for i in Tset if i in nb[j])
        for j in N1
    }
    return _independent_set(N1, nb, W)


def s2_independent_set(model: BoltzmannMachine, target: Any) -> np.ndarray:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.s2_independent_set`."""
    model = _check_bm(model)
    T = _check_target(model, target)
    wabs = {k: abs(v) for k, v in _coupling_lookup(model).items()}
    return np.asarray(_s2_set(T, _neighbour_sets(model), wabs), dtype=np.int64)


def s2_region(model: BoltzmannMachine, target: Any) -> np.ndarray:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.s2_region`."""
    T = _check_target(_check_bm(model), target)
    return np.union1d(T, s2_independent_set(model, T)).astype(np.int64)


def sum_region(model: BoltzmannMachine, target: Any, method: str,
               k: int | None = None) -> np.ndarray:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.sum_region`."""
    model = _check_bm(model)
    T = _check_target(model, target)
    if method == "k-smci":
        k = check_positive(k, "k", integer=True)
        return model.graph.R_k(T, k - 1)
    if k is not None:
        raise ValueError("k is only used with method='k-smci'")
    _check_method(method)
    if method == "mci":
        return np.zeros(0, dtype=np.int64)
    if method == "1-smci":
        return T
    if method == "s2-smci":
        return s2_region(model, T)
    return model.graph.R_k(T, 1)


# ----------------------------------------------------------------------------- GSMCI
def _weights(bm: BoltzmannMachine) -> np.ndarray:
    """The couplings in CSR order (``bm.adjacency()``, cached): the kernels' ``weights``."""
    return bm.adjacency()[2]


def _fields(bm: BoltzmannMachine, s: np.ndarray) -> np.ndarray:
    return K.local_fields(s, bm.graph.structure, bm.bias, _weights(bm))


def _region_values(
    bm: BoltzmannMachine, s: np.ndarray, T: np.ndarray, A: np.ndarray, h: np.ndarray | None
) -> np.ndarray:
    """``ρ_T(A; s^(ℓ)_{∂A})`` of eq. (13) for every sample (``h``: local fields or None)."""
    if A.size == 0:
        return np.prod(s[:, T].astype(np.float64), axis=1)
    a = A.size
    in_target = np.isin(A, T)
    inA = np.zeros(bm.n, dtype=bool)
    inA[A] = True
    e_in = inA[bm.edges[:, 0]] & inA[bm.edges[:, 1]]
    JA = np.zeros((a, a))
    u = np.searchsorted(A, bm.edges[e_in, 0])
    v = np.searchsorted(A, bm.edges[e_in, 1])
    JA[u, v] = bm.coupling[e_in]
    JA[v, u] = bm.coupling[e_in]
    B = bm.graph.boundary(A)
    if h is None:
        h = _fields(bm, s)
    # fields on A from the boundary and the biases: full local field minus couplings in A
    H = h[:, A] - s[:, A].astype(np.float64) @ JA
    if B.size == 0:
        first, inverse = np.zeros(1, dtype=np.int64), np.zeros(s.shape[0], dtype=np.int64)
    else:
        sb = s[:, B] > 0
        if B.size <= 62:
            keys = sb.astype(np.int64) @ (np.int64(1) << np.arange(B.size, dtype=np.int64))
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        else:
            _, first, inverse = np.unique(sb, axis=0, return_index=True, return_inverse=True)
    rho = K.region_expectations(JA, np.ascontiguousarray(H[first]), in_target)
    return rho[np.ravel(inverse)]


def gsmci_values(model: BoltzmannMachine, samples: Any, target: Any, region: Any) -> np.ndarray:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.gsmci_values`."""
    model = _check_bm(model)
    s = _samples(model, samples)
    T = _check_target(model, target)
    A = _check_region(model, T, region)
    return _region_values(model, s, T, A, None)


def gsmci(model: BoltzmannMachine, samples: Any, target: Any, region: Any) -> float:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.gsmci`."""
    return float(np.mean(gsmci_values(model, samples, target, region)))


# ----------------------------------------------------------------------------- all moments
def _targets(bm: BoltzmannMachine) -> list[np.ndarray]:
    return [np.array([i]) for i in range(bm.n)] + [np.asarray(e) for e in bm.edges]


def _s2_structure(bm: BoltzmannMachine) -> tuple[np.ndarray, ...]:
    """Flattened independent sets of every node and edge target (numba Algorithm 1)."""
    return K.s2_structure(bm.graph.structure, _weights(bm))


def _s2_structure_reference(bm: BoltzmannMachine) -> tuple[np.ndarray, ...]:
    """Plain-Python reference of :func:`_s2_structure` (uses :func:`_independent_set`)."""
    nb = _neighbour_sets(bm)
    w = _coupling_lookup(bm)
    wabs = {k: abs(v) for k, v in w.items()}

    def wij(i, j):
        return w.get((min(i, j), max(i, j)), 0.0)

    nptr, nk, nw = [0], [], []
    for i in range(bm.n):
        ks = _s2_set(np.array([i]), nb, wabs)
        nk += ks
        nw += [wij(i, k) for k in ks]
        nptr.append(len(nk))
    eptr, ek, ewi, ewj = [0], [], [], []
    for i, j in bm.edges.tolist():
        ks = _s2_set(np.array([i, j]), nb, wabs)
        ek += ks
        ewi += [wij(i, k) for k in ks]
        ewj += [wij(j, k) for k in ks]
        eptr.append(len(ek))
    return (
        np.asarray(nptr, dtype=np.int64), np.asarray(nk, dtype=np.int64),
        np.asarray(nw, dtype=np.float64), np.asarray(eptr, dtype=np.int64),
        np.asarray(ek, dtype=np.int64), np.asarray(ewi, dtype=np.float64),
        np.asarray(ewj, dtype=np.float64),
    )


def _use_tables(indptr: np.ndarray, M: int) -> np.ndarray:
    """Memoize a node's 2^deg neighbour configurations when that is no more work than M."""
    deg = np.diff(indptr)
    return (deg <= 20) & (2.0**deg <= M)


_COUNTS_CACHE: OrderedDict = OrderedDict()


def _smci1_counts(s, g, node_off, node_size, pair_off, pair_size):
    """:func:`_smci_kernels.smci1_counts`, memoized on the content of the sample set and
    the graph (a learner calls :func:`moments` with the same data at every step)."""
    key = hashlib.blake2b(s.tobytes(), digest_size=16)
    for a in (np.asarray(s.shape), g.edges, g.indptr, g.indices):
        key.update(np.ascontiguousarray(a).tobytes())
    key = key.digest()
    if key in _COUNTS_CACHE:
        _COUNTS_CACHE.move_to_end(key)
        return _COUNTS_CACHE[key]
    counts = K.smci1_counts(s, g, node_off, node_size, pair_off, pair_size)
    for a in counts:
        a.flags.writeable = False
    _COUNTS_CACHE[key] = counts
    while len(_COUNTS_CACHE) > 8:
        _COUNTS_CACHE.popitem(last=False)
    return counts


def _factor_mci(model: FactorGraph, x: np.ndarray) -> tuple[list, list]:
    """The sample frequencies of every variable's and every factor's states."""
    card = model.cardinalities
    var = [np.bincount(x[:, i], minlength=int(card[i])) / len(x) for i in range(model.n)]
    fac = []
    for s in model.scopes:
        shape = tuple(int(card[v]) for v in s)
        code = np.ravel_multi_index(tuple(x[:, v] for v in s), shape) if s else np.zeros(
            len(x), dtype=np.int64)
        fac.append(np.bincount(code, minlength=math.prod(shape)).reshape(shape) / len(x))
    return var, fac


def _spin_to_factor_moments(model: FactorGraph, bm: BoltzmannMachine, mean: np.ndarray,
                            pair: np.ndarray) -> tuple[list, list]:
    """The variable and factor marginals of a binary pairwise factor graph from its
    spins' moments: ``P(x_i = 1) = (1 + m_i) / 2``, ``P(x_i = a, x_j = b) = (1 + s_a m_i
    + s_b m_j + s_a s_b ⟨x_i x_j⟩) / 4`` with ``s_0 = -1``, ``s_1 = +1``."""
    var = [np.array([(1 - m) / 2, (1 + m) / 2]) for m in mean.tolist()]
    edge = {(int(i), int(j)): e for e, (i, j) in enumerate(bm.edges.tolist())}
    sign = np.array([-1.0, 1.0])
    fac = []
    for s in model.scopes:
        if len(s) < 2:
            fac.append(var[s[0]].copy() if s else np.asarray(1.0))
            continue
        i, j = s
        c = pair[edge[(min(i, j), max(i, j))]]
        fac.append((1 + sign[:, None] * mean[i] + sign[None, :] * mean[j]
                    + np.outer(sign, sign) * c) / 4)
    return var, fac


def factor_moments(model: FactorGraph, samples: Any, method: str) -> tuple[list, list]:
    """:func:`mrflib.inference.smci.moments` of a factor graph: MCI on any, the SMCI
    estimators on a binary pairwise one (through its Boltzmann machine)."""
    method = _check_method(method)
    x = check_states(samples, model.cardinalities, "samples")
    if len(x) == 0:
        raise ValueError("samples must contain at least one sample point (got 0 rows)")
    if method == "mci":
        return _factor_mci(model, x)
    try:
        bm = model.to_boltzmann()
    except ValueError as err:
        raise ValueError(f"method {method!r} of a FactorGraph needs a binary pairwise one "
                         f"(method 'mci' takes any): {err}") from None
    mean, pair = moments(bm, to_spins(x), method)
    return _spin_to_factor_moments(model, bm, mean, pair)


def moments(model: BoltzmannMachine, samples: Any, method: str) -> tuple[Any, Any]:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.moments`."""
    method = _check_method(method)
    bm = check_model(model, "model")
    s = _samples(bm, samples)
    if method == "mci":
        return K.mci_moments(s, bm.graph.structure)
    g, weights = bm.graph.structure, _weights(bm)
    if method == "1-smci":
        deg = bm.graph.degree
        # a pair table (2^(deg_i + deg_j) entries, rebuilt at every call) pays off when it
        # is clearly smaller than the per-sample work it replaces
        use_pair = 4.0 * 2.0 ** (deg[bm.edges[:, 0]] + deg[bm.edges[:, 1]]) <= s.shape[0]
        use_tab = _use_tables(g.indptr, s.shape[0])
        tables = K.smci1_tables(g, bm.bias, weights, bm.coupling, use_tab, use_pair)
        node_off, node_tab, _, _, pair_off, pair_tab = tables
        if use_tab.all() and np.all(pair_off >= 0):
            # every node and edge tabulated: the sample set enters only through how often
            # each configuration occurs, cached by content (learning reuses the data)
            node_cnt, pair_cnt = _smci1_counts(s, g, node_off, len(node_tab), pair_off,
                                               len(pair_tab))
            return K.smci1_from_counts(g, node_off, node_tab, node_cnt, pair_off, pair_tab,
                                       pair_cnt, s.shape[0])
        return K.smci1_moments(s, g, bm.bias, weights, bm.coupling, tables)
    if method == "s2-smci":
        sets = _s2_structure(bm)
        tables = K.s2_tables(g, bm.bias, weights, sets, _use_tables(g.indptr, s.shape[0]))
        return K.s2_moments(s, g, bm.bias, weights, bm.coupling, sets, tables)
    h = K.local_fields(s, g, bm.bias, weights)
    vals = [
        float(np.mean(_region_values(bm, s, T, bm.graph.R_k(T, 1), h)))
        for T in _targets(bm)
    ]
    return np.asarray(vals[: bm.n]), np.asarray(vals[bm.n:])


def _local_fields_numpy(bm: BoltzmannMachine, s: np.ndarray) -> np.ndarray:
    """``b_i + sum_j w_ij s_j`` in numpy: dense BLAS for small n, sparse gather otherwise."""
    if bm.n <= 256:
        return s @ bm.coupling_matrix() + bm.bias
    indptr, indices, weights = bm.adjacency()
    contrib = s[:, indices] * weights
    starts = indptr[:-1]
    has = starts < indptr[1:]
    gam = np.zeros_like(s)
    gam[:, has] = np.add.reduceat(contrib, starts[has], axis=1)
    return gam + bm.bias


def _logcosh(x: np.ndarray) -> np.ndarray:
    """``log cosh x`` without overflow (numpy twin of :func:`_smci_kernels.logcosh`)."""
    a = np.abs(x)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


def _pair_numpy(ga: np.ndarray, gb: np.ndarray, J: Any) -> np.ndarray:
    """Eq. (15)/(23), ``tanh(atanh(tanh ga tanh gb) + J)``, in its log-cosh form."""
    return np.tanh(J + 0.5 * (_logcosh(ga + gb) - _logcosh(ga - gb)))


def _moments_numpy(bm: BoltzmannMachine, samples: Any, method: str
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Plain-numpy reference of :func:`moments` (same estimators, vectorized over samples).

    Used by the tests and as the benchmark baseline. Where the papers write
    ``atanh(tanh a tanh b)`` and ``log(1 - tanh^2 a tanh^2 b)`` (eq. 15, 24-26) this
    reference uses the identities ``atanh(tanh a tanh b) = (lc(a + b) - lc(a - b)) / 2`` and
    ``log(1 - tanh^2 a tanh^2 b) = lc(a + b) + lc(a - b) - 2 lc(a) - 2 lc(b)``
    (``lc = log cosh``), finite for every finite model; the kernels use the papers' forms
    away from the poles, so the tests compare two independent evaluations. "2-smci" is the
    same enumeration as :func:`moments`.
    """
    bm = _check_bm(bm)
    method = _check_method(method)
    s = _samples(bm, samples).astype(np.float64)
    i, j = bm.edges[:, 0], bm.edges[:, 1]
    J = bm.coupling
    if method == "mci":
        return s.mean(axis=0), (s[:, i] * s[:, j]).mean(axis=0)
    if method == "2-smci":
        return moments(bm, samples, method)
    gam = _local_fields_numpy(bm, s)  # eq. (16)
    if method == "1-smci":
        gij = gam[:, i] - J * s[:, j]  # eq. (17)
        gji = gam[:, j] - J * s[:, i]
        return np.tanh(gam).mean(axis=0), _pair_numpy(gij, gji, J).mean(axis=0)  # eq. (15)
    nptr, nk, nw, eptr, ek, ewi, ewj = _s2_structure(bm)
    mean = np.empty(bm.n)
    for t in range(bm.n):
        ks, w = nk[nptr[t]:nptr[t + 1]], nw[nptr[t]:nptr[t + 1]]
        beta_t = gam[:, t] - s[:, ks] @ w  # eq. (19)
        beta_k = gam[:, ks] - s[:, [t]] * w
        xi = beta_t + 0.5 * (_logcosh(beta_k + w) - _logcosh(beta_k - w)).sum(axis=1)  # (24)
        mean[t] = np.tanh(xi).mean()  # eq. (22)
    pair = np.empty(len(J))
    for e in range(len(J)):
        a, b = i[e], j[e]
        sl = slice(eptr[e], eptr[e + 1])
        ks, wi, wj = ek[sl], ewi[sl], ewj[sl]
        beta_a = gam[:, a] - J[e] * s[:, b] - s[:, ks] @ wi
        beta_b = gam[:, b] - J[e] * s[:, a] - s[:, ks] @ wj
        bk = gam[:, ks] - s[:, [a]] * wi - s[:, [b]] * wj
        cpp, cpm = _logcosh(bk + wi + wj), _logcosh(bk + wi - wj)
        cmp_, cmm = _logcosh(bk - wi + wj), _logcosh(bk - wi - wj)
        xab = beta_a + 0.25 * (cpp + cpm - cmp_ - cmm).sum(axis=1)  # eq. (25)
        xba = beta_b + 0.25 * (cpp - cpm + cmp_ - cmm).sum(axis=1)
        om = J[e] + 0.25 * (cpp - cpm - cmp_ + cmm).sum(axis=1)  # eq. (26)
        pair[e] = _pair_numpy(xab, xba, om).mean()  # eq. (23)
    return mean, pair


def covariances(model: BoltzmannMachine, mean: Any, pair: Any) -> np.ndarray:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.covariances`."""
    model = _check_bm(model)
    mean = check_array(mean, "mean", shape=(model.n,))
    pair = check_array(pair, "pair", shape=(len(model.edges),))
    return pair - mean[model.edges[:, 0]] * mean[model.edges[:, 1]]


# ----------------------------------------------------------------------------- variance
def asymptotic_variance(model: BoltzmannMachine, target: Any, region: Any) -> float:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.asymptotic_variance`."""
    model = _check_bm(model)
    T = _check_target(model, target)
    A = _check_region(model, T, region)
    require_memory(72.0 * 2.0**model.n,
                   f"asymptotic_variance over 2^{model.n} states (n={model.n})")
    p = exact.probabilities(model)
    idx = np.arange(p.size, dtype=np.int64)
    f = np.ones(p.size)
    for t in T:
        f *= 2.0 * ((idx >> t) & 1) - 1.0
    mask = np.int64(0)
    for a in A:
        mask |= np.int64(1) << np.int64(a)
    # rho depends on x outside A only through x_{∂A}; group states by x_{V \ A}
    key = idx & ~mask
    den = np.bincount(key, weights=p, minlength=p.size)
    num = np.bincount(key, weights=p * f, minlength=p.size)
    ok = den > 0
    second = float(np.sum(num[ok] ** 2 / den[ok]))
    mean = float(np.dot(p, f))
    return max(second - mean**2, 0.0)


# ----------------------------------------------------------------------------- AIS
def _ais_bytes(M: int, n: int, E: int, n_temps: int) -> float:
    """Peak bytes of :func:`ais_moments`: int64 start spins and temporaries, one block of
    float64 uniforms, the temperature ladder (twice) and the float64 pair products."""
    chains = float(M) * n
    return 17.0 * chains + 8.0 * max(2**21, chains) + 16.0 * n_temps + 8.0 * (chains + 3.0 * M * E
                                                                           + 4.0 * M)


def ais_moments(
    model: BoltzmannMachine, n_samples: int, *, beta_step: float = 1e-4, rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The pairwise binary implementation of :func:`mrflib.inference.smci.ais_moments`."""
    from mrflib._support.validation import as_rng

    model = _check_bm(model)
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    beta_step = check_positive(beta_step, "beta_step")
    if beta_step > 1:
        raise ValueError(f"beta_step must be at most 1, got {beta_step}")
    n_temps = math.ceil(1.0 / beta_step) + 1
    if n_temps > 2**62:
        raise ValueError(f"beta_step={beta_step} gives more than 2^62 temperatures")
    require_memory(_ais_bytes(n_samples, model.n, len(model.edges), n_temps),
                   f"ais_moments(n_samples={n_samples}, beta_step={beta_step}: {n_temps} "
                   f"temperatures) on {model.n} spins")
    rng = as_rng(rng)
    betas = np.append(np.arange(0.0, 1.0, beta_step), 1.0)
    x = (2 * rng.integers(0, 2, size=(n_samples, model.n)) - 1).astype(np.int8)
    g, weights = model.graph.structure, _weights(model)
    logw = np.zeros(n_samples)
    block = max(1, min(len(betas) - 1, 2**21 // (n_samples * model.n)))  # ~16 MiB of uniforms
    for start in range(0, len(betas) - 1, block):
        b = betas[start:start + block + 1]
        u = rng.random((len(b) - 1, n_samples, model.n))
        K.ais_steps(g, model.bias, weights, model.coupling, b, x, logw, u)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    xf = x.astype(np.float64)
    return w @ xf, w @ (xf[:, model.edges[:, 0]] * xf[:, model.edges[:, 1]])

