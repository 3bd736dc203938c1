package state

import (
	"context"
	"sync"
)

// writers queues this replica's writes of one state (issue 16: the hot row). Without it, N
// concurrent writers of one state race on its conditional update and all but one lose and
// start again (a read and an update each time); queued, each write starts from the row the
// previous one stored (lastSeen) and sends one update that does not lose. It is only a queue
// in front of the store: writers on other replicas still meet the conditional update, which
// stays the only guarantee.
type writers struct {
	mu sync.Mutex
	m  map[seenKey]*writerSlot
}

// writerSlot is one state's turn: a channel holding a token while no write holds it, and the
// number of writes holding or waiting for it (the slot is dropped when that reaches 0).
type writerSlot struct {
	turn  chan struct{}
	users int
}

// acquire waits for t's turn; release gives it to the next write. A write whose ctx ends
// while it waits returns ctx's error, having done nothing.
func (w *writers) acquire(ctx context.Context, t target) (release func(), err error) {
	k := keyOf(t)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[seenKey]*writerSlot)
	}
	slot, ok := w.m[k]
	if !ok {
		slot = &writerSlot{turn: make(chan struct{}, 1)}
		slot.turn <- struct{}{}
		w.m[k] = slot
	}
	slot.users++
	w.mu.Unlock()
	leave := func() {
		w.mu.Lock()
		if slot.users--; slot.users == 0 {
			delete(w.m, k)
		}
		w.mu.Unlock()
	}
	select {
	case <-slot.turn:
		return func() { slot.turn <- struct{}{}; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
