package notes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/gather"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// MaxNoteBatch is the most note writes of one space committed in one transaction (issue 16).
const MaxNoteBatch = 32

// noteBatchTimeout bounds a batch's transaction, which no single request's context ends.
const noteBatchTimeout = 30 * time.Second

// spaceQueues queues a replica's note writes of one space in the process and commits them
// in groups (issue 16). PostgreSQL wakes the waiters of a row lock (FOR UPDATE) in no fair
// order: with 8 writers of one space a write waited 13 ms at p50 and 127 ms at p99 for the
// space's receipt head. Here the writes of a space wait in the process, first come, first
// served, and one goroutine per space and replica at a time takes up to MaxNoteBatch of them
// and runs them in one transaction (Service.commitBatch): at most one transaction per
// replica and space waits on the head's lock, which stays the guarantee across replicas. The
// map holds only spaces with a write queued or running, so it stays as small as the writes
// in flight.
type spaceQueues struct {
	mu sync.Mutex
	m  map[string]*spaceQueue
}

// spaceQueue is one space's queued writes and whether a batch runs; guarded by
// spaceQueues.mu.
type spaceQueue struct {
	pending []*queuedWrite
	running bool
}

// Member states of a queuedWrite.
const (
	memberQueued    int32 = iota
	memberTaken           // its batch runs it: it waits for the answer
	memberAbandoned       // its request ended first: no batch runs it
)

// queuedWrite is one note write waiting for its batch, and its answer once done is closed.
type queuedWrite struct {
	ctx   context.Context
	w     write
	state atomic.Int32
	res   WriteResult
	err   error
	done  chan struct{}
}

// enqueue adds qw to spaceID's queue and reports whether the caller must start the space's
// batches (none was running).
func (q *spaceQueues) enqueue(spaceID string, qw *queuedWrite) (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = map[string]*spaceQueue{}
	}
	sq := q.m[spaceID]
	if sq == nil {
		sq = &spaceQueue{}
		q.m[spaceID] = sq
	}
	sq.pending = append(sq.pending, qw)
	if sq.running {
		return false
	}
	sq.running = true
	return true
}

// take removes and returns up to MaxNoteBatch queued writes of spaceID in arrival order;
// when none is left it ends the space's batches and forgets the space, and returns nil.
func (q *spaceQueues) take(spaceID string) []*queuedWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	sq := q.m[spaceID]
	if sq == nil {
		return nil
	}
	n := min(len(sq.pending), MaxNoteBatch)
	if n == 0 {
		delete(q.m, spaceID)
		return nil
	}
	batch := append([]*queuedWrite(nil), sq.pending[:n]...)
	sq.pending = append(sq.pending[:0], sq.pending[n:]...)
	return batch
}

// waiting is how many writes of spaceID wait for their batch.
func (q *spaceQueues) waiting(spaceID string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sq := q.m[spaceID]; sq != nil {
		return len(sq.pending)
	}
	return 0
}

// gather lets note writes of spaceID that are about to be queued join the next batch
// (gather.Wait, up to MaxNoteBatch writes). Each batch pays the same fixed work (BEGIN, the
// head's lock, the batch-end inserts, the notes revision, the receipts' chain entry, COMMIT)
// however many writes it holds.
func (q *spaceQueues) gather(spaceID string) {
	gather.Wait(func() int { return q.waiting(spaceID) }, MaxNoteBatch)
}

// queued reports how many spaces have a note write queued or running (for tests).
func (q *spaceQueues) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m)
}

// commit stores w through its space's queue: it waits for its batch and answers what its
// write got there. A request that ends before its batch runs it answers ctx's error and
// stores nothing; once its batch runs it, it waits for the batch's answer.
func (s *Service) commit(ctx context.Context, w write) (WriteResult, error) {
	qw := &queuedWrite{ctx: ctx, w: w, done: make(chan struct{})}
	if s.writes.enqueue(w.a.p.SpaceID, qw) {
		go s.drain(w.a.p.SpaceID)
	}
	select {
	case <-qw.done:
	case <-ctx.Done():
		if qw.state.CompareAndSwap(memberQueued, memberAbandoned) {
			return WriteResult{}, ctx.Err()
		}
		<-qw.done
	}
	return qw.res, qw.err
}

// drain commits spaceID's queued writes batch after batch until none is left. On SQLite it
// lets the writes about to be queued join each batch first (gather): there a batch is the
// process's own work, and at 8 writers batches grew from 2.4-3.2 writes to 3.6. On PostgreSQL
// a batch waits for the server while the next one's writes queue, so batches already held
// ~4 writes, and gathering them did not change that; its yields put the answered requests'
// goroutines ahead of the next batch, and the rate was ~5-15% lower (docs/bench.md).
func (s *Service) drain(spaceID string) {
	gather := db.IsSQLite(s.DB)
	for {
		if gather {
			s.writes.gather(spaceID)
		}
		batch := s.writes.take(spaceID)
		if batch == nil {
			return
		}
		s.commitBatch(batch)
	}
}

// commitBatch runs batch (writes of one space, in arrival order) in one transaction: the
// space's receipt head is locked first and held to the commit; each write runs inside its
// own savepoint (writeIn), so a refused one (limit, cap, duplicate, replay, a failed
// statement) rolls back only itself and gets its own answer, and each later write sees the
// earlier ones; at the end the stored notes' tags, search rows and events are inserted, each
// kind in one statement and in write order (noteRows; before an agent's proposal, which
// enqueues its own event, those of the notes before it), the space's notes revision is
// bumped once for the notes stored and the stored writes' receipts, one each, are appended
// as one chain entry. A member whose request ended before its turn is skipped. After the
// commit every member gets its answer; when the transaction fails, every member it ran gets
// the error and nothing of any is stored.
func (s *Service) commitBatch(batch []*queuedWrite) {
	ctx, cancel := context.WithTimeout(context.Background(), noteBatchTimeout)
	defer cancel()
	defer answerOnPanic(batch)
	var ran []*queuedWrite
	txErr := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		ran, err = s.runBatch(ctx, tx, batch)
		return err
	})
	answerBatch(batch, ran, txErr)
}

// answerOnPanic, deferred by commitBatch, turns a panic in a write into its batch's failure
// (the transaction is rolled back) instead of the process's: every member not answered yet
// gets an error.
func answerOnPanic(batch []*queuedWrite) {
	r := recover()
	if r == nil {
		return
	}
	err := fmt.Errorf("notes: note batch: panic: %v", r)
	for _, m := range batch {
		if m.state.CompareAndSwap(memberQueued, memberTaken) || m.state.Load() == memberTaken {
			m.res, m.err = WriteResult{}, err
			close(m.done)
		}
	}
}

// batchRun is what one batch transaction gathers while its members run: the members it took
// (ran), the stored writes' receipts and times, the stored notes' rows inserted at the end
// (noteRows) and whether a write stored a note.
type batchRun struct {
	ran        []*queuedWrite
	entries    []receipts.Entry
	at         []time.Time
	later      noteRows
	storedNote bool
}

// runBatch is commitBatch's transaction: the space's receipt head locked first (it serialises
// the space's writers across replicas, so each write's checks are exact), each member taken
// and run in arrival order (runMember), then the batch closed (closeBatch). It returns the
// members it took, answered or not, and the error that rolls the whole batch back.
func (s *Service) runBatch(ctx context.Context, tx bun.Tx, batch []*queuedWrite) ([]*queuedWrite, error) {
	spaceID := batch[0].w.a.p.SpaceID
	h, err := receipts.LockHead(ctx, tx, spaceID)
	if err != nil {
		return nil, err
	}
	var b batchRun
	for _, m := range batch {
		if !m.state.CompareAndSwap(memberQueued, memberTaken) {
			continue // its request ended: it answered itself
		}
		b.ran = append(b.ran, m)
		if err := s.runMember(ctx, tx, m, &b); err != nil {
			return b.ran, err
		}
	}
	return b.ran, s.closeBatch(ctx, tx, spaceID, h, &b)
}

// runMember runs m's write inside its own savepoint: stored, it keeps its receipt and rows in
// b; refused (limit, cap, duplicate, replay, a failed statement), only its own savepoint is
// rolled back and m keeps its answer. A member whose request ended is answered ctx's error.
// The error returned fails the batch.
func (s *Service) runMember(ctx context.Context, tx bun.Tx, m *queuedWrite, b *batchRun) error {
	if err := m.ctx.Err(); err != nil {
		m.res, m.err = WriteResult{}, err
		return nil
	}
	if m.w.proposal() {
		// A proposal enqueues its event itself: the notes' events before it come first.
		if err := b.later.store(ctx, tx); err != nil {
			return err
		}
	}
	// Each write's savepoint stays until the commit (a RELEASE would be one more round trip
	// per write); a later write's, of the same name, is the one it rolls back to.
	if _, err := tx.ExecContext(ctx, "SAVEPOINT note_write"); err != nil {
		return fmt.Errorf("notes: savepoint: %w", err)
	}
	var own noteRows
	res, rcpt, err := s.writeIn(ctx, tx, m.w, &own)
	switch {
	case err == nil:
		m.res, m.err = res, nil
		b.storedNote = b.storedNote || res.Note != nil
		b.entries, b.at = append(b.entries, rcpt), append(b.at, m.w.now)
		b.later.merge(&own)
		return nil
	case errors.Is(err, errReplayed), errors.Is(err, errDuplicate):
		m.res, m.err = res, nil
	default:
		m.res, m.err = WriteResult{}, err
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT note_write"); err != nil {
		return fmt.Errorf("notes: rollback to savepoint: %w", err)
	}
	return nil
}

// closeBatch ends b's transaction before its commit: the stored notes' tags, search rows and
// events, each kind in one statement; the space's notes revision bumped once when a note was
// stored (every replica's cached block answers of the space stop being given, issue 16); the
// stored writes' receipts, one each, in one chain entry after h (no write of the batch
// appends receipts of its own, so the head has not moved).
func (s *Service) closeBatch(ctx context.Context, tx bun.Tx, spaceID string, h receipts.LockedHead, b *batchRun) error {
	if err := b.later.store(ctx, tx); err != nil {
		return err
	}
	if b.storedNote {
		if err := spaces.BumpRevision(ctx, tx, spaceID, spaces.RevisionNotes); err != nil {
			return err
		}
	}
	if _, err := receipts.AppendGroup(ctx, tx, h, b.entries, b.at); err != nil {
		return err
	}
	if s.beforeBatchCommit != nil {
		return s.beforeBatchCommit(len(b.ran))
	}
	return nil
}

// answerBatch answers the members of batch after its transaction (ran: those it took; txErr:
// its error). A member the transaction never reached (it failed to begin) is answered an
// error too; when the transaction failed, every member it ran gets txErr and nothing of any
// is stored.
func answerBatch(batch, ran []*queuedWrite, txErr error) {
	err := txErr
	if err == nil {
		err = errors.New("notes: note batch ended before this write")
	}
	for _, m := range batch {
		if m.state.CompareAndSwap(memberQueued, memberTaken) {
			ran = append(ran, m)
			m.res, m.err = WriteResult{}, err
		}
	}
	for _, m := range ran {
		if txErr != nil {
			m.res, m.err = WriteResult{}, txErr
		}
		close(m.done)
	}
}
