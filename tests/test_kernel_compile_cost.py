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
