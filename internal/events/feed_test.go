package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
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
