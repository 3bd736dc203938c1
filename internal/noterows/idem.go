package noterows

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/models"
)

// CodeIdempotencyReuse is the code of an Idempotency-Key sent again with another request.
const CodeIdempotencyReuse = "idempotency_key_reused"

// IdemHash is how an Idempotency-Key is stored and looked up: its keyed hash under the
// server secret h, per space (the header may carry anything, an e-mail address included, so
// it is never stored in clear). "" stays "" (no key).
func IdemHash(h keyed.Hasher, spaceID, key string) string {
	if key == "" {
		return ""
	}
	return h.Hash(spaceID, "idempotency-key", key)
}

// HashRequest is the hash of request v (as JSON) of operation op an Idempotency-Key's record
// keeps, so the same key with another request is told apart.
func HashRequest(op string, v any) string {
	b, _ := json.Marshal(v) // the requests hashed are plain structs that always marshal
	h := sha256.Sum256(append([]byte(op+"\n"), b...))
	return hex.EncodeToString(h[:])
}

// Reused is fault.Conflict idempotency_key_reused.
func Reused() error {
	return fault.New(fault.Conflict, CodeIdempotencyReuse, "this Idempotency-Key was used for a different request")
}

// LookupRequest returns the record of Idempotency-Key hash idemHash of key keyID in space
// spaceID, and whether there is one. idb may be the caller's transaction.
func LookupRequest(ctx context.Context, idb bun.IDB, spaceID, keyID, idemHash string) (models.NoteRequest, bool, error) {
	var r models.NoteRequest
	err := idb.NewSelect().Model(&r).
		Where("space_id = ? AND key_id = ? AND idem_key = ?", spaceID, keyID, idemHash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("notes: idempotency: %w", err)
	}
	return r, true, nil
}

// proposalAnswer is the answer a record of a 202 keeps (the proposal_id member of
// notes.WriteResult).
type proposalAnswer struct {
	ProposalID string `json:"proposal_id,omitempty"`
}

// RecallProposal looks up the proposal an earlier request under Idempotency-Key hash
// idemHash of key keyID answered (a distillation): (its id, true) for the same request
// (bodyHash), fault.Conflict idempotency_key_reused for another, ("", false) when the key is
// new. idb may be the caller's transaction.
func RecallProposal(ctx context.Context, idb bun.IDB, spaceID, keyID, idemHash, bodyHash string) (string, bool, error) {
	r, found, err := LookupRequest(ctx, idb, spaceID, keyID, idemHash)
	if !found || err != nil {
		return "", false, err
	}
	var res proposalAnswer
	if r.BodyHash != bodyHash || json.Unmarshal([]byte(r.Response), &res) != nil || res.ProposalID == "" {
		return "", true, Reused()
	}
	return res.ProposalID, true, nil
}

// RememberProposal records, inside tx, that the request bodyHash under Idempotency-Key hash
// idemHash of key keyID was answered 202 with proposal proposalID (RecallProposal finds it).
func RememberProposal(ctx context.Context, tx bun.IDB, spaceID, keyID, idemHash, bodyHash, proposalID string, now time.Time) error {
	body, _ := json.Marshal(proposalAnswer{ProposalID: proposalID}) // a struct of one string always marshals
	return Remember(ctx, tx, models.NoteRequest{
		SpaceID: spaceID, KeyID: keyID, IdemKey: idemHash, BodyHash: bodyHash,
		Status: 202, Response: string(body), CreatedAt: now,
	})
}

// Remember inserts idempotency record r inside tx, the transaction of the write it answers.
func Remember(ctx context.Context, tx bun.IDB, r models.NoteRequest) error {
	if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
		return fmt.Errorf("notes: idempotency record: %w", err)
	}
	return nil
}
