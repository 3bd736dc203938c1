package receipts

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// Log is a process's group committer of receipts for one database (issue 16). Build it with
// NewLog; its zero value is not usable. Every method is safe for concurrent use, and several
// processes may each run a Log on one database.
//
//   - Record is the receipt of a request that writes nothing else (a block read, a search, a
//     retrieval): the receipt is queued; one goroutine inserts every queued receipt in one
//     transaction, seals their spaces in it (one chain entry per space, holding the Merkle
//     root of all of them), commits, and only then answers each waiting Record. N concurrent
//     reads cost one commit and one lock of the space's head instead of N of each, and each
//     is answered only once its receipt is durable and in the chain.
//   - When that transaction fails, the receipts are inserted alone and stay unsealed; Run,
//     every interval, seals whatever is unsealed (also what a process that stopped left).
type Log struct {
	db     *bun.DB
	logger *slog.Logger
	every  time.Duration

	mu      sync.Mutex
	queue   []*pending
	spaces  map[string]bool // to seal on the next pass
	running bool            // a drain goroutine is on
}

// pending is one receipt Record waits for.
type pending struct {
	rec  record
	done chan error
}

// DefaultSealEvery is the interval of Run's safety-net pass.
const DefaultSealEvery = time.Second

// maxGroup is the most receipts one group commit inserts.
const maxGroup = 1000

// NewLog builds the Log of d. logger receives a line when a pass fails
// (never receipt content); nil discards. every is Run's interval (<= 0: DefaultSealEvery).
func NewLog(d *bun.DB, logger *slog.Logger, every time.Duration) *Log {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if every <= 0 {
		every = DefaultSealEvery
	}
	return &Log{db: d, logger: logger, every: every, spaces: map[string]bool{}}
}

// Record writes e as a receipt of the space through the group committer and returns once it
// has committed: sealed, with its Seq and leaf Hash, or, when its group's sealing failed,
// unsealed (Seq 0; Run seals it later). It returns an error when the receipt could not be
// stored at all, or when ctx ended first (the receipt may still commit).
func (l *Log) Record(ctx context.Context, spaceID string, e Entry, now time.Time) (Receipt, error) {
	r, row, err := newReceipt(spaceID, e, now)
	if err != nil {
		return Receipt{}, err
	}
	p := &pending{rec: record{r: r, row: row}, done: make(chan error, 1)}
	l.mu.Lock()
	l.queue = append(l.queue, p)
	l.startLocked()
	l.mu.Unlock()
	select {
	case err := <-p.done:
		if err != nil {
			return Receipt{}, err
		}
		r.Seq, r.Hash = row.Seq, row.Hash // set by the drain goroutine before done
		return r, nil
	case <-ctx.Done():
		return Receipt{}, ctx.Err()
	}
}

// sealSoon asks the Log's goroutine to seal the spaces' unsealed receipts on its next pass,
// without waiting for it.
func (l *Log) sealSoon(spaceIDs ...string) {
	if len(spaceIDs) == 0 {
		return
	}
	l.mu.Lock()
	for _, s := range spaceIDs {
		l.spaces[s] = true
	}
	l.startLocked()
	l.mu.Unlock()
}

// Run seals every space holding unsealed receipts every interval until ctx ends: the safety
// net behind the commit hook. One Run per process is enough; several are harmless.
func (l *Log) Run(ctx context.Context) {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		spaces, err := unsealedSpaces(ctx, l.db, 1000)
		if err != nil {
			if ctx.Err() == nil {
				l.logger.Warn("receipts: looking for unsealed receipts failed", "error", err)
			}
			continue
		}
		l.sealSoon(spaces...)
	}
}

// startLocked starts the drain goroutine unless it runs (l.mu held).
func (l *Log) startLocked() {
	if !l.running {
		l.running = true
		go l.drain()
	}
}

// drain commits the queue and seals the requested spaces, pass after pass, until both are
// empty. It is the only goroutine of the Log that writes.
func (l *Log) drain() {
	ctx := context.Background() // the work is every waiting request's, not one's
	for {
		l.mu.Lock()
		n := min(len(l.queue), maxGroup)
		group := slices.Clone(l.queue[:n])
		l.queue = l.queue[n:]
		spaces := l.spaces
		l.spaces = map[string]bool{}
		if len(group) == 0 && len(spaces) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		err := l.commit(ctx, group, spaces)
		for _, p := range group {
			p.done <- err
		}
	}
}

// commit inserts group's receipts, sealed, and seals whatever else of their spaces and of
// spaces is unsealed, in one transaction: per space, one chain entry. When that fails, it
// inserts group alone, unsealed (a later pass seals them), and returns that insert's error:
// sealing never fails a read whose receipt was stored.
func (l *Log) commit(ctx context.Context, group []*pending, spaces map[string]bool) error {
	fresh := map[string][]record{}
	for _, p := range group {
		fresh[p.rec.r.SpaceID] = append(fresh[p.rec.r.SpaceID], p.rec)
		spaces[p.rec.r.SpaceID] = true
	}
	order := make([]string, 0, len(spaces))
	for s := range spaces {
		order = append(order, s)
	}
	slices.Sort(order) // heads are locked in one order by every sealer: no deadlock
	err := l.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, s := range order {
			// A full entry may leave more unsealed receipts behind: seal until one is not full.
			for recs := fresh[s]; ; recs = nil {
				sealed, err := sealSpace(ctx, tx, s, nil, recs)
				if err != nil {
					return err
				}
				if sealed == nil || sealed.Count < MaxBatch {
					break
				}
			}
		}
		return nil
	})
	if err == nil {
		return nil
	}
	l.logger.Warn("receipts: sealing failed; the receipts stay unsealed until the next pass", "error", err, "spaces", len(order))
	if len(group) == 0 {
		return nil
	}
	rows := make([]*models.Receipt, len(group))
	for i, p := range group {
		rows[i] = p.rec.row
		rows[i].N, rows[i].Seq, rows[i].Hash = 0, 0, "" // as before the rolled-back insert
	}
	return l.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return fmt.Errorf("receipts: insert: %w", err)
		}
		return nil
	})
}

// Record writes the receipt of a request that writes nothing else: through l's group
// committer, or, with l nil, in a transaction of its own on d (sealed later). Either way it
// returns once the receipt has committed.
func Record(ctx context.Context, l *Log, d *bun.DB, spaceID string, e Entry, now time.Time) error {
	if l != nil {
		_, err := l.Record(ctx, spaceID, e, now)
		return err
	}
	return d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := Append(ctx, tx, spaceID, e, now)
		return err
	})
}
