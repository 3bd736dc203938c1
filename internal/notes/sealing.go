package notes

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/models"
)

// Sealing (issue 29 §1, ER-1). A note's title and body, in every version, are sealed under
// its lineage's own key (NoteKeyID of the id of version 1); a proposal's under its own key
// (ProposalKeyID). A source erasure destroys the keys of every lineage and proposal of the
// source, a note's hard delete those of its lineage and of the proposals deleted with it, so
// every copy of those rows in any backup stops opening. Tags, kinds and ids stay in clear:
// filters read them in SQL, and the gate keeps personal data out of tags (AM-6). The
// full-text entries (SQLite's notes_fts, PostgreSQL's search column) are derived data in
// clear, which the restore procedure rebuilds from what still unseals (RebuildIndex).

// NoteKeyID is the key-store id of the key sealing every version of the note lineage
// lineageID (noterows.NoteKeyID).
func NoteKeyID(lineageID string) string { return noterows.NoteKeyID(lineageID) }

// SealText seals title and body under keyID's key in keys (noterows.SealText, where sealing
// lives for notes and proposals alike).
func SealText(ctx context.Context, keys keystore.Store, keyID, ad, title, body string) ([]byte, error) {
	return noterows.SealText(ctx, keys, keyID, ad, title, body)
}

// OpenText opens what SealText sealed (noterows.OpenText): ok is false when keyID's key is gone.
func OpenText(ctx context.Context, keys keystore.Store, keyID, ad string, sealed []byte) (title, body string, ok bool, err error) {
	return noterows.OpenText(ctx, keys, keyID, ad, sealed)
}

// sealNote seals r's title and body into r.Sealed under its lineage's key (r keeps them in
// memory, for the full-text row and the answer). Without a key store the row stays in clear.
func (s *Service) sealNote(ctx context.Context, r *models.Note) error {
	if s.Keys == nil {
		return nil
	}
	sealed, err := SealText(ctx, s.Keys, NoteKeyID(r.LineageID), noterows.NoteAD(r.ID), r.Title, r.Body)
	if err != nil {
		return err
	}
	r.Sealed = sealed
	return nil
}

// openNote unseals r's title and body in place; ok is false when its key is gone (the row
// must then be treated as erased). A row stored in clear is returned as it is.
func (s *Service) openNote(ctx context.Context, r *models.Note) (bool, error) {
	return noterows.OpenNote(ctx, s.Keys, r)
}

// openNotes unseals rows in place and returns those that open, in order (noterows.OpenNotes).
func (s *Service) openNotes(ctx context.Context, rows []models.Note) ([]models.Note, error) {
	return noterows.OpenNotes(ctx, s.Keys, rows)
}

// destroyKeys destroys the keys ids (noterows.DestroyKeys). Erasures and deletes call it
// before deleting the rows, inside their transaction.
func (s *Service) destroyKeys(ctx context.Context, ids []string) error {
	return noterows.DestroyKeys(ctx, s.Keys, ids)
}

// openOne unseals r in place; a row whose key is gone is fault.NotFound note_not_found (it
// was erased or deleted).
func (s *Service) openOne(ctx context.Context, r *models.Note) error {
	ok, err := s.openNote(ctx, r)
	if err != nil {
		return err
	}
	if !ok {
		return noteNotFound()
	}
	return nil
}

// OpenRows unseals note versions in place with keys and returns those that open, in order (a
// row whose key is gone is erased and left out), for readers outside the service such as the
// export feed (issue 33), which exports what the API would show (noterows.OpenNotes).
func OpenRows(ctx context.Context, keys keystore.Store, rows []models.Note) ([]models.Note, error) {
	return noterows.OpenNotes(ctx, keys, rows)
}
