package notes

import (
	"context"
	"path/filepath"
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
	"github.com/agentmemory/agentmemory/models"
)

// queueEnv is a space with agent memory on, a Service on d and an agent principal that writes.
func queueEnv(t *testing.T, d *bun.DB) (*Service, auth.Principal) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	_, admin, err := spaces.CreateWith(ctx, d, "queue", now, spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	adminP, err := auth.Authenticate(ctx, d, admin)
	require.NoError(t, err)
	docs := spaces.Documents{DB: d}
	_, _, err = docs.Put(ctx, d, adminP, "features", []byte(`{"agent_memory": {"enabled": true}}`), now)
	require.NoError(t, err)
	h := keyed.New([]byte("queue-test-secret-0123456789abcdef0123"))
	ks, err := keystore.OpenFile(filepath.Join(t.TempDir(), "keys.json"), h.Key("subject-keys"))
	require.NoError(t, err)
	s := &Service{DB: d, Docs: docs, Hasher: h, Subjects: &subjects.Service{DB: d, Docs: docs, Hasher: h, Keys: ks, Now: time.Now}}
	_, key, err := spaces.MintKey(ctx, d, adminP, auth.KeySpec{Kind: "agent", Agent: "bot", Vendor: "acme", Scopes: []string{auth.ScopeAgentMemory, auth.ScopeAgentMemoryWrite}}, now)
	require.NoError(t, err)
	p, err := auth.Authenticate(ctx, d, key)
	require.NoError(t, err)
	return s, p
}

// users is how many writes are queued for or hold spaceID's turn.
func (q *spaceQueues) users(spaceID string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sq := q.m[spaceID]; sq != nil {
		return sq.users
	}
	return 0
}

// Issue 16: a note write whose request ends while it waits for its space's turn in the
// process answers the context's error and stores nothing (no note, receipt or event); the
// queue of the space is gone once nobody waits (the map does not grow with spaces written
// once), and the next write is stored.
func TestNoteWriteCancelledWhileQueued(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		s, p := queueEnv(t, d)
		count := func(m any) int {
			n, err := d.NewSelect().Model(m).Where("space_id = ?", p.SpaceID).Count(ctx)
			require.NoError(t, err)
			return int(n)
		}
		receiptsBefore, eventsBefore := count((*models.Receipt)(nil)), count((*models.OutboxEvent)(nil))

		release, err := s.writes.acquire(ctx, p.SpaceID) // another write holds the turn
		require.NoError(t, err)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := s.Create(wctx, p, "", "", Input{Kind: "procedure", Title: "Queued", Body: "Cancelled while queued."})
			done <- err
		}()
		for s.writes.users(p.SpaceID) < 2 { // wait until it is queued
			time.Sleep(time.Millisecond)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		release()

		require.Zero(t, count((*models.Note)(nil)), "no note stored")
		require.Equal(t, receiptsBefore, count((*models.Receipt)(nil)), "no receipt stored")
		require.Equal(t, eventsBefore, count((*models.OutboxEvent)(nil)), "no event stored")
		require.Zero(t, s.writes.queued(), "no queue left behind")

		res, err := s.Create(ctx, p, "", "", Input{Kind: "procedure", Title: "Next", Body: "Stored after."})
		require.NoError(t, err)
		require.NotNil(t, res.Note)
		require.Equal(t, 1, count((*models.Note)(nil)))
		require.Zero(t, s.writes.queued())
	})
}
