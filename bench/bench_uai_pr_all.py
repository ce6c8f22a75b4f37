"""The PR task at 20 s on every UAI 2014 PR problem: ``solve --task PR``.

:mod:`bench.bench_uai_pr` runs a spread of the families for its committed rows; this module
runs every problem of ``$MRFLIB_UAI_2014_PR`` the same way (each in a subprocess of its
own, scored with the UAI 2022 criteria), so the score over the whole track is measured
rather than assumed. ``MRFLIB_UAI_2014_PR_SECONDS`` and ``_PROBLEMS`` as there.

Results (the committed rows: 20 s, 26 min for the 171 problems of the stored copy, with
the references of :mod:`bench.bench_uai_pr`'s notes computed on the way, on 2 cores with
nothing else running; the rows answered by importance sampling, ``linkage_11`` to ``25``
and ``relational_1`` and ``4``, are from a later run of those problems alone, after its
proposal stopped drawing values that a mini-bucket forbids): **99.95** on average over the
168 problems scored, against the target of 99 (the UAI 2022 leader ibia's published mark
on this track is 99.9, scored against the published values). Three are not scored:
``relational_4`` and ``sat-grid-pbl-0010`` (``Z = 0`` by its file), whose published values
lie above the trivial upper bound, and ``linkage_15``, whose published value our exact
engine contradicts (:data:`bench.bench_uai_pr.DISPUTED`; our answer is 0.088 from our
exact value). Every family scores 100 but three:

* the SAT-derived ``.cnf`` problems, 99.66 over 23: the nine that neither model counter
  finishes in 20 s (``2bitadd_11``, ``log-4``, ``log-5``, ``logistics.c``,
  ``prob004/005/012.pddl``, ``rb``, ``rc``) are answered by SampleSearch
  (:mod:`mrflib.inference.approx.sample_search`), 0.4 to 7.5 ``log10`` units off (scores
  98.0 to 99.6, where the answer without ``python-sat``, the weighted mini-bucket
  proposal's certified bound, scores 10 to 70). Ganak's exact count of ``log-4`` and its
  copy ``prob004.pddl`` is close to the limit (18.3 s in another run of this benchmark,
  when the parent sampled with the weighted mini-bucket proposal); here it did not finish
  and SampleSearch's answer counted;
* linkage, 99.99: importance sampling within 0.31 ``log10`` units on every problem
  scored (``linkage_25``, 1.1 before the change of proposal);
* DBN, 99.999.

The second target, no problem worse than 1 ``log10`` unit where the reference is known, is
not met: eight are, all SAT-derived (the nine above but ``2bitadd_11``).
"""

from __future__ import annotations

from bench import bench_uai_pr

EXTRA_COLUMNS = bench_uai_pr.EXTRA_COLUMNS


def run(quick: bool = False) -> list[dict]:
    return bench_uai_pr.run(quick, every_problem=True)
