package notes

import (
	"context"
	"path/filepath"
	"strings"
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

// Issue 16, MS-4: an agent-note erasure runs in the worker, so an API replica's cached
// blocks are not purged by the erasure's own process. The erasure bumps the space's
// note-erasure revision in its transaction; the replica's next block read of the space finds
// another revision and drops every block it kept for the space, so no erased note's text
// stays in its memory. Here the erasure's transaction runs and this process's own purge is
// undone by re-caching, as if it had run elsewhere.
func TestBlockCacheDropsSpaceAfterErasureElsewhere(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		now := time.Now()
		spaceID, admin, err := spaces.CreateWith(ctx, d, "cache", now, spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		adminP, err := auth.Authenticate(ctx, d, admin)
		require.NoError(t, err)
		docs := spaces.Documents{DB: d}
		_, _, err = docs.Put(ctx, d, adminP, "features", []byte(`{"agent_memory": {"enabled": true}}`), now)
		require.NoError(t, err)
		h := keyed.New([]byte("block-cache-test-secret-0123456789abcdef"))
		ks, err := keystore.OpenFile(filepath.Join(t.TempDir(), "keys.json"), h.Key("subject-keys"))
		require.NoError(t, err)
		s := &Service{DB: d, Docs: docs, Hasher: h, Subjects: &subjects.Service{DB: d, Docs: docs, Hasher: h, Keys: ks, Now: time.Now}}
		principal := func(agent string) auth.Principal {
			_, key, err := spaces.MintKey(ctx, d, adminP, auth.KeySpec{Kind: "agent", Agent: agent, Vendor: "acme", Scopes: []string{auth.ScopeAgentMemory, auth.ScopeAgentMemoryWrite}}, now)
			require.NoError(t, err)
			p, err := auth.Authenticate(ctx, d, key)
			require.NoError(t, err)
			return p
		}
		tips, other := principal("tips"), principal("other")
		_, err = s.Create(ctx, tips, "", "", Input{Kind: "procedure", Title: "Gift card refunds", Body: "Ask which order it is first."})
		require.NoError(t, err)
		_, err = s.Create(ctx, other, "", "", Input{Kind: "procedure", Title: "Exchanges", Body: "Offer an exchange before a refund."})
		require.NoError(t, err)
		for _, p := range []auth.Principal{tips, other} {
			_, err := s.Block(ctx, p, BlockRequest{})
			require.NoError(t, err)
		}
		require.True(t, cachesText(spaceID, "Gift card refunds"), "the tips block is cached")

		// The erasure's transaction (as the worker runs it), then this process's blocks back
		// as they were before it: only the revision tells this process what happened.
		saved := snapshotBlocks()
		err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := s.EraseSource(ctx, tx, spaceID, "tips")
			return err
		})
		require.NoError(t, err)
		restoreBlocks(saved)
		require.True(t, cachesText(spaceID, "Gift card refunds"))

		// The next block read of the space, by an agent whose notes were not erased, drops
		// the space's blocks built before the erasure.
		b, err := s.Block(ctx, other, BlockRequest{})
		require.NoError(t, err)
		require.Contains(t, b.Text, "Exchanges")
		require.False(t, cachesText(spaceID, "Gift card refunds"), "an erased note's text stays cached after the space's next block read")
		b, err = s.Block(ctx, tips, BlockRequest{})
		require.NoError(t, err)
		require.Empty(t, b.NoteIDs)
	})
}

// cachesText reports whether a block or a note row cached for space holds text.
func cachesText(spaceID, text string) bool {
	blockCache.Lock()
	defer blockCache.Unlock()
	sb := blockCache.spaces[spaceID]
	if sb == nil {
		return false
	}
	for _, b := range sb.blocks {
		if strings.Contains(b.Text, text) {
			return true
		}
	}
	for _, r := range sb.rows {
		if strings.Contains(r.note.Title, text) || strings.Contains(r.note.Body, text) {
			return true
		}
	}
	return false
}

func snapshotBlocks() map[string]*spaceBlocks {
	blockCache.Lock()
	defer blockCache.Unlock()
	out := map[string]*spaceBlocks{}
	for id, sb := range blockCache.spaces {
		cp := &spaceBlocks{erased: sb.erased, blocks: map[string]Block{}, rows: map[string]blockRow{}}
		for k, b := range sb.blocks {
			cp.blocks[k] = b
		}
		for k, r := range sb.rows {
			cp.rows[k] = r
		}
		out[id] = cp
	}
	return out
}

func restoreBlocks(m map[string]*spaceBlocks) {
	blockCache.Lock()
	defer blockCache.Unlock()
	blockCache.spaces, blockCache.n, blockCache.rows = m, 0, 0
	for _, sb := range m {
		blockCache.n += len(sb.blocks)
		blockCache.rows += len(sb.rows)
	}
}
