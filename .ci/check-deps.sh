#!/usr/bin/env bash
# A program that imports govram gets only what the library needs: builds a
# throwaway consumer of collections (and vmem) against this working tree and
# fails if `go list -m all` names any module beyond the allowed ones (the
# benchmarks program's plotting and comparison libraries live in their own
# module, benchmarks/go.mod).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/go.mod" <<MOD
module example.com/consumer

go 1.26.0

require github.com/govram/govram v0.0.0

replace github.com/govram/govram => $root
MOD
cat >"$tmp/main.go" <<'SRC'
package main

import (
	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

var _ = collections.NewMap[uint64, uint64]
var _ = vmem.Open

func main() {}
SRC
cd "$tmp"
go mod tidy >/dev/null
go build -o /dev/null .
mods="$(go list -m -f '{{.Path}}' all | grep -v -x -e example.com/consumer -e github.com/govram/govram)"
echo "$mods" | sed 's/^/consumer needs /'
# google/btree: required by the collections tests, so listed (never linked).
extra="$(echo "$mods" | grep -v -x -e github.com/goki/vulkan -e golang.org/x/sys -e github.com/google/btree || true)"
if [ -n "$extra" ]; then
  echo "unexpected modules in a consumer's graph:" >&2
  echo "$extra" >&2
  exit 1
fi
