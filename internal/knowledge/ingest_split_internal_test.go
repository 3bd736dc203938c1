package knowledge

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/models"
)

// Ingest's split of the other ready versions of a source: older ones are superseded by the
// new document, a newer one supersedes it.
func TestSplitVersions(t *testing.T) {
	docs := func(ids ...string) []models.KnowledgeDocument {
		out := make([]models.KnowledgeDocument, len(ids))
		for i, id := range ids {
			out[i] = models.KnowledgeDocument{ID: id}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		others []models.KnowledgeDocument
		older  []string
		newer  string
	}{
		{"none", nil, nil, ""},
		{"older only, in order", docs("d1", "d3"), []string{"d1", "d3"}, ""},
		{"a newer one", docs("d9"), nil, "d9"},
		{"both", docs("d1", "d9", "d2"), []string{"d1", "d2"}, "d9"},
		{"several newer: the last", docs("d8", "d9"), nil, "d9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			older, newer := splitVersions("d5", tc.others)
			require.Equal(t, tc.older, older)
			require.Equal(t, tc.newer, newer)
		})
	}
}
