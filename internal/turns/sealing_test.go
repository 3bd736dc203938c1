package turns_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
)

func storedTurns(t *testing.T, e *apptest.Env, scopeHash string) []models.Turn {
	t.Helper()
	var rows []models.Turn
	require.NoError(t, e.DB.NewSelect().Model(&rows).Where("space_id = ? AND scope_hash = ?", e.SpaceID, scopeHash).Order("id").Scan(context.Background()))
	return rows
}

// ER-1: a turn of a conversation linked to no profile is sealed under the conversation's key
// ("cv_" + scope hash), never stored in clear; linking it to a profile moves it under the
// profile's key; erasing the conversation destroys the key, so the rows of a backup taken
// before the erasure, put back, no longer open.
func TestUnlinkedTurnsSealedUnderConversationKey(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		integ := e.PersonKey("crm", "integration")
		in := []turns.Input{
			{Scope: turns.Scope{ConversationID: "c-unlinked"}, Speaker: "customer", Text: "my parcel 7731 never came"},
			{Scope: turns.Scope{ConversationID: "c-unlinked"}, Speaker: "agent", Text: "let me look at parcel 7731"},
		}
		ingest(t, e, integ, in)
		hash := e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", "c-unlinked")
		backup := storedTurns(t, e, hash)
		require.Len(t, backup, 2)
		for _, r := range backup {
			require.Equal(t, turns.ConversationKeyID(hash), r.SealedKey)
			require.Empty(t, r.ProfileID)
			require.False(t, bytes.Contains(r.Text, []byte("7731")), "an unlinked turn is stored in clear")
		}
		got := recent(t, e, "conversation", "c-unlinked")
		require.Len(t, got, 2)
		require.Contains(t, got[0].Text, "7731")

		inTx(t, e, func(tx bun.Tx) error {
			_, err := e.Deps.Turns.EraseConversation(ctx, tx, e.SpaceID, "c-unlinked")
			return err
		})
		_, err := e.Keys.DataKey(ctx, turns.ConversationKeyID(hash), false)
		require.ErrorIs(t, err, keystore.ErrNoKey)
		_, err = e.DB.NewInsert().Model(&backup).Exec(ctx) // the backup's rows, restored
		require.NoError(t, err)
		require.Empty(t, recent(t, e, "conversation", "c-unlinked"), "a restored turn opened after its conversation was erased")
	})
}

// Linking a conversation to a profile moves its conversation-sealed turns under the
// profile's key; a legacy turn stored in clear is re-sealed by SealLegacy under its
// conversation's key, and reads the same.
func TestLinkAndLegacyReseal(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		integ := e.PersonKey("crm", "integration")
		ana := newPerson(t, e, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321")
		ingest(t, e, integ, []turns.Input{{Scope: turns.Scope{ConversationID: "c-1"}, Speaker: "customer", Text: "parcel 7731"}})
		link(t, e, integ, map[string]any{"conversation_id": "c-1"}, "email:"+ana.email, "confirmed")
		rows := storedTurns(t, e, e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", "c-1"))
		require.Len(t, rows, 1)
		require.Equal(t, ana.profileID, rows[0].ProfileID)
		require.Empty(t, rows[0].SealedKey)
		require.Contains(t, recent(t, e, "conversation", "c-1")[0].Text, "7731")

		legacyHash := e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", "c-old")
		legacy := models.Turn{ID: "turn_legacy", SpaceID: e.SpaceID, ScopeKind: "conversation", ScopeHash: legacyHash,
			Speaker: "customer", Text: []byte("old parcel 4410"), At: rows[0].At, CreatedAt: rows[0].CreatedAt}
		_, err := e.DB.NewInsert().Model(&legacy).Exec(ctx)
		require.NoError(t, err)
		require.Equal(t, "old parcel 4410", recent(t, e, "conversation", "c-old")[0].Text, "a legacy clear turn still reads")
		n, err := e.Deps.Turns.SealLegacy(ctx, e.DB, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		after := storedTurns(t, e, legacyHash)
		require.Equal(t, turns.ConversationKeyID(legacyHash), after[0].SealedKey)
		require.False(t, bytes.Contains(after[0].Text, []byte("4410")))
		require.Equal(t, "old parcel 4410", recent(t, e, "conversation", "c-old")[0].Text)
		n, err = e.Deps.Turns.SealLegacy(ctx, e.DB, 0)
		require.NoError(t, err)
		require.Zero(t, n, "nothing left to re-seal")
	})
}
