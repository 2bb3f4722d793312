# ntkbook — two commands: `make book` and `make test` (both create .venv and install on first use).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Python keeps compiled bytecode (__pycache__) of .venv and the package.  With PYTHONDONTWRITEBYTECODE set
# (as on the development machine) every process compiled every module it imported from source again:
# `import jax` took 2.6 s instead of 0.6 s, nb.setup() in a chapter's first cell 4.4 s instead of 1.5 s,
# and make test starts dozens of Python processes (notebook kernels, book builds, test workers).
unexport PYTHONDONTWRITEBYTECODE

# executed notebooks store no progress bars
export NTKBOOK_PROGRESS ?= 0
# JAX's persistent compilation cache: every process of a build or test run (papermill's and nbval's
# kernels, Jupyter Book's, the unit tests) reuses what another compiled.  Entries are keyed by the
# computation, the compile options and the JAX/XLA version, so a hit runs the same executable.  Every
# compilation is stored (minimum compile time 0): the chapters compile hundreds of small programs of
# 0.01–0.1 s each, and nbval's second execution of a chapter should not compile them again.
export JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/_build/jax-cache
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
# NumPy's and SciPy's BLAS (scipy-openblas, pthreads) on one thread in every process a target starts.  Its
# worker threads busy-wait between calls, and the package calls BLAS on small arrays (references, tables,
# eigensolvers) between JAX programs, so the extra threads burned a core each without doing the work
# sooner.  Measured on this 2-core machine (2026-11-28), chapter 2's width sweep at book scale alone: 68–79 s
# wall and 116–131 CPU-s with OpenBLAS's default (2 threads), 53 s and 76 CPU-s with one; chapters 2 and 9
# at book scale side by side: 287 s and 262 s, 552 CPU-s, against 114 s and 234 s, 426 CPU-s.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: env browser book book-fresh book-student handout pdf slides read-book test test-determinism bench preview lint sync format clean

env: $(STAMP)

# The browser tests drive Debian's Chromium (browser downloads do not work here): install it with apt.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make test needs Debian's chromium: run 'apt-get install chromium' as root"; exit 1; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# uv installs the same pinned wheels as pip, about ten times faster (measured: 4 s against 47 s for
	@# requirements.txt into a new venv); where uv cannot be had, pip installs them
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==0.13.9 \
	  && $(BIN)/uv pip install --quiet --python $(BIN)/python -r requirements.txt \
	  || $(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

## make book: build the HTML at NTKBOOK_SCALE (default: book), warnings as errors.  Chapters whose code
## is unchanged since the last make book at that scale (same package source and libraries) come from
## Jupyter Book's execution cache with their claims ledger; the others are executed.
## The chapters to execute are executed first, BOOK_JOBS at a time, into that cache
## (book/_ext/execute_stale_chapters.py); the build then finds every chapter cached.
## make book-fresh: the same, emptying the execution cache first (every chapter executed)
# Two chapters at a time on this 2-core machine (measured at book scale, before BOOK_XLA_FLAGS: 1477 s of
# chapters' wall time against 1581 s one after another; a chapter often keeps both cores busy, but not
# while XLA compiles, which is one thread).  On Linux each job runs on its own share of the CPUs (one core
# each here; make book BOOK_EXECUTE_ARGS=--no-pin turns that off): with one BLAS thread as well, a cold
# fresh-clone make book took 1256 s wall (chapters 1186 s, 2385 CPU-s) against 1638 s (chapters 1566 s,
# 3134 CPU-s) before, every claim passing in both (2026-11-28).
BOOK_JOBS ?= 2
# make book compiles with two of make test's four XLA options (see TEST_XLA_FLAGS below: IEEE
# arithmetic, no fast-math; LLVM at -O1 without its expensive passes).  At
# book scale most of a chapter's time was compilation: chapter 5 took 167 s with an empty compilation
# cache and 59 s with a full one.  Measured cold on this machine: chapter 5 167 → 110 s; chapter 9 (after
# the gd_sweeps change) 137 s, against 184 s with make test's --xla_cpu_use_fusion_emitters=false added,
# which slows the phase-transition loop (61 → 108 s), so make book leaves it out.  The options are part
# of the execution cache's key (book/_ext/execution_cache.py).
BOOK_XLA_FLAGS ?= --xla_llvm_disable_expensive_passes=true --xla_backend_optimization_level=1
book book-student handout: export XLA_FLAGS := $(strip $(XLA_FLAGS) $(BOOK_XLA_FLAGS))
# the commit each edition's claims-ledger.json names (the student edition is built outside the repository)
book book-student handout: export NTKBOOK_COMMIT ?= $(shell git describe --always --dirty --abbrev=12 2>/dev/null)
# the chapters missing from make book's execution cache, executed into it BOOK_JOBS at a time (book, book-student, handout)
EXECUTE_STALE_CHAPTERS = NTKBOOK_SCALE=$${NTKBOOK_SCALE:-book} $(BIN)/python book/_ext/execute_stale_chapters.py --jobs $(BOOK_JOBS) $(BOOK_EXECUTE_ARGS)
book: $(STAMP)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	$(EXECUTE_STALE_CHAPTERS)
	NTKBOOK_SCALE=$${NTKBOOK_SCALE:-book} $(BIN)/jupyter-book build . --builder html -W -n --keep-going
	@echo ""
	@echo "The book is in $(CURDIR)/_build/html — open file://$(CURDIR)/_build/html/index.html"
	@echo "or serve it: $(BIN)/python -m http.server --directory _build/html 8000"

book-fresh:
	rm -rf _build/.jupyter_cache
	$(MAKE) book

## make book-student: the same book with the exercise solutions left out entirely (_build/student/html):
## the chapters and pages are copied with every {solution} block removed from their sources
## (book/_ext/editions.py; code cells untouched), so no page, _sources/ file, download or search index
## holds one.  It shares make book's execution cache (same scale, XLA options and BLAS threads): the chapters that
## make book executed are not executed again, the others are executed into that cache first, BOOK_JOBS
## at a time, so the student edition shows the same numbers and claims ledger as the book.
book-student: $(STAMP)
	$(EXECUTE_STALE_CHAPTERS)
	$(eval STUDENT := $(shell mktemp -d /tmp/ntkbook-student-XXXXXX))
	$(BIN)/python book/_ext/editions.py student-copy $(STUDENT)
	mkdir -p $(STUDENT)/_build && ln -s $(CURDIR)/_build/.jupyter_cache $(STUDENT)/_build/.jupyter_cache
	cd $(STUDENT) && NTKBOOK_SCALE=$${NTKBOOK_SCALE:-book} \
	  $(CURDIR)/$(BIN)/jupyter-book build . --builder html -W -n --keep-going
	rm -rf _build/student && mkdir -p _build/student && mv $(STUDENT)/_build/html _build/student/html && rm -rf $(STUDENT)
	@echo "The student edition (no solutions) is in $(CURDIR)/_build/student/html/index.html"

## make handout: the chapters as notebooks for students (_build/handout/ntkbook-notebooks/ and .zip): source
## notebooks without solutions or outputs (homework), the same with make book's outputs at NTKBOOK_SCALE
## (reading; from the execution cache, chapters missing there executed into it first, as make book-student
## does), the ntkbook package, pyproject.toml, requirements.txt and a README (book/_ext/editions.py)
handout: $(STAMP)
	$(EXECUTE_STALE_CHAPTERS)
	NTKBOOK_SCALE=$${NTKBOOK_SCALE:-book} $(BIN)/python book/_ext/editions.py handout _build/handout

## make test: lint (ruff: package, tests, benchmarks, book/_ext, notebooks at 80 columns); every chapter
## executed once at ci scale by papermill (tests/execute_chapters.py, TEST_JOBS at a time); then one pytest
## run on TEST_JOBS workers: unit tests, each chapter's claims ledger, the book rendered from the executed chapters and read page by
## page in headless Chromium (screenshots in _build/test-artifacts/: first screen at 390 and 1280 px), and nbval re-executing the chapters
## named in RERUN (one by default) and comparing the outputs of their check cells (tag nbval-check-output)
## and their claims ledger, byte for byte, with papermill's execution.
## make test-determinism: the same with every chapter re-executed (twice the chapters' time; see README).
## Slowest tests: make test PYTEST_ARGS=--durations=40
# No nbval sanitizer: the compared outputs are the check cells' verdict lines, whose numbers ntkbook.claims
# rounds; two executions on this CPU (cold and warm compilation cache) printed identical lines.  Add one
# (--nbval-sanitize-with) only for a number whose floating-point summation order can legitimately vary,
# and name the cell it is for.
EXECUTED := _build/test-executed
# make test compiles with four of XLA's CPU compile options changed.  Its programs are small (ci sizes,
# unit-test sizes), so compiling them, not running them, is most of make test's time (JAX's compile-time
# events: 28 of the 36 s of chapter 3b's Theorem 3.2 sweep at ci are XLA's backend compilation of 91
# programs; the unit tests compile hundreds of one-operation programs).  The options skip work, not
# semantics — no fast-math, IEEE arithmetic as in make book: expensive LLVM passes are skipped, fusions
# are emitted by XLA's older loop emitters, and LLVM optimizes at -O1 instead of -O2.  Measured alone on
# this 2-core machine, empty compilation cache: the Theorem 3.2 sweep 35.8 s with the first two options
# → 17.7 s with -O1.  (Until 2026-11-28 both lists also held --xla_cpu_use_thunk_runtime=false, credited
# here with a further 17.7 → 12.7 s; the pinned jaxlib 0.10.2 accepts that flag and ignores it — XLA's
# flag parser logs "no longer supported" and sets nothing — so that difference was run-to-run noise.)  In make test, ledgers of the chapters
# agree with those compiled with the first two options to float32 rounding (18 of 328 records differ,
# in the 6th digit, or more where the quantity is itself a rounding error or a run of 10⁴–10⁵ float32
# steps), and every status is the same.  Not used: --xla_backend_optimization_level=0, which computed
# a wrong tracked Hessian norm inside a vmapped training loop (0.891 against 0.532 from the dense
# reference; tests/test_training.py) — an XLA miscompilation; that test passes at -O1.
# papermill's and nbval's executions run under the same options, so their ledgers are still compared byte
# for byte; JAX's cache key includes XLA_FLAGS, so make book never reuses these executables.  The flags
# are XLA's (jaxlib as pinned in requirements.txt): an unknown flag stops XLA, so check them when
# upgrading jaxlib.  TEST_XLA_FLAGS= (empty) tests with make book's compilation.
# The fourth, --xla_cpu_parallel_codegen_split_count=1, compiles a program as one LLVM module instead of
# splitting it for parallel code generation: with three processes on two cores there is no core to spare,
# and most programs here are single operations whose compile time is overhead (jax.monitoring, 1139
# programs of a micro-benchmark: 31 ms of backend compilation and 12 ms of lowering each).  Measured alone,
# empty compilation cache (2026-11-28): tests/test_kernels.py 106 → 86 and 113 → 99 CPU-s (two pairs),
# chapter 3b 68 → 62 CPU-s with a byte-identical claims ledger; two whole fresh-clone make test runs,
# without and with it, took 956 and 969 s: within this machine's run-to-run noise.
TEST_XLA_FLAGS ?= --xla_llvm_disable_expensive_passes=true --xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=1 --xla_cpu_parallel_codegen_split_count=1
test: export XLA_FLAGS := $(strip $(XLA_FLAGS) $(TEST_XLA_FLAGS))
# Three processes on this 2-core machine: with two, the cores were idle a fifth of the time (a chapter or a
# test compiles on one thread; the browser tests wait on Chromium); measured in the closing note.
TEST_JOBS ?= 3
# Chapters nbval re-executes in `make test` (stems; "all" for every chapter).  Re-executing every chapter
# doubles their time and puts `make test` past its 12-minute budget on this machine, so `make test`
# re-executes the cheapest chapter end to end (papermill → nbval → byte-identical ledger: seeds, keys and
# caches behave) and `make test-determinism` re-executes all of them.
RERUN ?= 05b-optimization-without-linearity
RERUN_NOTEBOOKS = $(if $(filter all,$(RERUN)),$(EXECUTED)/book,$(addprefix $(EXECUTED)/book/,$(addsuffix .ipynb,$(RERUN))))
# The book-level test files first: each holds minutes of serial work (builds, a browser), so xdist starts
# them at once on separate workers and the unit tests fill the remaining time.
BOOK_TESTS := tests/test_book.py tests/test_book_reader.py tests/test_book_execution.py tests/test_editions_print.py tests/test_solutions.py
test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/python tests/execute_chapters.py $(EXECUTED) --jobs $(TEST_JOBS)
	NTKBOOK_EXECUTED_DIR=$(CURDIR)/$(EXECUTED) $(BIN)/python -m pytest $(BOOK_TESTS) $(RERUN_NOTEBOOKS) tests \
	  --nbval-lax -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

test-determinism:
	$(MAKE) test RERUN=all

## make read-book: the page reader of make test (headless Chromium, both widths, screenshots in
## _build/test-artifacts/, the whole page at 390 px) on the book that the last `make book` built, at the scale it was built
read-book: $(STAMP) browser
	NTKBOOK_BUILT_BOOK=$(CURDIR) $(BIN)/python -m pytest tests/test_book.py -k page_in_a_real_browser -p no:xdist $(PYTEST_ARGS)

## make pdf: the book that the last make book built, printed by headless Chromium (MathJax awaited, print
## stylesheet, solutions shown: the teacher's book) into _build/pdf/book.pdf, with a bookmark per part and
## per page, and one PDF per page of _toc.yml beside it (_build/pdf/<page>.pdf, the chapters' handouts).
## Nothing is executed; book/_ext/print_pdf.py.  Why Chromium and not LaTeX: README, "PDF and slides".
## make slides: one reveal.js deck per chapter in _build/slides/<chapter>.html (offline: reveal.js from the
## pinned sphinx-revealjs, MathJax the book's own copy), made from the chapters make book built: results with
## their paper numbers, proof ideas, figures, check verdicts, a summary table, no solutions; every slide laid
## out in Chromium at 1280x720 and split until it fits.  Lecture-notes overrides: book/slides/<chapter>.yml
## (book/slides/README.md); book/_ext/make_slides.py.
BUILT_HTML_NEEDED = @test -f _build/html/index.html || { echo "make $@: no built book in _build/html — run make book first"; exit 2; }
pdf: $(STAMP) browser
	$(BUILT_HTML_NEEDED)
	$(BIN)/python book/_ext/print_pdf.py --html _build/html --out _build/pdf

slides: $(STAMP) browser
	$(BUILT_HTML_NEEDED)
	$(BIN)/python book/_ext/make_slides.py --html _build/html --out _build/slides

## make preview NB=book/NN-name.ipynb: build the book in a temp dir executing only that chapter (ci scale);
## the chapter is added to the table of contents if it is not listed yet
preview: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make preview NB=book/NN-name.ipynb"; exit 2; }
	$(eval PREVIEW := $(shell mktemp -d /tmp/ntkbook-preview-XXXXXX))
	cp -r _config.yml _toc.yml book $(PREVIEW)/
	$(BIN)/python -c "import sys,yaml; p=sys.argv[1]; t=yaml.safe_load(open(p)); listed={c['file'] for part in t['parts'] for c in part['chapters']}; new=[f.removesuffix('.ipynb') for f in sys.argv[2:] if f.removesuffix('.ipynb') not in listed]; new and t['parts'].append({'caption': 'Preview', 'chapters': [{'file': f} for f in new]}); yaml.safe_dump(t, open(p, 'w'), sort_keys=False)" $(PREVIEW)/_toc.yml $(NB)
	$(BIN)/python -c "import sys,yaml,glob,os; p=sys.argv[1]; c=yaml.safe_load(open(p)); keep={os.path.basename(f) for f in sys.argv[2:]}; c['execute']['exclude_patterns']=[os.path.basename(f) for f in glob.glob('book/*.ipynb') if os.path.basename(f) not in keep]; yaml.safe_dump(c, open(p, 'w'), sort_keys=False)" $(PREVIEW)/_config.yml $(NB)
	cd $(PREVIEW) && NTKBOOK_SCALE=$${NTKBOOK_SCALE:-ci} NTKBOOK_LEDGER_DIR=$(PREVIEW)/_build/ledger \
	  $(CURDIR)/$(BIN)/jupyter-book build . --builder html -W -n --keep-going
	@echo "preview: $(PREVIEW)/_build/html/index.html"

## make bench: speed and memory on this machine -> benchmarks/results/latest.{json,md} (shown in the book)
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

## make lint: ruff on everything it covers (the chapters at 80 columns: book/ruff.toml)
lint: $(STAMP)
	$(BIN)/ruff check .

## make sync: after editing a chapter (either book/NN-name.ipynb or its twin book/myst/NN-name.md), bring
## the other file up to date (jupytext --sync: the newer one wins) and put the notebook in normal form
sync: $(STAMP)
	$(BIN)/python tests/notebook_format.py sync

## make format: sync, then format the chapters' code to 80 columns (ruff format; comments and strings that
## ruff leaves long are wrapped by tests/notebook_format.py, which keeps a change only if the program's
## syntax tree is unchanged), apply ruff's safe fixes, and sync the twins again
format: sync
	$(BIN)/ruff format book/*.ipynb
	$(BIN)/python tests/notebook_format.py wrap
	$(BIN)/ruff format book/*.ipynb
	$(BIN)/ruff check --fix --exit-zero book/*.ipynb
	touch book/*.ipynb
	$(BIN)/python tests/notebook_format.py sync

clean:
	rm -rf _build .pytest_cache .ruff_cache
