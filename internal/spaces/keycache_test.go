package spaces_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/fault"
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
		require.False(t, first.Cached, "the first authentication reads the store")
		require.True(t, first.Assumes(spaceID))
		current, err := spaces.Revision(ctx, d, spaceID, spaces.RevisionConfig)
		require.NoError(t, err)
		require.Equal(t, current, first.Revision)
		require.Equal(t, current, first.ConfigArg(spaceID))

		_, second, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err)
		require.True(t, second.Cached, "the second is answered from the cache")
		require.False(t, second.Assumes("another-space"), "the assumed revision is only the key's own space's")
		require.Equal(t, int64(-1), second.ConfigArg("another-space"))
		require.False(t, spaces.Snapshot{}.Assumes(spaceID), "the zero snapshot assumes nothing")

		require.NoError(t, spaces.RevokeKey(ctx, d, admin, keyID, now))
		_, cached, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err, "the cache alone cannot know: the route's statements check the revision")
		current, err = spaces.Revision(ctx, d, spaceID, spaces.RevisionConfig)
		require.NoError(t, err)
		require.NotEqual(t, current, cached.Revision, "the revocation moved the revision past the cached one")
		_, _, err = cache.Reload(ctx, d, cached)
		require.ErrorIs(t, err, auth.InvalidKey())
		_, again, err := cache.Authenticate(ctx, d, key)
		require.ErrorIs(t, err, auth.InvalidKey(), "a revoked key left the cache")
		require.False(t, again.Cached)
	})
}

// TestKeyCacheRun (issue 30 §1): Run reruns its function on a reloaded snapshot when the
// function finds the configuration stale, or refuses on a cached snapshot that is no longer
// current; a refusal on a current snapshot stands; a revoked key ends it with the key's
// error; a configuration that keeps changing is configuration_busy after three runs.
func TestKeyCacheRun(t *testing.T) {
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
		_, _, err = cache.Authenticate(ctx, d, key)
		require.NoError(t, err)
		p, snap, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err)
		require.True(t, snap.Cached)
		refused := fault.New(fault.Forbidden, "feature_disabled", "off")

		var seen []spaces.Snapshot
		err = cache.Run(ctx, d, p, snap, func(_ context.Context, _ auth.Principal, s spaces.Snapshot) error {
			seen = append(seen, s)
			if len(seen) == 1 {
				return spaces.ErrStaleConfig
			}
			return nil
		})
		require.NoError(t, err)
		require.Len(t, seen, 2, "a stale run is run again")
		require.False(t, seen[1].Cached, "on a snapshot read from the store")

		seen = nil
		err = cache.Run(ctx, d, p, snap, func(_ context.Context, _ auth.Principal, s spaces.Snapshot) error {
			seen = append(seen, s)
			return refused
		})
		require.ErrorIs(t, err, refused)
		require.Len(t, seen, 1, "a refusal on a current snapshot stands")

		require.NoError(t, spaces.BumpRevision(ctx, d, spaceID, spaces.RevisionConfig))
		seen = nil
		err = cache.Run(ctx, d, p, snap, func(_ context.Context, _ auth.Principal, s spaces.Snapshot) error {
			seen = append(seen, s)
			if s.Cached {
				return refused
			}
			return nil
		})
		require.NoError(t, err)
		require.Len(t, seen, 2, "a refusal on a cached snapshot no longer current is decided again")
		require.Greater(t, seen[1].Revision, snap.Revision)

		runs := 0
		err = cache.Run(ctx, d, p, snap, func(context.Context, auth.Principal, spaces.Snapshot) error {
			runs++
			return spaces.ErrStaleConfig
		})
		require.Equal(t, "configuration_busy", fault.As(err).Code)
		require.Equal(t, 3, runs)

		require.NoError(t, spaces.RevokeKey(ctx, d, admin, keyID, now))
		runs = 0
		err = cache.Run(ctx, d, p, snap, func(context.Context, auth.Principal, spaces.Snapshot) error {
			runs++
			return spaces.ErrStaleConfig
		})
		require.ErrorIs(t, err, auth.InvalidKey(), "a revoked key is refused on reload")
		require.Equal(t, 1, runs)
	})
}
