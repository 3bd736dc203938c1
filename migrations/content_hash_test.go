package migrations_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"agentmemory/internal/notes"
	"agentmemory/migrations"
)

// The migration's frozen hash and notes.ContentHash agree, so backfilled rows are found as
// duplicates by new writes.
func TestNoteContentHashV1MatchesNotes(t *testing.T) {
	cases := []struct {
		name                   string
		kind, vis, title, body string
		tags                   []string
	}{
		{name: "plain", kind: "procedure", vis: "source", title: "Refunds", body: "Ask for the order first.", tags: []string{"refund"}},
		{name: "spaces and order", kind: "pitfall", vis: "", title: "  Two\tspaces ", body: "line one\n\n line two ", tags: []string{"b", "a"}},
		{name: "decomposed accent", kind: "tool_note", vis: "space", title: "Cafe\u0301", body: "x", tags: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, notes.ContentHash(c.kind, c.vis, c.title, c.body, c.tags),
				migrations.NoteContentHashV1(c.kind, c.vis, c.title, c.body, c.tags))
		})
	}
}
