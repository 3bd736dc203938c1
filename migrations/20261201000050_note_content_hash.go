package migrations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/uptrace/bun"
	"golang.org/x/text/unicode/norm"
)

// Note content hash (issue 17 §2): notes.content_hash is the identity of a note's content
// (notes.ContentHash), so a write identical to an active note of its source answers that note
// instead of storing a duplicate. The index serves the lookup (space, source, hash); it is not
// unique, because notes stored before this migration may already hold duplicates (the service
// serialises a space's writers through the receipt chain head, so no new duplicate appears).
// Active notes are backfilled with noteContentHashV1, a frozen copy of notes.ContentHash as it
// was when this migration shipped (a migration never follows later code).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `ALTER TABLE notes ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX notes_content_hash ON notes (space_id, source_id, content_hash)`); err != nil {
			return err
		}
		return backfillNoteContentHash(ctx, db)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP INDEX notes_content_hash;
ALTER TABLE notes DROP COLUMN content_hash`)
	})
}

func backfillNoteContentHash(ctx context.Context, db *bun.DB) error {
	type row struct {
		ID         string `bun:"id"`
		Kind       string `bun:"kind"`
		Visibility string `bun:"visibility"`
		Title      string `bun:"title"`
		Body       string `bun:"body"`
		Tags       string `bun:"tags"`
	}
	var rows []row
	if err := db.NewSelect().Table("notes").Column("id", "kind", "visibility", "title", "body", "tags").
		Where("status = ?", "active").Scan(ctx, &rows); err != nil {
		return fmt.Errorf("migrations: note content hash: %w", err)
	}
	for _, r := range rows {
		var tags []string
		_ = json.Unmarshal([]byte(r.Tags), &tags) // stored as a JSON array by every version; an unreadable one hashes as no tags
		h := noteContentHashV1(r.Kind, r.Visibility, r.Title, r.Body, tags)
		if _, err := db.NewUpdate().Table("notes").Set("content_hash = ?", h).Where("id = ?", r.ID).Exec(ctx); err != nil {
			return fmt.Errorf("migrations: note content hash: %w", err)
		}
	}
	return nil
}

// noteContentHashV1 is notes.ContentHash as of this migration (NFC, trimmed, white-space runs
// one space, case kept; tags sorted); content_hash_test.go checks they agree.
func noteContentHashV1(kind, visibility, title, body string, tags []string) string {
	text := func(s string) string {
		return strings.Join(strings.FieldsFunc(norm.NFC.String(s), unicode.IsSpace), " ")
	}
	if visibility == "" {
		visibility = "source"
	}
	t := slices.Clone(tags)
	if t == nil {
		t = []string{}
	}
	slices.Sort(t)
	b, _ := json.Marshal([]any{"note-content/v1", kind, visibility, text(title), text(body), t})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
