# One gate, the same locally and in CI. Every target sets up .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup demo test e2e check lint format typecheck imports bench data docs clean

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
	$(BIN)/python -m pytest -q -m e2e

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

data: $(STAMP)  ## rebuild the embedded carbon data from ../shared/data
	$(BIN)/python -m carbonshift.carbon.build_embedded ../shared/data/carbon/electricitymaps-2021-2023

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache
