#!/usr/bin/env bash
# sdk-from-clone.sh: the Go SDK used from a clone, as the README says (issue 27). The module
# github.com/agentmemory/agentmemory/sdk is not published, so `go get` fails; this script makes
# a scratch module in a temporary directory, points it at this clone's sdk/ with a replace
# directive (and, separately, with go work use), and builds the README's quick start program,
# extracted verbatim from between the sdk-quickstart markers. It needs no network: package sdk
# imports only the standard library (the provider SDKs the module requires are imported only by
# sdk/tools/openaitools and sdk/tools/anthropictools, golang.org/x/mod only by sdk/receiptlog,
# and pruned module graphs never download them for a program that does not import those). Exit status non-zero on any failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
go=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The program: the lines between the README's markers, without the ```go fence.
awk '/<!-- sdk-quickstart:begin -->/{on=1; next} /<!-- sdk-quickstart:end -->/{on=0} on' "$root/README.md" \
  | sed '/^```/d' >"$tmp/main.go"
grep -q '^package main$' "$tmp/main.go" || { echo "sdk-from-clone: no quick start between the README's sdk-quickstart markers" >&2; exit 1; }
grep -q '"github.com/agentmemory/agentmemory/sdk"' "$tmp/main.go" || { echo "sdk-from-clone: the quick start does not import the SDK" >&2; exit 1; }

export GOWORK=off GOFLAGS=-mod=mod GOPROXY=off

# 1. A replace directive, exactly the README's go mod edit line.
mkdir "$tmp/replace"
cp "$tmp/main.go" "$tmp/replace/"
(
  cd "$tmp/replace"
  "$go" mod init example.com/my-agent >/dev/null 2>&1
  "$go" mod edit -require=github.com/agentmemory/agentmemory/sdk@v0.0.0 \
    -replace=github.com/agentmemory/agentmemory/sdk="$root/sdk"
  "$go" vet .
  "$go" build -o agent .
  # Run it: nothing (or something else) listens at the quick start's address, so it must
  # fail with the SDK's error (unreachable, or a 401 for the made-up key), never panic.
  if out=$(AGENTMEMORY_KEY=am_none ./agent 2>&1); then
    echo "sdk-from-clone: the quick start succeeded with a made-up key: $out" >&2; exit 1
  fi
  case "$out" in
    *panic*|*"fatal error"*) echo "sdk-from-clone: the quick start crashed: $out" >&2; exit 1 ;;
    *agentmemory:*) ;;
    *) echo "sdk-from-clone: the quick start failed without the SDK's error: $out" >&2; exit 1 ;;
  esac
)

# 2. go work use, the README's other way.
mkdir "$tmp/work"
cp "$tmp/main.go" "$tmp/work/"
(
  cd "$tmp/work"
  "$go" mod init example.com/my-agent >/dev/null 2>&1
  "$go" mod edit -require=github.com/agentmemory/agentmemory/sdk@v0.0.0
  "$go" work init . "$root/sdk"
  GOWORK="$tmp/work/go.work" GOFLAGS= "$go" build -o agent .
)
echo "sdk-from-clone: the README's quick start builds against $root/sdk (replace and go work use)"
