package spaces_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// TestConfigRevisionBumps (issue 16): every document write, key mint and key revocation moves
// the space's configuration revision, in its own transaction, and only its own space's.
func TestConfigRevisionBumps(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		now := time.Now()
		spaceID, adminKey, err := spaces.CreateWith(ctx, d, "a", now, spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		other, _, err := spaces.CreateWith(ctx, d, "b", now, spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		admin, err := auth.Authenticate(ctx, d, adminKey)
		require.NoError(t, err)
		rev := func(id string) int64 {
			r, err := spaces.Revision(ctx, d, id, spaces.RevisionConfig)
			require.NoError(t, err)
			return r
		}
		start, otherStart := rev(spaceID), rev(other)

		_, _, err = spaces.Documents{DB: d}.Put(ctx, d, admin, spaces.DocFeatures, []byte(`{"agent_state": {"enabled": true}}`), now)
		require.NoError(t, err)
		require.Equal(t, start+1, rev(spaceID), "a document write")
		keyID, _, err := spaces.MintKey(ctx, d, admin, auth.KeySpec{Kind: auth.KindAgent, Agent: "bot", Vendor: "v", Scopes: []string{auth.ScopeAgentState}}, now)
		require.NoError(t, err)
		require.Equal(t, start+2, rev(spaceID), "a key mint")
		require.NoError(t, spaces.RevokeKey(ctx, d, admin, keyID, now))
		require.Equal(t, start+3, rev(spaceID), "a key revocation")
		require.Error(t, spaces.RevokeKey(ctx, d, admin, keyID, now), "revoking twice fails")
		require.Equal(t, start+3, rev(spaceID), "a failed revocation changes nothing")
		require.Equal(t, otherStart, rev(other), "another space's revision never moves")
	})
}

// TestKeyCache: the second authentication of a key is answered from the cache (no statement)
// at the revision it was read at; Reload reads the key again, and a revoked key is refused
// and leaves the cache.
func TestKeyCache(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		now := time.Now()
		spaceID, adminKey, err := spaces.CreateWith(ctx, d, "a", now, spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		admin, err := auth.Authenticate(ctx, d, adminKey)
		require.NoError(t, err)
		keyID, key, err := spaces.MintKey(ctx, d, admin, auth.KeySpec{Kind: auth.KindAgent, Agent: "bot", Vendor: "v", Scopes: []string{auth.ScopeAgentState}}, now)
		require.NoError(t, err)
		cache := spaces.NewKeyCache(0)

		p, first, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err)
		require.Equal(t, keyID, p.KeyID)
		require.False(t, spaces.FromCache(first), "the first authentication reads the store")
		rev, ok := spaces.AssumedConfig(first, spaceID)
		require.True(t, ok)
		current, err := spaces.Revision(ctx, d, spaceID, spaces.RevisionConfig)
		require.NoError(t, err)
		require.Equal(t, current, rev)

		_, second, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err)
		require.True(t, spaces.FromCache(second), "the second is answered from the cache")
		_, ok = spaces.AssumedConfig(second, "another-space")
		require.False(t, ok, "the assumed revision is only the key's own space's")

		require.NoError(t, spaces.RevokeKey(ctx, d, admin, keyID, now))
		_, cached, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err, "the cache alone cannot know: the route's statements check the revision")
		stale, _ := spaces.AssumedConfig(cached, spaceID)
		current, err = spaces.Revision(ctx, d, spaceID, spaces.RevisionConfig)
		require.NoError(t, err)
		require.NotEqual(t, current, stale, "the revocation moved the revision past the cached one")
		_, _, err = cache.ReloadFor(cached, d)
		require.ErrorIs(t, err, auth.InvalidKey())
		_, again, err := cache.Authenticate(ctx, d, key)
		require.ErrorIs(t, err, auth.InvalidKey(), "a revoked key left the cache")
		require.False(t, spaces.FromCache(again))
	})
}
