package receipts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/gather"
	"github.com/agentmemory/agentmemory/models"
)

// Log is a process's group committer of receipts for one database (issue 16). Build it with
// NewLog; its zero value is not usable. Every method is safe for concurrent use, and several
// processes may each run a Log on one database.
//
//   - Record is the receipt of a request that writes nothing else (a block read, a search, a
//     retrieval): the receipt is queued; one goroutine, once the runnable requests have
//     queued theirs too (gather: it yields, never sleeps), inserts every queued receipt in one
//     transaction, seals their spaces in it (one chain entry per space, holding the Merkle
//     root of all of them), commits, and only then answers each waiting Record. N concurrent
//     reads cost one commit and one lock of the space's head instead of N of each, and each
//     is answered only once its receipt is durable and in the chain.
//   - On PostgreSQL that transaction commits asynchronously (synchronous_commit off): the
//     space's head is released once the commit record is written, not once it is flushed,
//     and the goroutine goes on to the next group at once. Each group is handed to a flush
//     of its own (Flush, at most maxUnflushed of them at a time) that answers its Records
//     once the WAL is durable past the group's commit, or fails them when it is not. A crash
//     loses at most the groups not flushed yet, none of whose requests was answered (the WAL
//     is replayed as a prefix). SQLite commits each group durably as it is (WAL,
//     synchronous=NORMAL: the embedded default's durability), and answers it at once.
//   - When that transaction fails, the receipts are inserted alone and stay unsealed; Run,
//     every interval, seals whatever is unsealed (also what a process that stopped left).
type Log struct {
	db      *bun.DB
	logger  *slog.Logger
	every   time.Duration
	async   bool                            // PostgreSQL: groups commit asynchronously, then flush
	flush   func(ctx context.Context) error // Flush of db
	flushes chan struct{}                   // a token per group awaiting its flush

	signer          note.Signer   // signs the log's checkpoints (SetCheckpointSigner); nil: unsigned
	keepCheckpoints time.Duration // how long checkpoints are kept (SetCheckpointRetention); <= 0: all

	mu      sync.Mutex
	queue   []*pending
	spaces  map[string]bool // to seal on the next pass
	running bool            // a drain goroutine is on
}

// pending is one receipt Record waits for: stored only while the space's revisions are still
// expect (stale is set when they were not, and nothing was stored).
type pending struct {
	rec    record
	expect []Expect
	stale  bool
	done   chan error
}

// Expect is a revision of the receipt's space (table space_revisions: Name, e.g. "config" or
// "notes", at Revision; 0 when the space has no row of that name) that the answer a receipt
// records was decided on (issue 16): Record stores the receipt only if the revision is still
// the same inside the transaction that commits it, so an answer decided from a replica's
// memory is given only while what it relied on is current on every replica.
type Expect struct {
	Name     string
	Revision int64
}

// ErrStale is Record's error when a revision the answer relied on (Expect) changed before
// the receipt could commit: nothing was stored; the caller decides the answer again from the
// store.
var ErrStale = errors.New("receipts: a revision the answer relied on changed; the receipt was not stored")

// DefaultSealEvery is the interval of Run's safety-net pass.
const DefaultSealEvery = time.Second

// maxGroup is the most receipts one group commit inserts.
const maxGroup = 1000

// maxUnflushed is the most groups that wait for their flush at a time on PostgreSQL: the
// next group's commit waits for one of them to end.
const maxUnflushed = 4

// NewLog builds the Log of d. logger receives a line when a pass fails
// (never receipt content); nil discards. every is Run's interval (<= 0: DefaultSealEvery).
func NewLog(d *bun.DB, logger *slog.Logger, every time.Duration) *Log {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if every <= 0 {
		every = DefaultSealEvery
	}
	return &Log{
		db: d, logger: logger, every: every, spaces: map[string]bool{},
		async:   !db.IsSQLite(d),
		flush:   func(ctx context.Context) error { return Flush(ctx, d) },
		flushes: make(chan struct{}, maxUnflushed),
	}
}

// Record writes e as a receipt of the space through the group committer and returns once it
// has committed: sealed, with its Seq and leaf Hash, or, when its group's sealing failed,
// unsealed (Seq 0; Run seals it later). With expect, the receipt is stored only if each of
// the space's revisions is still the expected one inside the committing transaction; else
// nothing is stored and the error is ErrStale. It returns an error when the receipt could not
// be stored at all, or when ctx ended first (the receipt may still commit).
func (l *Log) Record(ctx context.Context, spaceID string, e Entry, now time.Time, expect ...Expect) (Receipt, error) {
	if e.Manifest != nil {
		if err := storeManifest(ctx, l.db, spaceID, e.Manifest); err != nil {
			return Receipt{}, err
		}
	}
	rec, err := newRecord(l.db, spaceID, e, now)
	if err != nil {
		return Receipt{}, err
	}
	r, row := rec.r, rec.row
	p := &pending{rec: rec, expect: expect, done: make(chan error, 1)}
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

// SetCheckpointSigner sets the signer of the log's checkpoints (signing.Signer.NoteSigner of
// CheckpointName); call it before Run. Without one, checkpoints are stored unsigned.
func (l *Log) SetCheckpointSigner(s note.Signer) {
	l.signer = s
}

// Run seals every space holding unsealed receipts every interval until ctx ends: the safety
// net behind the commit hook. It also appends the receipts sealed since to the deployment's
// log (AppendLog) every half interval, signing a checkpoint at most once per
// CheckpointEvery while the log grows: a receipt is in a checkpoint about 1.5 intervals after
// its request was answered. One Run per process is enough; several are harmless.
func (l *Log) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { l.runAppender(ctx) })
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

// runAppender appends to the log every half interval until ctx ends (CatchUpLog: a backlog,
// such as the receipts sealed before the log existed, goes in passes of logPass leaves), and
// prunes old checkpoints when a retention is set (pruneDue).
func (l *Log) runAppender(ctx context.Context) {
	t := time.NewTicker(max(l.every/2, time.Millisecond))
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if _, err := CatchUpLog(ctx, l.db, l.signer, now); err != nil && ctx.Err() == nil {
			l.logger.Warn("receipts: appending to the receipt log failed; the next pass retries", "error", err)
		}
		pruned = l.pruneDue(ctx, pruned, now)
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
// empty. It is the only goroutine of the Log that writes. Before each pass it lets the
// requests about to Record join the group (gather). On PostgreSQL a group's Records are
// answered by its flush (answerDurable), which runs while the next group commits.
func (l *Log) drain() {
	ctx := context.Background() // the work is every waiting request's, not one's
	for {
		l.gather()
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
		if err != nil || !l.async || len(group) == 0 {
			answer(group, err)
			continue
		}
		l.flushes <- struct{}{} // waits while maxUnflushed groups wait for their flush
		go l.answerDurable(ctx, group)
	}
}

// gather lets receipts that are about to be queued join the next group (gather.Wait). On
// the block-read benchmark (SQLite, 32 readers) groups went from 2-3 receipts to 10-12, and
// the process's CPU per read fell by 20-26% (docs/bench.md). PostgreSQL's groups, formed
// while each waits for its flush, were already that size.
func (l *Log) gather() {
	gather.Wait(func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.queue)
	}, maxGroup)
}

// answerDurable flushes the WAL past group's asynchronous commit and then answers its
// Records, each with the flush's error when it failed: a receipt not known durable is never
// reported stored.
func (l *Log) answerDurable(ctx context.Context, group []*pending) {
	err := l.flush(ctx)
	<-l.flushes
	if err != nil {
		l.logger.Warn("receipts: flushing a group commit failed", "error", err, "receipts", len(group))
	}
	answer(group, err)
}

// answer gives each of group's Records the outcome of its group: err, else ErrStale for a
// receipt left out as stale, else success.
func answer(group []*pending, err error) {
	for _, p := range group {
		if err == nil && p.stale {
			p.done <- ErrStale
			continue
		}
		p.done <- err
	}
}

// commit inserts group's receipts, sealed, and seals whatever is unsealed in spaces (the
// spaces asked to be sealed), in one transaction (on PostgreSQL committed asynchronously: the
// caller flushes before it answers anyone): per space, its head locked once and one
// chain entry (more in spaces when a full entry leaves receipts behind). A receipt whose
// expected revisions differ from the space's in that transaction (read once the heads are
// locked) is left out and marked stale. The group's receipts are inserted in multi-row
// statements (insertFresh; on PostgreSQL with the entry, in one statement: sealStatement,
// values bound, in commitPipelined, appendStatement in commitTx). On PostgreSQL a group alone
// (no space asked to be sealed) commits in two round trips (commitPipelined), else through
// commitTx. When that fails, it inserts group alone (the revisions checked
// again), unsealed (the next pass seals them), and returns that insert's error: sealing never
// fails a read whose receipt was stored.
func (l *Log) commit(ctx context.Context, group []*pending, spaces map[string]bool) error {
	leftovers := maps.Clone(spaces) // asked to seal: look for unsealed receipts there
	for _, p := range group {
		spaces[p.rec.r.SpaceID] = true
	}
	order := make([]string, 0, len(spaces))
	for s := range spaces {
		order = append(order, s)
	}
	slices.Sort(order) // heads are locked in one order by every sealer: no deadlock
	var err error
	ran := false
	if l.async && len(leftovers) == 0 && len(group) > 0 {
		ran, err = l.commitPipelined(ctx, group, order)
	}
	if !ran {
		err = l.commitTx(ctx, group, order, leftovers)
	}
	if err == nil {
		return nil
	}
	l.logger.Warn("receipts: sealing failed; the receipts stay unsealed until the next pass", "error", err, "spaces", len(order))
	if len(group) == 0 {
		return nil
	}
	return l.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := markStale(ctx, l.db, tx, group); err != nil {
			return err
		}
		var rows []*models.Receipt
		for _, p := range group {
			if p.stale {
				continue
			}
			row := p.rec.row
			row.N, row.Seq, row.Hash = 0, 0, "" // as before the rolled-back insert
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			return nil
		}
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return fmt.Errorf("receipts: insert: %w", err)
		}
		// Sealed by the next pass, which looks for unsealed receipts in these spaces (the
		// group commit itself does not).
		l.mu.Lock()
		for _, row := range rows {
			l.spaces[row.SpaceID] = true
		}
		l.mu.Unlock()
		return nil
	})
}

// commitTx is commit's transaction through bun: the heads of order locked, the revisions
// read, then per space one chain entry holding its fresh receipts, and in the spaces of
// leftovers as many as their unsealed receipts need.
func (l *Log) commitTx(ctx context.Context, group []*pending, order []string, leftovers map[string]bool) error {
	return l.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if l.async {
			// Committed without waiting for the WAL flush (drain hands the group to one):
			// the heads are released as soon as the commit record is written.
			if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return fmt.Errorf("receipts: asynchronous commit: %w", err)
			}
		}
		// The heads first, each locked once for the whole transaction: a write that bumps a
		// revision holds its space's head until it commits, so the revisions read next are
		// those of every write committed before this one (read before, a revision could be
		// overtaken by a write committing while this transaction waits for its head).
		heads := make(map[string]head, len(order))
		for _, s := range order {
			h, err := lockHead(ctx, tx, s)
			if err != nil {
				return err
			}
			heads[s] = h
		}
		if err := markStale(ctx, l.db, tx, group); err != nil {
			return err
		}
		fresh := map[string][]record{}
		for _, p := range group {
			if !p.stale {
				fresh[p.rec.r.SpaceID] = append(fresh[p.rec.r.SpaceID], p.rec)
			}
		}
		for _, s := range order {
			// The group's receipts alone, unless the space was asked to be sealed (sealSoon:
			// a failed group, Run's pass); there a full entry may leave more unsealed
			// receipts behind: seal until one is not full.
			h := heads[s]
			for recs := fresh[s]; ; recs = nil {
				sealed, err := sealLocked(ctx, tx, h, leftovers[s], nil, recs)
				if err != nil {
					return err
				}
				if sealed == nil || sealed.Count < MaxBatch || !leftovers[s] {
					break
				}
				h = head{SpaceID: s, Seq: sealed.Seq, Hash: sealed.Hash}
			}
		}
		return nil
	})
}

// Flush makes every transaction committed on d's database before it was called durable, and
// returns once it is (an error when it could not tell). On PostgreSQL it commits a transaction
// of its own that writes one WAL record (an empty transactional logical-decoding message,
// prefix "agentmemory.receipts"), synchronously: that commit waits for the WAL to be flushed
// past its own commit record, which follows every commit record written before it. SQLite
// commits are as durable as they will be when they return: nothing to do.
func Flush(ctx context.Context, d *bun.DB) error {
	if db.IsSQLite(d) {
		return nil
	}
	// An xid alone (pg_current_xact_id) would not do: a transaction that wrote no WAL record
	// commits without waiting for the flush, whatever synchronous_commit says.
	if _, err := d.ExecContext(ctx, "SELECT pg_logical_emit_message(true, 'agentmemory.receipts', '')"); err != nil {
		return fmt.Errorf("receipts: flush: %w", err)
	}
	return nil
}

// markStale sets the stale flag of each of group's receipts whose expected revisions
// (pending.expect) are not the space's current ones read through tx, a transaction of d's
// pool (one prepared statement per space concerned, none when nothing is expected), and
// clears it on the others.
func markStale(ctx context.Context, d *bun.DB, tx bun.Tx, group []*pending) error {
	current := map[[2]string]int64{}
	var read []string
	for _, p := range group {
		space := p.rec.r.SpaceID
		if len(p.expect) == 0 || slices.Contains(read, space) {
			continue
		}
		read = append(read, space)
		rows, err := db.QueryRowsTx(ctx, d, tx, "SELECT name, revision FROM space_revisions WHERE space_id = ?", space)
		if err != nil {
			return fmt.Errorf("receipts: revisions: %w", err)
		}
		for rows.Next() {
			var name string
			var revision int64
			if err := rows.Scan(&name, &revision); err != nil {
				rows.Close()
				return fmt.Errorf("receipts: revisions: %w", err)
			}
			current[[2]string{space, name}] = revision
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("receipts: revisions: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("receipts: revisions: %w", err)
		}
	}
	markStaleAgainst(group, current)
	return nil
}

// markStaleAgainst sets the stale flag of each of group's receipts whose expected revisions
// are not those of current (keyed by space and name; a missing name is at 0), and clears it
// on the others.
func markStaleAgainst(group []*pending, current map[[2]string]int64) {
	for _, p := range group {
		p.stale = false
		for _, x := range p.expect {
			if current[[2]string{p.rec.r.SpaceID, x.Name}] != x.Revision {
				p.stale = true
			}
		}
	}
}

// Record writes the receipt of a request that writes nothing else: through l's group
// committer, or, with l nil, in a transaction of its own on d. Either way it returns once the
// receipt has committed; with expect, only if the space's revisions were still those
// (Log.Record), else it stores nothing and returns ErrStale.
func Record(ctx context.Context, l *Log, d *bun.DB, spaceID string, e Entry, now time.Time, expect ...Expect) error {
	if l != nil {
		_, err := l.Record(ctx, spaceID, e, now, expect...)
		return err
	}
	return d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// Appended first, so the revisions are read with the space's head held (see
		// Log.commit); a stale answer rolls the receipt back.
		if _, err := Append(ctx, tx, spaceID, e, now); err != nil {
			return err
		}
		p := &pending{rec: record{r: Receipt{SpaceID: spaceID}}, expect: expect}
		if err := markStale(ctx, d, tx, []*pending{p}); err != nil {
			return err
		}
		if p.stale {
			return ErrStale
		}
		return nil
	})
}
