package state

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
)

// KindAgentState is the item kind of a working state in erasure reaches and certificates.
const KindAgentState = "agent_state"

// Eraser is the working-state store's eraser (issue 12 §2, WM-13): a subject erasure deletes
// every state whose subject hash is one of the subject's handle hashes (scoped to a handle or
// naming the subject); a conversation erasure deletes the states of that conversation's
// scope. Residue finds the same rows, read only.
type Eraser struct{}

// Name is "state".
func (Eraser) Name() string { return "state" }

// Covers lists agent_states' subject columns.
func (Eraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "agent_states", Column: "scope_hash"}, {Table: "agent_states", Column: "subject_hash"}, {Table: "agent_states", Column: "key_id"}}
}

func (Eraser) find(ctx context.Context, idb bun.IDB, t erasure.Target) ([]string, error) {
	q := idb.NewSelect().Model((*models.AgentState)(nil)).Column("id").Where("space_id = ?", t.SpaceID)
	if t.Kind == erasure.Subject {
		if len(t.HandleHashes) == 0 {
			return nil, nil
		}
		q = q.Where("subject_hash IN (?)", bun.In(t.HandleHashes))
	} else {
		q = q.Where("scope_kind = 'conversation' AND scope_hash = ?", t.ScopeHash)
	}
	var ids []string
	if err := q.Order("id ASC").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("state: find erased states: %w", err)
	}
	return ids, nil
}

// EraseSubject deletes the states t reaches inside tx.
func (e Eraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, tx, t)
	if err != nil || len(ids) == 0 {
		return erasure.Reach{}, err
	}
	// The versions of the erased states stay as their agents' floors (floors.go): a state
	// written again for the same scope never restarts at version 1.
	gone, err := deleteStates(ctx, tx, "id IN (?)", bun.In(ids))
	if err != nil {
		return nil, err
	}
	return erasure.Reach{KindAgentState: idsOf(gone)}, nil
}

// Residue finds states t still reaches.
func (e Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, idb, t)
	if err != nil {
		return nil, err
	}
	r := erasure.Reach{}
	r.Add(KindAgentState, ids...)
	return r, nil
}
