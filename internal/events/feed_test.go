package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/models"
)

// MS-1, GOV-4: each space numbers its own events 1, 2, 3... with no gaps left by other spaces'
// events (a cursor says nothing of other tenants), also when the spaces write concurrently.
func TestEventPositionsArePerSpace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for _, space := range []string{"spc_a", "spc_b", "spc_c"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						_, err := events.Enqueue(ctx, tx, events.Event{Type: events.TypeNoteCreated, SpaceID: space, NoteID: "note_x"}, time.Now())
						return err
					})
					if err != nil {
						t.Errorf("enqueue %s: %v", space, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, space := range []string{"spc_a", "spc_b", "spc_c"} {
			items, err := events.List(ctx, d, space, 0, 100)
			require.NoError(t, err)
			require.Len(t, items, 10)
			for i, it := range items {
				require.Equal(t, int64(i+1), it.Seq, "space %s: got position %d at index %d", space, it.Seq, i)
			}
			page, err := events.List(ctx, d, space, 7, 100)
			require.NoError(t, err)
			require.Len(t, page, 3, "after position 7 come 8, 9 and 10")
			require.Equal(t, int64(8), page[0].Seq)
		}
	})
}

// Issue 16, MS-1: EnqueueAll stores events of one space at its next positions in the order
// given, after the events before them and before those after, with the outbox's seq in the
// same order; more events than one insert holds (150) keep that order, inside a transaction
// (prepared statements) and outside one alike. Each event keeps an OccurredAt it was given and
// gets the call's time otherwise. No events store nothing, and events of two spaces in one
// call are refused without storing any.
func TestEnqueueAllKeepsOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		space := "spc_all"
		now := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
		given := now.Add(-time.Hour)
		batch := func(prefix string, n int) []events.Event {
			es := make([]events.Event, n)
			for i := range es {
				es[i] = events.Event{Type: events.TypeNoteCreated, SpaceID: space, NoteID: fmt.Sprintf("%s%03d", prefix, i)}
			}
			es[0].OccurredAt = given
			return es
		}
		_, err := events.Enqueue(ctx, d, events.Event{Type: events.TypeNoteCreated, SpaceID: space, NoteID: "first"}, now)
		require.NoError(t, err)
		var inTx []events.Event
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			inTx, err = events.EnqueueAll(ctx, tx, batch("tx", 150), now)
			return err
		}))
		require.Len(t, inTx, 150)
		require.Equal(t, given, inTx[0].OccurredAt, "the time it was given")
		require.Equal(t, now, inTx[1].OccurredAt, "the call's time")
		out, err := events.EnqueueAll(ctx, d, batch("db", 3), now)
		require.NoError(t, err)
		require.Len(t, out, 3)
		none, err := events.EnqueueAll(ctx, d, nil, now)
		require.NoError(t, err)
		require.Empty(t, none)
		mixed := batch("mixed", 2)
		mixed[1].SpaceID = "spc_other"
		_, err = events.EnqueueAll(ctx, d, mixed, now)
		require.Error(t, err)

		want := []events.Event{{NoteID: "first", OccurredAt: now}}
		want = append(append(want, inTx...), out...)
		var rows []models.OutboxEvent
		require.NoError(t, d.NewSelect().Model(&rows).Where("space_id = ?", space).Order("position ASC").Scan(ctx))
		require.Len(t, rows, len(want))
		for i, row := range rows {
			require.Equal(t, int64(i+1), row.Position, "got position %d at index %d", row.Position, i)
			var e events.Event
			require.NoError(t, json.Unmarshal([]byte(row.Payload), &e))
			require.Equal(t, want[i].NoteID, e.NoteID, "got %s at position %d", e.NoteID, row.Position)
			require.True(t, want[i].OccurredAt.Equal(row.CreatedAt), "position %d: created_at %v, want %v", row.Position, row.CreatedAt, want[i].OccurredAt)
			if i > 0 {
				require.Greater(t, row.Seq, rows[i-1].Seq, "the outbox's seq follows the positions (index %d)", i)
			}
		}
		other, err := events.List(ctx, d, "spc_other", 0, 10)
		require.NoError(t, err)
		require.Empty(t, other, "a refused call stores nothing")
	})
}
