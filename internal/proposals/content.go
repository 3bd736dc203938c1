package proposals

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/models"
)

// Item kinds of the agent-note store in content-probe findings and reaches.
const (
	KindNote     = "note"          // one version of an agent note (erased with its lineage)
	KindProposal = "note_proposal" // a proposed note
)

// contentPage is how many rows the content probe reads at a time.
const contentPage = 500

// ContentEraser is the agent-note store in the erasure registry (issue 29 §1b). Notes are
// never linked to a subject (AM-12: the gate refuses personal data, and agents' notes are
// erased by source, SourceEraser), so EraseSubject and Residue find nothing by linkage; but a
// note can name a customer the gate did not know when it was written (a name before her
// profile existed), so its content probe reads every note version and proposal. S is the
// store (its Notes erase a lineage with its search rows and caches).
type ContentEraser struct{ S *Service }

// Name is "notes".
func (ContentEraser) Name() string { return "notes" }

// Covers lists the sealed text of note versions and proposals (issue 29 §1), which EraseFound
// erases (with the lineage's or proposal's key); the rest of the note tables are covered by the
// SourceEraser (Service.Covers).
func (ContentEraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "notes", Column: "sealed"}, {Table: "note_proposals", Column: "sealed"}}
}

// EraseSubject removes nothing by linkage: no note column refers to a subject (AM-12).
func (ContentEraser) EraseSubject(context.Context, bun.Tx, erasure.Target) (erasure.Reach, error) {
	return erasure.Reach{}, nil
}

// Residue finds nothing by linkage (EraseSubject).
func (ContentEraser) Residue(context.Context, bun.IDB, erasure.Target) (erasure.Reach, error) {
	return erasure.Reach{}, nil
}

// Backups is erasure.Shredded: note versions are sealed under their lineage's key and
// proposals under their own, which EraseFound destroys with the rows (issue 29 §1), so a
// backup taken before the erasure no longer opens what it erased.
func (ContentEraser) Backups(erasure.Target) string { return erasure.Shredded }

// Export gives the zero Export: agent notes are not a subject's data.
func (ContentEraser) Export(context.Context, bun.IDB, erasure.Target) (erasure.Export, error) {
	return erasure.Export{}, nil
}

// Searched names what the content probe reads.
func (ContentEraser) Searched() string {
	return "notes.title, body (unsealed) and tags of every version (what search and blocks serve); note_proposals.title and body (unsealed)"
}

// ProbeContent finds the note versions and proposals of t's space whose title, body or tags
// name t's subject.
func (e ContentEraser) ProbeContent(ctx context.Context, idb bun.IDB, t erasure.Target) ([]erasure.Finding, error) {
	if t.Content == nil {
		return nil, nil
	}
	if e.S == nil || e.S.Notes == nil {
		return nil, errors.New("proposals: the content eraser has no service")
	}
	var out []erasure.Finding
	for after := ""; ; {
		var rows []models.Note
		if err := idb.NewSelect().Model(&rows).Column("id", "lineage_id", "title", "body", "tags_text", "sealed").Where("space_id = ? AND id > ?", t.SpaceID, after).
			Order("id ASC").Limit(contentPage).Scan(ctx); err != nil {
			return nil, fmt.Errorf("proposals: content probe notes: %w", err)
		}
		last := ""
		if len(rows) > 0 {
			last = rows[len(rows)-1].ID
		}
		n := len(rows)
		rows, err := noterows.OpenNotes(ctx, e.S.Keys, rows) // the sealed text (a row whose key is gone holds nothing readable)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if m := t.Content.MatchAll(r.Title, r.Body, r.TagsText); m != "" {
				out = append(out, erasure.Finding{Kind: KindNote, ID: r.ID, Where: "notes", Match: m})
			}
		}
		if n < contentPage {
			break
		}
		after = last
	}
	for after := ""; ; {
		var rows []models.NoteProposal
		if err := idb.NewSelect().Model(&rows).Column("id", "title", "body", "sealed").Where("space_id = ? AND id > ?", t.SpaceID, after).
			Order("id ASC").Limit(contentPage).Scan(ctx); err != nil {
			return nil, fmt.Errorf("proposals: content probe proposals: %w", err)
		}
		last := ""
		if len(rows) > 0 {
			last = rows[len(rows)-1].ID
		}
		n := len(rows)
		rows, err := noterows.OpenProposals(ctx, e.S.Keys, rows)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if m := t.Content.MatchAll(r.Title, r.Body); m != "" {
				out = append(out, erasure.Finding{Kind: KindProposal, ID: r.ID, Where: "note_proposals", Match: m})
			}
		}
		if n < contentPage {
			return out, nil
		}
		after = last
	}
}

// EraseFound deletes, inside tx, the notes found with every version of their lineage (search
// rows, tags, remembered answers, every replica's cached blocks: notes.DeleteLineage) and the
// proposals that hold their text, and the proposals found. A version already gone with its
// lineage is skipped.
func (e ContentEraser) EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []erasure.Finding) (erasure.Reach, error) {
	out := erasure.Reach{}
	notes, props := erasure.IDsOf(found, KindNote), erasure.IDsOf(found, KindProposal)
	if len(notes)+len(props) != len(found) {
		return nil, fmt.Errorf("proposals: erase found: a finding of another store")
	}
	if e.S == nil || e.S.Notes == nil {
		return nil, errors.New("proposals: the content eraser has no service")
	}
	for _, id := range notes {
		l, err := e.S.Notes.DeleteLineage(ctx, tx, spaceID, id)
		if fe := fault.As(err); fe != nil && fe.Kind == fault.NotFound {
			continue // gone with an earlier version of its lineage
		}
		if err != nil {
			return nil, err
		}
		out.Add(KindNote, l.NoteIDs...)
		pids, err := e.S.deleteNoteProposals(ctx, tx, spaceID, l.NoteIDs)
		if err != nil {
			return nil, err
		}
		out.Add(KindProposal, pids...)
	}
	if len(props) > 0 {
		gone, err := e.S.deleteProposals(ctx, tx, spaceID, props)
		if err != nil {
			return nil, err
		}
		out.Add(KindProposal, gone...)
	}
	return out, nil
}
