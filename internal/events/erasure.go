package events

import (
	"context"
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
