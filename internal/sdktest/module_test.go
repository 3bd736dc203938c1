package sdktest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Go SDK is importable on its own: sdk/go.mod is its own module and requires nothing, and
// its sources import the standard library only, so an agent's dependency graph holds no gin,
// Temporal, bun or Kafka (issue 13).
func TestSDKIsAStandardLibraryModule(t *testing.T) {
	dir := filepath.Join("..", "..", "sdk")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(mod), "module github.com/agentmemory/agentmemory/sdk\n")
	require.NotContains(t, string(mod), "require", "sdk/go.mod must require no module")
	require.NotContains(t, string(mod), "replace")

	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fset := token.NewFileSet()
	for _, f := range files {
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			first, _, _ := strings.Cut(path, "/")
			if path == "github.com/agentmemory/agentmemory/sdk" {
				continue // the SDK's own external tests
			}
			require.NotContains(t, first, ".", "%s imports %s: the SDK imports the standard library only", f, path)
		}
	}
}
