package consolesessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/consolesessions"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/models"
)

var t0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

const (
	idle   = 30 * time.Minute
	maxAge = 12 * time.Hour
)

// open is a fresh store of d with space sp_a.
func open(t *testing.T, d *bun.DB) consolesessions.Store {
	t.Helper()
	_, err := d.NewInsert().Model(&models.Space{ID: "sp_a", Name: "a", CreatedAt: t0}).Exec(context.Background())
	require.NoError(t, err)
	return consolesessions.Store{DB: d}
}

func session(id string, seen time.Time) models.ConsoleSession {
	return models.ConsoleSession{ID: id, SpaceID: "sp_a", PersonKey: "key_p", CreatedAt: seen, SeenAt: seen, ExpiresAt: seen.Add(maxAge)}
}

// Start stores the session with its console.sign_in receipt and sweeps the sessions past
// their expiry or idle, and the form tokens older than the sessions' lifetime.
func TestStartSweepsAndRecords(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s := open(t, d)
		require.NoError(t, s.Start(ctx, session("old", t0), t0, idle, maxAge))
		spent, err := s.SpendForm(ctx, models.ConsoleFormUse{ID: "f_old", SessionID: "old", UsedAt: t0})
		require.NoError(t, err)
		require.True(t, spent)

		later := t0.Add(idle) // "old" is idle exactly now; its form use is not older than maxAge
		require.NoError(t, s.Start(ctx, session("new", later), later, idle, maxAge))
		_, found, err := s.Get(ctx, "old")
		require.NoError(t, err)
		require.False(t, found, "an idle session is swept at the next sign-in")
		got, found, err := s.Get(ctx, "new")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, "key_p", got.PersonKey)
		require.True(t, got.ExpiresAt.Equal(later.Add(maxAge)))
		require.Equal(t, 1, count(t, d, (*models.ConsoleFormUse)(nil), "id = ?", "f_old"), "a form use within maxAge stays")

		much := t0.Add(maxAge)
		require.NoError(t, s.Start(ctx, session("third", much), much, idle, maxAge))
		require.Equal(t, 0, count(t, d, (*models.ConsoleFormUse)(nil), "id = ?", "f_old"), "a form use older than maxAge is swept")
		require.Equal(t, 3, count(t, d, (*models.Receipt)(nil), "space_id = ? AND action = ?", "sp_a", consolesessions.ActionSignIn))
	})
}

// Touch, End and SignOut change only the session named.
func TestTouchEndSignOut(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s := open(t, d)
		require.NoError(t, s.Start(ctx, session("a", t0), t0, idle, maxAge))
		require.NoError(t, s.Start(ctx, session("b", t0), t0, idle, maxAge))
		seen := t0.Add(time.Minute)
		require.NoError(t, s.Touch(ctx, "a", seen))
		a, _, err := s.Get(ctx, "a")
		require.NoError(t, err)
		require.True(t, a.SeenAt.Equal(seen))

		for _, f := range []string{"fa", "fb"} {
			_, err := s.SpendForm(ctx, models.ConsoleFormUse{ID: f, SessionID: string(f[1]), UsedAt: t0})
			require.NoError(t, err)
		}
		require.NoError(t, s.SignOut(ctx, "a"))
		_, found, err := s.Get(ctx, "a")
		require.NoError(t, err)
		require.False(t, found)
		require.Equal(t, 0, count(t, d, (*models.ConsoleFormUse)(nil), "session_id = ?", "a"))
		require.Equal(t, 1, count(t, d, (*models.ConsoleFormUse)(nil), "session_id = ?", "b"), "another session's form uses stay")

		require.NoError(t, s.End(ctx, "b"))
		require.NoError(t, s.End(ctx, "b"), "ending a session that is gone is not an error")
		_, found, err = s.Get(ctx, "b")
		require.NoError(t, err)
		require.False(t, found)
	})
}

// A form token is spent once; given back, it may be spent again.
func TestSpendForm(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s := open(t, d)
		use := models.ConsoleFormUse{ID: "f1", SessionID: "a", UsedAt: t0}
		for _, want := range []bool{true, false} {
			spent, err := s.SpendForm(ctx, use)
			require.NoError(t, err)
			require.Equal(t, want, spent)
		}
		require.NoError(t, s.GiveBackForm(ctx, "f1"))
		spent, err := s.SpendForm(ctx, use)
		require.NoError(t, err)
		require.True(t, spent, "a token given back is spent again")
	})
}

// A flash is taken once: the compare-and-swap fails for a stale sealed value.
func TestFlash(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s := open(t, d)
		none, err := s.Flash(ctx, "missing")
		require.NoError(t, err)
		require.Equal(t, "", none, "no session: no flash")
		require.NoError(t, s.Start(ctx, session("a", t0), t0, idle, maxAge))
		require.NoError(t, s.SetFlash(ctx, "a", "sealed-1"))
		require.NoError(t, s.SetFlash(ctx, "a", "sealed-2"))
		got, err := s.Flash(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "sealed-2", got, "a new flash replaces the pending one")
		took, err := s.TakeFlash(ctx, "a", "sealed-1")
		require.NoError(t, err)
		require.False(t, took, "a stale value does not empty the flash")
		for _, want := range []bool{true, false} {
			took, err := s.TakeFlash(ctx, "a", "sealed-2")
			require.NoError(t, err)
			require.Equal(t, want, took)
		}
		got, err = s.Flash(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "", got)
	})
}

func count(t *testing.T, d *bun.DB, model any, where string, args ...any) int {
	t.Helper()
	n, err := d.NewSelect().Model(model).Where(where, args...).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}
