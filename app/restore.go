package app

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/knowledge"
)

// RestoreStep is one step of the restore procedure and how many rows it wrote or removed.
type RestoreStep struct {
	Name  string `json:"step"`
	Count int    `json:"count"`
}

// Restore is the restore procedure (issue 29 §1, ER-1), run once on a database restored from
// a backup, with the current key store, before any serve or worker process uses it (and safe
// to run again, or on a live database: every step is idempotent):
//  1. turns written in clear before conversation keys existed are sealed under them;
//  2. rows sealed under keys the key store no longer holds (their subject or conversation
//     was erased after the backup was taken) are deleted: turns, working states, profiles;
//     agent notes and proposals are sealed first when stored in clear, then those whose
//     lineage's or own key is gone (a source erasure, a note delete) are deleted;
//     knowledge (knowledge.Service.Restore, one entry reported as knowledge_restored, the
//     documents and chunks sealed plus removed, then its four counts) seals its legacy clear
//     documents, removes those whose document key is gone and rebuilds its derived entries;
//  3. derived data is dropped and rebuilt from the rows: the notes' and knowledge chunks'
//     full-text entries and the chunks' vector index (block and search caches live in
//     memory and start empty; every space's revisions are bumped so that any process still
//     running drops its caches at its next request).
//
// It returns the steps in order. Errors are the database's and the key store's.
func (a *App) Restore(ctx context.Context) ([]RestoreStep, error) {
	var kn knowledge.RestoreCounts
	steps := []struct {
		name string
		run  func(context.Context) (int, error)
	}{
		{"turns_resealed", a.resealTurns},
		{"turns_unreadable_removed", a.inTx(a.Turns.DropUnreadable)},
		{"states_unreadable_removed", a.inTx(a.State.DropUnreadable)},
		{"profiles_unreadable_removed", a.inTx(a.Subjects.DropUnreadable)},
		{"boards_unreadable_removed", a.inTx(a.Boards.DropUnreadable)},
		{"notes_resealed", a.inTx(a.Notes.SealLegacy)},
		{"notes_unreadable_removed", a.inTx(a.Notes.DropUnreadable)},
		{"notes_fulltext_rebuilt", a.inTx(a.Notes.RebuildIndex)},
		{"knowledge_restored", func(ctx context.Context) (int, error) {
			var err error
			kn, err = a.Knowledge.Restore(ctx)
			return kn.Sealed + kn.Removed, err
		}},
		{"space_revisions_bumped", a.bumpRevisions},
	}
	var out []RestoreStep
	for _, s := range steps {
		n, err := s.run(ctx)
		if err != nil {
			return out, fmt.Errorf("restore: %s: %w", s.name, err)
		}
		out = append(out, RestoreStep{Name: s.name, Count: n})
		if s.name == "knowledge_restored" {
			out = append(out, knowledgeSteps(kn)...)
		}
	}
	return out, nil
}

// resealTurns runs turns.Service.SealLegacy in batches until none is left.
func (a *App) resealTurns(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := a.inTx(func(ctx context.Context, idb bun.IDB) (int, error) { return a.Turns.SealLegacy(ctx, idb, 500) })(ctx)
		if err != nil {
			return total, err
		}
		total += n
		if n < 500 {
			return total, nil
		}
	}
}

// inTx returns fn run in one transaction of the app's database.
func (a *App) inTx(fn func(context.Context, bun.IDB) (int, error)) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		n := 0
		err := a.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			n, err = fn(ctx, tx)
			return err
		})
		return n, err
	}
}

// bumpRevisions adds 1 to every revision of every space (spaces.Revision): each replica's
// caches of the space reload at their next use.
func (a *App) bumpRevisions(ctx context.Context) (int, error) {
	res, err := a.DB.ExecContext(ctx, "UPDATE space_revisions SET revision = revision + 1")
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// knowledgeSteps reports knowledge.Service.Restore's counts as steps.
func knowledgeSteps(c knowledge.RestoreCounts) []RestoreStep {
	return []RestoreStep{{"knowledge_sealed", c.Sealed}, {"knowledge_unreadable_removed", c.Removed},
		{"knowledge_fulltext_rebuilt", c.FullText}, {"knowledge_vectors_rebuilt", c.Vectors}}
}
