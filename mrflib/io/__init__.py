"""Input and output: the UAI file format, pgmpy's models and files, the ``solve`` command and
the papers' data sets.

The format's readers and writers live in :mod:`~mrflib.io.uai` and are importable from
here (``from mrflib import io; io.read_uai(path)``), as are :mod:`~mrflib.io.pgmpy_models`'s
conversions to and from pgmpy and its BIF and XMLBIF readers (``io.read_bif(path)``);
:mod:`~mrflib.io.solve` is ``python -m mrflib solve`` (with :mod:`~mrflib.io.anytime`, its
anytime answers under a time limit) and :mod:`~mrflib.io.datasets` the data sets.
"""

from mrflib.io import pgmpy_models as _pgmpy_models
from mrflib.io import uai as _uai
from mrflib.io.uai import *  # noqa: F403 (the format's public names, listed in uai.__all__)

# pgmpy_models' conversions keep the variable and state names: they are the package's
from_pgmpy = _pgmpy_models.from_pgmpy
to_pgmpy = _pgmpy_models.to_pgmpy
read_bif = _pgmpy_models.read_bif
read_xmlbif = _pgmpy_models.read_xmlbif

__all__ = list(dict.fromkeys([*_uai.__all__, *_pgmpy_models.__all__]))
