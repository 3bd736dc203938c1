package proposals_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"
)

// An approval crosses from proposals into notes twice (issue 30 §2): approvalContent calls
// notes.Service.CheckApproval (edits, validation, gate) and approve calls
// notes.Service.InsertApproved (the note, inside the approval's transaction); every other row
// it touches is proposals' own or internal/noterows'. Decide, approveDirectly, stage and
// ApplyApproval reach notes only through those two functions.
func TestApprovalSeam(t *testing.T) {
	calls := notesCalls(t, "decide.go", "distill.go")
	require.Equal(t, []string{"CheckApproval"}, calls["approvalContent"])
	require.Equal(t, []string{"InsertApproved"}, calls["approve"])
	for _, fn := range []string{"approveDirectly", "stage", "ApplyApproval"} {
		for _, c := range calls[fn] {
			// Stored answers a repeated approval (the proposal is approved already): no write.
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
