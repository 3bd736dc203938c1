package notes

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/subjects"
)

// rowsEnv is a space with agent memory on, a Service over it and one agent's principal.
func rowsEnv(t *testing.T, d *bun.DB) (*Service, auth.Principal, string) {
	ctx := context.Background()
	now := time.Now()
	spaceID, admin, err := spaces.CreateWith(ctx, d, "rows", now, spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	adminP, err := auth.Authenticate(ctx, d, admin)
	require.NoError(t, err)
	docs := spaces.Documents{DB: d}
	_, _, err = docs.Put(ctx, d, adminP, "features", []byte(`{"agent_memory": {"enabled": true}}`), now)
	require.NoError(t, err)
	h := keyed.New([]byte("block-rows-test-secret-0123456789abcdef"))
	ks, err := keystore.OpenFile(filepath.Join(t.TempDir(), "keys.json"), h.Key("subject-keys"))
	require.NoError(t, err)
	s := &Service{DB: d, Docs: docs, Hasher: h, Subjects: &subjects.Service{DB: d, Docs: docs, Hasher: h, Keys: ks, Now: time.Now}}
	_, key, err := spaces.MintKey(ctx, d, adminP, auth.KeySpec{Kind: "agent", Agent: "tips", Vendor: "acme", Scopes: []string{auth.ScopeAgentMemory, auth.ScopeAgentMemoryWrite}}, now)
	require.NoError(t, err)
	p, err := auth.Authenticate(ctx, d, key)
	require.NoError(t, err)
	return s, p, spaceID
}

// Issue 27: after a note write, the next block is built loading only the new note's row (the
// others are kept), and it is byte-identical, ETag included, to the block built from a cold
// cache over the same notes; a retire between the ids and the rows falls back to the store;
// an erasure in this process forgets the rows with the blocks (MS-4).
func TestBlockRowsIncremental(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p, spaceID := rowsEnv(t, d)
		var ids []string
		write := func(i int) string {
			r, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: fmt.Sprintf("Step %d", i),
				Body: fmt.Sprintf("Validate purchase %d first.", i), Tags: []string{fmt.Sprintf("t%d", i%3)}})
			require.NoError(t, err)
			ids = append(ids, r.Note.ID)
			return r.Note.ID
		}
		for i := range 12 {
			write(i)
		}
		req := BlockRequest{MaxTokens: 2000, Tags: []string{"t1"}}
		_, err := s.Block(ctx, p, req)
		require.NoError(t, err)
		erased, err := spaces.Revision(ctx, d, spaceID, spaces.RevisionNotesErased)
		require.NoError(t, err)

		fresh := write(12)
		v, err := s.reader(ctx, p, "", false)
		require.NoError(t, err)
		sorted := slices.Clone(ids)
		_, missing := cachedRows(spaceID, erased, sortedIDs(sorted))
		require.Equal(t, []string{fresh}, missing, "only the new note's row is not kept")
		warm, err := s.Block(ctx, p, req)
		require.NoError(t, err)
		require.Contains(t, warm.NoteIDs, fresh)
		forgetBlocks()
		s.answers.forget()
		cold, err := s.Block(ctx, p, req)
		require.NoError(t, err)
		require.Equal(t, string(cold.Body()), string(warm.Body()), "a block built from kept rows is the one built from the store")
		require.Equal(t, cold.ETag, warm.ETag)

		// A note retired after the ids were read: its row is not loaded, the block is built
		// from the store without it.
		forgetBlocks()
		_, err = s.Retire(ctx, p, fresh)
		require.NoError(t, err)
		rows, ok, err := s.loadBlockRows(ctx, v, sortedIDs(sorted), time.Now(), erased)
		require.NoError(t, err)
		require.False(t, ok, "a retired id is not deliverable: got %d rows", len(rows))
		b, err := s.buildBlock(ctx, v, req, time.Now(), erased, sortedIDs(sorted))
		require.NoError(t, err)
		require.NotContains(t, b.NoteIDs, fresh)
		require.NotContains(t, b.Text, "Step 12")

		require.True(t, cachesText(spaceID, "Validate purchase 3"))
		_, err = s.EraseSource(ctx, d, spaceID, "tips")
		require.NoError(t, err)
		require.False(t, cachesText(spaceID, "Validate purchase 3"), "an erased note's row stays cached")
	})
}

func sortedIDs(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
