package notes

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/models"
)

// restorePage is how many rows a restore step reads at a time.
const restorePage = 500

// SealLegacy seals, inside idb, the title and body of note versions and proposals stored in
// clear before sealing existed (issue 29 §1; the restore procedure's first notes step, safe
// on the live database): each under its lineage's or its own key, the columns emptied. It
// returns how many rows it sealed; a second run seals none. Without a key store it does
// nothing.
func (s *Service) SealLegacy(ctx context.Context, idb bun.IDB) (int, error) {
	if s.Keys == nil {
		return 0, nil
	}
	total := 0
	for {
		var rows []models.Note
		if err := idb.NewSelect().Model(&rows).Column("id", "lineage_id", "title", "body").
			Where("sealed IS NULL AND (title <> '' OR body <> '')").Order("id").Limit(restorePage).Scan(ctx); err != nil {
			return total, fmt.Errorf("notes: legacy notes: %w", err)
		}
		for i := range rows {
			if err := s.sealNote(ctx, &rows[i]); err != nil {
				return total, err
			}
			if _, err := idb.NewUpdate().Model((*models.Note)(nil)).Set("title = '', body = '', sealed = ?", rows[i].Sealed).
				Where("id = ?", rows[i].ID).Exec(ctx); err != nil {
				return total, fmt.Errorf("notes: seal legacy note: %w", err)
			}
		}
		total += len(rows)
		if len(rows) < restorePage {
			break
		}
	}
	n, err := s.sealLegacyProposals(ctx, idb)
	return total + n, err
}

// sealLegacyProposals is SealLegacy's step for proposals.
func (s *Service) sealLegacyProposals(ctx context.Context, idb bun.IDB) (int, error) {
	total := 0
	for {
		var rows []models.NoteProposal
		if err := idb.NewSelect().Model(&rows).Column("id", "title", "body").
			Where("sealed IS NULL AND (title <> '' OR body <> '')").Order("id").Limit(restorePage).Scan(ctx); err != nil {
			return total, fmt.Errorf("notes: legacy proposals: %w", err)
		}
		for i := range rows {
			if err := noterows.SealProposal(ctx, s.Keys, &rows[i]); err != nil {
				return total, err
			}
			if _, err := idb.NewUpdate().Model((*models.NoteProposal)(nil)).Set("title = '', body = '', sealed = ?", rows[i].Sealed).
				Where("id = ?", rows[i].ID).Exec(ctx); err != nil {
				return total, fmt.Errorf("notes: seal legacy proposal: %w", err)
			}
		}
		total += len(rows)
		if len(rows) < restorePage {
			return total, nil
		}
	}
}

// DropUnreadable deletes, inside idb, every note lineage and proposal sealed under a key the
// key store no longer holds (issue 29 §1): what a source erasure or a note delete removed
// after the restored copy was taken. A lineage goes with its tags, search rows and
// remembered answers (as DeleteLineage), and the source's count of active notes drops. A key
// that exists but does not unwrap here is kept (Exists), never treated as gone. It returns how
// many notes and proposals it deleted.
func (s *Service) DropUnreadable(ctx context.Context, idb bun.IDB) (int, error) {
	if s.Keys == nil {
		return 0, nil
	}
	var lineages []struct {
		SpaceID   string `bun:"space_id"`
		LineageID string `bun:"lineage_id"`
	}
	if err := idb.NewRaw(`SELECT DISTINCT space_id, lineage_id FROM notes WHERE sealed IS NOT NULL ORDER BY lineage_id`).Scan(ctx, &lineages); err != nil {
		return 0, fmt.Errorf("notes: restore: lineages: %w", err)
	}
	total := 0
	for _, l := range lineages {
		ok, err := s.Keys.Exists(ctx, NoteKeyID(l.LineageID))
		if err != nil || ok {
			if err != nil {
				return total, fmt.Errorf("notes: restore: %w", err)
			}
			continue
		}
		n, err := dropLineage(ctx, idb, l.SpaceID, l.LineageID)
		if err != nil {
			return total, err
		}
		total += n
	}
	n, err := s.dropUnreadableProposals(ctx, idb)
	return total + n, err
}

// dropLineage deletes every version of lineage of spaceID inside idb (deleteLineageRows) and
// lowers its sources' counts of active notes; it returns how many versions it deleted.
func dropLineage(ctx context.Context, idb bun.IDB, spaceID, lineage string) (int, error) {
	var rows []models.Note
	if err := idb.NewSelect().Model(&rows).Column("id", "source_id", "status").
		Where("space_id = ? AND lineage_id = ?", spaceID, lineage).Scan(ctx); err != nil {
		return 0, fmt.Errorf("notes: restore: list: %w", err)
	}
	ids := make([]string, 0, len(rows))
	active := map[string]int64{}
	for _, r := range rows {
		ids = append(ids, r.ID)
		if r.Status == StatusActive {
			active[r.SourceID]++
		}
	}
	if err := deleteLineageRows(ctx, idb, spaceID, lineage, ids); err != nil {
		return 0, err
	}
	for src, n := range active {
		if _, err := noterows.AddActive(ctx, idb, spaceID, src, -n); err != nil {
			return 0, err
		}
	}
	forgetCounts(ids)
	return len(ids), nil
}

// dropUnreadableProposals deletes the proposals whose key is gone, with their staged
// decisions and the remembered answers naming them.
func (s *Service) dropUnreadableProposals(ctx context.Context, idb bun.IDB) (int, error) {
	var ids []string
	if err := idb.NewRaw(`SELECT id FROM note_proposals WHERE sealed IS NOT NULL ORDER BY id`).Scan(ctx, &ids); err != nil {
		return 0, fmt.Errorf("notes: restore: proposals: %w", err)
	}
	var gone []string
	for _, id := range ids {
		ok, err := s.Keys.Exists(ctx, noterows.ProposalKeyID(id))
		if err != nil {
			return 0, fmt.Errorf("notes: restore: %w", err)
		}
		if !ok {
			gone = append(gone, id)
		}
	}
	for start := 0; start < len(gone); start += restorePage {
		part := gone[start:min(start+restorePage, len(gone))]
		for _, q := range []string{
			`DELETE FROM note_requests WHERE EXISTS (SELECT 1 FROM note_proposals AS p WHERE p.id IN (?) AND note_requests.response LIKE '%"' || p.id || '"%')`,
			`DELETE FROM proposal_decisions WHERE proposal_id IN (?)`,
			`DELETE FROM note_proposals WHERE id IN (?)`,
		} {
			if _, err := idb.ExecContext(ctx, q, bun.In(part)); err != nil {
				return 0, fmt.Errorf("notes: restore: drop proposals: %w", err)
			}
		}
	}
	return len(gone), nil
}

// RebuildIndex drops every full-text entry of the notes and rebuilds them inside idb from the
// note rows, unsealed (issue 29 §1, ER-1: the index is derived data, so an entry of a row the
// restored copy no longer holds, or whose key is gone, drops out): SQLite's notes_fts is
// emptied and refilled; PostgreSQL's search column of every row is set again (empty for a row
// that does not open; DropUnreadable runs first and deletes those). It returns how many
// entries it wrote. Block caches live in memory (the restore bumps every space's revisions).
func (s *Service) RebuildIndex(ctx context.Context, idb bun.IDB) (int, error) {
	sqlite := db.IsSQLite(idb)
	if sqlite {
		if _, err := idb.ExecContext(ctx, "DELETE FROM notes_fts"); err != nil {
			return 0, fmt.Errorf("notes: drop index: %w", err)
		}
	}
	total := 0
	for after := ""; ; {
		var rows []models.Note
		if err := idb.NewSelect().Model(&rows).Column("id", "lineage_id", "title", "body", "tags_text", "sealed").
			Where("id > ?", after).Order("id").Limit(restorePage).Scan(ctx); err != nil {
			return total, fmt.Errorf("notes: rebuild index: %w", err)
		}
		if len(rows) == 0 {
			return total, nil
		}
		after = rows[len(rows)-1].ID
		n, err := s.reindex(ctx, idb, sqlite, rows)
		if err != nil {
			return total, err
		}
		total += n
	}
}

// reindex writes the full-text entries of rows (those that open) inside idb.
func (s *Service) reindex(ctx context.Context, idb bun.IDB, sqlite bool, rows []models.Note) (int, error) {
	open, err := s.openNotes(ctx, rows)
	if err != nil {
		return 0, err
	}
	if sqlite {
		var nr noteRows
		for i := range open {
			nr.fts = append(nr.fts, open[i].ID, open[i].Title, open[i].Body, open[i].TagsText)
			nr.nfts++
		}
		if err := insertRows(ctx, idb, "INSERT INTO notes_fts (note_id, title, body, tags) VALUES ", "(?, ?, ?, ?)", nr.fts, nr.nfts); err != nil {
			return 0, fmt.Errorf("notes: rebuild index: %w", err)
		}
		return len(open), nil
	}
	for i := range open {
		if _, err := idb.ExecContext(ctx, "UPDATE notes SET search = to_tsvector('simple', ?) WHERE id = ?", noterows.SearchText(&open[i]), open[i].ID); err != nil {
			return 0, fmt.Errorf("notes: rebuild index: %w", err)
		}
	}
	return len(open), nil
}
