package console

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/changes"
)

// changeViews puts the pending requests oldest first and keeps the newest recentDecisions
// decided ones, names proposer and decider, and marks p's own requests (by key or name).
func TestChangeViews(t *testing.T) {
	names := map[string]string{"key_a": "Ana", "key_b": "Bo"}
	person := func(id string) string {
		if n := names[id]; n != "" {
			return n
		}
		return id
	}
	b := "key_b"
	list := []changes.Change{ // newest first, as changes.List gives them
		{ID: "c9", Status: changes.Pending, ProposedBy: "key_a"},
		{ID: "c8", Status: changes.Applied, ProposedBy: "key_b", DecidedBy: &b},
		{ID: "c7", Status: changes.Pending, ProposedBy: "key_x"},
		{ID: "c6", Status: changes.Rejected, ProposedBy: "key_a"},
		{ID: "c5", Status: changes.Stale, ProposedBy: "key_a"},
		{ID: "c4", Status: changes.Applied, ProposedBy: "key_a"},
		{ID: "c3", Status: changes.Applied, ProposedBy: "key_a"},
		{ID: "c2", Status: changes.Applied, ProposedBy: "key_a"},
		{ID: "c1", Status: changes.Pending, ProposedBy: "key_b"},
	}
	pending, decided := changeViews(list, auth.Principal{KeyID: "key_z", Name: " bo "}, person)
	ids := func(vs []changeView) (out []string) {
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	require.Equal(t, []string{"c1", "c7", "c9"}, ids(pending))
	require.Equal(t, []string{"c8", "c6", "c5", "c4", "c3"}, ids(decided))
	require.Equal(t, "Bo", pending[0].Proposer)
	require.True(t, pending[0].Own, "same name as the proposer's key")
	require.Equal(t, "key_x", pending[1].Proposer)
	require.False(t, pending[1].Own)
	require.Equal(t, "Bo", decided[0].Decider)
	require.Empty(t, decided[1].Decider)

	pending, _ = changeViews(list, auth.Principal{KeyID: "key_x"}, person)
	require.True(t, pending[1].Own, "same key")
	require.False(t, pending[0].Own, "no name: the key alone decides")
}
