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
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// Receipt kinds.
const (
	KindAdmin       = "admin"
	KindAgentMemory = "agent_memory"
	KindCompliance  = "compliance"
	KindKnowledge   = "knowledge"
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
	// The head is locked (created at Genesis the first time): one statement once it exists.
	var h head
	lock := func() error {
		q := tx.NewSelect().Model(&h).Where("space_id = ?", spaceID)
		if !db.IsSQLite(tx) {
			q = q.For("UPDATE")
		}
		return q.Scan(ctx)
	}
	err := lock()
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := tx.NewInsert().Model(&head{SpaceID: spaceID, Seq: 0, Hash: Genesis}).
			On("CONFLICT (space_id) DO NOTHING").Exec(ctx); err != nil {
			return Receipt{}, fmt.Errorf("receipts: head: %w", err)
		}
		err = lock()
	}
	if err != nil {
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
	r.Hash = r.ComputeHash()
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

// ComputeHash is the hash r must carry: the hex SHA-256 of the canonical encoding, a JSON
// array of the fields in a fixed order, with the time in RFC 3339 UTC (microseconds) and
// detail keys sorted.
func (r Receipt) ComputeHash() string {
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

// Reasons a Verification gives besides missing_entry, broken_link, hash_mismatch and
// truncated (the stored head row does not match the chain's last entry).
const (
	// ReasonHeadRewritten: the chain holds an entry at the signed head's sequence, but with
	// another hash: the chain was rewritten at or before that entry (hashes recomputed).
	ReasonHeadRewritten = "head_rewritten"
	// ReasonHeadRolledBack: the chain ends before the signed head's sequence: it was truncated
	// or restored from an older copy.
	ReasonHeadRolledBack = "head_rolled_back"
	// ReasonHeadOtherSpace: the signed head belongs to another space.
	ReasonHeadOtherSpace = "head_other_space"
)

// Walker recomputes a chain one entry at a time, in sequence order, from the genesis: the
// check Verify makes, usable on receipts read from the database or from the API's
// GET /v1/receipts pages. With Since set, it also checks that the chain extends that (older,
// signed) head: the entry at Since.Seq must carry Since.Hash.
type Walker struct {
	// Since, when set, is a head the chain must extend.
	Since *Head

	prev       string
	after      int64
	count      int64
	sinceFound bool
	failed     *Verification
}

// Next checks r, the entry after the last one given. It returns false once the chain is
// broken; Result then names the entry and the reason.
func (w *Walker) Next(r Receipt) bool {
	if w.failed != nil {
		return false
	}
	if w.prev == "" {
		w.prev = Genesis
	}
	fail := func(reason string) bool {
		w.failed = &Verification{Count: w.count, Broken: &r, Reason: reason}
		return false
	}
	switch {
	case r.Seq != w.after+1:
		return fail("missing_entry")
	case r.PrevHash != w.prev:
		return fail("broken_link")
	case r.ComputeHash() != r.Hash:
		return fail("hash_mismatch")
	case w.Since != nil && r.Seq == w.Since.Seq && r.Hash != w.Since.Hash:
		return fail(ReasonHeadRewritten)
	}
	if w.Since != nil && r.Seq == w.Since.Seq {
		w.sinceFound = true
	}
	w.prev, w.after = r.Hash, r.Seq
	w.count++
	return true
}

// Result ends the walk against the chain's current head (seq and hash as stored, or as
// GET /v1/receipts/head answers; hasHead false when the space has no head yet) and returns
// the verification: OK only if every entry held, the last entry is that head, and, with
// Since, the chain reached Since's entry unchanged.
func (w *Walker) Result(headSeq int64, headHash string, hasHead bool) Verification {
	if w.failed != nil {
		return *w.failed
	}
	prev := w.prev
	if prev == "" {
		prev = Genesis
	}
	if hasHead && (headSeq != w.after || headHash != prev) {
		return Verification{Count: w.count, Reason: "truncated"}
	}
	if w.Since != nil && w.Since.Seq > 0 && !w.sinceFound {
		return Verification{Count: w.count, Reason: ReasonHeadRolledBack}
	}
	if w.Since != nil && w.Since.Seq == 0 && w.Since.Hash != Genesis {
		return Verification{Count: w.count, Reason: ReasonHeadRewritten}
	}
	return Verification{OK: true, Count: w.count}
}

// Verify walks the space's whole chain in pages, recomputing every hash and link.
func Verify(ctx context.Context, idb bun.IDB, spaceID string) (Verification, error) {
	return VerifySince(ctx, idb, spaceID, nil)
}

// VerifySince is Verify that also requires the chain to extend since, a head signed earlier
// (GET /v1/receipts/head) and kept outside the database: a chain rewritten with recomputed
// hashes fails with ReasonHeadRewritten, one truncated or rolled back to before since with
// ReasonHeadRolledBack, a head of another space with ReasonHeadOtherSpace. since nil is Verify.
// Check the head's signature before calling: VerifySince trusts its seq and hash.
func VerifySince(ctx context.Context, idb bun.IDB, spaceID string, since *Head) (Verification, error) {
	if since != nil && since.SpaceID != spaceID {
		return Verification{Reason: ReasonHeadOtherSpace}, nil
	}
	w := &Walker{Since: since}
	var after int64
	for {
		page, err := List(ctx, idb, spaceID, after, 1000)
		if err != nil {
			return Verification{}, err
		}
		for _, r := range page {
			if !w.Next(r) {
				return w.Result(0, "", false), nil
			}
			after = r.Seq
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
	return w.Result(h.Seq, h.Hash, err == nil), nil
}

// Head is a space's chain head: the sequence number and hash of its last receipt, and that
// receipt's time (nil while the chain is empty: Seq 0, Hash Genesis). GET /v1/receipts/head
// answers it signed.
type Head struct {
	SpaceID string     `json:"space_id"`
	Seq     int64      `json:"seq"`
	Hash    string     `json:"hash"`
	At      *time.Time `json:"at"`
}

// CurrentHead reads the space's chain head from the head row that Append moves in the same
// transaction as each receipt.
func CurrentHead(ctx context.Context, idb bun.IDB, spaceID string) (Head, error) {
	var h head
	err := idb.NewSelect().Model(&h).Where("space_id = ?", spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && h.Seq == 0) {
		return Head{SpaceID: spaceID, Seq: 0, Hash: Genesis}, nil
	}
	if err != nil {
		return Head{}, fmt.Errorf("receipts: head: %w", err)
	}
	var row models.Receipt
	if err := idb.NewSelect().Model(&row).Column("at").Where("space_id = ? AND seq = ?", spaceID, h.Seq).Scan(ctx); err != nil {
		return Head{}, fmt.Errorf("receipts: head entry: %w", err)
	}
	at := row.At.UTC()
	return Head{SpaceID: spaceID, Seq: h.Seq, Hash: h.Hash, At: &at}, nil
}

// Filter narrows a page of the chain: receipts with seq > After (or, with Before set, seq <
// Before), of Kind and by ActorKey when set, at most Limit.
type Filter struct {
	After    int64
	Before   int64
	Kind     string
	ActorKey string
	Limit    int
}

// ListFiltered returns a page of the space's receipts matching f in chain order (oldest
// first): the first Limit after After, or with Before set the last Limit before Before.
func ListFiltered(ctx context.Context, idb bun.IDB, spaceID string, f Filter) ([]Receipt, error) {
	var rows []models.Receipt
	q := idb.NewSelect().Model(&rows).Where("space_id = ?", spaceID)
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if f.ActorKey != "" {
		q = q.Where("actor_key_id = ?", f.ActorKey)
	}
	if f.Before > 0 {
		q = q.Where("seq < ?", f.Before).Order("seq DESC")
	} else {
		q = q.Where("seq > ?", f.After).Order("seq ASC")
	}
	if err := q.Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: list: %w", err)
	}
	if f.Before > 0 {
		slices.Reverse(rows)
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
