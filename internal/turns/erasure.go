package turns

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
)

// Eraser is the turns store's erasure.Eraser (issue 29 §4, WM-13, GOV-2, GOV-3): a subject
// erasure deletes the subject's identity links and every turn of the conversations they
// link (Service.EraseSubject), a conversation erasure that conversation's turns and links
// (Service.EraseConversation); Residue finds the same rows read only; Export gives the
// subject's links and masked turns (Service.ExportSubject). S is the store.
type Eraser struct{ S *Service }

// Name is "turns".
func (Eraser) Name() string { return "turns" }

// Covers lists the keyed hashes, profiles and keys of turns and identity links.
func (Eraser) Covers() []erasure.Column {
	return []erasure.Column{
		{Table: "turns", Column: "scope_hash"}, {Table: "turns", Column: "profile_id"}, {Table: "turns", Column: "key_id"},
		{Table: "turns", Column: "sealed_key"},
		{Table: "identity_links", Column: "scope_hash"}, {Table: "identity_links", Column: "handle_hash"},
		{Table: "identity_links", Column: "profile_id"}, {Table: "identity_links", Column: "key_id"},
	}
}

// Backups is erasure.Shredded: every turn is sealed under its profile's or its
// conversation's key, and the erasure destroys both (ER-1); legacy clear turns are re-sealed
// by `agentmemory restore` (turns.Service.SealLegacy).
func (Eraser) Backups(erasure.Target) string { return erasure.Shredded }

var errNoService = errors.New("turns: the eraser has no service")

// EraseSubject deletes what t reaches inside tx: a subject's links and their conversations'
// turns, or a conversation's turns and links.
func (e Eraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	if e.S == nil {
		return nil, errNoService
	}
	if t.Kind == erasure.Subject {
		return e.S.EraseSubject(ctx, tx, t.SpaceID, t)
	}
	return e.S.EraseConversation(ctx, tx, t.SpaceID, t.ConversationID)
}

// Residue finds, read only, what of t the turns store still holds.
func (e Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	if e.S == nil {
		return nil, errNoService
	}
	if t.Kind == erasure.Subject {
		return e.S.SubjectResidue(ctx, idb, t.SpaceID, t)
	}
	return e.S.ConversationResidue(ctx, idb, t.SpaceID, t.ScopeHash)
}

// Export gives a subject's identity links and masked turns as members "identity_links" and
// "turns" (counts of the same names); the links' ids are touched (their receipts go in the
// package). A conversation Target gives the zero Export.
func (e Eraser) Export(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Export, error) {
	if t.Kind != erasure.Subject {
		return erasure.Export{}, nil
	}
	if e.S == nil {
		return erasure.Export{}, errNoService
	}
	links, turns, err := e.S.ExportSubject(ctx, idb, t.SpaceID, t)
	if err != nil {
		return erasure.Export{}, err
	}
	touched := make([]string, 0, len(links))
	for _, l := range links {
		touched = append(touched, l.ID)
	}
	return erasure.Export{
		Members: map[string]any{"identity_links": links, "turns": turns},
		Counts:  map[string]int{"identity_links": len(links), "turns": len(turns)},
		Touched: touched,
	}, nil
}
