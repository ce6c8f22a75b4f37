"""The junction-tree plans of Boltzmann machines are pinned: a faster planner must choose
the same elimination orders and cliques, so every seeded result stays bit-identical."""

from __future__ import annotations

import json
import platform

import pytest
from _plan_graphs import PLANS, plan_graphs, plan_record

from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact._spin_plan import SpinPlan

_PINNED = json.loads(PLANS.read_text())
_GRAPHS = plan_graphs()


def test_every_graph_is_pinned():
    assert sorted(_PINNED) == sorted(_GRAPHS)


@pytest.mark.parametrize("name", sorted(_GRAPHS))
def test_plan_matches_the_pinned_plan(name):
    edges, n = _GRAPHS[name]
    assert plan_record(SpinPlan(edges, n)) == _PINNED[name], name


def _random_graphs():
    from mrflib import graphs

    for n, p, seed in ((1, 0.5, 0), (12, 0.1, 1), (30, 0.05, 2), (40, 0.1, 3), (60, 0.02, 4)):
        yield graphs.random_graph(n, p, rng=seed), n


@pytest.mark.parametrize("k", range(5))
def test_given_orders_have_the_cliques_of_the_compiled_elimination(k):
    """A given order's cliques (the set-based elimination) against the compiled kernels'
    on the dense adjacency."""
    import numpy as np

    edges, n = list(_random_graphs())[k]
    order = np.random.default_rng(k).permutation(n)
    plan = SpinPlan(edges, n, order=order)
    adj = eo.interaction_graph(n, edges.tolist())
    dense = eo._dense_adjacency(adj, list(range(n)))
    assert [tuple(c) for c in eo._dense_cliques(dense, list(range(n)), order.tolist())] \
        == list(plan.cliques)


@pytest.mark.parametrize("name", ["square 7x7", "king 5x5", "chimera 2x2x4", "cubic 3",
                                  "random 40 p=0.08 seed 1", "disjoint path + K5 + isolated",
                                  "disjoint random", "complete 8", "square 1x6"])
def test_set_based_planning_gives_the_pinned_plan(name, monkeypatch):
    """Graphs beyond the dense adjacency's size limit take the set-based route: same plan."""
    monkeypatch.setattr(eo, "DENSE_MAX_NODES", 0)
    edges, n = _GRAPHS[name]
    assert plan_record(SpinPlan(edges, n)) == _PINNED[name], name


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="numpy's x86 dispatch targets")
def test_plans_do_not_depend_on_the_cpus_vector_instructions():
    """numpy's unstable argsort orders ties differently with AVX2 and with AVX-512 (scipy's
    reverse Cuthill-McKee used it to pick its start, so a 20x20 lattice got another plan
    on another machine); the plan must be the same with numpy's wider sorts turned off."""
    import os
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, 'tests'); from _plan_graphs import plan_graphs, "
            "plan_record; from mrflib.inference.exact._spin_plan import SpinPlan; "
            "print(plan_record(SpinPlan(*plan_graphs()['square 20x20']))['order'])")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, text=True,
                         capture_output=True, check=True).stdout.split()
    assert out[-1] == _PINNED["square 20x20"]["order"]
