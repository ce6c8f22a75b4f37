"""Input and output: the UAI file format, the ``solve`` command and the papers' data sets.

The format's readers and writers live in :mod:`~mrflib.io.uai` and are importable from
here (``from mrflib import io; io.read_uai(path)``); :mod:`~mrflib.io.solve` is
``python -m mrflib solve`` (with :mod:`~mrflib.io.anytime`, its anytime answers under a time
limit) and :mod:`~mrflib.io.datasets` the data sets.
"""

from mrflib.io import uai as _uai
from mrflib.io.uai import *  # noqa: F403 (the format's public names, listed in uai.__all__)

__all__ = list(_uai.__all__)
