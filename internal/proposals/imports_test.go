package proposals_test

import (
	"go/build"
	"strings"
	"testing"
)

const module = "github.com/agentmemory/agentmemory"

// The README's import rules for this path (issue 13 §1, issue 30 §2): internal/proposals
// imports internal/notes, never the reverse, internal/noterows imports neither, and none reaches gin, Temporal, api, workflows or
// activities, directly or through another package of the module.
func TestImportRules(t *testing.T) {
	forbidden := []string{"github.com/gin-gonic/", "go.temporal.io/", module + "/api", module + "/workflows", module + "/activities"}
	for _, tc := range []struct {
		pkg  string
		also []string
	}{
		{module + "/internal/proposals", nil},
		{module + "/internal/notes", []string{module + "/internal/proposals"}},
		// The row-level primitives both share sit below both (issue 30 §2).
		{module + "/internal/noterows", []string{module + "/internal/proposals", module + "/internal/notes"}},
	} {
		seen := map[string]bool{}
		var walk func(path, via string)
		walk = func(path, via string) {
			if seen[path] {
				return
			}
			seen[path] = true
			p, err := build.Import(path, ".", 0)
			if err != nil {
				t.Fatalf("import %s: %v", path, err)
			}
			for _, imp := range p.Imports {
				for _, f := range append(forbidden, tc.also...) {
					if imp == f || strings.HasPrefix(imp, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f)) {
						t.Errorf("%s imports %s (through %s)", tc.pkg, imp, via+path)
					}
				}
				if strings.HasPrefix(imp, module+"/") {
					walk(imp, via+path+" -> ")
				}
			}
		}
		walk(tc.pkg, "")
	}
}
