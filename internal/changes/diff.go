package changes

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Pretty returns text (a JSON document) indented with two spaces and ending in a newline,
// members in the order they are stored; text that is not JSON is returned as it is (with the
// newline).
func Pretty(text string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(text), "", "  "); err != nil {
		return strings.TrimSuffix(text, "\n") + "\n"
	}
	b.WriteByte('\n')
	return b.String()
}

// Diff returns the unified line diff (three lines of context) from the document name at
// version base (oldText) to the proposed one (newText), both shown as Pretty JSON. Its header
// lines are "--- name@vBASE" and "+++ name (proposed)"; the documents being equal, it is "".
func Diff(name string, base int64, oldText, newText string) string {
	out, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(Pretty(oldText)),
		B:        difflib.SplitLines(Pretty(newText)),
		FromFile: name + "@v" + strconv.FormatInt(base, 10),
		ToFile:   name + " (proposed)",
		Context:  3,
	})
	if err != nil {
		return "" // writes to a strings.Builder never fail
	}
	return out
}
