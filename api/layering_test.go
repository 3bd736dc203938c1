package api_test

import (
	"os"
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
