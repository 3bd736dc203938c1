package proposals_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/proposals"
)

// An approval crosses from proposals into notes twice (issue 30 §2; the list is in
// internal/notes/proposed.go's comment): approvalContent calls notes.Service.CheckApproval
// (edits, validation, gate) and approve calls notes.Service.InsertApproved (the note, inside
// the approval's transaction); every other row it touches is proposals' own or
// internal/noterows'. No other function of the package makes either call, and the functions
// an approval runs through, directly or through the workflow, reach notes only through those
// two (and Stored, a repeated approval's answer, which writes nothing).
func TestApprovalSeam(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	calls := notesCalls(t, files...)
	require.Equal(t, []string{"CheckApproval"}, calls["approvalContent"])
	require.Equal(t, []string{"InsertApproved"}, calls["approve"])
	for fn, cs := range calls {
		if fn == "approvalContent" || fn == "approve" {
			continue
		}
		require.NotContains(t, cs, "CheckApproval", "%s: an approval checks its content in approvalContent only", fn)
		require.NotContains(t, cs, "InsertApproved", "%s: an approval writes its note in approve only", fn)
	}
	for _, fn := range []string{"Decide", "decideDirectly", "approveDirectly", "stage", "decided", "staged", "ApplyApproval", "refuse"} {
		for _, c := range calls[fn] {
			require.Equal(t, "Stored", c, "%s calls notes.%s: an approval goes through approvalContent and approve only", fn, c)
		}
	}
}

// notesCalls maps each function of files to the methods it calls on s.Notes, in order.
func notesCalls(t *testing.T, files ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fs := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fs, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Notes" {
					if id, ok := inner.X.(*ast.Ident); ok && id.Name == "s" {
						out[fd.Name.Name] = append(out[fd.Name.Name], sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	return out
}

// One proposal vocabulary (issue 30 §2): proposals names the statuses and decisions
// (StatusPending, DecisionApprove, ...; the status strings are noterows.Proposal*, beside the
// row); the packages above it name them there and declare no constant or variable of their
// own for them, neither an alias (OutcomePending = proposals.StatusPending) nor a second
// spelling of the string.
func TestOneStatusVocabulary(t *testing.T) {
	words := map[string]bool{}
	for _, s := range append(slices.Clone(proposals.Statuses), proposals.DecisionApprove, proposals.DecisionReject) {
		words[strconv.Quote(s)] = true
	}
	fs := token.NewFileSet()
	for _, dir := range []string{"../../activities", "../../workflows", "../../api", "../../api/console"} {
		pkgs, err := parser.ParseDir(fs, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		require.NoError(t, err)
		require.NotEmpty(t, pkgs, dir)
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
						continue
					}
					for _, spec := range g.Specs {
						for _, v := range spec.(*ast.ValueSpec).Values {
							switch v := v.(type) {
							case *ast.SelectorExpr:
								if x, ok := v.X.(*ast.Ident); ok && (x.Name == "proposals" || x.Name == "noterows") &&
									(strings.HasPrefix(v.Sel.Name, "Status") || strings.HasPrefix(v.Sel.Name, "Decision") || strings.HasPrefix(v.Sel.Name, "Proposal")) {
									t.Errorf("%s: %s.%s is aliased: name it where proposals defines it", name, x.Name, v.Sel.Name)
								}
							case *ast.BasicLit:
								if words[v.Value] {
									t.Errorf("%s: %s is spelled again: use proposals' name for it", name, v.Value)
								}
							}
						}
					}
				}
			}
		}
	}
}
