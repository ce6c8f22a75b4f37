"""Small kernel calls run by the interpreter (:mod:`mrflib._support.interpreted`) give the
compiled kernels' answers to the bit.

Each side runs in a fresh interpreter (a kernel compiled in this process would take its
compiled path whatever the rule): one with every call of the kernels given to the rule
interpreted, one with every call compiled, on factor graphs with zeros and evidence, a
Boltzmann machine, a Potts lattice and a shipped UAI problem.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import pickle, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from mrflib._support import interpreted
interpreted.MODE = sys.argv[1]
sys.path.insert(0, "tests")
from _random_factor_graphs import random_factor_graph
from mrflib import BoltzmannMachine, exact, graphs
from mrflib.io.datasets import uai_problem
from mrflib.models.lattices import potts_lattice

models = [random_factor_graph(np.random.default_rng(s), n=8, n_factors=10, evidence=s % 3)
          for s in range(6)]
models += [BoltzmannMachine.random(graphs.square_grid(4, 5), 20, rng=1),
           potts_lattice(6, 6, 3, rng=2), uai_problem("Promedus_24").model]
out = []
for m in models:
    plan = exact.plan(m)
    out.append([exact.log_partition(m), exact.marginals(m), exact.factor_marginals(m),
                exact.map_assignment(m), exact.sample(m, 40, rng=3), list(plan.order),
                plan.treewidth])
pickle.dump(out, sys.stdout.buffer)
"""


def _answers(mode: str) -> list:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, check=True,
                          capture_output=True)
    return pickle.loads(done.stdout)


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_interpreted_and_compiled_kernels_give_the_same_bits():
    interpreted, compiled = _answers("always"), _answers("never")
    assert len(interpreted) == 9
    for k, (a, b) in enumerate(zip(interpreted, compiled)):
        assert _same(a, b), k


def test_a_small_call_is_interpreted_and_a_large_one_compiled(monkeypatch):
    """The rule itself, on a kernel of its own: a call within the entries and the budget
    runs its Python function; a call on more entries, or past the budget, compiles."""
    from numba import njit

    from mrflib._support import interpreted

    monkeypatch.setattr(interpreted, "MODE", "auto")

    @njit
    def total(x):  # pragma: no cover - compiled
        s = 0.0
        for v in x:
            s += v
        return s

    interpreted.interpret_small({"__name__": __name__, "total": total})
    small = np.array([0.5, 2.0, 0.25])
    assert total(small) == 2.75 and not total.signatures
    big = np.ones(interpreted.SMALL_ENTRIES + 1)
    assert total(big) == big.size and total.signatures  # compiled: the large call

    @njit
    def again(x):  # pragma: no cover - compiled
        return x[0] + 1.0

    interpreted.interpret_small({"__name__": __name__, "again": again})
    assert again(small) == 1.5 and not again.signatures
    monkeypatch.setitem(interpreted._SPENT, id(again), interpreted.BUDGET_SECONDS)
    assert again(small) == 1.5 and again.signatures  # compiled: past the budget
