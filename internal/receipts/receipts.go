// Package receipts keeps each space's append-only, hash-chained log of who did what to which
// ids, and verifies it end to end (GOV-1, AM-11). Receipts hold ids and counts, never values.
package receipts

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

	"agentmemory/internal/auth"
	"agentmemory/internal/db"
	"agentmemory/models"
)

// Receipt kinds.
const (
	KindAdmin       = "admin"
	KindAgentMemory = "agent_memory"
	KindCompliance  = "compliance"
)

// Genesis is the previous hash of a space's first receipt.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Entry is what a caller records: the kind, the action (e.g. "note.create"), the acting key,
// the ids touched and small non-personal details (counts, reasons).
type Entry struct {
	Kind      string
	Action    string
	ActorKey  string
	ObjectIDs []string
	Detail    map[string]any
}

// Receipt is a stored entry as the API shows it.
type Receipt struct {
	SpaceID    string         `json:"space_id"`
	Seq        int64          `json:"seq"`
	ID         string         `json:"id"`
	Kind       string         `json:"kind"`
	Action     string         `json:"action"`
	ActorKeyID string         `json:"actor_key_id"`
	ObjectIDs  []string       `json:"object_ids"`
	Detail     map[string]any `json:"detail"`
	At         time.Time      `json:"at"`
	PrevHash   string         `json:"prev_hash"`
	Hash       string         `json:"hash"`
}

// Append adds e to the space's chain inside tx (which must be a transaction: the receipt
// commits with what it records). Appends to one space are serialised by the chain head row,
// so concurrent writers never fork the chain. It returns the stored receipt.
func Append(ctx context.Context, tx bun.IDB, spaceID string, e Entry, now time.Time) (Receipt, error) {
	if e.ObjectIDs == nil {
		e.ObjectIDs = []string{}
	}
	if e.Detail == nil {
		e.Detail = map[string]any{}
	}
	if _, err := tx.NewInsert().Model(&head{SpaceID: spaceID, Seq: 0, Hash: Genesis}).
		On("CONFLICT (space_id) DO NOTHING").Exec(ctx); err != nil {
		return Receipt{}, fmt.Errorf("receipts: head: %w", err)
	}
	var h head
	q := tx.NewSelect().Model(&h).Where("space_id = ?", spaceID)
	if !db.IsSQLite(tx) {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return Receipt{}, fmt.Errorf("receipts: lock head: %w", err)
	}
	r := Receipt{
		SpaceID: spaceID, Seq: h.Seq + 1, ID: auth.NewID("rcpt"), Kind: e.Kind, Action: e.Action,
		ActorKeyID: e.ActorKey, ObjectIDs: e.ObjectIDs, Detail: e.Detail,
		At: now.UTC().Truncate(time.Microsecond), PrevHash: h.Hash,
	}
	// Round-trip the detail through JSON so that the hash is computed over what is stored.
	detail, err := json.Marshal(r.Detail)
	if err != nil {
		return Receipt{}, fmt.Errorf("receipts: detail: %w", err)
	}
	r.Detail = map[string]any{}
	_ = json.Unmarshal(detail, &r.Detail)
	r.Hash = r.computeHash()
	objs, _ := json.Marshal(r.ObjectIDs)
	row := &models.Receipt{
		SpaceID: spaceID, Seq: r.Seq, ID: r.ID, Kind: r.Kind, Action: r.Action, ActorKeyID: r.ActorKeyID,
		ObjectIDs: string(objs), Detail: string(detail), At: r.At, PrevHash: r.PrevHash, Hash: r.Hash,
	}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return Receipt{}, fmt.Errorf("receipts: insert: %w", err)
	}
	if _, err := tx.NewUpdate().Model((*head)(nil)).Set("seq = ?, hash = ?", r.Seq, r.Hash).
		Where("space_id = ?", spaceID).Exec(ctx); err != nil {
		return Receipt{}, fmt.Errorf("receipts: move head: %w", err)
	}
	return r, nil
}

type head struct {
	bun.BaseModel `bun:"table:receipt_heads"`

	SpaceID string `bun:"space_id,pk"`
	Seq     int64  `bun:"seq"`
	Hash    string `bun:"hash"`
}

// computeHash is the hex SHA-256 of the canonical encoding: a JSON array of the fields in a
// fixed order, with the time in RFC 3339 UTC (microseconds) and detail keys sorted.
func (r Receipt) computeHash() string {
	canon, _ := json.Marshal([]any{
		r.SpaceID, r.Seq, r.ID, r.Kind, r.Action, r.ActorKeyID, r.ObjectIDs, r.Detail,
		r.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), r.PrevHash,
	})
	s := sha256.Sum256(canon)
	return hex.EncodeToString(s[:])
}

func fromRow(row models.Receipt) (Receipt, error) {
	r := Receipt{
		SpaceID: row.SpaceID, Seq: row.Seq, ID: row.ID, Kind: row.Kind, Action: row.Action,
		ActorKeyID: row.ActorKeyID, At: row.At.UTC(), PrevHash: row.PrevHash, Hash: row.Hash,
	}
	if err := json.Unmarshal([]byte(row.ObjectIDs), &r.ObjectIDs); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(row.Detail), &r.Detail); err != nil {
		return r, err
	}
	return r, nil
}

// List returns up to limit receipts of the space with seq > after, in chain order.
func List(ctx context.Context, idb bun.IDB, spaceID string, after int64, limit int) ([]Receipt, error) {
	var rows []models.Receipt
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND seq > ?", spaceID, after).
		Order("seq ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: list: %w", err)
	}
	out := make([]Receipt, 0, len(rows))
	for _, row := range rows {
		r, err := fromRow(row)
		if err != nil {
			return nil, fmt.Errorf("receipts: decode %s: %w", row.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Verification is the result of walking a chain. When OK is false, Broken names the first
// entry whose hash or link does not hold, and Reason says which.
type Verification struct {
	OK     bool     `json:"ok"`
	Count  int64    `json:"count"`
	Broken *Receipt `json:"broken,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Verify walks the space's whole chain in pages, recomputing every hash and link.
func Verify(ctx context.Context, idb bun.IDB, spaceID string) (Verification, error) {
	prev := Genesis
	var after, count int64
	for {
		page, err := List(ctx, idb, spaceID, after, 1000)
		if err != nil {
			return Verification{}, err
		}
		for i := range page {
			r := page[i]
			switch {
			case r.Seq != after+1:
				return Verification{Count: count, Broken: &r, Reason: "missing_entry"}, nil
			case r.PrevHash != prev:
				return Verification{Count: count, Broken: &r, Reason: "broken_link"}, nil
			case r.computeHash() != r.Hash:
				return Verification{Count: count, Broken: &r, Reason: "hash_mismatch"}, nil
			}
			prev, after = r.Hash, r.Seq
			count++
		}
		if len(page) < 1000 {
			break
		}
	}
	var h head
	err := idb.NewSelect().Model(&h).Where("space_id = ?", spaceID).Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Verification{}, fmt.Errorf("receipts: head: %w", err)
	}
	if err == nil && (h.Seq != after || h.Hash != prev) {
		return Verification{Count: count, Reason: "truncated"}, nil
	}
	return Verification{OK: true, Count: count}, nil
}
