"""The memory of an answer's text, checked before it is formatted.

A ``MAR`` answer of the UAI 2014 format (:func:`mrflib.io.uai.write_answer`, the anytime
solver of :mod:`mrflib.io.anytime` and the command line of :mod:`mrflib.io.solve`) holds
one number per state of every variable: :func:`require_answer_memory` refuses, before
anything is formatted, one whose text would not fit in memory.
"""

from __future__ import annotations

from mrflib._support.validation import require_memory

__all__ = ["require_answer_memory"]

#: Bytes an answer's number costs while its text is built (the ``repr`` string, its list
#: slot and its share of the joined text), for the memory check of ``MAR`` answers.
_ANSWER_ENTRY_BYTES = 160


def require_answer_memory(n_numbers: int) -> None:
    """Refuse, before anything is formatted, a ``MAR`` answer of ``n_numbers``
    probabilities whose text would not fit in memory (a variable of 10^9 states)."""
    require_memory(_ANSWER_ENTRY_BYTES * n_numbers,
                   f"the text of a MAR answer of {n_numbers} probabilities")
