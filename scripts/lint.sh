#!/usr/bin/env bash
# make lint: gofmt, go vet, staticcheck and errcheck over the main module and the Go SDK's
# module, then the rule errcheck cannot see: a statement that discards an error outright
# (`_ = f()`, `_, _ = f()`) outside tests says why on its line or the line above.
# STATICCHECK and ERRCHECK name the binaries (the Makefile installs them into ./bin).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
STATICCHECK=${STATICCHECK:-$root/bin/staticcheck}
ERRCHECK=${ERRCHECK:-$root/bin/errcheck}
GO=${GO:-go}
excludes=$root/scripts/errcheck-excludes.txt
status=0

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt -l: these files need gofmt -w:"; echo "$unformatted"; status=1
fi

# uncommented FILE...: the errcheck -blank reports (FILE:LINE:COL: ...) that are a discarding
# statement without a comment on its line or the line above.
uncommented() {
  local loc file line text prev
  while IFS= read -r loc; do
    file=${loc%%:*}; line=${loc#*:}; line=${line%%:*}
    text=$(sed -n "${line}p" "$file")
    [[ $text =~ ^[[:space:]]*(_,[[:space:]]*)*_[[:space:]]=[[:space:]] || $text =~ \{[[:space:]]_[[:space:]]=[[:space:]] ]] || continue
    prev=$(sed -n "$((line - 1))p" "$file")
    [[ $text == *//* || $prev =~ ^[[:space:]]*// ]] && continue
    echo "$file:$line: a discarded error needs a comment saying why it is safe: ${text#"${text%%[![:space:]]*}"}"
  done
}

# Each step's failure is counted (a subshell on the left of || would run without set -e).
for mod in . sdk; do
  pushd "$mod" >/dev/null
  $GO vet ./... || status=1
  "$STATICCHECK" ./... || status=1
  "$ERRCHECK" -ignoretests -exclude "$excludes" ./... || status=1
  # errcheck -blank exits 1 on any blank at all; the run above already failed on real errors.
  missing=$({ "$ERRCHECK" -blank -ignoretests -exclude "$excludes" ./... || true; } | uncommented)
  if [ -n "$missing" ]; then echo "$missing"; status=1; fi
  popd >/dev/null
done
exit $status
