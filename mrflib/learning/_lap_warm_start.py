"""Warm starts of LAP's auxiliary fits: edge fits started from the node fits' potentials.

LAP (:mod:`mrflib.learning.table_learners`, ``"lap"``) fits one auxiliary model per factor
by damped Newton, each a convex conditional likelihood with one maximiser. A factor over
one variable ``v`` owns ``v``'s field, but its auxiliary model (the 1-neighbourhood of
``v``) also holds every potential that meets ``v``: the pairwise potentials of the edges
at ``v`` among them. A factor over an edge ``(u, v)`` later fits those same potentials of
the same conditional model on a larger neighbourhood, so the one-variable factors'
estimates lie near its maximiser. Started there instead of at zero, Newton begins within
its quadratic range: the same maximiser, reached in about a third fewer steps on a Potts
lattice.

So the one-variable factors are fitted first, each converged pairwise one gives its fitted
potentials (:func:`warm_terms`), and every other factor's fit starts at their mean
(:func:`warm_start`). The caller fits all the one-variable factors before any other, in
whatever batches, processes or threads, and gathers their terms (:func:`keep_warm`), so
that each fit's start, and so its bits, are the same however the factors are dealt out.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


def warm_terms(st: dict, theta: np.ndarray) -> dict:
    """The fitted potentials of a one-variable factor's pairwise auxiliary model.

    Parameters
    ----------
    st : dict
        The auxiliary model (``table_learners._lap_structure``): its ``terms`` (cliques)
        and their offsets ``off`` into ``theta``.
    theta : ndarray
        Its fitted parameters.

    Returns
    -------
    dict
        ``{clique: θ entries}``: where its neighbouring factors' fits start.
    """
    return {B: theta[st["off"][t]:st["off"][t + 1]] for t, B in enumerate(st["terms"])}


def warm_start(st: dict, warm: dict) -> np.ndarray:
    """The start of the auxiliary fit ``st``.

    Each potential starts at the mean of the fitted values of the one-variable factors of
    its scope's variables that have it, else at zero. Every such estimate is near this
    fit's maximiser (the same potential of the same conditional model), so Newton starts
    within its quadratic range.

    Parameters
    ----------
    st : dict
        The auxiliary model (``table_learners._lap_structure``).
    warm : dict
        ``{variable: warm_terms(...)}`` of the one-variable factors fitted so far.

    Returns
    -------
    ndarray
        The ``st["D"]`` parameters to start from.
    """
    start = np.zeros(st["D"])
    for t, B in enumerate(st["terms"]):
        seen = [warm[v][B] for v in st["Q"] if v in warm and B in warm[v]]
        if seen and st["free"][t]:
            start[st["off"][t]:st["off"][t + 1]] = sum(seen) / len(seen)
    return start


def keep_warm(warm: dict, scopes: Any, part: list) -> list:
    """Gather into ``warm`` the terms that a chunk's results carry.

    Parameters
    ----------
    warm : dict
        ``{variable: warm terms}``, updated in place.
    scopes : sequence of tuple of int
        The factors' scopes.
    part : list
        A LAP chunk's results ``(k, potentials, iterations, ok[, warm terms])``; a result
        without terms (the numpy reference's, or an edge's) adds nothing.

    Returns
    -------
    list
        ``part`` itself, for chaining.
    """
    for r in part:
        if len(r) > 4 and r[4] is not None:
            warm[scopes[r[0]][0]] = r[4]
    return part


def singles_first(fit: Any, scopes: Any, structs: dict, ks: list, warm: dict | None,
                  pairwise: Any) -> dict:
    """The auxiliary fits of factors ``ks``, the one-variable factors first.

    A converged one-variable factor whose auxiliary model is ``pairwise`` gives its
    :func:`warm_terms`; every other factor then starts at :func:`warm_start` of those and
    of ``warm``.

    Parameters
    ----------
    fit : callable
        ``fit(ks, init)`` fits the factors ``ks`` started at ``init`` (per factor; ``None``:
        all at zero), giving ``(θ per factor, iterations, converged)``.
    scopes : sequence of tuple of int
        The factors' scopes.
    structs : dict
        ``{k: auxiliary model}`` of the factors ``ks``.
    ks : list of int
        The factors to fit.
    warm : dict or None
        ``{variable: warm terms}`` of one-variable factors fitted elsewhere (not changed).
    pairwise : callable
        Whether an auxiliary model is pairwise (only those give warm terms).

    Returns
    -------
    dict
        ``{k: (θ, iterations, converged, warm terms or None)}``.
    """
    warm = dict(warm or {})
    out = {}
    for single in (True, False):
        phase = [k for k in ks if (len(scopes[k]) == 1) == single]
        if not phase:
            continue
        init = [warm_start(structs[k], warm) for k in phase] if warm else None
        thetas, iters, conv = fit(phase, init)
        for i, k in enumerate(phase):
            terms = (warm_terms(structs[k], thetas[i])
                     if single and conv[i] and pairwise(structs[k]) else None)
            if terms is not None:
                warm[scopes[k][0]] = terms
            out[k] = (thetas[i], int(iters[i]), bool(conv[i]), terms)
    return out


def map_singles_first(ex: Any, chunk: Any, jobs: list, scopes: Any, shared: tuple,
                      warm: dict) -> list:
    """A LAP chunk function mapped over ``jobs`` on an executor, the one-variable factors
    first, so that every other factor's fit starts from their terms, whatever process
    fits it.

    Parameters
    ----------
    ex : mrflib._support.executor.Executor
        The executor (its ``slots`` set how many chunks a phase is cut into).
    chunk : callable
        ``chunk(*shared, jobs, warm=warm)``: the results of a list of ``(k, cliques k
        owns)``.
    jobs : list
        ``(k, cliques k owns)``, the one-variable factors first.
    scopes : sequence of tuple of int
        The factors' scopes.
    shared : tuple
        The arguments every chunk takes before its jobs.
    warm : dict
        ``{variable: warm terms}``, filled by the first phase (:func:`keep_warm`).

    Returns
    -------
    list
        The chunks' results, the one-variable factors' first.
    """
    singles = [job for job in jobs if len(scopes[job[0]]) == 1]
    results: list = []
    for phase in (singles, jobs[len(singles):]):
        if not phase:
            continue
        parts = max(1, min(len(phase), 2 * ex.slots))
        chunks = [phase[r::parts] for r in range(parts)]
        names = [f"LAP factors {c[0][0]}, ... ({len(c)} factors)" for c in chunks]
        done_parts = ex.map(functools.partial(chunk, warm=warm), [(c,) for c in chunks],
                            shared=shared, names=names)
        results += [r for part in done_parts for r in keep_warm(warm, scopes, part)]
    return results
