package models

import (
	"time"

	"github.com/uptrace/bun"
)

// FeedChange is one change of an exported row (issue 33, EXP-1), written by the capture
// triggers in the transaction of the change: Tbl is the table's name in the feed, PK the row's
// key, Op "upsert" or "delete", ChangedUs the change's time in Unix microseconds. Position is
// the record's cursor in its space, nil until the feed's sequencer assigns it after commit;
// Seq only orders records for the sequencer. No content is copied here.
type FeedChange struct {
	bun.BaseModel `bun:"table:feed_changes"`

	Seq       int64  `bun:"seq,pk,autoincrement"`
	SpaceID   string `bun:"space_id"`
	Tbl       string `bun:"tbl"`
	PK        string `bun:"pk"`
	Op        string `bun:"op"`
	ChangedUs int64  `bun:"changed_us"`
	Position  *int64 `bun:"position"`
}

// FeedHead is a space's last assigned feed cursor; its row is the sequencer's lock. Pruned
// is the last cursor whose change records retention removed (0: none).
type FeedHead struct {
	bun.BaseModel `bun:"table:feed_heads"`

	SpaceID  string `bun:"space_id,pk"`
	Position int64  `bun:"position"`
	Pruned   int64  `bun:"pruned"`
}

// ExportSink is the delivery state of a space's configured export sink (issue 33): Cursor is
// the last feed cursor it acknowledged, LastError its last failure (generic, no record),
// DeliveredAt when it last delivered records.
type ExportSink struct {
	bun.BaseModel `bun:"table:export_sinks,alias:es"`

	SpaceID     string     `bun:"space_id,pk"`
	Name        string     `bun:"name,pk"`
	Kind        string     `bun:"kind"`
	Cursor      int64      `bun:"cursor"`
	LastError   string     `bun:"last_error"`
	DeliveredAt *time.Time `bun:"delivered_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}
