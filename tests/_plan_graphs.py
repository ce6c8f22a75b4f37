"""The graphs whose junction-tree plans are pinned by ``data/junction_tree_plans.json``.

Run ``python -m tests._plan_graphs`` (from the repository root) to regenerate the file;
only do so when a change of the chosen elimination orders is intended, since every seeded
result of the junction-tree engine of Boltzmann machines (log Z, moments, samples, fits)
follows from them.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import numpy as np

from mrflib import graphs

PLANS = pathlib.Path(__file__).parent / "data" / "junction_tree_plans.json"


def _path(n: int) -> np.ndarray:
    return np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)


def _disjoint(*parts: tuple[np.ndarray, int]) -> tuple[np.ndarray, int]:
    out, off = [], 0
    for e, n in parts:
        out.append(np.asarray(e, dtype=np.int64).reshape(-1, 2) + off)
        off += n
    return np.concatenate(out), off


def plan_graphs() -> dict[str, tuple[np.ndarray, int]]:
    """Name -> ``(edges, n)``: lattices, king grids, chimera, cubic lattices, complete
    graphs, paths, random graphs of several densities and disconnected graphs."""
    g: dict[str, tuple[np.ndarray, int]] = {}
    for J in range(2, 21):
        g[f"square {J}x{J}"] = graphs.square_grid(J, J), J * J
    for r, c in ((2, 7), (3, 5), (4, 9), (5, 12), (8, 3), (1, 6)):
        g[f"square {r}x{c}"] = graphs.square_grid(r, c), r * c
    for J in range(2, 9):
        g[f"king {J}x{J}"] = graphs.king_grid(J, J), J * J
    for m, k, t in ((1, 1, 4), (2, 2, 4), (2, 3, 4), (3, 3, 4), (4, 4, 4), (2, 2, 2)):
        g[f"chimera {m}x{k}x{t}"] = graphs.chimera(m, k, t), m * k * 2 * t
    for L in range(2, 6):
        g[f"cubic {L}"] = graphs.cubic(L), L**3
    for n in (2, 3, 5, 8, 12, 16, 20):
        g[f"complete {n}"] = graphs.complete(n), n
    for n in (2, 3, 10, 50):
        g[f"path {n}"] = _path(n), n
    for n, p in ((10, 0.2), (10, 0.5), (20, 0.1), (20, 0.3), (30, 0.15), (40, 0.08),
                 (60, 0.05), (100, 0.03), (150, 0.02), (16, 0.7)):
        for seed in range(3):
            g[f"random {n} p={p} seed {seed}"] = graphs.random_graph(n, p, rng=seed), n
    g["disjoint grids 3x3 + 4x4"] = _disjoint((graphs.square_grid(3, 3), 9),
                                              (graphs.square_grid(4, 4), 16))
    g["disjoint path + K5 + isolated"] = _disjoint((_path(6), 6), (graphs.complete(5), 5),
                                                   (np.empty((0, 2)), 3))
    g["isolated nodes"] = np.empty((0, 2), dtype=np.int64), 7
    g["disjoint random"] = _disjoint((graphs.random_graph(25, 0.1, rng=7), 25),
                                     (graphs.random_graph(25, 0.2, rng=8), 25))
    return g


def digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:32]


def plan_record(jt) -> dict:
    """What pins a plan: its order, heuristic, width and the cliques of its steps (the
    eliminated spin, then its neighbours by elimination step)."""
    return dict(order=digest(jt.order), heuristic=jt.heuristic, treewidth=jt.treewidth,
                cliques=digest(*jt.cliques))


if __name__ == "__main__":  # pragma: no cover - regenerates the pinned plans
    from mrflib.inference.exact._spin_plan import SpinPlan

    out = {name: plan_record(SpinPlan(e, n)) for name, (e, n) in plan_graphs().items()}
    PLANS.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(out)} plans to {PLANS}")
