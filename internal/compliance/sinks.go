package compliance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/models"
)

// StatusPendingSinks is an erasure whose steps are done and whose probe found nothing, held
// until every export sink of the space (features export.sinks) has acknowledged the feed
// cursor at which its tombstones sit (issue 33: erasure follows the data out). It completes
// when they have; a sink that cannot be reached keeps it here rather than claiming
// completion.
const StatusPendingSinks = "pending_sinks"

// SinkDelivery is one export sink in a certificate: its name and kind, the cursor it had
// acknowledged when the erasure was certified (at or past Certificate.FeedCursor, so every
// tombstone of the erasure was delivered to it) and when it last delivered.
type SinkDelivery struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	Cursor      int64      `json:"cursor"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// AwaitSinks checks that every configured export sink of the erasure's space has delivered
// the erasure's tombstones, and returns the names of those that have not (empty: all have,
// or none is configured). The first call numbers the feed's committed changes and records
// the feed cursor then (every change the erasure's steps committed is at or before it); each
// call compares the sinks' acknowledged cursors with it. With all delivered it records the
// sinks for the certificate (Certify); otherwise it moves the erasure running →
// pending_sinks (committed) and the caller retries later. A completed erasure answers none
// pending (a retried activity). Errors: "erasure_not_running" for a pending or failed one,
// the database's.
func (s *Service) AwaitSinks(ctx context.Context, spaceID, id string) ([]string, error) {
	row, err := s.loadErasure(ctx, s.DB, spaceID, id)
	if err != nil {
		return nil, err
	}
	if Completed(row.Status) {
		return nil, nil
	}
	if row.Status != StatusRunning && row.Status != StatusPendingSinks {
		return nil, errNotRunning(row.Status)
	}
	f, err := s.Docs.Features(ctx, spaceID)
	if err != nil {
		return nil, fmt.Errorf("compliance: sinks: features: %w", err)
	}
	if len(f.Export.Sinks) == 0 {
		return nil, s.recordSinks(ctx, row, []SinkDelivery{}, nil)
	}
	at, err := s.erasureFeedCursor(ctx, row)
	if err != nil {
		return nil, err
	}
	states, err := feed.Sinks(ctx, s.DB, spaceID)
	if err != nil {
		return nil, err
	}
	acked := make(map[string]feed.SinkState, len(states))
	for _, st := range states {
		acked[st.Name] = st
	}
	var pending []string
	out := make([]SinkDelivery, 0, len(f.Export.Sinks))
	for _, sk := range f.Export.Sinks {
		st := acked[sk.Name]
		if st.Cursor < at {
			pending = append(pending, sk.Name)
		}
		out = append(out, SinkDelivery{Name: sk.Name, Kind: sk.Kind, Cursor: st.Cursor, DeliveredAt: st.DeliveredAt})
	}
	if len(pending) > 0 {
		return pending, s.holdForSinks(ctx, row)
	}
	return nil, s.recordSinks(ctx, row, out, &at)
}

// erasureFeedCursor is row's feed cursor: recorded, or (the first time) the feed's head once
// every change visible now is numbered, recorded on the row (a later call keeps the first).
func (s *Service) erasureFeedCursor(ctx context.Context, row *models.Erasure) (int64, error) {
	if row.FeedCursor != nil {
		return *row.FeedCursor, nil
	}
	var maxSeq int64
	if err := s.DB.NewSelect().Model((*models.FeedChange)(nil)).ColumnExpr("COALESCE(MAX(seq), 0)").
		Where("space_id = ?", row.SpaceID).Scan(ctx, &maxSeq); err != nil {
		return 0, fmt.Errorf("compliance: feed cursor: %w", err)
	}
	for {
		if err := feed.AdvanceAll(ctx, s.DB, row.SpaceID); err != nil {
			return 0, err
		}
		left, err := s.DB.NewSelect().Model((*models.FeedChange)(nil)).
			Where("space_id = ? AND position IS NULL AND seq <= ?", row.SpaceID, maxSeq).Exists(ctx)
		if err != nil {
			return 0, fmt.Errorf("compliance: feed cursor: %w", err)
		}
		if !left {
			break
		}
	}
	head, _, err := feed.Head(ctx, s.DB, row.SpaceID)
	if err != nil {
		return 0, err
	}
	if _, err := s.DB.NewUpdate().Model((*models.Erasure)(nil)).Set("feed_cursor = ?", head).
		Where("id = ? AND feed_cursor IS NULL", row.ID).Exec(ctx); err != nil {
		return 0, fmt.Errorf("compliance: feed cursor: %w", err)
	}
	if err := s.DB.NewSelect().Model(row).Column("feed_cursor").Where("id = ?", row.ID).Scan(ctx); err != nil {
		return 0, fmt.Errorf("compliance: feed cursor: %w", err)
	}
	return *row.FeedCursor, nil
}

// holdForSinks moves a running erasure to pending_sinks (one already there stays).
func (s *Service) holdForSinks(ctx context.Context, row *models.Erasure) error {
	if row.Status == StatusPendingSinks {
		return nil
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return s.setStatus(ctx, tx, row, StatusPendingSinks)
	})
}

// recordSinks stores the sinks the certificate lists (and the feed cursor they passed, when
// there are sinks).
func (s *Service) recordSinks(ctx context.Context, row *models.Erasure, sinks []SinkDelivery, at *int64) error {
	b, err := json.Marshal(sinks)
	if err != nil {
		return fmt.Errorf("compliance: sinks: %w", err)
	}
	q := s.DB.NewUpdate().Model((*models.Erasure)(nil)).Set("sinks = ?", string(b)).
		Where("id = ? AND status IN (?)", row.ID, bun.In([]string{StatusRunning, StatusPendingSinks}))
	if _, err := q.Exec(ctx); err != nil {
		return fmt.Errorf("compliance: sinks: %w", err)
	}
	row.Sinks = string(b)
	if at != nil {
		row.FeedCursor = at
	}
	return nil
}

// PruneFeeds prunes the export feed of spaceID (every space with a feed when empty) as of
// now: the change records older than FeedRetention that every sink configured in the
// space's features acknowledged (feed.Prune), one space per transaction. With FeedRetention
// 0 it does nothing. The last batch of a sweep's exports phase runs it.
func (s *Service) PruneFeeds(ctx context.Context, spaceID string, now time.Time) error {
	if s.FeedRetention <= 0 {
		return nil
	}
	spaceIDs := []string{spaceID}
	if spaceID == "" {
		spaceIDs = nil
		if err := s.DB.NewSelect().Model((*models.FeedHead)(nil)).Column("space_id").Order("space_id ASC").
			Scan(ctx, &spaceIDs); err != nil {
			return fmt.Errorf("compliance: prune feeds: %w", err)
		}
	}
	for _, sp := range spaceIDs {
		f, err := s.Docs.Features(ctx, sp)
		if err != nil {
			return fmt.Errorf("compliance: prune feeds: features: %w", err)
		}
		names := make([]string, len(f.Export.Sinks))
		for i, sk := range f.Export.Sinks {
			names[i] = sk.Name
		}
		if _, err := feed.Prune(ctx, s.DB, sp, names, now.Add(-s.FeedRetention)); err != nil {
			return err
		}
	}
	return nil
}
