package api_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// No handler opens a transaction (issue 13 §3): a use case that spans concepts commits once
// inside the domain package that owns it (spaces.MintKey, proposals.Decide, ...), so the API
// layer only binds, calls and answers.
func TestNoHandlerOpensATransaction(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	tx := regexp.MustCompile(`\.(RunInTx|BeginTx|Begin)\(`)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		require.False(t, tx.Match(src), "%s opens a transaction: move the use case into its domain package", f)
		checked++
	}
	require.Greater(t, checked, 10, "the api sources were not found")
}

// Issue 29 §4: compliance sits above the stores it erases: it imports them, never the
// reverse. The stores implement erasure.Eraser (types owned by internal/erasure), so none of
// turns, notes and proposals depends on internal/compliance, directly or not.
func TestStoresDoNotImportCompliance(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../internal/turns", "../internal/notes", "../internal/proposals",
		"../internal/state", "../internal/subjects", "../internal/knowledge", "../internal/events").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/agentmemory/agentmemory/internal/erasure", "the listing is of our packages")
	require.NotContains(t, deps, "github.com/agentmemory/agentmemory/internal/compliance")
}
