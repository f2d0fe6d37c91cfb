#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each.
#
#   .ci/fuzz.sh                  # every target, 30 s each (FUZZTIME)
#   FUZZTIME=5s .ci/fuzz.sh      # a quick pass
#   .ci/fuzz.sh ./collections    # only the targets of some packages
#
# Targets are found with `go test -list`, so a new Fuzz function is picked up
# without editing this file. A crash fails the run (after every target has
# had its turn); the failing input is saved by go test under the package's
# testdata/fuzz/<Target>/ and replays as a regression test in every plain
# `go test` once committed. For long runs see docs/reliability.md.
set -uo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-30s}"
# Packages are run from their own folder (go -C), so that the benchmarks
# module's are fuzzed like the library's.
pkgs=()
if [ $# -eq 0 ]; then
  mapfile -t pkgs < <(go list -f '{{.Dir}}' ./... && go -C benchmarks list -f '{{.Dir}}' ./...)
else
  for arg in "$@"; do
    pkgs+=("$(go list -f '{{.Dir}}' "$arg" 2>/dev/null || echo "$arg")")
  done
fi

failed=()
ran=0
for pkg in "${pkgs[@]}"; do
  # -list prints the matching names, then "ok <pkg> ..." (or nothing useful
  # when the package has no tests).
  if ! list="$(go -C "$pkg" test -run '^$' -list '^Fuzz' . 2>&1)"; then
    echo "$list" >&2
    failed+=("$pkg (does not build)")
    continue
  fi
  for target in $(printf '%s\n' "$list" | grep -E '^Fuzz[A-Za-z0-9_]*$'); do
    echo "== fuzz $pkg $target ($fuzztime)"
    ran=$((ran + 1))
    log="$(mktemp)"
    if ! go -C "$pkg" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" . 2>&1 | tee "$log"; then
      # A slow target can still be running an input when -fuzztime ends;
      # go test then reports "context deadline exceeded" with no failing
      # input. Only a crash (which go test saves as a failing input) or a
      # build failure counts.
      if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
        echo "== $target: stopped at the time limit, no failing input"
      else
        failed+=("$pkg $target")
      fi
    fi
    rm -f "$log"
  done
done

echo "== fuzzed $ran targets for $fuzztime each"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
