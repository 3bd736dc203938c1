package events_test

import (
	"context"
	"encoding/json"
	"errors"
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

// Issue 16, MS-1: EnqueueAll calls of one space racing in their transactions, of 1 to 70
// events (more than one insert holds: on PostgreSQL the head moves per insert), some rolled
// back: the committed events are at positions 1..n with no gap (a rolled-back call leaves
// none), each call's events consecutive and in its order, and the outbox's seq follows the
// positions.
func TestEnqueueAllRacingCallsKeepPositionsWhole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		const space, workers, calls = "spc_race", 4, 5
		refused := errors.New("refused")
		var mu sync.Mutex
		committed := map[string]int{} // call prefix -> its number of events
		failed := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range calls {
					prefix := fmt.Sprintf("w%dc%d-", w, c)
					n := []int{1, 70, 3, 64, 65}[(w+c)%5]
					es := make([]events.Event, n)
					for i := range es {
						es[i] = events.Event{Type: events.TypeNoteCreated, SpaceID: space, NoteID: fmt.Sprintf("%s%03d", prefix, i)}
					}
					rollBack := (w+c)%3 == 0
					err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						if _, err := events.EnqueueAll(ctx, tx, es, time.Now()); err != nil {
							return err
						}
						if rollBack {
							return refused
						}
						return nil
					})
					if rollBack && errors.Is(err, refused) {
						continue
					}
					if err != nil {
						failed <- fmt.Errorf("%s: %w", prefix, err)
						return
					}
					mu.Lock()
					committed[prefix] = n
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(failed)
		for err := range failed {
			require.NoError(t, err)
		}

		var rows []models.OutboxEvent
		require.NoError(t, d.NewSelect().Model(&rows).Where("space_id = ?", space).Order("position ASC").Scan(ctx))
		total := 0
		for _, n := range committed {
			total += n
		}
		require.Len(t, rows, total)
		for i := 0; i < len(rows); {
			require.Equal(t, int64(i+1), rows[i].Position, "no gap at index %d", i)
			var e events.Event
			require.NoError(t, json.Unmarshal([]byte(rows[i].Payload), &e))
			prefix := e.NoteID[:len(e.NoteID)-3]
			n, ok := committed[prefix]
			require.True(t, ok, "an event of call %s, which was rolled back", prefix)
			for k := range n {
				row := rows[i+k]
				require.Equal(t, int64(i+k+1), row.Position)
				require.NoError(t, json.Unmarshal([]byte(row.Payload), &e))
				require.Equal(t, fmt.Sprintf("%s%03d", prefix, k), e.NoteID, "call %s consecutive and in order", prefix)
				if i+k > 0 {
					require.Greater(t, row.Seq, rows[i+k-1].Seq, "seq follows the positions")
				}
			}
			i += n
		}
	})
}
