package console_test

import (
	"go/build"
	"strings"
	"testing"
)

// The README's import rule for the Console: api/console imports internal packages, never the
// api package (it reaches the server's write paths through Ops), workflows, activities or
// Temporal.
func TestConsoleImports(t *testing.T) {
	const module = "github.com/agentmemory/agentmemory"
	p, err := build.Import(module+"/api/console", ".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if imp == module+"/api" || strings.HasPrefix(imp, module+"/workflows") || strings.HasPrefix(imp, module+"/activities") || strings.HasPrefix(imp, "go.temporal.io/") {
			t.Errorf("api/console imports %s", imp)
		}
	}
}
