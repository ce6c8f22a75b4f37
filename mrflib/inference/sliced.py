"""Deprecated module path.

Importing it warns and gives :mod:`mrflib.inference.exact.sliced`.
"""

from mrflib._support.deprecation import alias_module

alias_module(__name__, "mrflib.inference.exact.sliced")
