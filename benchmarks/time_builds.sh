#!/usr/bin/env bash
# Reproducible timings of the two commands, as issue 14 and 17 measure them (not part of make bench:
# each takes minutes and needs a quiet machine to mean anything; report the load average with them).
#
#   benchmarks/time_builds.sh test [DIR]    `make test` in a fresh clone of this repository (its own
#                                           .venv: install included), with pytest's 40 slowest tests
#                                           and the chapters' papermill times in DIR/make-test.log
#   benchmarks/time_builds.sh book [STEM]   `make book` at ci scale with a warm execution cache after
#                                           one chapter's code changed (default 05b-optimization-...):
#                                           a first build fills the cache, then a comment is added to
#                                           the chapter's first code cell and the second build is timed
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
load() { cut -d' ' -f1-3 /proc/loadavg; }

case "${1:-}" in
test)
  dir=${2:-/tmp/ntkbook-fresh-test}
  rm -rf "$dir" && git clone -q "$src" "$dir" && cd "$dir"
  start=$(date +%s.%N)
  status=0
  make test PYTEST_ARGS="--durations=40" > make-test.log 2>&1 || status=$?
  end=$(date +%s.%N)
  tail -60 make-test.log
  echo "make test (fresh clone, install included): $(echo "$end - $start" | bc) s wall, exit status $status;" \
    "load average $(load)" | tee -a make-test.log
  ;;
book)
  stem=${2:-05b-optimization-without-linearity}
  cd "$src"
  export NTKBOOK_SCALE=ci
  make book >/tmp/ntkbook-book-cold.log 2>&1 || { tail -30 /tmp/ntkbook-book-cold.log; exit 1; }
  .venv/bin/python - "$stem" <<'PY'
import sys, nbformat
path = f"book/{sys.argv[1]}.ipynb"
nb = nbformat.read(path, as_version=4)
cell = next(c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))
cell.source += "\n# touched by benchmarks/time_builds.sh"
nbformat.write(nb, path)
PY
  start=$(date +%s.%N)
  make book >/tmp/ntkbook-book-warm.log 2>&1 || { tail -30 /tmp/ntkbook-book-warm.log; git checkout "book/$stem.ipynb"; exit 1; }
  end=$(date +%s.%N)
  git checkout -q "book/$stem.ipynb"
  grep -c "Executing notebook" /tmp/ntkbook-book-warm.log | sed 's/^/chapters executed in the timed build: /'
  echo "make book (ci scale, warm cache, $stem edited): $(echo "$end - $start" | bc) s wall; load average $(load)"
  ;;
*)
  sed -n '2,14p' "$0"; exit 2 ;;
esac
