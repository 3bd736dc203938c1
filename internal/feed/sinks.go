package feed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/models"
)

// Sink kinds (features export.sinks[].kind).
const (
	KindDirectory = "directory" // files under the server's export directory (fileblob)
	KindBucket    = "bucket"    // files in an object store named by URL (s3://, gs://, azblob://)
	KindKafka     = "kafka"     // a topic per table on the server's Kafka brokers
)

// SinkState is a configured sink's delivery state as the Console and the erasure
// certificate show it: Cursor is the last feed cursor the sink acknowledged.
type SinkState struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	Cursor      int64      `json:"cursor"`
	LastError   string     `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// Sinks returns the delivery state of spaceID's sinks that delivered or tried, by name.
func Sinks(ctx context.Context, idb bun.IDB, spaceID string) ([]SinkState, error) {
	var rows []models.ExportSink
	if err := idb.NewSelect().Model(&rows).Where("space_id = ?", spaceID).Order("name ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("feed: sinks: %w", err)
	}
	out := make([]SinkState, len(rows))
	for i, r := range rows {
		out[i] = SinkState{Name: r.Name, Kind: r.Kind, Cursor: r.Cursor, LastError: r.LastError, DeliveredAt: r.DeliveredAt}
	}
	return out, nil
}

// SinkCursor is the last cursor sink name of spaceID acknowledged (0 before any).
func SinkCursor(ctx context.Context, idb bun.IDB, spaceID, name string) (int64, error) {
	var c int64
	err := idb.NewSelect().Model((*models.ExportSink)(nil)).Column("cursor").Where("space_id = ? AND name = ?", spaceID, name).Scan(ctx, &c)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("feed: sink cursor: %w", err)
	}
	return c, nil
}

// RecordDelivery stores the outcome of one delivery of sink name (kind): the cursor it
// acknowledged (never moved back), and lastErr ("" on success; a short generic text).
// delivered says records went out (DeliveredAt moves).
func RecordDelivery(ctx context.Context, idb bun.IDB, spaceID, name, kind string, cursor int64, delivered bool, lastErr string, now time.Time) error {
	row := models.ExportSink{SpaceID: spaceID, Name: name, Kind: kind, Cursor: cursor, LastError: lastErr, UpdatedAt: now.UTC()}
	if delivered {
		t := now.UTC()
		row.DeliveredAt = &t
	}
	_, err := idb.NewInsert().Model(&row).On("CONFLICT (space_id, name) DO UPDATE").
		Set("kind = EXCLUDED.kind").
		Set("cursor = CASE WHEN EXCLUDED.cursor > es.cursor THEN EXCLUDED.cursor ELSE es.cursor END").
		Set("last_error = EXCLUDED.last_error").
		Set("delivered_at = COALESCE(EXCLUDED.delivered_at, es.delivered_at)").
		Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	if err != nil {
		return fmt.Errorf("feed: record delivery: %w", err)
	}
	return nil
}

// RunFile is one delivery of a file sink (ks opens the sealed rows, Read): the records after its manifest's cursor, at most
// limit, become parts and a new manifest. It returns how many records went out and the
// cursor acknowledged.
func RunFile(ctx context.Context, d *bun.DB, ks keystore.Store, spaceID string, f FileSink, limit int, now time.Time) (int, int64, error) {
	m, err := ReadManifest(ctx, f.Bucket, nil)
	if err != nil {
		return 0, 0, err
	}
	recs, err := Read(ctx, d, ks, spaceID, Query{After: m.Cursor, Limit: limit})
	if err != nil {
		return 0, m.Cursor, err
	}
	next, err := f.Deliver(ctx, m, recs, now)
	if err != nil {
		return 0, m.Cursor, err
	}
	return len(recs), next.Cursor, nil
}

// RunKafka is one delivery of a Kafka sink named name (ks opens the sealed rows, Read): the records after its acknowledged
// cursor, at most limit, published; the cursor moves once the brokers acknowledged them. It
// returns how many went out and the cursor acknowledged.
func RunKafka(ctx context.Context, d *bun.DB, ks keystore.Store, spaceID, name string, k *KafkaSink, limit int, now time.Time) (int, int64, error) {
	after, err := SinkCursor(ctx, d, spaceID, name)
	if err != nil {
		return 0, 0, err
	}
	recs, err := Read(ctx, d, ks, spaceID, Query{After: after, Limit: limit})
	if err != nil || len(recs) == 0 {
		return 0, after, err
	}
	if err := k.Deliver(ctx, spaceID, recs); err != nil {
		return 0, after, err
	}
	last := recs[len(recs)-1].Cursor
	if err := RecordDelivery(ctx, d, spaceID, name, KindKafka, last, true, "", now); err != nil {
		return 0, after, err
	}
	return len(recs), last, nil
}

// SinkLag is a configured sink's delivery state (Cursor, LastError, DeliveredAt: zero before
// its first delivery) and Lag, how many committed feed records it has not acknowledged (the
// figure agentmemory_export_sink_lag_records takes the largest of).
type SinkLag struct {
	SinkState
	Lag int64 `json:"lag"`
}

// Lags returns the state and lag of each sink of spaceID in configured (name and kind, as
// features export.sinks lists them, in that order) and the feed's head: its last cursor
// plus the committed changes still waiting for one.
func Lags(ctx context.Context, idb bun.IDB, spaceID string, configured []SinkState) ([]SinkLag, int64, error) {
	states, err := Sinks(ctx, idb, spaceID)
	if err != nil {
		return nil, 0, err
	}
	last, pending, err := Head(ctx, idb, spaceID)
	if err != nil {
		return nil, 0, err
	}
	byName := make(map[string]SinkState, len(states))
	for _, st := range states {
		byName[st.Name] = st
	}
	head := last + pending
	out := make([]SinkLag, 0, len(configured))
	for _, c := range configured {
		st, ok := byName[c.Name]
		if !ok {
			st = SinkState{Name: c.Name}
		}
		st.Kind = c.Kind
		out = append(out, SinkLag{SinkState: st, Lag: max(head-st.Cursor, 0)})
	}
	return out, head, nil
}
