# Two commands on a fresh machine with Python 3.11+ and pip:
#   make book   -> virtual environment, every notebook executed, HTML book in _build/html
#   make test   -> the whole test suite (unit, notebooks with profile=quick, book in Chromium)
# Also: make bench (benchmarks -> bench/results), make lint (ruff, and lint-imports for the
# layers in pyproject.toml), make clean.

PYTHON   ?= python3
VENV     ?= .venv
PY       := $(VENV)/bin/python
STAMP    := $(VENV)/.installed
MATHJAX  := _build/vendor/mathjax/tex-chtml.js
PROFILE  ?= book
JOBS     ?= 2

.PHONY: book test bench lint env browser mathjax clean

env: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[book,test]"
	$(PY) -m mrflib warm-up
	touch $(STAMP)

# MathJax 3 from the npm registry, served by the book itself (no CDN at read time).
mathjax: $(MATHJAX)

$(MATHJAX):
	command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq npm >/dev/null)
	rm -rf _build/vendor/npm && mkdir -p _build/vendor/npm
	cd _build/vendor/npm && npm pack --silent mathjax@3 >/dev/null && tar xzf mathjax-*.tgz
	rm -rf _build/vendor/mathjax && mv _build/vendor/npm/package/es5 _build/vendor/mathjax
	rm -rf _build/vendor/npm

# Debian's Chromium for the browser test (installed, never downloaded by a tool).
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

book: env mathjax
	$(PY) tools/build_book.py --profile $(PROFILE) --jobs $(JOBS)

test: env mathjax browser
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

bench: env
	$(PY) -m bench

lint: env
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports

clean:
	rm -rf _build
