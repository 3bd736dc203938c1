package events

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
)

// Eraser is the outbox's eraser (issue 12 §2, §3). Events carry ids of notes and proposals,
// kinds and agents only, never a subject's handle, hash or profile, so EraseSubject removes
// nothing; Residue proves it for each erasure: it counts the space's outbox events whose
// payload contains one of the target's keyed handle hashes, profile ids or conversation scope
// hash (a store that began carrying subject data would fail the erasure, not pass silently).
type Eraser struct{}

// Name is "outbox".
func (Eraser) Name() string { return "outbox" }

// Covers is empty: no outbox column holds subject data (payload is probed, not erased).
func (Eraser) Covers() []erasure.Column { return nil }

// Backups is erasure.HoldsNone: the outbox holds nothing of a subject (Residue proves it).
func (Eraser) Backups(erasure.Target) string { return erasure.HoldsNone }

// EraseSubject removes nothing (events hold no subject data).
func (Eraser) EraseSubject(context.Context, bun.Tx, erasure.Target) (erasure.Reach, error) {
	return erasure.Reach{}, nil
}

// Residue returns the ids of outbox events of the space whose payload names the target.
func (Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	needles := append(append([]string{}, t.HandleHashes...), t.ProfileIDs...)
	if t.ScopeHash != "" {
		needles = append(needles, t.ScopeHash)
	}
	out := erasure.Reach{}
	for _, n := range needles {
		if n == "" {
			continue
		}
		var ids []string
		if err := idb.NewSelect().Model((*models.OutboxEvent)(nil)).Column("id").
			Where("space_id = ? AND CAST(payload AS TEXT) LIKE ?", t.SpaceID, "%"+n+"%").Scan(ctx, &ids); err != nil {
			return nil, fmt.Errorf("events: probe outbox: %w", err)
		}
		out.Add("event", ids...)
	}
	return out, nil
}

// Export gives the zero Export: events hold nothing of a subject to put in a data package.
func (Eraser) Export(context.Context, bun.IDB, erasure.Target) (erasure.Export, error) {
	return erasure.Export{}, nil
}

// KindEvent is the item kind of an outbox event in content-probe findings.
const KindEvent = "outbox_event"

// contentPage is how many events the content probe reads at a time.
const contentPage = 1000

// Searched names what the outbox's content probe reads.
func (Eraser) Searched() string { return "outbox.payload" }

// ProbeContent finds the space's outbox events whose payload names t's subject (issue 29
// §1b): payloads carry ids, kinds and agents only, so this finds nothing unless a producer
// started carrying text; then the erasure sees it.
func (Eraser) ProbeContent(ctx context.Context, idb bun.IDB, t erasure.Target) ([]erasure.Finding, error) {
	if t.Content == nil {
		return nil, nil
	}
	var out []erasure.Finding
	var after int64
	for {
		var rows []models.OutboxEvent
		if err := idb.NewSelect().Model(&rows).Column("seq", "id", "payload").Where("space_id = ? AND seq > ?", t.SpaceID, after).
			Order("seq ASC").Limit(contentPage).Scan(ctx); err != nil {
			return nil, fmt.Errorf("events: content probe: %w", err)
		}
		for _, r := range rows {
			if m := t.Content.Match(r.Payload); m != "" {
				out = append(out, erasure.Finding{Kind: KindEvent, ID: r.ID, Where: "outbox.payload", Match: m})
			}
		}
		if len(rows) < contentPage {
			return out, nil
		}
		after = rows[len(rows)-1].Seq
	}
}

// EraseFound deletes the events found (kind KindEvent) inside tx, delivered or not: an event
// naming the subject must not reach a consumer after her erasure.
func (Eraser) EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []erasure.Finding) (erasure.Reach, error) {
	ids := erasure.IDsOf(found, KindEvent)
	if len(ids) != len(found) {
		return nil, fmt.Errorf("events: erase found: a finding of another store")
	}
	out := erasure.Reach{}
	if len(ids) == 0 {
		return out, nil
	}
	var gone []string
	if err := tx.NewRaw("DELETE FROM outbox WHERE space_id = ? AND id IN (?) RETURNING id", spaceID, bun.In(ids)).Scan(ctx, &gone); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("events: erase found: %w", err)
	}
	out.Add(KindEvent, gone...)
	return out, nil
}
