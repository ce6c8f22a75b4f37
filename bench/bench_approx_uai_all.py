"""The UAI 2022 MAR score at 20 s of ``solve`` alone, on every UAI 2014 MAR problem.

:mod:`bench.bench_approx_uai` compares the solvers on the problems exact inference cannot
answer in time; this module runs ``python -m mrflib solve --time-limit`` (ours only) on
all 142 problems, the easy ones included, so the competition's mean over the problems
whose exact marginals are known is measured rather than assumed: each row says whether
the answer file held a valid answer (``valid``), how long the run took, and its score (NaN
for the three problems whose published file is wrong, :data:`bench.bench_approx_uai.WRONG`).
About 20 min here. ``$MRFLIB_UAI_2014`` and ``MRFLIB_APPROX_SECONDS`` as there.
"""

from __future__ import annotations

from bench import bench_approx_uai

EXTRA_COLUMNS = bench_approx_uai.EXTRA_COLUMNS


def run(quick: bool = False) -> list[dict]:
    return bench_approx_uai.run(quick, subset="all", solvers="mrflib", every_problem=True)
