package noterows

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
// every copy of those rows in any backup stops opening. Tags, kinds and ids stay in clear.

// NoteKeyID is the key-store id of the key sealing every version of the note lineage
// lineageID. The "nl_" prefix keeps it apart from the other key ids ("sh_", "cv_", "prof_").
func NoteKeyID(lineageID string) string { return "nl_" + lineageID }

// ProposalKeyID is the key-store id of the key sealing proposal id's title and body.
func ProposalKeyID(id string) string { return "np_" + id }

// NoteAD is the additional data of note row id's seal.
func NoteAD(id string) string { return "note:" + id }

// ProposalAD is the additional data of proposal id's seal.
func ProposalAD(id string) string { return "proposal:" + id }

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
// process lacks is the key store's error (never "gone"); a nil keys is fault.Unavailable
// keystore_missing.
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

// OpenNote unseals r's title and body in place with keys; ok is false when its key is gone
// (the row must then be treated as erased). A row stored in clear is returned as it is.
func OpenNote(ctx context.Context, keys keystore.Store, r *models.Note) (bool, error) {
	if r.Sealed == nil {
		return true, nil
	}
	title, body, ok, err := OpenText(ctx, keys, NoteKeyID(r.LineageID), NoteAD(r.ID), r.Sealed)
	if err != nil || !ok {
		return false, err
	}
	r.Title, r.Body = title, body
	return true, nil
}

// OpenNotes unseals rows in place and returns those that open, in order: a row whose key is
// gone is erased (a restored copy not yet through `agentmemory restore`, or a delete whose
// transaction failed after destroying the key) and never served.
func OpenNotes(ctx context.Context, keys keystore.Store, rows []models.Note) ([]models.Note, error) {
	out := rows[:0]
	for i := range rows {
		ok, err := OpenNote(ctx, keys, &rows[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// SealProposal seals p's title and body into p.Sealed under its own key and empties the
// columns' values in p: what an insert or update then stores. Without a key store (nil:
// package tests), or with no text, p stays in clear.
func SealProposal(ctx context.Context, keys keystore.Store, p *models.NoteProposal) error {
	if keys == nil || (p.Title == "" && p.Body == "") {
		return nil
	}
	sealed, err := SealText(ctx, keys, ProposalKeyID(p.ID), ProposalAD(p.ID), p.Title, p.Body)
	if err != nil {
		return err
	}
	p.Sealed, p.Title, p.Body = sealed, "", ""
	return nil
}

// OpenProposal unseals p's title and body in place; ok is false when its key is gone.
func OpenProposal(ctx context.Context, keys keystore.Store, p *models.NoteProposal) (bool, error) {
	if p.Sealed == nil {
		return true, nil
	}
	title, body, ok, err := OpenText(ctx, keys, ProposalKeyID(p.ID), ProposalAD(p.ID), p.Sealed)
	if err != nil || !ok {
		return false, err
	}
	p.Title, p.Body = title, body
	return true, nil
}

// OpenProposals unseals rows in place and returns those that open, in order (OpenNotes).
func OpenProposals(ctx context.Context, keys keystore.Store, rows []models.NoteProposal) ([]models.NoteProposal, error) {
	out := rows[:0]
	for i := range rows {
		ok, err := OpenProposal(ctx, keys, &rows[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// DestroyKeys destroys the keys ids in keys (destroying a missing key is not an error; nil
// keys: nothing to destroy). Erasures and deletes call it before deleting the rows, inside
// their transaction: a retry after a failure finds the rows and destroys again; a rollback
// leaves rows that no longer open, never rows whose key survived their delete.
func DestroyKeys(ctx context.Context, keys keystore.Store, ids []string) error {
	if keys == nil {
		return nil
	}
	for _, id := range ids {
		if err := keys.Destroy(ctx, id); err != nil {
			return fmt.Errorf("notes: destroy key: %w", err)
		}
	}
	return nil
}
