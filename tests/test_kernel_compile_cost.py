"""The exact engines' kernels stay cheap to compile: a fresh install compiles them on the
first call (``bench/bench_first_call.py`` measures it), so the source avoids what makes
numba compile a kernel twice or pull in slow-to-compile machinery.

* numba compiles a jitted callee once per argument type, and an integer literal is a type
  of its own: a call site passing ``0`` where another passes an ``int64`` compiles the
  callee (and all it calls) a second time.
* ``np.sort``, ``np.argsort`` and ``np.concatenate`` compile numba's generic sorts and
  joins, and copying an array into a slice (``a[:k] = b[:k]``) compiles numba's
  shape-mismatch exception with its string formatting: seconds each, where a loop over a
  few entries does the same.
"""

from __future__ import annotations

import ast
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mrflib

MODULES = ["inference/_elimination_kernels.py", "inference/exact/_elimination_order_kernels.py",
           "inference/exact/_compiled_passes_kernels.py"]
SLOW = {"sort", "argsort", "concatenate"}


def _jitted(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        if getattr(f, "id", getattr(f, "attr", None)) in ("njit", "jit"):
            return True
    return False


def _kernels(rel: str) -> list[ast.FunctionDef]:
    tree = ast.parse((Path(mrflib.__file__).parent / rel).read_text(encoding="utf-8"))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and _jitted(n)]


def _literal(arg: ast.expr) -> str | None:
    """The integer literal ``arg`` is (``-1`` included), else None."""
    inner = arg.operand if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) else arg
    if isinstance(inner, ast.Constant) and type(inner.value) is int:
        return ast.unparse(arg)
    return None


@pytest.mark.parametrize("rel", MODULES)
def test_every_call_of_a_kernel_passes_one_type_per_argument(rel):
    """No kernel is called with an integer literal at a position where another call (in
    the same module) passes a variable or another literal."""
    kernels = _kernels(rel)
    names = {fn.name for fn in kernels}
    kinds = collections.defaultdict(set)
    for fn in kernels:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in names:
                for i, arg in enumerate(node.args):
                    kinds[node.func.id, i].add(_literal(arg))
    mixed = {key: k for key, k in kinds.items()
             if len(k) > 1 and any(x is not None for x in k)}
    assert not mixed, f"calls of one kernel with a literal and other arguments: {mixed}"


@pytest.mark.parametrize("rel", MODULES)
def test_kernels_avoid_slow_to_compile_numpy(rel):
    """No generic sort or join, and no array copied into a slice."""
    found = []
    for fn in _kernels(rel):
        for node in ast.walk(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in SLOW):
                found.append((fn.name, node.lineno, node.func.attr))
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
                    and isinstance(node.targets[0].slice, ast.Slice)
                    and isinstance(node.value, ast.Subscript)):
                found.append((fn.name, node.lineno, "slice copy"))
    assert not found, found


#: The three common first calls of ``bench/bench_first_call.py`` past the exact engines (a
#: Potts lattice's Gibbs samples, MPLE fits of a Boltzmann machine and of a Potts lattice)
#: in a fresh interpreter, then the specialisations the kernels of their paths hold.
_FIRST_CALLS = """
import json
import numpy as np
from mrflib import BoltzmannMachine, graphs, learning
from mrflib.inference.sampling import _checkerboard, _pairwise_kernels as pk, chains
from mrflib.learning import _learners_kernels as lk, _stochastic_learning_kernels as sk
from mrflib.learning import _pairwise_likelihood_kernels as plk
from mrflib.models import lattices
potts = lattices.potts_lattice(4, 4, q=3, rng=0)
chains.gibbs(potts, 200, burn_in=20, rng=1)
bm = BoltzmannMachine.random(graphs.square_grid(4, 5), 20, rng=0)
spins = np.where(np.random.default_rng(1).random((500, 20)) < 0.5, -1, 1).astype(np.int8)
learning.fit(spins, bm.edges, "mple")
learning.fit(np.random.default_rng(1).integers(0, 3, (500, 16)), potts, "mple")
kernels = {"pk": pk, "cb": _checkerboard, "lk": lk, "sk": sk, "plk": plk}
print(json.dumps({f"{m}.{name}": len(f.signatures) for m, mod in kernels.items()
                  for name, f in vars(mod).items() if hasattr(f, "signatures")}))
"""


def test_the_common_first_calls_compile_only_the_kernels_they_run():
    """Each kernel the three calls run compiles once; none of the kernels they would
    compile for nothing (a sort, a serial loop around a block kernel, the conversion of
    the chains back, the moments only the moment-matching methods read, the factor counts
    the pseudo-likelihood's contexts hold, the logs branch of the pseudo-likelihood) is
    compiled."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}  # serial paths
    out = subprocess.run([sys.executable, "-c", _FIRST_CALLS], capture_output=True,
                         text=True, check=True, env=env)
    signatures = json.loads(out.stdout.splitlines()[-1])
    for once in ("pk.fixed_serial", "pk.transpose", "cb.two_colouring",
                 "lk.local_patterns_counted", "lk.pattern_objective", "lk.transpose",
                 "plk.context_fill", "plk.pl_narrow_products"):
        assert signatures[once] == 1, once
    for unused in ("pk.fixed_parallel", "lk.local_patterns", "lk.data_moments", "lk._reduce",
                   "lk.sort_int64", "sk.count_factors", "plk.pl_narrow_logs",
                   "plk.pl_narrow_parallel"):
        assert signatures[unused] == 0, unused
