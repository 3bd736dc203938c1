package notes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// writeIn's plan: what a write stores (note or proposal) and the receipt it leaves.
func TestWritePlan(t *testing.T) {
	agent := actor{p: auth.Principal{Kind: auth.KindAgent, KeyID: "key_a", Agent: "bot"}, sourceID: "bot"}
	person := actor{p: auth.Principal{Kind: auth.KindPerson, KeyID: "key_p"}, sourceID: "bot"}
	var humanOnly spaces.Features
	humanOnly.AgentMemory.Writes = "human_only"
	prev := &models.Note{ID: "note_prev"}
	for _, tc := range []struct {
		name   string
		w      write
		prefix string // of the planned id
		action string
		prev   bool // the receipt names the previous version after the id
		origin string
		review bool
	}{
		{"agent's new note", write{a: agent}, "note_", "note.create", false, OriginAgent, false},
		{"agent's edit", write{a: agent, prev: prev}, "note_", "note.version", true, OriginAgent, false},
		{"human_only: a proposal", write{a: agent, f: humanOnly}, "prop_", "proposal.create", false, OriginAgent, false},
		{"human_only edit: a proposal naming the version", write{a: agent, f: humanOnly, prev: prev}, "prop_", "proposal.create", true, OriginAgent, false},
		{"gate review: a proposal with the kinds", write{a: agent, review: []string{"name"}}, "prop_", "proposal.create", false, OriginAgent, true},
		{"a person's write under human_only is stored", write{a: person, f: humanOnly, review: []string{"name"}}, "note_", "note.create", false, OriginHuman, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.c.Kind = KindPitfall
			id, rcpt := tc.w.plan()
			require.True(t, strings.HasPrefix(id, tc.prefix), "id %s", id)
			want := []string{id}
			if tc.prev {
				want = append(want, prev.ID)
			}
			require.Equal(t, receipts.KindAdmin, rcpt.Kind)
			require.Equal(t, tc.action, rcpt.Action)
			require.Equal(t, want, rcpt.ObjectIDs)
			require.Equal(t, tc.w.a.p.KeyID, rcpt.ActorKey)
			require.Equal(t, tc.origin, rcpt.Detail["origin"])
			require.Equal(t, KindPitfall, rcpt.Detail["kind"])
			_, has := rcpt.Detail["gate_review"]
			require.Equal(t, tc.review, has)
		})
	}
}
