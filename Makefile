# One gate, the same locally and in CI. Every target sets up .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup demo test e2e check lint format typecheck imports bench data docs dist-check image lock clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml packages/fakekube/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e packages/fakekube
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install carbonshift with its dev extras

demo: $(STAMP)  ## the main job on the embedded data
	$(BIN)/python -m carbonshift.demo

test: $(STAMP)  ## fast tests (minutes)
	$(BIN)/python -m pytest -q -m "not e2e and not realcluster"

e2e: $(STAMP)  ## end-to-end tier: CLI runs, controller runs, reproductions
	$(BIN)/python -m pytest -q -m e2e --durations=15

lint: $(STAMP)  ## ruff lint and format check
	$(BIN)/ruff check src packages tests bench
	$(BIN)/ruff format --check src packages tests bench

format: $(STAMP)  ## apply ruff fixes and formatting
	$(BIN)/ruff check --fix src packages tests bench
	$(BIN)/ruff format src packages tests bench

typecheck: $(STAMP)  ## mypy, strict on the package
	$(BIN)/mypy

imports: $(STAMP)  ## import-linter: layers only import downward
	$(BIN)/lint-imports

check: lint typecheck imports test  ## the gate: ruff + mypy + import-linter + tests

bench: $(STAMP)  ## benchmarks (figures recorded in bench/RESULTS.md)
	$(BIN)/python -m bench

docs: $(STAMP)  ## build the docs site (MkDocs, --strict) into site/
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

notebooks: $(STAMP)  ## execute the notebooks (nbmake), as CI does
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	cd notebooks && ../$(BIN)/python -m pytest -q -p no:cacheprovider --nbmake .

data: $(STAMP)  ## rebuild the embedded carbon data from ../shared/data
	$(BIN)/python -m carbonshift.carbon.build_embedded ../shared/data/carbon/electricitymaps-2021-2023

dist-check: $(STAMP)  ## build sdist + wheel, twine check, install into a fresh venv, smoke-run
	PY=$(BIN)/python .ci/package-check

image: $(STAMP)  ## build the OCI image with buildah (root), run it, export dist/*.oci.tar
	PYTHON=$(BIN)/python image/build.sh

lock: $(STAMP)  ## re-pin requirements/image.lock (the image's [k8s,api] set, with hashes)
	# from PyPI alone (no local wheel folders or mirrors): the hashes are those of PyPI's files
	cd requirements && env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null ../$(BIN)/pip-compile --quiet --upgrade --generate-hashes --allow-unsafe \
	  --strip-extras --extra k8s --extra api --index-url https://pypi.org/simple \
	  --no-emit-index-url --output-file image.lock ../pyproject.toml

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache
