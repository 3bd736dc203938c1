package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/models"
)

// Message is one event as a Publisher sends it.
type Message struct {
	// Key is the space id: every event of a space goes to one partition, in order.
	Key string
	// EventID is the stable event id (also inside Value), for consumers to drop duplicates.
	EventID string
	// Type is the event type, e.g. TypeNoteCreated.
	Type string
	// Value is the event JSON (ids, kind, origin; never note text).
	Value []byte
	// Time is when the event was written to the outbox.
	Time time.Time
}

// Publisher delivers messages to a broker. Publish returns nil only when every message was
// acknowledged; a *PartialError says which ones were. It must keep the order of messages
// with the same Key.
type Publisher interface {
	Publish(ctx context.Context, msgs []Message) error
}

// PartialError reports a publish in which some messages were acknowledged: Errs has one entry
// per message, nil for those delivered.
type PartialError struct {
	Errs []error
}

func (e *PartialError) Error() string {
	n := 0
	var first error
	for _, err := range e.Errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	return fmt.Sprintf("%d of %d messages not delivered: %v", n, len(e.Errs), first)
}

// Relay delivers the outbox: pending rows to the Publisher (Kafka) and, when Webhooks is set,
// each event to its space's webhook. It is safe to run several relays on one database (see
// the leader-safety note in claim.go). The zero values of the tuning fields take defaults.
type Relay struct {
	// DB is the store holding the outbox.
	DB *bun.DB
	// Publisher sends events to Kafka; nil leaves the Kafka job off (the embedded default).
	Publisher Publisher
	// Webhooks delivers events to the spaces' webhooks; nil leaves that job off.
	Webhooks *Webhooks
	// Metrics, when set, counts publishes and errors.
	Metrics *Metrics
	// Logger receives one line per failed pass (never payloads or URLs).
	Logger *slog.Logger
	// Now is the clock (time.Now by default).
	Now func() time.Time

	// Poll is the pause between passes that found nothing to do (default 500ms).
	Poll time.Duration
	// Batch is the most rows one pass takes (default 100, at most 1000).
	Batch int
	// Retention keeps sent rows and finished webhook deliveries this long (default 7 days).
	Retention time.Duration
	// PruneEvery is the pause between prunes (default 10 minutes).
	PruneEvery time.Duration
	// PublishTimeout bounds one publish (default 15s).
	PublishTimeout time.Duration
	// LeaseTTL is how long a SQLite lease lasts (default 30s; work stops at 3/4 of it).
	LeaseTTL time.Duration
	// MaxBackoff caps the pause after failed passes (default 30s).
	MaxBackoff time.Duration

	once   sync.Once
	holder string
}

func (r *Relay) init() {
	r.once.Do(func() {
		r.holder = auth.NewID("relay")
		if r.Logger == nil {
			r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		if r.Poll <= 0 {
			r.Poll = 500 * time.Millisecond
		}
		if r.Batch <= 0 {
			r.Batch = 100
		}
		r.Batch = min(r.Batch, 1000)
		if r.Retention <= 0 {
			r.Retention = 7 * 24 * time.Hour
		}
		if r.PruneEvery <= 0 {
			r.PruneEvery = 10 * time.Minute
		}
		if r.PublishTimeout <= 0 {
			r.PublishTimeout = 15 * time.Second
		}
		if r.LeaseTTL <= 0 {
			r.LeaseTTL = 30 * time.Second
		}
		if r.MaxBackoff <= 0 {
			r.MaxBackoff = 30 * time.Second
		}
	})
}

func (r *Relay) now() time.Time {
	if r.Now == nil {
		return time.Now().UTC()
	}
	return r.Now().UTC()
}

// Run runs the relay's jobs (Kafka when Publisher is set, webhooks when Webhooks is set, and
// pruning) until ctx ends. A failed pass is logged and retried with backoff; rows wait in the
// outbox meanwhile. It returns nil once every job has stopped.
func (r *Relay) Run(ctx context.Context) error {
	r.init()
	var wg sync.WaitGroup
	if r.Publisher != nil {
		wg.Go(func() { r.loop(ctx, "kafka", r.Poll, r.PublishPending) })
	}
	if r.Webhooks != nil {
		wg.Go(func() { r.loop(ctx, "webhook", r.Poll, r.DeliverWebhooks) })
	}
	wg.Go(func() {
		r.loop(ctx, "prune", r.PruneEvery, func(ctx context.Context) (int, error) {
			_, err := r.Prune(ctx)
			return 0, err
		})
	})
	wg.Wait()
	r.release(context.Background())
	return nil
}

// loop runs pass until ctx ends: again at once after a full batch, after interval when idle,
// after a growing backoff (up to MaxBackoff) when it failed.
func (r *Relay) loop(ctx context.Context, name string, interval time.Duration, pass func(context.Context) (int, error)) {
	var backoff time.Duration
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := pass(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := interval
		switch {
		case err != nil:
			backoff = min(max(2*backoff, r.Poll), r.MaxBackoff)
			wait = backoff
			r.Logger.WarnContext(ctx, "events relay pass failed", "job", name, "err", err.Error(), "retry_in", wait.String())
		case n >= r.Batch:
			backoff, wait = 0, 0
		default:
			backoff = 0
		}
		t.Reset(wait)
	}
}

// PublishPending takes up to Batch pending outbox rows, oldest first, publishes them and marks
// the acknowledged ones sent. Rows not acknowledged stay pending with attempts+1 and
// last_error set, and go out, in order per space, on a later pass. It returns how many rows
// it marked sent and the publish error, if any.
func (r *Relay) PublishPending(ctx context.Context) (int, error) {
	r.init()
	if r.Publisher == nil {
		return 0, errors.New("events: relay has no publisher")
	}
	var sent int
	var pubErr error
	err := r.job(ctx, "kafka", func(ctx, txCtx context.Context, idb bun.IDB, locked bool) error {
		rows, err := r.pending(txCtx, idb, locked)
		if err != nil || len(rows) == 0 {
			return err
		}
		sent, pubErr, err = r.publish(ctx, txCtx, idb, rows)
		return err
	})
	if err != nil {
		return sent, err
	}
	return sent, pubErr
}

// pending returns the pending rows this relay may publish now, in seq order. With row locks
// (PostgreSQL) it keeps, per space, only the rows before any older pending row that another
// relay holds, so that no space's events overtake each other.
func (r *Relay) pending(ctx context.Context, idb bun.IDB, locked bool) ([]models.OutboxEvent, error) {
	var rows []models.OutboxEvent
	q := idb.NewSelect().Model(&rows).Column("seq", "id", "space_id", "type", "payload", "created_at", "attempts").
		Where("sent_at IS NULL").Order("seq ASC").Limit(int64(r.Batch))
	if locked {
		q = q.For("UPDATE SKIP LOCKED")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("events: pending: %w", err)
	}
	if !locked || len(rows) == 0 {
		return rows, nil
	}
	mine := make(map[int64]bool, len(rows))
	var spaceIDs []string
	seen := map[string]bool{}
	for _, row := range rows {
		mine[row.Seq] = true
		if !seen[row.SpaceID] {
			seen[row.SpaceID] = true
			spaceIDs = append(spaceIDs, row.SpaceID)
		}
	}
	var all []models.OutboxEvent
	if err := idb.NewSelect().Model(&all).Column("seq", "space_id").
		Where("sent_at IS NULL AND space_id IN (?) AND seq <= ?", bun.In(spaceIDs), rows[len(rows)-1].Seq).
		Order("seq ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("events: pending order: %w", err)
	}
	blocked := map[string]bool{}
	keep := map[int64]bool{}
	for _, p := range all {
		switch {
		case blocked[p.SpaceID]:
		case mine[p.Seq]:
			keep[p.Seq] = true
		default:
			blocked[p.SpaceID] = true // an older row of this space is another relay's
		}
	}
	out := rows[:0]
	for _, row := range rows {
		if keep[row.Seq] {
			out = append(out, row)
		}
	}
	return out, nil
}

// publish sends rows and marks them (sent, or attempts+1 with last_error) through idb.
func (r *Relay) publish(ctx, txCtx context.Context, idb bun.IDB, rows []models.OutboxEvent) (int, error, error) {
	msgs := make([]Message, len(rows))
	for i, row := range rows {
		msgs[i] = Message{Key: row.SpaceID, EventID: row.ID, Type: row.Type, Value: []byte(row.Payload), Time: row.CreatedAt}
	}
	pctx, cancel := context.WithTimeout(ctx, r.PublishTimeout)
	pubErr := r.Publisher.Publish(pctx, msgs)
	cancel()
	ok := acknowledged(rows, pubErr)
	var sent, failed []int64
	for i, row := range rows {
		if ok[i] {
			sent = append(sent, row.Seq)
		} else {
			failed = append(failed, row.Seq)
		}
	}
	now := r.now()
	if len(sent) > 0 {
		if _, err := idb.NewUpdate().Model((*models.OutboxEvent)(nil)).
			Set("sent_at = ?", now).Set("attempts = attempts + 1").Set("last_error = ''").
			Where("seq IN (?)", bun.In(sent)).Exec(txCtx); err != nil {
			return 0, pubErr, fmt.Errorf("events: mark sent: %w", err)
		}
	}
	if len(failed) > 0 {
		msg := "not delivered"
		if pubErr != nil {
			msg = truncate(pubErr.Error(), 500)
		}
		if _, err := idb.NewUpdate().Model((*models.OutboxEvent)(nil)).
			Set("attempts = attempts + 1").Set("last_error = ?", msg).
			Where("seq IN (?)", bun.In(failed)).Exec(txCtx); err != nil {
			return 0, pubErr, fmt.Errorf("events: mark failed: %w", err)
		}
	}
	r.Metrics.published(len(sent), pubErr != nil)
	if pubErr != nil {
		pubErr = fmt.Errorf("events: publish: %w", pubErr)
	}
	return len(sent), pubErr, nil
}

// acknowledged says which rows count as delivered: all when err is nil; with a *PartialError,
// per space, those delivered before the space's first failure (a later one that went out is
// published again: a duplicate, never a reordering of what is marked); none otherwise.
func acknowledged(rows []models.OutboxEvent, err error) []bool {
	ok := make([]bool, len(rows))
	if err == nil {
		for i := range ok {
			ok[i] = true
		}
		return ok
	}
	var pe *PartialError
	if !errors.As(err, &pe) || len(pe.Errs) != len(rows) {
		return ok
	}
	failed := map[string]bool{}
	for i, row := range rows {
		if pe.Errs[i] != nil {
			failed[row.SpaceID] = true
		}
		ok[i] = !failed[row.SpaceID]
	}
	return ok
}

// Prune deletes sent outbox rows and finished webhook deliveries older than Retention. An
// outbox row whose webhook was not yet scheduled stays while webhooks run. It returns how
// many outbox rows it deleted.
func (r *Relay) Prune(ctx context.Context) (int64, error) {
	r.init()
	cutoff := r.now().Add(-r.Retention)
	q := r.DB.NewDelete().Model((*models.OutboxEvent)(nil)).Where("sent_at IS NOT NULL AND sent_at < ?", cutoff)
	if r.Webhooks != nil {
		q = q.Where("webhook_state <> ''")
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("events: prune outbox: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := r.DB.NewDelete().Model((*models.WebhookDelivery)(nil)).
		Where("state <> ? AND updated_at < ?", DeliveryPending, cutoff).Exec(ctx); err != nil {
		return n, fmt.Errorf("events: prune webhook deliveries: %w", err)
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
