"""The MPE task at 20 s on every UAI 2014 MPE problem: ``solve --task MPE`` and toulbar2.

:mod:`bench.bench_uai_mpe` runs three problems of each family for its committed rows; this
module runs every problem of ``$MRFLIB_UAI_2014_MPE`` the same way (each solver in a
subprocess of its own, toulbar2 in the same run, scored with the UAI 2022 criteria and the
UAI 2014 relative gap and rank), so the score over the whole track is measured rather than
assumed: about 80 min here. ``MRFLIB_UAI_2014_MPE_SECONDS`` and ``_PROBLEMS`` as there.
"""

from __future__ import annotations

from bench import bench_uai_mpe

EXTRA_COLUMNS = bench_uai_mpe.EXTRA_COLUMNS


def run(quick: bool = False) -> list[dict]:
    return bench_uai_mpe.run(quick, every_problem=True)
