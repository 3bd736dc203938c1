package spaces

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
)

// Revision names (issue 16): what a space's revision counts changes of.
const (
	// RevisionProfiles counts profile creations and subject erasures that deleted profiles
	// (internal/subjects: the known subjects the gate and the masking match).
	RevisionProfiles = "profiles"
	// RevisionNotesErased counts agent-note erasures (internal/notes: the prompt blocks each
	// replica keeps in memory).
	RevisionNotesErased = "notes_erased"
	// RevisionNotes counts every change of the space's notes that can change a prompt block:
	// a note created, edited (a new version), retired, approved from a proposal, or erased
	// (internal/notes: the block answers each replica keeps in memory are given only while
	// it is unchanged, checked in the receipt's transaction).
	RevisionNotes = "notes"
	// RevisionNotesRemoved counts the changes that take a note out of prompt blocks: a note
	// retired (an edit retires the version it replaces) or erased (internal/notes: a block
	// decided from the store is given only while it is unchanged, checked in the receipt's
	// transaction, so no note is given after its removal committed).
	RevisionNotesRemoved = "notes_removed"
	// RevisionConfig counts document writes, key mints and key revocations (KeyCache: the
	// keys and documents the working-memory routes keep; internal/state checks it in the
	// statements themselves).
	RevisionConfig = "config"
)

// Revision returns the space's revision of name (0 before its first bump) read through idb
// (a statement prepared once per pool on a *bun.DB): one indexed row. A replica caches per
// space under the revision it read and drops the cache when a later read differs, which
// makes the cache exact across replicas without messages between them.
func Revision(ctx context.Context, idb bun.IDB, spaceID, name string) (int64, error) {
	var revision int64
	var err error
	if d, ok := idb.(*bun.DB); ok {
		err = db.QueryOne(ctx, d, "SELECT revision FROM space_revisions WHERE space_id = ? AND name = ?", []any{&revision}, spaceID, name)
	} else {
		err = idb.NewRaw("SELECT revision FROM space_revisions WHERE space_id = ? AND name = ?", spaceID, name).Scan(ctx, &revision)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spaces: revision %s: %w", name, err)
	}
	return revision, nil
}

// BumpRevision adds 1 to the space's revision of name inside idb, the transaction of the
// change it announces.
func BumpRevision(ctx context.Context, idb bun.IDB, spaceID, name string) error {
	if _, err := idb.ExecContext(ctx, `INSERT INTO space_revisions (space_id, name, revision) VALUES (?, ?, 1)
ON CONFLICT (space_id, name) DO UPDATE SET revision = space_revisions.revision + 1`, spaceID, name); err != nil {
		return fmt.Errorf("spaces: bump revision %s: %w", name, err)
	}
	return nil
}
