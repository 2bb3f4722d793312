# ntkbook — two commands: `make book` and `make test` (both create .venv and install on first use).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# executed notebooks store no progress bars
export NTKBOOK_PROGRESS ?= 0

.PHONY: env book test preview lint clean

env: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

## make book: execute every chapter at NTKBOOK_SCALE (default: book) and build the HTML, warnings as errors
book: $(STAMP)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute _build/ledger
	NTKBOOK_SCALE=$${NTKBOOK_SCALE:-book} NTKBOOK_LEDGER_DIR=$(CURDIR)/_build/ledger \
	  $(BIN)/jupyter-book build . --builder html -W -n --keep-going
	@echo ""
	@echo "The book is in $(CURDIR)/_build/html — open file://$(CURDIR)/_build/html/index.html"
	@echo "or serve it: $(BIN)/python -m http.server --directory _build/html 8000"

## make test: unit tests, then every notebook at ci scale through papermill and through nbval (lax)
test: $(STAMP)
	$(BIN)/python -m pytest tests book --nbval-lax -n 2 --dist loadfile

## make preview NB=book/NN-name.ipynb: build the book plus a chapter not yet in _toc.yml (ci scale, temp dir)
preview: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make preview NB=book/NN-name.ipynb"; exit 2; }
	$(eval PREVIEW := $(shell mktemp -d /tmp/ntkbook-preview-XXXXXX))
	cp -r _config.yml _toc.yml book $(PREVIEW)/
	$(BIN)/python -c "import sys,yaml; p=sys.argv[1]; t=yaml.safe_load(open(p)); t['parts'].append({'caption': 'Preview', 'chapters': [{'file': f.removesuffix('.ipynb')} for f in sys.argv[2:]]}); yaml.safe_dump(t, open(p, 'w'), sort_keys=False)" $(PREVIEW)/_toc.yml $(NB)
	cd $(PREVIEW) && NTKBOOK_SCALE=$${NTKBOOK_SCALE:-ci} NTKBOOK_LEDGER_DIR=$(PREVIEW)/_build/ledger \
	  $(CURDIR)/$(BIN)/jupyter-book build . --builder html -W -n --keep-going
	@echo "preview: $(PREVIEW)/_build/html/index.html"

lint: $(STAMP)
	$(BIN)/ruff check ntkbook tests book/_ext benchmarks

clean:
	rm -rf _build .pytest_cache .ruff_cache
