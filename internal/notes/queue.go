package notes

import (
	"context"
	"sync"
)

// spaceQueues queues a replica's note writes of one space in the process before they lock
// the space's receipt head in the database (issue 16). PostgreSQL wakes the waiters of a row
// lock (FOR UPDATE) in no fair order: with 8 writers of one space, a write waited 13 ms at
// p50 and 127 ms at p99 for the head. Here at most one transaction per replica and space waits
// on the database lock; the others wait in turn (first come, first served) in the process.
// The database lock stays the guarantee across replicas. The map holds only spaces with a
// write queued or running, so it stays as small as the writes in flight.
type spaceQueues struct {
	mu sync.Mutex
	m  map[string]*spaceQueue
}

// spaceQueue is one space's turn: holding the channel's one slot is holding the turn. Go
// queues the goroutines blocked sending on a full channel in arrival order and hands a freed
// slot to the first of them, so the turn goes round in order.
type spaceQueue struct {
	turn  chan struct{}
	users int // writes queued or holding the turn; guarded by spaceQueues.mu
}

// acquire waits for spaceID's turn. It returns the function that gives the turn back, or
// ctx's error when ctx ends first (then the caller holds nothing and must store nothing).
func (q *spaceQueues) acquire(ctx context.Context, spaceID string) (release func(), err error) {
	q.mu.Lock()
	if q.m == nil {
		q.m = map[string]*spaceQueue{}
	}
	sq := q.m[spaceID]
	if sq == nil {
		sq = &spaceQueue{turn: make(chan struct{}, 1)}
		q.m[spaceID] = sq
	}
	sq.users++
	q.mu.Unlock()
	leave := func() {
		q.mu.Lock()
		if sq.users--; sq.users == 0 {
			delete(q.m, spaceID)
		}
		q.mu.Unlock()
	}
	select {
	case sq.turn <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	release = func() {
		<-sq.turn
		leave()
	}
	// Both may have been ready: a request that ended while queued stores nothing.
	if err := ctx.Err(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// queued reports how many spaces have a note write queued or running (for tests).
func (q *spaceQueues) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m)
}
