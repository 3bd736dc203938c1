package notes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
)

// Remembered answers (issue 29 §1). note_requests.response keeps the first answer of a write
// sent with an Idempotency-Key, to give it again. An answer carrying a note holds its title
// and body, so it is sealed under the note lineage's key (NoteKeyID), as the note is: the
// response is then storedAnswer's JSON, the note's id and the key's id in clear (the deletes,
// erasures and the restore procedure find the answers naming a note by its quoted id) and the
// answer sealed. A source erasure, a note's hard delete and the content probe's erasure
// destroy that key, so a backup taken before holds an answer that no longer opens. An answer
// naming a proposal holds only its id and the gate's kinds: it stays a WriteResult's JSON in
// clear, and so does every answer without a key store (Service.Keys nil) and every answer
// recorded before this.

// storedAnswer is a sealed note answer as note_requests.response holds it.
type storedAnswer struct {
	NoteID string `json:"note_id"`
	KeyID  string `json:"key_id"`
	Sealed []byte `json:"sealed"`
}

// answerAD is the additional data of the seal of the answer naming note id.
func answerAD(id string) []byte { return []byte("note-request:" + id) }

// encodeAnswer returns what note_requests.response holds for res, the answer of a write whose
// note (when it has one) belongs to lineage.
func (s *Service) encodeAnswer(ctx context.Context, res WriteResult, lineage string) (string, error) {
	plain, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	if s.Keys == nil || res.Note == nil {
		return string(plain), nil
	}
	keyID := NoteKeyID(lineage)
	key, err := s.Keys.DataKey(ctx, keyID, true)
	if err != nil {
		return "", fmt.Errorf("notes: sealing key: %w", err)
	}
	sealed, err := keystore.Seal(key, plain, answerAD(res.Note.ID))
	if err != nil {
		return "", fmt.Errorf("notes: seal answer: %w", err)
	}
	out, err := json.Marshal(storedAnswer{NoteID: res.Note.ID, KeyID: keyID, Sealed: sealed})
	return string(out), err
}

// decodeAnswer returns the answer response holds (encodeAnswer). A sealed answer whose key is
// gone names a note that was erased or deleted after this copy of the row was taken:
// fault.NotFound note_not_found. Bytes that do not decode or open under a key that exists are
// fault.Conflict corrupt_record.
func (s *Service) decodeAnswer(ctx context.Context, response string) (WriteResult, error) {
	var probe struct {
		Sealed []byte `json:"sealed"`
	}
	if err := json.Unmarshal([]byte(response), &probe); err != nil {
		return WriteResult{}, fault.New(fault.Conflict, "corrupt_record", "a remembered answer does not decode")
	}
	if probe.Sealed == nil {
		var res WriteResult
		if err := json.Unmarshal([]byte(response), &res); err != nil {
			return WriteResult{}, fault.New(fault.Conflict, "corrupt_record", "a remembered answer does not decode")
		}
		return res, nil
	}
	var a storedAnswer
	if err := json.Unmarshal([]byte(response), &a); err != nil {
		return WriteResult{}, fault.New(fault.Conflict, "corrupt_record", "a remembered answer does not decode")
	}
	if s.Keys == nil {
		return WriteResult{}, fault.New(fault.Unavailable, "keystore_missing", "sealed notes need a key store")
	}
	key, err := s.Keys.DataKey(ctx, a.KeyID, false)
	if errors.Is(err, keystore.ErrNoKey) {
		return WriteResult{}, noteNotFound()
	}
	if err != nil {
		return WriteResult{}, fmt.Errorf("notes: sealing key: %w", err)
	}
	plain, err := keystore.Open(key, a.Sealed, answerAD(a.NoteID))
	if err != nil {
		return WriteResult{}, fault.New(fault.Conflict, "corrupt_record", "a remembered answer does not open")
	}
	var res WriteResult
	if err := json.Unmarshal(plain, &res); err != nil {
		return WriteResult{}, fault.New(fault.Conflict, "corrupt_record", "a remembered answer does not decode")
	}
	return res, nil
}
