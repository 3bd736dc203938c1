// Package knowledgetest holds the ABCD retrieval data shared by the knowledge tests and
// `make bench`: the 55 written procedures of testdata/abcd/guidelines.json as documents, and
// customer questions each answered by one procedure.
package knowledgetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Procedure is one written ABCD procedure as a knowledge document: Title "Flow: Subflow",
// URI abcd://guidelines/<flow>/<subflow> (spaces as dashes), Text in Markdown (a heading,
// the flow's description, the numbered actions with their sub-steps).
type Procedure struct{ Title, URI, Text string }

// Question is a customer question (from the ABCD sample conversations' flows) and the title
// of the procedure that answers it.
type Question struct{ Query, Want string }

// Questions are the customer questions of the retrieval figures: recall@5 is the share of
// them whose procedure is among the first 5 chunks retrieved.
var Questions = []Question{
	{"I forgot my password and cannot log in to my account", "Account Access: Recover Password"},
	{"The website is really slow, pages take forever to load", "Troubleshoot Site: Website Too Slow"},
	{"My promo code is not working, it says the code is invalid", "Purchase Dispute: Promo Code Invalid"},
	{"I need to change the address on my account, I moved", "Manage Account: Manage Change Address"},
	{"Where is my package? I want to know the shipping status of my order", "Shipping Issue: Shipping Status"},
	{"I was charged a mystery fee on my order that I do not recognise", "Order Issue: Status Mystery Fee"},
	{"My two-factor authentication code is not arriving, can you reset it?", "Account Access: Reset Two-Factor Auth"},
	{"I got the wrong size and want to return the jeans", "Product Defect: Return Due to Size"},
}

// Hit reports whether want is among titles (the titles of the chunks retrieved, in rank order).
func Hit(titles []string, want string) bool { return slices.Contains(titles, want) }

// GuidelinesPath returns the path of guidelines.json: testdata/abcd/ under the repository
// root (the directory holding go.mod, found upwards from the working directory).
func GuidelinesPath(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the working directory")
		dir = parent
	}
	return filepath.Join(dir, "testdata", "abcd", "guidelines.json")
}

// Procedures reads the 55 procedures, sorted by URI.
func Procedures(t testing.TB) []Procedure {
	t.Helper()
	raw, err := os.ReadFile(GuidelinesPath(t))
	require.NoError(t, err)
	var flows map[string]struct {
		Description string `json:"description"`
		Subflows    map[string]struct {
			Actions []struct {
				Button  string   `json:"button"`
				Text    string   `json:"text"`
				Subtext []string `json:"subtext"`
			} `json:"actions"`
		} `json:"subflows"`
	}
	require.NoError(t, json.Unmarshal(raw, &flows))
	var out []Procedure
	for flow, f := range flows {
		for sub, s := range f.Subflows {
			var b strings.Builder
			fmt.Fprintf(&b, "# %s: %s\n\n%s.\n\n", flow, sub, f.Description)
			for i, a := range s.Actions {
				fmt.Fprintf(&b, "%d. %s\n", i+1, a.Text)
				for _, st := range a.Subtext {
					fmt.Fprintf(&b, "   - %s\n", st)
				}
			}
			out = append(out, Procedure{Title: flow + ": " + sub, URI: "abcd://guidelines/" + strings.ReplaceAll(flow+"/"+sub, " ", "-"), Text: b.String()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out
}
