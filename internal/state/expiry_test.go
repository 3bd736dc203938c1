package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

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
