package state

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWritersTakeTurns: one write of a state at a time on a replica; a write that waits gives
// up when its context ends, and a state nobody writes leaves nothing behind.
func TestWritersTakeTurns(t *testing.T) {
	var w writers
	a := target{spaceID: "sp", scopeHash: "h", agent: "bot"}
	other := target{spaceID: "sp", scopeHash: "h2", agent: "bot"}
	release, err := w.acquire(context.Background(), a)
	require.NoError(t, err)

	// Another state is not held up.
	releaseOther, err := w.acquire(context.Background(), other)
	require.NoError(t, err)
	releaseOther()

	// The same state waits, and stops waiting when its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = w.acquire(ctx, a)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A waiting write gets its turn when the holder releases it.
	got := make(chan func())
	go func() {
		r, err := w.acquire(context.Background(), a)
		if err == nil {
			got <- r
		}
	}()
	select {
	case <-got:
		t.Fatal("two writes of one state at once")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	(<-got)()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.m)
}
