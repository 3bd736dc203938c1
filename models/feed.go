package models

import "github.com/uptrace/bun"

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

// FeedHead is a space's last assigned feed cursor; its row is the sequencer's lock.
type FeedHead struct {
	bun.BaseModel `bun:"table:feed_heads"`

	SpaceID  string `bun:"space_id,pk"`
	Position int64  `bun:"position"`
}
