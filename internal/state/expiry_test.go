package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

func TestExpiresHour(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	require.Equal(t, at.Unix()/3600, state.ExpiresHour(at), "an exact hour is its own hour")
	require.Equal(t, at.Unix()/3600+1, state.ExpiresHour(at.Add(time.Nanosecond)), "a nanosecond past rounds up")
	require.Equal(t, at.Unix()/3600+1, state.ExpiresHour(at.Add(59*time.Minute)))
}

// TestStateExpiryHour (issue 16): expires_at moves on every write but the indexed expires_hour
// only when the write crosses into a later hour; the retention sweep still deletes a state
// exactly when its expires_at has passed, not an hour later nor earlier.
func TestStateExpiryHour(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := newService(t, d, &racingMasker{db: d})
		now := time.Date(2026, 12, 2, 10, 5, 0, 0, time.UTC)
		s.Now = func() time.Time { return now }
		stored := func() models.AgentState {
			var row models.AgentState
			require.NoError(t, d.NewSelect().Model(&row).Where("space_id = ?", p.SpaceID).Scan(ctx))
			return row
		}

		_, err := s.Write(ctx, p, "", write(`{"step": "a"}`))
		require.NoError(t, err)
		first := stored()
		require.Equal(t, now.Add(spaces.DefaultStateTTL), first.ExpiresAt.UTC())
		require.Equal(t, state.ExpiresHour(first.ExpiresAt), first.ExpiresHour)

		now = now.Add(40 * time.Minute) // 10:45: same hour
		_, err = s.Write(ctx, p, "", write(`{"step": "b"}`))
		require.NoError(t, err)
		second := stored()
		require.Equal(t, now.Add(spaces.DefaultStateTTL), second.ExpiresAt.UTC(), "expires_at stays exact")
		require.Equal(t, first.ExpiresHour, second.ExpiresHour, "a write within the hour keeps the indexed hour")

		now = now.Add(30 * time.Minute) // 11:15: next hour
		_, err = s.Write(ctx, p, "", write(`{"step": "c"}`))
		require.NoError(t, err)
		third := stored()
		require.Equal(t, first.ExpiresHour+1, third.ExpiresHour)
		require.Equal(t, state.ExpiresHour(third.ExpiresAt), third.ExpiresHour)

		expiry := third.ExpiresAt.UTC()
		res, err := s.DeleteExpired(ctx, d, p.SpaceID, 10, expiry.Add(-time.Second))
		require.NoError(t, err)
		require.Zero(t, res.States[p.SpaceID], "a second before its expiry the state stays")
		res, err = s.DeleteExpired(ctx, d, p.SpaceID, 10, expiry)
		require.NoError(t, err)
		require.Equal(t, 1, res.States[p.SpaceID], "at its expiry (mid-hour) the sweep deletes it")
		n, err := d.NewSelect().Model((*models.AgentState)(nil)).Where("space_id = ?", p.SpaceID).Count(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// configBumper is a masker that, like another replica's document write landing mid-request,
// moves the space's configuration revision while the write is being prepared.
type configBumper struct {
	db      *bun.DB
	spaceID string
}

func (m configBumper) MaskText(ctx context.Context, _, text string) (string, error) {
	return text, spaces.BumpRevision(ctx, m.db, m.spaceID, spaces.RevisionConfig)
}

// TestStaleConfiguration (issue 16): a write or read whose key and documents were read at a
// configuration revision that is no longer current answers spaces.ErrStaleConfig and changes
// nothing, whether the state exists or not and whether the revision moved before the request
// or between its read and its conditional update.
func TestStaleConfiguration(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := newService(t, d, &racingMasker{db: d})
		_, key, err := spaces.MintKey(ctx, d, p, auth.KeySpec{Kind: auth.KindPerson, Name: "integrator", Roles: []string{auth.RoleIntegration}}, time.Now())
		require.NoError(t, err)
		cache := spaces.NewKeyCache(0)
		ip, at, err := cache.Authenticate(ctx, d, key)
		require.NoError(t, err)

		_, err = s.WriteAt(ctx, at, ip, "", write(`{"step": "a"}`))
		require.NoError(t, err, "at the current revision the write goes through")
		require.NoError(t, spaces.BumpRevision(ctx, d, p.SpaceID, spaces.RevisionConfig))

		_, err = s.WriteAt(ctx, at, ip, "", write(`{"step": "b"}`))
		require.ErrorIs(t, err, spaces.ErrStaleConfig, "an existing state")
		_, err = s.ReadAt(ctx, at, ip, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.ErrorIs(t, err, spaces.ErrStaleConfig)
		other := state.WriteRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-new"}, Agent: "bot", Body: []byte(`{"step": "x"}`)}
		_, err = s.WriteAt(ctx, at, ip, "", other)
		require.ErrorIs(t, err, spaces.ErrStaleConfig, "a state not written yet")
		_, err = s.ReadAt(ctx, at, ip, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-new"}, Agent: "bot"})
		require.ErrorIs(t, err, spaces.ErrStaleConfig)

		ip, at, err = cache.Reload(ctx, d, at)
		require.NoError(t, err)
		s.Masker = configBumper{db: d, spaceID: p.SpaceID}
		_, err = s.WriteAt(ctx, at, ip, "", write(`{"note": "mid-request"}`))
		require.ErrorIs(t, err, spaces.ErrStaleConfig, "the revision moved between the read and the update")

		got, err := s.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.NoError(t, err)
		require.Equal(t, int64(1), got.Version, "no stale write was stored")
		require.JSONEq(t, `{"step": "a"}`, string(got.Body))
		n, err := d.NewSelect().Model((*models.AgentState)(nil)).Where("space_id = ?", p.SpaceID).Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	})
}
