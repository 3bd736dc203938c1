package notes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
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
// lineageID. The "nl_" prefix keeps it apart from the other key ids ("sh_", "cv_", "prof_").
func NoteKeyID(lineageID string) string { return "nl_" + lineageID }

// ProposalKeyID is the key-store id of the key sealing proposal id's title and body.
func ProposalKeyID(id string) string { return "np_" + id }

// sealedText is what Sealed holds, as JSON.
type sealedText struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// SealText seals title and body under keyID's key in keys (created when missing), with ad
// authenticated (the row's kind and id). Errors are the key store's.
func SealText(ctx context.Context, keys keystore.Store, keyID, ad, title, body string) ([]byte, error) {
	key, err := keys.DataKey(ctx, keyID, true)
	if err != nil {
		return nil, fmt.Errorf("notes: sealing key: %w", err)
	}
	plain, err := json.Marshal(sealedText{Title: title, Body: body})
	if err != nil {
		return nil, err
	}
	return keystore.Seal(key, plain, []byte(ad))
}

// OpenText opens what SealText sealed: ok is false when keyID's key is gone (the note or
// proposal was erased or deleted after this copy of the row was taken). Bytes that do not
// open under a key that exists are fault.Conflict corrupt_record; a key wrapped by a KEK this
// process lacks is the key store's error (never "gone").
func OpenText(ctx context.Context, keys keystore.Store, keyID, ad string, sealed []byte) (title, body string, ok bool, err error) {
	if keys == nil {
		return "", "", false, fault.New(fault.Unavailable, "keystore_missing", "sealed notes need a key store")
	}
	key, err := keys.DataKey(ctx, keyID, false)
	if errors.Is(err, keystore.ErrNoKey) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("notes: sealing key: %w", err)
	}
	plain, err := keystore.Open(key, sealed, []byte(ad))
	if err != nil {
		return "", "", false, fault.New(fault.Conflict, "corrupt_record", "%s: sealed text does not open", ad)
	}
	var t sealedText
	if err := json.Unmarshal(plain, &t); err != nil {
		return "", "", false, fault.New(fault.Conflict, "corrupt_record", "%s: sealed text does not decode", ad)
	}
	return t.Title, t.Body, true, nil
}

// noteAD is the additional data of note row id's seal.
func noteAD(id string) string { return "note:" + id }

// ProposalAD is the additional data of proposal id's seal.
func ProposalAD(id string) string { return "proposal:" + id }

// sealNote seals r's title and body into r.Sealed under its lineage's key (r keeps them in
// memory, for the full-text row and the answer). Without a key store the row stays in clear.
func (s *Service) sealNote(ctx context.Context, r *models.Note) error {
	if s.Keys == nil {
		return nil
	}
	sealed, err := SealText(ctx, s.Keys, NoteKeyID(r.LineageID), noteAD(r.ID), r.Title, r.Body)
	if err != nil {
		return err
	}
	r.Sealed = sealed
	return nil
}

// storedText is what the title and body columns of r hold: empty when r is sealed.
func storedText(r *models.Note) (title, body string) {
	if r.Sealed != nil {
		return "", ""
	}
	return r.Title, r.Body
}

// searchText is the clear text PostgreSQL's search column is built from (as the FTS5 row).
func searchText(r *models.Note) string { return r.Title + " " + r.Body + " " + r.TagsText }

// openNote unseals r's title and body in place; ok is false when its key is gone (the row
// must then be treated as erased). A row stored in clear is returned as it is.
func (s *Service) openNote(ctx context.Context, r *models.Note) (bool, error) {
	if r.Sealed == nil {
		return true, nil
	}
	title, body, ok, err := OpenText(ctx, s.Keys, NoteKeyID(r.LineageID), noteAD(r.ID), r.Sealed)
	if err != nil || !ok {
		return false, err
	}
	r.Title, r.Body = title, body
	return true, nil
}

// openNotes unseals rows in place and returns those that open, in order: a row whose key is
// gone is erased (a restored copy not yet through `agentmemory restore`, or a delete whose
// transaction failed after destroying the key) and never served.
func (s *Service) openNotes(ctx context.Context, rows []models.Note) ([]models.Note, error) {
	out := rows[:0]
	for i := range rows {
		ok, err := s.openNote(ctx, &rows[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// OpenNotes is openNotes for the packages that read note rows themselves (internal/proposals'
// content probe).
func (s *Service) OpenNotes(ctx context.Context, rows []models.Note) ([]models.Note, error) {
	return s.openNotes(ctx, rows)
}

// SealProposal seals p's title and body into p.Sealed under its own key and empties the
// columns' values in p (Title and Body are returned for the caller to keep in memory).
// Without a key store p stays in clear.
func (s *Service) SealProposal(ctx context.Context, p *models.NoteProposal) error {
	if s.Keys == nil || (p.Title == "" && p.Body == "") {
		return nil
	}
	sealed, err := SealText(ctx, s.Keys, ProposalKeyID(p.ID), ProposalAD(p.ID), p.Title, p.Body)
	if err != nil {
		return err
	}
	p.Sealed = sealed
	return nil
}

// OpenProposal unseals p's title and body in place; ok is false when its key is gone.
func (s *Service) OpenProposal(ctx context.Context, p *models.NoteProposal) (bool, error) {
	if p.Sealed == nil {
		return true, nil
	}
	title, body, ok, err := OpenText(ctx, s.Keys, ProposalKeyID(p.ID), ProposalAD(p.ID), p.Sealed)
	if err != nil || !ok {
		return false, err
	}
	p.Title, p.Body = title, body
	return true, nil
}

// OpenProposals unseals rows in place and returns those that open, in order (openNotes).
func (s *Service) OpenProposals(ctx context.Context, rows []models.NoteProposal) ([]models.NoteProposal, error) {
	out := rows[:0]
	for i := range rows {
		ok, err := s.OpenProposal(ctx, &rows[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// destroyKeys destroys the keys ids (destroying a missing key is not an error). Erasures and
// deletes call it before deleting the rows, inside their transaction: a retry after a failure
// finds the rows and destroys again; a rollback leaves rows that no longer open, never rows
// whose key survived their delete.
func (s *Service) destroyKeys(ctx context.Context, ids []string) error {
	if s.Keys == nil {
		return nil
	}
	for _, id := range ids {
		if err := s.Keys.Destroy(ctx, id); err != nil {
			return fmt.Errorf("notes: destroy key: %w", err)
		}
	}
	return nil
}

// DestroyKeys is destroyKeys for internal/proposals (the keys of the proposals it deletes).
func (s *Service) DestroyKeys(ctx context.Context, ids []string) error {
	return s.destroyKeys(ctx, ids)
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
// export feed (issue 33), which exports what the API would show.
func OpenRows(ctx context.Context, keys keystore.Store, rows []models.Note) ([]models.Note, error) {
	return (&Service{Keys: keys}).openNotes(ctx, rows) // openNotes reads only the key store
}

// OpenProposalRows is OpenRows for proposals.
func OpenProposalRows(ctx context.Context, keys keystore.Store, rows []models.NoteProposal) ([]models.NoteProposal, error) {
	return (&Service{Keys: keys}).OpenProposals(ctx, rows) // OpenProposals reads only the key store
}
