package turns

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
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

// Searched names what the turns store's content probe reads.
func (Eraser) Searched() string {
	return "turns.text of conversations not linked to a profile (unsealed with the conversation's key); linked turns are sealed under the profile's key"
}

// contentPage is how many turns the content probe reads at a time.
const contentPage = 500

// ProbeContent finds the turns of t's space not linked to a profile (masked, sealed under
// their conversation's key, or in clear when written before sealing) whose text names t's
// subject (issue 29 §1b): masking replaces the handles and names it
// knew when the turn was written, so a turn written before her profile existed may still
// hold her name, or a handle in a form masking missed.
func (e Eraser) ProbeContent(ctx context.Context, idb bun.IDB, t erasure.Target) ([]erasure.Finding, error) {
	if t.Content == nil {
		return nil, nil
	}
	var out []erasure.Finding
	o := e.S.opener()
	after := ""
	for {
		var rows []models.Turn
		if err := idb.NewSelect().Model(&rows).Column("id", "text", "profile_id", "sealed_key").
			Where("space_id = ? AND profile_id = '' AND id > ?", t.SpaceID, after).Order("id ASC").Limit(contentPage).Scan(ctx); err != nil {
			return nil, fmt.Errorf("turns: content probe: %w", err)
		}
		for i := range rows {
			r := &rows[i]
			text, ok, err := o.open(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("turns: content probe: %w", err)
			}
			if !ok {
				continue // sealed under a destroyed key: unreadable, nothing to find
			}
			if m := t.Content.Match(text); m != "" {
				out = append(out, erasure.Finding{Kind: KindTurn, ID: r.ID, Where: "turns.text", Match: m})
			}
		}
		if len(rows) < contentPage {
			return out, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// EraseFound deletes the turns found (kind KindTurn) inside tx.
func (Eraser) EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []erasure.Finding) (erasure.Reach, error) {
	ids := erasure.IDsOf(found, KindTurn)
	if len(ids) != len(found) {
		return nil, fmt.Errorf("turns: erase found: a finding of another store")
	}
	var gone []string
	for _, part := range chunks(ids) {
		var got []string
		if err := tx.NewDelete().Model((*models.Turn)(nil)).Where("space_id = ? AND id IN (?)", spaceID, bun.In(part)).
			Returning("id").Scan(ctx, &got); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("turns: erase found: %w", err)
		}
		gone = append(gone, got...)
	}
	return erased(gone, nil), nil
}
