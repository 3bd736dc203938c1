package changes_test

import (
	"go/build"
	"strings"
	"testing"
)

// deps returns every package of the module that pkg imports, directly or not, with the
// standard and third-party imports seen on the way.
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	const module = "github.com/agentmemory/agentmemory/"
	out := map[string]bool{}
	queue := []string{pkg}
	for len(queue) > 0 {
		p, err := build.Import(queue[0], ".", 0)
		queue = queue[1:]
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		for _, imp := range p.Imports {
			if out[imp] {
				continue
			}
			out[imp] = true
			if strings.HasPrefix(imp, module) {
				queue = append(queue, imp)
			}
		}
	}
	return out
}

// The README's import rules: internal/changes imports internal/spaces, never the reverse, and
// reaches neither gin, Temporal, api, workflows nor activities.
func TestImportRules(t *testing.T) {
	const module = "github.com/agentmemory/agentmemory/"
	for imp := range deps(t, module+"internal/changes") {
		for _, bad := range []string{"github.com/gin-gonic/", "go.temporal.io/", module + "api", module + "workflows", module + "activities"} {
			if strings.HasPrefix(imp, bad) {
				t.Errorf("internal/changes reaches %s", imp)
			}
		}
	}
	if deps(t, module+"internal/spaces")[module+"internal/changes"] {
		t.Error("internal/spaces reaches internal/changes")
	}
}
