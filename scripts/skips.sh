#!/usr/bin/env bash
# scripts/skips.sh reset|summary: the capability skips of a `make test` run. Tests that skip
# because a tool or an extension is missing here (internal/skips, the SDKs' conformance
# suites) append "test<TAB>reason" lines to $AGENTMEMORY_SKIP_LOG; `reset` empties the log
# before the run and `summary` prints one line at its end: how many were skipped, each reason
# with its count and its first test.
set -euo pipefail
log=${AGENTMEMORY_SKIP_LOG:?AGENTMEMORY_SKIP_LOG names the skip log}
case ${1:-} in
reset) : >"$log" ;;
summary)
  if [ ! -s "$log" ]; then
    echo "capability skips: none"
    exit 0
  fi
  awk -F'\t' '
    !($2 in n) { order[++k] = $2; first[$2] = $1 }
    { n[$2]++; total++ }
    END {
      line = "capability skips: " total " test" (total == 1 ? "" : "s") " skipped:"
      for (i = 1; i <= k; i++) {
        r = order[i]
        line = line (i > 1 ? ";" : "") " " r " (" n[r] "x, e.g. " first[r] ")"
      }
      print line
    }' "$log"
  ;;
*) echo "usage: $0 reset|summary" >&2; exit 2 ;;
esac
