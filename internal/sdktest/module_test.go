package sdktest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sdkModule is the Go SDK's module path.
const sdkModule = "github.com/agentmemory/agentmemory/sdk"

// providerSDKs are the only modules sdk/go.mod may require directly: the official OpenAI and
// Anthropic Go SDKs, imported by sdk/tools/openaitools and sdk/tools/anthropictools alone
// (issue 28), and the Go team's golang.org/x/mod, whose sumdb/note and sumdb/tlog the
// receipt log signs and proves in, imported by sdk/receiptlog alone (issue 32).
var providerSDKs = map[string]bool{
	"github.com/openai/openai-go/v3": true, "github.com/anthropics/anthropic-sdk-go/v2": true,
	"golang.org/x/mod": true,
}

// The Go SDK is importable on its own: sdk/go.mod is its own module, requires directly only
// the two provider SDKs and golang.org/x/mod (providerSDKs) and replaces nothing, and the client (package sdk) and the tool kit
// (sdk/tools) import the standard library and the SDK's own packages only, so an agent's
// dependency graph holds no gin, Temporal, bun or Kafka (issue 13), and a program that does
// not import an adapter never downloads its provider's SDK (pruned module graphs).
func TestSDKIsAStandardLibraryModule(t *testing.T) {
	dir := filepath.Join("..", "..", "sdk")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(mod), "module "+sdkModule+"\n")
	require.NotContains(t, string(mod), "replace")
	direct := regexp.MustCompile(`(?m)^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/\S+) v\S+\s*$`)
	for _, m := range direct.FindAllStringSubmatch(string(mod), -1) {
		require.True(t, providerSDKs[m[1]], "sdk/go.mod requires %s directly: only the provider SDKs may be", m[1])
	}

	for _, pkg := range []string{".", "tools"} {
		files, err := filepath.Glob(filepath.Join(dir, pkg, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		fset := token.NewFileSet()
		for _, f := range files {
			parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range parsed.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				if path == sdkModule || strings.HasPrefix(path, sdkModule+"/") {
					continue // the SDK's own packages (its tests' harness, the tool kit)
				}
				first, _, _ := strings.Cut(path, "/")
				require.NotContains(t, first, ".", "%s imports %s: sdk and sdk/tools import the standard library only", f, path)
			}
		}
	}
}
