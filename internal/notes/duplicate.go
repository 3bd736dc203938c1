package notes

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/uptrace/bun"
	"golang.org/x/text/unicode/norm"

	"github.com/agentmemory/agentmemory/models"
)

// ContentHash is the identity of a note's content for duplicate detection (issue 17 §2): the
// lower-case hex SHA-256 of kind, visibility, title, body and tags after normalisation.
// Normalisation (NormalizeText for title and body):
//   - title and body: Unicode NFC, leading and trailing white space trimmed, every run of
//     white space (unicode.IsSpace: spaces, tabs, newlines, ...) read as one space; letter
//     case is kept ("Retry" and "retry" differ);
//   - tags: sorted (they are already lower-case and distinct: validate refuses anything else);
//   - kind and visibility as validated (visibility "" reads "source").
//
// Evidence and valid_until are not part of the identity. The stored notes.content_hash column
// (migration 20261201000050) holds this value for every note version.
func ContentHash(kind, visibility, title, body string, tags []string) string {
	if visibility == "" {
		visibility = VisibilitySource
	}
	t := slices.Clone(tags)
	if t == nil {
		t = []string{}
	}
	slices.Sort(t)
	b, _ := json.Marshal([]any{"note-content/v1", kind, visibility, NormalizeText(title), NormalizeText(body), t})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// NormalizeText is how ContentHash reads a title or a body: NFC, trimmed, every run of white
// space one space, case kept.
func NormalizeText(s string) string {
	return strings.Join(strings.FieldsFunc(norm.NFC.String(s), unicode.IsSpace), " ")
}

// hash is ContentHash of c.
func (c content) hash() string {
	return ContentHash(c.Kind, c.Visibility, c.Title, c.Body, c.Tags)
}

// errDuplicate ends a write's transaction (rolling back its receipt) when the note is a
// duplicate of an active note.
var errDuplicate = errors.New("notes: duplicate")

// findDuplicate returns the oldest active, unexpired note of w's source (space, source_id and
// vendor) whose content hash is w's, and whether there is one. Call inside the write's
// transaction after its receipt was appended: the receipt chain head serialises the space's
// writers, so two identical writes at once store one note.
func (s *Service) findDuplicate(ctx context.Context, tx bun.IDB, w write) (Note, bool, error) {
	var id string
	// The status is written in the text, not bound: the planner then knows the statement
	// matches the partial index of active notes (notes_content_active).
	err := queryStmt(ctx, tx, `SELECT id FROM notes WHERE space_id = ? AND source_id = ? AND vendor = ? AND content_hash = ?
AND status = '`+StatusActive+`' AND (valid_until IS NULL OR valid_until > ?) ORDER BY created_at, id LIMIT 1`, []any{&id},
		w.a.p.SpaceID, w.a.sourceID, w.a.vendor, w.c.hash(), timeArg(tx, w.now))
	if errors.Is(err, sql.ErrNoRows) {
		return Note{}, false, nil
	}
	if err != nil {
		return Note{}, false, fmt.Errorf("notes: duplicate: %w", err)
	}
	var r models.Note
	if err := tx.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return Note{}, false, fmt.Errorf("notes: duplicate: %w", err)
	}
	if ok, err := s.openNote(ctx, &r); err != nil || !ok {
		return Note{}, false, err // a duplicate whose key is gone was erased: not a duplicate
	}
	return toNote(r), true, nil
}
