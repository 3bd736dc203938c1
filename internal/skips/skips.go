// Package skips records a capability skip: a test skipped because a tool or an extension is
// missing here (the Temporal CLI, pgvector, ip netns), not because -short asked for it. Each
// skip is appended, as one tab-separated line (test name, reason), to the file named by
// AGENTMEMORY_SKIP_LOG when it is set, and `make test` prints one summary line of that file
// at its end (scripts/skips.sh), so a green run cannot hide what it did not test.
package skips

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// LogEnv names the environment variable holding the path of the skip log.
const LogEnv = "AGENTMEMORY_SKIP_LOG"

// Capability records the skip of t for reason (formatted as by fmt.Sprintf) and skips t.
// A skip log that cannot be written fails the test: a skip that goes unrecorded is the very
// thing this package exists to prevent.
func Capability(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if err := record(os.Getenv(LogEnv), t.Name(), reason); err != nil {
		t.Fatalf("skips: record the skip (%s): %v", reason, err)
	}
	t.Skip(reason)
}

// record appends one line "name\treason\n" to path (nothing when path is empty). One write of
// an O_APPEND file: lines of test binaries running side by side do not interleave.
func record(path, name, reason string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(Line(name, reason))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Line is the skip log's line for a test name and a reason: both on one line, tab-separated,
// with tabs and line breaks inside either replaced by spaces.
func Line(name, reason string) string {
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	return clean.Replace(name) + "\t" + clean.Replace(strings.TrimSpace(reason)) + "\n"
}
