package boards

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
)

// KindBoard is the item kind of a board in erasure reaches and certificates.
const KindBoard = erasure.KindBoard

// Eraser is the boards' eraser (issue 31): a subject erasure deletes every board one of whose
// subject fields names the subject (board_subjects links it to one of the subject's handle
// hashes), whole: its body, its history of versions and its links. A board is shared memory
// of many agents; a board naming a customer is erased as working memory's states naming them
// are (WM-13), not field by field, because its history holds the customer too. Boards belong
// to no conversation: a conversation erasure reaches none. Every board it deletes has its
// key destroyed first (sealing.go). The content probe reads boards' bodies and their history
// unsealed. S is needed for its key store (nil S: boards in clear).
type Eraser struct{ S *Service }

// Name is "boards".
func (Eraser) Name() string { return "boards" }

// Covers lists the board tables' columns that hold or link subject data.
func (Eraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "boards", Column: "body"}, {Table: "boards", Column: "board_hash"}, {Table: "board_versions", Column: "body"},
		{Table: "board_subjects", Column: "subject_hash"}}
}

// Backups is erasure.Shredded: every version of a board is sealed under the board's key and
// the keys of the customers it names (sealing.go); the erasure destroys the subject's keys
// and the key of every board it deletes, so a backup taken before it holds only rows that no
// longer open (and `agentmemory restore` drops them). Without a key store it is
// erasure.NotSealed.
func (e Eraser) Backups(erasure.Target) string {
	if e.S == nil || e.S.Keys == nil {
		return erasure.NotSealed
	}
	return erasure.Shredded
}

// find returns the ids of the boards linked to t's subject.
func (Eraser) find(ctx context.Context, idb bun.IDB, t erasure.Target) ([]string, error) {
	if t.Kind != erasure.Subject || len(t.HandleHashes) == 0 {
		return nil, nil
	}
	var ids []string
	err := idb.NewSelect().Model((*models.BoardSubject)(nil)).ColumnExpr("DISTINCT board_id").
		Where("space_id = ? AND subject_hash IN (?)", t.SpaceID, bun.In(t.HandleHashes)).Order("board_id ASC").Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("boards: find erased boards: %w", err)
	}
	return ids, nil
}

// EraseSubject deletes the boards t reaches inside tx.
func (e Eraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, tx, t)
	if err != nil || len(ids) == 0 {
		return erasure.Reach{}, err
	}
	return e.deleteBoards(ctx, tx, t.SpaceID, ids)
}

// deleteBoards deletes boards ids of spaceID with their history and links, destroying their
// keys first; it returns the ids of those that existed.
func (e Eraser) deleteBoards(ctx context.Context, tx bun.Tx, spaceID string, ids []string) (erasure.Reach, error) {
	var gone []string
	if err := tx.NewSelect().Model((*models.Board)(nil)).Column("id").Where("space_id = ? AND id IN (?)", spaceID, bun.In(ids)).
		Order("id ASC").Scan(ctx, &gone); err != nil {
		return nil, fmt.Errorf("boards: erase: %w", err)
	}
	if len(gone) == 0 {
		return erasure.Reach{}, nil
	}
	if err := e.S.destroyKeys(ctx, gone); err != nil {
		return nil, err
	}
	for _, m := range []any{(*models.BoardVersion)(nil), (*models.BoardSubject)(nil)} {
		if _, err := tx.NewDelete().Model(m).Where("board_id IN (?)", bun.In(gone)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("boards: erase: %w", err)
		}
	}
	if _, err := tx.NewDelete().Model((*models.Board)(nil)).Where("id IN (?)", bun.In(gone)).Exec(ctx); err != nil {
		return nil, fmt.Errorf("boards: erase: %w", err)
	}
	return erasure.Reach{KindBoard: gone}, nil
}

// Residue finds the boards t still reaches.
func (e Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	ids, err := e.find(ctx, idb, t)
	if err != nil {
		return nil, err
	}
	r := erasure.Reach{}
	r.Add(KindBoard, ids...)
	return r, nil
}

// ExportedBoard is a board naming the subject in a data package (GOV-3): its id, type,
// version, last write and body as stored.
type ExportedBoard struct {
	BoardID   string          `json:"board_id"`
	Type      string          `json:"type"`
	Version   int64           `json:"version"`
	UpdatedAt time.Time       `json:"updated_at"`
	Body      json.RawMessage `json:"body"`
}

// Export returns the boards linked to a subject Target as member "boards" (count "boards");
// a conversation Target gives the zero Export.
func (e Eraser) Export(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Export, error) {
	ids, err := e.find(ctx, idb, t)
	if err != nil || len(ids) == 0 {
		return erasure.Export{}, err
	}
	var rows []models.Board
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND id IN (?)", t.SpaceID, bun.In(ids)).Order("id ASC").Scan(ctx); err != nil {
		return erasure.Export{}, fmt.Errorf("boards: export: %w", err)
	}
	out := make([]ExportedBoard, 0, len(rows))
	touched := make([]string, 0, len(rows))
	for _, r := range rows {
		if ok, err := e.open(ctx, &r); err != nil || !ok {
			if err != nil {
				return erasure.Export{}, err
			}
			continue // its key is gone: erased
		}
		if !json.Valid([]byte(r.Body)) {
			return erasure.Export{}, fmt.Errorf("boards: export: board %s: corrupt_record", r.ID)
		}
		out = append(out, ExportedBoard{BoardID: r.ID, Type: r.Type, Version: r.Version, UpdatedAt: r.UpdatedAt.UTC(), Body: json.RawMessage(r.Body)})
		touched = append(touched, r.ID)
	}
	return erasure.Export{Members: map[string]any{"boards": out}, Counts: map[string]int{"boards": len(out)}, Touched: touched}, nil
}

// Searched names what the content probe reads.
func (Eraser) Searched() string { return "boards.body and board_versions.body (unsealed)" }

// open unseals a board row in place with e's key store (ok false: its key is gone).
func (e Eraser) open(ctx context.Context, r *models.Board) (bool, error) {
	if e.S == nil {
		return true, nil
	}
	return e.S.openBoard(ctx, r)
}

// probePage is how many rows the content probe reads at a time.
const probePage = 500

// ProbeContent finds the boards of t's space whose body, or a kept past version's body,
// names t's subject (a board whose subject field does not name her can still mention her in
// any field). One finding per board.
func (e Eraser) ProbeContent(ctx context.Context, idb bun.IDB, t erasure.Target) ([]erasure.Finding, error) {
	if t.Content == nil {
		return nil, nil
	}
	found := map[string]bool{}
	var out []erasure.Finding
	add := func(id, where, text string) {
		if found[id] {
			return
		}
		if m := t.Content.Match(text); m != "" {
			found[id] = true
			out = append(out, erasure.Finding{Kind: KindBoard, ID: id, Where: where, Match: m})
		}
	}
	after := ""
	for {
		var rows []models.Board
		if err := idb.NewSelect().Model(&rows).Column("id", "version", "body").Where("space_id = ? AND id > ?", t.SpaceID, after).
			Order("id ASC").Limit(probePage).Scan(ctx); err != nil {
			return nil, fmt.Errorf("boards: content probe: %w", err)
		}
		for _, r := range rows {
			if ok, err := e.open(ctx, &r); err != nil {
				return nil, err
			} else if ok {
				add(r.ID, "boards.body", r.Body)
			}
			if err := e.probeHistory(ctx, idb, r.ID, func(body string) { add(r.ID, "board_versions.body", body) }); err != nil {
				return nil, err
			}
		}
		if len(rows) < probePage {
			return out, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// probeHistory calls fn with each kept past body of board id that still opens.
func (e Eraser) probeHistory(ctx context.Context, idb bun.IDB, id string, fn func(string)) error {
	var rows []models.BoardVersion
	if err := idb.NewSelect().Model(&rows).Where("board_id = ?", id).Scan(ctx); err != nil {
		return fmt.Errorf("boards: content probe: %w", err)
	}
	for i := range rows {
		if e.S != nil {
			if ok, err := e.S.openVersion(ctx, &rows[i]); err != nil {
				return err
			} else if !ok {
				continue
			}
		}
		fn(rows[i].Body)
	}
	return nil
}

// EraseFound deletes the boards found (kind KindBoard) inside tx, with their history.
func (e Eraser) EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []erasure.Finding) (erasure.Reach, error) {
	ids := erasure.IDsOf(found, KindBoard)
	if len(ids) != len(found) {
		return nil, fmt.Errorf("boards: erase found: a finding of another store")
	}
	if len(ids) == 0 {
		return erasure.Reach{}, nil
	}
	return e.deleteBoards(ctx, tx, spaceID, ids)
}

// The boards' eraser is an erasure.Eraser, reporting how its entries leave backups.
var _ erasure.Eraser = Eraser{}
