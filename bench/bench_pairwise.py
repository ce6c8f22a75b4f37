"""Gibbs sampling of pairwise factor graphs: the pairwise kernel against its peers.

Model: ``potts_lattice(L, L, 4, rng=0)`` (256x256, q = 4: fields and one Potts coupling per
edge). Rates are single-variable updates per second per core, each kernel timed alone on
one numba thread (least CPU time of a few repeats after a warm-up call, packing excluded; the note
gives the packing's time; the machine's load average goes into the notes, as the
machine is shared and a loaded core runs slower):

- ``pairwise kernel``: :mod:`mrflib.inference.sampling._pairwise_kernels` on one thread
  (the kernel compiled for q states, on site-major uint8 chains, as a learner holds them);
- ``numpy checkerboard``: a vectorised numpy Gibbs sampler of the Potts lattice written
  here as the peer (all sites of one colour of all chains at once);
- ``general factor-graph kernel``: the factor-graph kernel of
  :mod:`mrflib.inference.sampling._chains_kernels`, forced;
- the same 256x256 lattice with binary variables (a Boltzmann machine with fields
  U[-0.2, 0.2] and couplings U[0, 0.5]): the ±1 checkerboard kernel of
  :func:`mrflib.inference.sampling.gibbs` against the pairwise kernel on
  ``FactorGraph.from_boltzmann`` of it.

Two rows time public calls end to end with numba's default threads, against the task's
targets: ``factor_gibbs.gibbs`` of 100 chains after 200 sweeps (target 30 s), and one step
of PCD with 1,000 chains and one sweep (the learner's sweep and counting pass; target 1 s).
"""

from __future__ import annotations

import os
import time

import numba
import numpy as np

from mrflib import BoltzmannMachine, FactorGraph, graphs, sampling
from mrflib.inference.sampling import _chains_kernels as _factor_gibbs_kernels
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import _pairwise_kernels as _k
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import stochastic_learning
from mrflib.learning._parameters import initial_parameters, parameter_map
from mrflib.models.lattices import potts_lattice
from mrflib.repro.timing import best_seconds

Q = 4


def _best_cpu(fn, repeats):
    """The least CPU time (``time.process_time``) of ``repeats`` calls of ``fn()``: the
    machine is shared, and the CPU time of a one-thread run is what the core gave it."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best, None


def _packed(model: FactorGraph):
    t0 = time.perf_counter()
    plan = factor_gibbs.pack(model)
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    pw = _pairwise.structure(*plan[4:], card)
    w, logs = _pairwise.weights(pw, plan[0])
    order = _pairwise.sweep_order(pw, np.arange(model.n))
    return plan, card, pw, w, logs, order, time.perf_counter() - t0


def _pairwise_rate(model, M, S, repeats):
    """Updates per second of the serial pairwise kernel, and the packing's seconds."""
    plan, card, pw, w, logs, order, pack_s = _packed(model)
    x0 = np.random.default_rng(0).integers(0, card, (M, model.n))
    keys = np.arange(M, dtype=np.uint64)
    out = np.empty((0, M, model.n), dtype=np.int64)

    q = _pairwise.fixed_states(pw)

    xt0 = _pairwise.site_major(x0)
    block = _pairwise._chain_block(M)

    def call(sweeps):
        x = x0.copy()
        record = np.full(sweeps, -1, np.int64)
        if q and not logs:  # the kernel run() dispatches to: compiled for q states, on
            # site-major chains (as a learner's persistent chains are held)
            xt = xt0.copy()
            _k.fixed_serial((0.0,) * q, xt, xt.reshape(-1), w, order, pw.nptr, pw.nbr,
                            pw.noff, pw.uoff, keys, record, out, block, 0, M,
                            np.empty(q**3))
        else:
            _k.sweeps_serial(x, w, order, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, logs,
                             keys, record, out)
        return x

    call(1)
    t, _ = _best_cpu(lambda: call(S), repeats)
    return M * S * model.n / t, t, pack_s, logs


def _general_rate(model, M, repeats):
    plan = factor_gibbs.pack(model)
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    free = np.arange(model.n, dtype=np.int64)
    x0 = np.random.default_rng(0).integers(0, card, (M, model.n))
    u = np.random.default_rng(1).random((model.n, M))

    def call():
        x = x0.copy()
        _factor_gibbs_kernels.gibbs_sweep(x, u, plan[0], *plan[1:], card, free)

    call()
    t, _ = _best_cpu(call, repeats)
    return M * model.n / t, t


def _potts_arrays(model: FactorGraph, L: int):
    """Fields ``(L, L, q)`` and the Potts couplings to the right and below ``(L, L)``."""
    h = np.stack([t for s, t in zip(model.scopes, model.log_tables) if len(s) == 1])
    right, down = np.zeros((L, L)), np.zeros((L, L))
    for s, t in zip(model.scopes, model.log_tables):
        if len(s) == 2:
            a, b = s
            (right if b == a + 1 else down)[a // L, a % L] = t[0, 0]
    return h.reshape(L, L, -1), right, down


def numpy_checkerboard(h, right, down, x, sweeps, rng):
    """Gibbs sweeps of a Potts lattice ``log P = Σ h_i(x_i) + Σ J_ij [x_i = x_j]``, all
    chains ``x (M, L, L)`` and all sites of one colour at once (the benchmark's peer)."""
    M, L, _ = x.shape
    q = h.shape[2]
    eye = np.eye(q)
    r, c = np.indices((L, L))
    for _ in range(sweeps):
        for colour in (0, 1):
            sel = (r + c) % 2 == colour
            score = np.broadcast_to(h, (M, L, L, q)).copy()
            one = eye[x]  # (M, L, L, q): the indicator of each neighbour's state
            score[:, :, :-1] += right[None, :, :-1, None] * one[:, :, 1:]
            score[:, :, 1:] += right[None, :, :-1, None] * one[:, :, :-1]
            score[:, :-1] += down[None, :-1, :, None] * one[:, 1:]
            score[:, 1:] += down[None, :-1, :, None] * one[:, :-1]
            s = score[:, sel]
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            cum = np.cumsum(p, axis=-1)
            u = rng.random(cum.shape[:-1])[..., None] * cum[..., -1:]
            x[:, sel] = np.minimum((cum <= u).sum(axis=-1), q - 1)
    return x


def _numpy_rate(model, L, M, S, repeats):
    h, right, down = _potts_arrays(model, L)
    x0 = np.random.default_rng(0).integers(0, Q, (M, L, L))
    t, _ = _best_cpu(lambda: numpy_checkerboard(h, right, down, x0.copy(), S,
                                                   np.random.default_rng(0)), repeats)
    return M * S * L * L / t, t


def _binary(L: int) -> BoltzmannMachine:
    rng = np.random.default_rng(0)
    edges = graphs.square_grid(L, L)
    return BoltzmannMachine(rng.uniform(-0.2, 0.2, L * L), edges,
                            rng.uniform(0.0, 0.5, len(edges)))


def _pcd_step(model, data, chains):
    lay = parameter_map(model, None)
    phi = initial_parameters(lay, model, None)
    sampler = stochastic_learning._Chains(lay, data, "pcd", {"n_chains": chains},
                                          np.random.default_rng(0))
    tables = lay.tables(phi)
    sampler.step(tables)  # warm-up
    c0 = time.process_time()
    wall = best_seconds(lambda: sampler.step(tables), 2)[0]
    return wall, (time.process_time() - c0) / 2


def load_now() -> str:
    """The 1, 5 and 15 minute load averages (the machine is shared)."""
    if not os.path.exists("/proc/loadavg"):
        return "n/a"
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(quick: bool = False) -> list[dict]:
    L = 32 if quick else 256
    M, S, reps = (32, 4, 2) if quick else (64, 10, 3)
    model = potts_lattice(L, L, Q, rng=0)
    case = f"{L}x{L} Potts lattice, q = {Q}"
    unit = "updates/s/core"
    rows = []
    threads = numba.get_num_threads()
    load = load_now()
    numba.set_num_threads(1)
    try:
        rate, t, pack_s, logs = _pairwise_rate(model, M, S, reps)
        np_rate, np_t = _numpy_rate(model, L, M, max(1, S // 4), reps)
        gen_rate, gen_t = _general_rate(model, 4, reps)
        base = dict(benchmark="pairwise Gibbs", case=case, rate_unit=unit, size=L * L,
                    size_unit="variables")
        rows.append(dict(base, method="pairwise kernel", seconds=t, rate=rate,
                         baseline="numpy checkerboard", ratio=rate / np_rate, target=1e8,
                         note=f"{M} chains x {S} sweeps on one thread; packing "
                              f"{pack_s:.2f} s ({'log-weights' if logs else 'products'}); "
                              f"load average {load}"))
        rows.append(dict(base, method="numpy checkerboard", seconds=np_t, rate=np_rate,
                         baseline="", ratio=np.nan,
                         note=f"{M} chains x {max(1, S // 4)} sweeps, vectorised numpy"))
        rows.append(dict(base, method="general factor-graph kernel", seconds=gen_t,
                         rate=gen_rate, baseline="pairwise kernel", ratio=gen_rate / rate,
                         note="4 chains x 1 sweep, forced"))
        bm = _binary(L)
        fg = FactorGraph.from_boltzmann(bm)
        sampling.gibbs(bm, M, burn_in=1, n_chains=M, rng=0)
        t_pm, _ = _best_cpu(lambda: sampling.gibbs(bm, M, burn_in=S, n_chains=M, rng=0),
                               reps)
        pm_rate = M * S * L * L / t_pm
        bin_rate, bin_t, _, _ = _pairwise_rate(fg, M, S, reps)
        bcase = f"{L}x{L} binary lattice"
        rows.append(dict(base, case=bcase, method="±1 checkerboard kernel", seconds=t_pm,
                         rate=pm_rate, baseline="pairwise kernel", ratio=pm_rate / bin_rate,
                         note=f"sampling.gibbs, {M} chains x {S} sweeps, one thread"))
        rows.append(dict(base, case=bcase, method="pairwise kernel", seconds=bin_t,
                         rate=bin_rate, baseline="±1 checkerboard kernel",
                         ratio=bin_rate / pm_rate,
                         note="FactorGraph.from_boltzmann of the same machine, one thread"))
    finally:
        numba.set_num_threads(threads)
    chains, sweeps = (10, 20) if quick else (100, 200)
    factor_gibbs.gibbs(model, 2, burn_in=1, n_chains=2, rng=0)
    t0, c0 = time.perf_counter(), time.process_time()
    data = factor_gibbs.gibbs(model, chains, burn_in=sweeps, n_chains=chains, rng=0)
    t_data, cpu_data = time.perf_counter() - t0, time.process_time() - c0
    rows.append(dict(benchmark="pairwise Gibbs", case=case, method="factor_gibbs.gibbs",
                     seconds=t_data, rate=chains * sweeps * L * L / t_data,
                     rate_unit="updates/s", baseline="", ratio=np.nan, target=np.nan,
                     note=f"{chains} chains x {sweeps} sweeps, {threads} threads, end to end "
                          f"(target 30 s); {cpu_data:.1f} CPU s; load average {load_now()}"))
    pcd_chains = 100 if quick else 1000
    t_pcd, cpu_pcd = _pcd_step(model, data, pcd_chains)
    rows.append(dict(benchmark="pairwise Gibbs", case=case, method="PCD step",
                     seconds=t_pcd, rate=pcd_chains * L * L / t_pcd, rate_unit="updates/s",
                     baseline="", ratio=np.nan, target=np.nan,
                     note=f"{pcd_chains} chains, one sweep and the counting pass, {threads} "
                          f"threads (target 1 s); {cpu_pcd:.1f} CPU s a step; load average "
                          f"{load_now()}"))
    return rows
