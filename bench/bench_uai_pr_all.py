"""The PR task at 20 s on every UAI 2014 PR problem: ``solve --task PR``.

:mod:`bench.bench_uai_pr` runs a spread of the families for its committed rows; this module
runs every problem of ``$MRFLIB_UAI_2014_PR`` the same way (each in a subprocess of its
own, scored with the UAI 2022 criteria), so the score over the whole track is measured
rather than assumed. ``MRFLIB_UAI_2014_PR_SECONDS`` and ``_PROBLEMS`` as there.
"""

from __future__ import annotations

from bench import bench_uai_pr

EXTRA_COLUMNS = bench_uai_pr.EXTRA_COLUMNS


def run(quick: bool = False) -> list[dict]:
    return bench_uai_pr.run(quick, every_problem=True)
