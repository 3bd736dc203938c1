package state_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/state"
)

// TestConversationErasureLeavesNothingInMemory (adversarial): a conversation's erasure deletes
// its working-memory state; the replica that wrote it must not keep the state's body (the
// customer's conversation data, in clear) in its lastSeen memory afterwards.
func TestConversationErasureLeavesNothingInMemory(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := newService(t, d, plainMasker{})
		_, err := s.Write(ctx, p, "", write(`{"step": "customer said: my card ends 4242"}`))
		require.NoError(t, err)
		require.NotEmpty(t, s.RememberedBodies(p.SpaceID), "precondition: the writer remembers the row")

		err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			reach, err := state.Eraser{}.EraseSubject(ctx, tx, erasure.Target{SpaceID: p.SpaceID, Kind: erasure.Conversation,
				ScopeHash: s.Hasher.Hash(p.SpaceID, "scope:conversation", "c-1"), ConversationID: "c-1"})
			require.Equal(t, 1, reach.Count())
			return err
		})
		require.NoError(t, err)
		got, err := s.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.NoError(t, err)
		require.Equal(t, int64(0), got.Version, "the state is erased in the store")
		require.Empty(t, s.RememberedBodies(p.SpaceID), "the erased conversation's state is still held in memory")
	})
}
