"""Input and output: the UAI file format, the ``solve`` command and the papers' data sets.

The format's readers and writers live in :mod:`~mrflib.io.uai` and are importable from
here (``from mrflib import io; io.read_uai(path)``); :mod:`~mrflib.io.solve` is
``python -m mrflib solve`` and :mod:`~mrflib.io.datasets` the data sets.
"""

from mrflib.io.uai import (
    MAR_SUM_TOLERANCE,
    TASKS,
    Answer,
    format_answer,
    from_pgmpy,
    read_answer,
    read_evidence,
    read_uai,
    to_pgmpy,
    write_answer,
    write_evidence,
    write_uai,
)

__all__ = [
    "MAR_SUM_TOLERANCE",
    "TASKS",
    "Answer",
    "format_answer",
    "from_pgmpy",
    "read_answer",
    "read_evidence",
    "read_uai",
    "to_pgmpy",
    "write_answer",
    "write_evidence",
    "write_uai",
]
