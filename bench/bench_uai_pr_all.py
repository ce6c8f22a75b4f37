"""The PR task at 20 s on every UAI 2014 PR problem: ``solve --task PR``.

:mod:`bench.bench_uai_pr` runs a spread of the families for its committed rows; this module
runs every problem of ``$MRFLIB_UAI_2014_PR`` the same way (each in a subprocess of its
own, scored with the UAI 2022 criteria), so the score over the whole track is measured
rather than assumed. ``MRFLIB_UAI_2014_PR_SECONDS`` and ``_PROBLEMS`` as there.

Results (the committed rows: 20 s, 26 min for the 171 problems of the stored copy, with
the references of :mod:`bench.bench_uai_pr`'s notes computed on the way, on 2 cores with
nothing else running; the rows answered by importance sampling, ``linkage_11`` to ``25``
and ``relational_1`` and ``4``, are from a later run of those problems alone, after its
proposal stopped drawing values that a mini-bucket forbids, and the 24 ``.cnf`` rows from
a later run of those, after the approximate counts came to yield the processor to the
exact count and SampleSearch to count its samples' completions): **99.98** on average
over the 168 problems scored, against the target of 99 (the UAI 2022 leader ibia's
published mark on this track is 99.9, scored against the published values). Three are
not scored: ``relational_4`` and ``sat-grid-pbl-0010`` (``Z = 0`` by its file), whose
published values lie above the trivial upper bound, and ``linkage_15``, whose published
value our exact engine contradicts (:data:`bench.bench_uai_pr.DISPUTED`; our answer is
0.088 from our exact value). Every family scores 100 but three:

* the SAT-derived ``.cnf`` problems, 99.83 over 23: Ganak's exact count answers 16 of
  them, ``log-4`` and its copy ``prob004.pddl`` in 17.6 and 16.9 s (they were not counted
  in time while ApproxMC ran at the solver's priority); the seven that neither model
  counter finishes in 20 s are answered by SampleSearch
  (:mod:`mrflib.inference.approx.sample_search`), each sample's completions counted
  after a fifth of the order: ``rc`` 0.20, ``rb`` 0.41 and ``2bitadd_11`` 0.63
  ``log10`` units below the reference (3.3, 3.9 and 0.28 with every Boolean drawn),
  ``logistics.c`` 2.8, ``log-5`` and its copy ``prob005.pddl`` 4.2 and ``prob012.pddl``
  7.0 (3.2, 5.5 and 6.1 with every Boolean drawn); scores 98.9 to 99.9, where the answer
  without ``python-sat``, the weighted mini-bucket proposal's certified bound, scores
  10 to 70. Ganak alone, with a core of its own, needs 19.6 s for ``logistics.c``, 25 s
  for ``prob012.pddl`` and about 100 s for ``log-5``, most of it in its tree
  decomposition;
* linkage, 99.99: importance sampling within 0.31 ``log10`` units on every problem
  scored (``linkage_25``, 1.1 before the change of proposal);
* DBN, 99.999.

The second target, no problem worse than 1 ``log10`` unit where the reference is known, is
not met: four are, all SAT-derived (``logistics.c``, ``log-5``, ``prob005.pddl``,
``prob012.pddl``).
"""

from __future__ import annotations

from bench import bench_uai_pr

EXTRA_COLUMNS = bench_uai_pr.EXTRA_COLUMNS


def run(quick: bool = False) -> list[dict]:
    return bench_uai_pr.run(quick, every_problem=True)
