package notes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/notes"
)

// ContentHash reads white space, tag order and Unicode composition as the same note, and
// case, kind, visibility, words and tags as different notes.
func TestContentHashNormalisation(t *testing.T) {
	base := notes.ContentHash("procedure", "source", "Refunds", "Ask for the order.\nThen refund.", []string{"refund", "billing"})
	same := []struct {
		name                   string
		kind, vis, title, body string
		tags                   []string
	}{
		{"white space", "procedure", "source", "  Refunds\t", "Ask  for the order.\n\n  Then refund. ", []string{"refund", "billing"}},
		{"tag order", "procedure", "source", "Refunds", "Ask for the order. Then refund.", []string{"billing", "refund"}},
		{"default visibility", "procedure", "", "Refunds", "Ask for the order.\nThen refund.", []string{"refund", "billing"}},
	}
	for _, c := range same {
		t.Run("same/"+c.name, func(t *testing.T) {
			require.Equal(t, base, notes.ContentHash(c.kind, c.vis, c.title, c.body, c.tags))
		})
	}
	require.Equal(t, notes.ContentHash("tool_note", "source", "Caf\u00e9", "x", nil),
		notes.ContentHash("tool_note", "source", "Cafe\u0301", "x", []string{}), "NFC")
	differ := []struct {
		name                   string
		kind, vis, title, body string
		tags                   []string
	}{
		{"case", "procedure", "source", "refunds", "Ask for the order.\nThen refund.", []string{"refund", "billing"}},
		{"kind", "pitfall", "source", "Refunds", "Ask for the order.\nThen refund.", []string{"refund", "billing"}},
		{"visibility", "procedure", "space", "Refunds", "Ask for the order.\nThen refund.", []string{"refund", "billing"}},
		{"body", "procedure", "source", "Refunds", "Ask for the order.", []string{"refund", "billing"}},
		{"tags", "procedure", "source", "Refunds", "Ask for the order.\nThen refund.", []string{"refund"}},
		{"title joined to body", "procedure", "source", "Refunds Ask", "for the order.\nThen refund.", []string{"refund", "billing"}},
	}
	for _, c := range differ {
		t.Run("differ/"+c.name, func(t *testing.T) {
			require.NotEqual(t, base, notes.ContentHash(c.kind, c.vis, c.title, c.body, c.tags))
		})
	}
}
