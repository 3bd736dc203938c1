// Package gather lets a group committer wait for the work that is about to be queued, without
// sleeping (issue 16): the receipts' group commit (internal/receipts, Log) and the note
// writes' batches (internal/notes) use it before each group.
package gather

import "runtime"

// MaxYields bounds Wait: the most times a committer yields its processor before one group.
// Measured on the block-read benchmark (SQLite, 32 readers, 2 cores): the queue stopped
// growing after at most 4 yields, and 4 or 64 formed the same groups.
const MaxYields = 8

// Wait lets work that is about to be queued join the next group: while size() (the queue's
// length) is above 0 and below limit (the most one group takes) and grew since its last
// look, the caller yields its processor (runtime.Gosched), at most MaxYields times, so that
// the runnable goroutines, request handlers on their way to the queue among them, run first.
// It never sleeps: when nothing else is runnable (a lone request) a yield returns at once,
// the queue has not grown, and Wait returns; it waits only while runnable goroutines add
// work, at most MaxYields rounds of the scheduler. A group commit pays the same fixed work
// (BEGIN, the space's head, COMMIT writing its pages) however many items it holds, so bigger
// groups cost less per item. size must be safe to call from the caller's goroutine.
func Wait(size func() int, limit int) {
	n := size()
	for range MaxYields {
		if n == 0 || n >= limit {
			return
		}
		runtime.Gosched()
		grown := size()
		if grown == n {
			return
		}
		n = grown
	}
}
