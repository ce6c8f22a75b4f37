"""Deprecated module path.

Importing it warns and gives :mod:`mrflib.inference.approx.map_search`.
"""

from mrflib._support.deprecation import alias_module

alias_module(__name__, "mrflib.inference.approx.map_search")
