package notes

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/models"
)

// sortForBlock: the view's tags in the view's order (earliest view tag wins), then the
// requested tags, then higher version, older, id; without a views document the view's name
// is one more requested tag.
func TestSortForBlock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, version int, age int, tags ...string) models.Note {
		b, err := json.Marshal(tags)
		require.NoError(t, err)
		return models.Note{ID: id, Version: version, CreatedAt: t0.Add(time.Duration(age) * time.Minute), Tags: string(b)}
	}
	rows := []models.Note{
		mk("a", 1, 0),
		mk("b", 1, 1, "refund"),
		mk("c", 1, 2, "billing"),
		mk("d", 1, 3, "refund", "billing"),
		mk("e", 2, 4, "sched"),
		mk("f", 1, 5, "voice"),
		mk("g", 1, 5),
	}
	tests := []struct {
		name string
		req  BlockRequest
		want []string
	}{
		{"spec order only", BlockRequest{}, []string{"e", "a", "b", "c", "d", "f", "g"}},
		{"requested tags", BlockRequest{Tags: []string{"billing"}}, []string{"c", "d", "e", "a", "b", "f", "g"}},
		{"legacy view is a tag", BlockRequest{View: "voice", Tags: []string{"sched"}}, []string{"e", "f", "a", "b", "c", "d", "g"}},
		{"view order", BlockRequest{View: "v", viewDefined: true, viewTags: []string{"billing", "refund"}}, []string{"c", "d", "b", "e", "a", "f", "g"}},
		{"view then tags", BlockRequest{View: "v", viewDefined: true, viewTags: []string{"refund"}, Tags: []string{"voice"}}, []string{"b", "d", "f", "e", "a", "c", "g"}},
		{"defined view name is not a tag", BlockRequest{View: "voice", viewDefined: true, viewTags: []string{"sched"}}, []string{"e", "a", "b", "c", "d", "f", "g"}},
	}
	for _, tc := range tests {
		got := append([]models.Note(nil), rows...)
		sortForBlock(got, tc.req)
		ids := make([]string, len(got))
		for i, r := range got {
			ids[i] = r.ID
		}
		require.Equal(t, tc.want, ids, "%s: got %v, want %v", tc.name, ids, tc.want)
	}
}

// viewKey names a defined view's tags (so the ETag follows the view) and nothing otherwise.
func TestViewKey(t *testing.T) {
	require.Equal(t, "", viewKey(BlockRequest{View: "voice"}))
	a := viewKey(BlockRequest{View: "voice", viewDefined: true, viewTags: []string{"a", "b"}})
	b := viewKey(BlockRequest{View: "voice", viewDefined: true, viewTags: []string{"b", "a"}})
	require.NotEqual(t, a, b)
	require.NotEqual(t, etag(Block{}, BlockRequest{View: "voice", viewDefined: true, viewTags: []string{"a"}}), etag(Block{}, BlockRequest{View: "voice"}))
}
