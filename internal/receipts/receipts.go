// Package receipts keeps each space's append-only log of who did what to which ids, and
// verifies it end to end (GOV-1, AM-11). Receipts hold ids and counts, never values.
//
// One hash chain per space, committed in groups (issue 16): a receipt is written without
// touching the chain, in the transaction of what it records (Append) or, for reads that write
// nothing else, by the Log's group committer (Log.Record: many receipts, one commit); in both
// cases the request is answered only after its receipt has committed. Sealing (Seal, run right
// after such commits, on a timer and before the chain is read) takes a space's unsealed
// receipts in insertion order, gives them the next sequence numbers, and appends ONE chain
// entry (Batch) holding the RFC 6962 Merkle root of their leaf hashes and the previous
// entry's hash. Sealers on any number of processes serialise on the space's head row, so the
// chain never forks and each receipt is sealed exactly once. Verify recomputes every leaf,
// root and link; Prove gives one receipt's inclusion path, checked offline by Proof.Verify.
// Receipts chained one by one before batching stay entries of their own (version 1).
//
// Durability of what the chain shows: on PostgreSQL the Log's group commits are asynchronous
// (synchronous_commit off) and made durable by a flush (Flush) before their Records are
// answered, so for a moment another session can read a chain entry, head or receipt that a
// crash would still lose. A path that shows chain state as evidence (a head, signed or not,
// a listed receipt's seq or hash, a chain entry, a verification, an inclusion proof) calls
// Flush after its last read of the chain and before it shows anything, unless what it read
// reaches anyone only through a synchronous commit of its own afterwards (a write that
// appends a receipt: its commit waits for the WAL past every commit it could have read). Seal
// does so itself; after SealPending, List, ListFiltered, BatchesOf, Verify, Prove or
// CurrentHead the caller does. Other replicas' group commits may build on an unflushed group:
// their own flush covers it, and so does the synchronous commit of any write that locks the
// space's head after it. On SQLite Flush does nothing: a commit is as durable as it will be
// (WAL, synchronous=NORMAL, the embedded default) when it returns.
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
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
)

// Receipt kinds.
const (
	KindAdmin       = "admin"
	KindAgentMemory = "agent_memory"
	KindCompliance  = "compliance"
	KindKnowledge   = "knowledge"
	KindBoard       = "board" // boards (issue 31): reads, writes and the rule that settled each field
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
	// Manifest, when set, names the objects instead of ObjectIDs (issue 32): it is stored
	// once per space and content (receipt_manifests), and the receipt carries its hash
	// (detail "manifest") and no object ids.
	Manifest *Manifest
}

// Receipt is a stored receipt as the API shows it. Seq is its position in the space's chain
// (0 until it is sealed). Hash is its Merkle leaf hash (LeafHash) once sealed into a batch;
// for a receipt chained one by one before batching, PrevHash is the previous entry's hash and
// Hash its own entry's hash (ComputeHash). PrevHash is empty for batched receipts.
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
	// Manifest is the stored manifest the receipt names (detail "manifest"), resolved by
	// List, ListFiltered and ResolveManifest: the exact objects delivered. Not hashed: the
	// leaf covers its hash, and the hash its content.
	Manifest *Manifest `json:"manifest,omitempty"`
}

// Append adds e to the space's chain inside tx (which must be a transaction: the receipt
// commits with what it records), as a chain entry of its own. It locks the space's chain head
// until tx ends, so a space's writers are serialised (the note, proposal and knowledge writes
// rely on it for exact limits and duplicate checks across replicas). It returns the receipt
// with its seq and leaf hash. Receipts of the space left unsealed (a group whose sealing
// failed) are not taken here: Seal and the Log's passes seal them, in a later entry.
// Reads that write nothing else use Log.Record instead, which commits receipts in groups.
func Append(ctx context.Context, tx bun.IDB, spaceID string, e Entry, now time.Time) (Receipt, error) {
	r, _, err := appendAlone(ctx, tx, spaceID, e, now)
	return r, err
}

// LockedHead is a space's chain head as LockHead read and locked it inside a transaction:
// what AppendGroup appends after, in the same transaction, without reading it again.
type LockedHead struct {
	h head
}

// LockHead locks the space's chain head inside tx until tx ends, as Append does, and returns
// it (creating it at Genesis the first time), for a transaction that must hold it before it
// takes other locks: a note erasure deletes rows and changes counts that the space's note
// writes change only while they hold the head, so it takes the head first, in their order,
// and never deadlocks with one; a group commit of note writes takes it first and appends its
// receipts after it (AppendGroup).
func LockHead(ctx context.Context, tx bun.IDB, spaceID string) (LockedHead, error) {
	h, err := lockHead(ctx, tx, spaceID)
	return LockedHead{h: h}, err
}

// AppendGroup adds entries to the chain of h's space inside tx, the transaction whose
// LockHead returned h, as one chain entry after h: entries[i] recorded at at[i], in that
// order, sealed under one Merkle root. It does not read or lock the head again (one round
// trip fewer on PostgreSQL): nothing in tx may have moved the head since LockHead (no
// Append, AppendSealed or seal of the space in between); after a moved head the first
// receipt's seq is taken, so its insert fails (receipts' key on space and seq) rather than
// fork the chain. A group
// commit that ran several writes under the head appends the receipts of those it stored at
// its end: each keeps a receipt of its own, in one entry. No entries append nothing; more
// than MaxBatch is an error.
func AppendGroup(ctx context.Context, tx bun.IDB, h LockedHead, entries []Entry, at []time.Time) ([]Receipt, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if len(entries) > MaxBatch || len(at) != len(entries) {
		return nil, fmt.Errorf("receipts: a group of %d entries at %d times (at most %d)", len(entries), len(at), MaxBatch)
	}
	var err error
	recs := make([]record, len(entries))
	for i, e := range entries {
		if e.Manifest != nil {
			if err := insertManifest(ctx, tx, h.h.SpaceID, e.Manifest); err != nil {
				return nil, err
			}
		}
		if recs[i], err = newRecord(nil, h.h.SpaceID, e, at[i]); err != nil {
			return nil, err
		}
	}
	if _, err := seal(ctx, tx, h.h, nil, recs); err != nil {
		return nil, err
	}
	out := make([]Receipt, len(recs))
	for i, rec := range recs {
		out[i] = rec.r
		out[i].Seq, out[i].Hash = rec.row.Seq, rec.row.Hash
	}
	return out, nil
}

// AppendSealed is Append that also returns the receipt's chain entry, after sealing the
// space's earlier unsealed receipts, if any, in an entry before it: the caller can name the
// receipt's position and entry, e.g. in an erasure certificate that commits with it.
func AppendSealed(ctx context.Context, tx bun.IDB, spaceID string, e Entry, now time.Time) (Receipt, Batch, error) {
	if _, err := sealSpace(ctx, tx, spaceID, nil, nil); err != nil {
		return Receipt{}, Batch{}, err
	}
	return appendAlone(ctx, tx, spaceID, e, now)
}

// appendAlone locks the space's head and appends e as a chain entry of its own.
func appendAlone(ctx context.Context, tx bun.IDB, spaceID string, e Entry, now time.Time) (Receipt, Batch, error) {
	h, err := lockHead(ctx, tx, spaceID)
	if err != nil {
		return Receipt{}, Batch{}, err
	}
	if e.Manifest != nil {
		if err := insertManifest(ctx, tx, spaceID, e.Manifest); err != nil {
			return Receipt{}, Batch{}, err
		}
	}
	r, row, err := newReceipt(spaceID, e, now)
	if err != nil {
		return Receipt{}, Batch{}, err
	}
	sealed, err := seal(ctx, tx, h, nil, []record{{r: r, row: row}})
	if err != nil {
		return Receipt{}, Batch{}, err
	}
	r.Seq, r.Hash = row.Seq, row.Hash
	return r, sealed.Batch, nil
}

// insertUnsealed writes e as an unsealed receipt of the space inside tx.
func insertUnsealed(ctx context.Context, tx bun.IDB, spaceID string, e Entry, now time.Time) (Receipt, error) {
	r, row, err := newReceipt(spaceID, e, now)
	if err != nil {
		return Receipt{}, err
	}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return Receipt{}, fmt.Errorf("receipts: insert: %w", err)
	}
	return r, nil
}

// newReceipt builds the receipt of e and its row: a new id, the time in microseconds, the
// detail round-tripped through JSON so that hashes are computed over what is stored (for the
// details and ids encodeDetail and encodeIDs handle, written and decoded directly: the same
// bytes and values).
func newReceipt(spaceID string, e Entry, now time.Time) (Receipt, *models.Receipt, error) {
	e = withManifest(e)
	if e.ObjectIDs == nil {
		e.ObjectIDs = []string{}
	}
	if e.Detail == nil {
		e.Detail = map[string]any{}
	}
	r := Receipt{
		SpaceID: spaceID, ID: auth.NewID("rcpt"), Kind: e.Kind, Action: e.Action,
		ActorKeyID: e.ActorKey, ObjectIDs: e.ObjectIDs, At: now.UTC().Truncate(time.Microsecond),
	}
	detail, decoded, ok := encodeDetail(e.Detail)
	if !ok {
		var err error
		if detail, err = json.Marshal(e.Detail); err != nil {
			return Receipt{}, nil, fmt.Errorf("receipts: detail: %w", err)
		}
		decoded = map[string]any{}
		if err := json.Unmarshal(detail, &decoded); err != nil {
			return Receipt{}, nil, fmt.Errorf("receipts: detail: %w", err)
		}
	}
	r.Detail = decoded
	objs, ok := encodeIDs(r.ObjectIDs)
	if !ok {
		var err error
		if objs, err = json.Marshal(r.ObjectIDs); err != nil {
			return Receipt{}, nil, fmt.Errorf("receipts: object ids: %w", err)
		}
	}
	row := &models.Receipt{
		SpaceID: spaceID, ID: r.ID, Kind: r.Kind, Action: r.Action, ActorKeyID: r.ActorKeyID,
		ObjectIDs: string(objs), Detail: string(detail), At: r.At,
	}
	return r, row, nil
}

type head struct {
	bun.BaseModel `bun:"table:receipt_heads"`

	SpaceID string `bun:"space_id,pk"`
	Seq     int64  `bun:"seq"`
	Hash    string `bun:"hash"`
}

// ComputeHash is the hash of a receipt chained one by one before batching (a version 1
// entry): the hex SHA-256 of a JSON array of the fields in a fixed order, with the time in
// RFC 3339 UTC (microseconds), detail keys sorted, and the previous entry's hash last.
func (r Receipt) ComputeHash() string {
	canon, _ := json.Marshal([]any{
		r.SpaceID, r.Seq, r.ID, r.Kind, r.Action, r.ActorKeyID, r.ObjectIDs, r.Detail,
		r.At.UTC().Format(timeFormat), r.PrevHash,
	})
	s := sha256.Sum256(canon)
	return hex.EncodeToString(s[:])
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// timeFormat is how hashes spell times: RFC 3339 UTC with microseconds.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// LeafHash is the Merkle leaf hash of a batched receipt: the hex SHA-256 of 0x00 followed by
// the RFC 8785 (JCS) canonical JSON of {"type": "receipt", "space_id", "seq", "id", "kind",
// "action", "actor_key_id", "object_ids", "detail", "at"} (at in RFC 3339 UTC with
// microseconds). The seq binds the receipt to its position in the chain.
func (r Receipt) LeafHash() string {
	objs := r.ObjectIDs
	if objs == nil {
		objs = []string{}
	}
	detail := r.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	if canon, ok := leafCanonical(r, objs, detail); ok {
		return hex.EncodeToString(hasher.HashLeaf(canon))
	}
	doc, err := json.Marshal(map[string]any{
		"type": "receipt", "space_id": r.SpaceID, "seq": r.Seq, "id": r.ID, "kind": r.Kind,
		"action": r.Action, "actor_key_id": r.ActorKeyID, "object_ids": objs, "detail": detail,
		"at": r.At.UTC().Format(timeFormat),
	})
	if err != nil {
		return ""
	}
	canon, err := signing.Canonical(doc)
	if err != nil {
		return ""
	}
	return hex.EncodeToString(hasher.HashLeaf(canon))
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

// List returns up to limit sealed receipts of the space with seq > after, in chain order.
func List(ctx context.Context, idb bun.IDB, spaceID string, after int64, limit int) ([]Receipt, error) {
	var rows []models.Receipt
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND seq > ?", spaceID, after).
		Order("seq ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: list: %w", err)
	}
	return decodeResolved(ctx, idb, spaceID, rows)
}

// Head is a space's chain head: the sequence number of its last sealed receipt, the hash of
// the chain entry holding it (for a receipt chained before batching, its own hash), and that
// receipt's time (nil while the chain is empty: Seq 0, Hash Genesis). GET /v1/receipts/head
// answers it signed.
type Head struct {
	SpaceID string     `json:"space_id"`
	Seq     int64      `json:"seq"`
	Hash    string     `json:"hash"`
	At      *time.Time `json:"at"`
}

// CurrentHead reads the space's chain head from the head row that sealing moves with each
// chain entry: the seq of the last sealed receipt, the hash of the last entry and the time of
// that receipt. Receipts not sealed yet are not in it (Seal first to include them).
func CurrentHead(ctx context.Context, idb bun.IDB, spaceID string) (Head, error) {
	var h head
	err := idb.NewSelect().Model(&h).Where("space_id = ?", spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && h.Seq == 0) {
		return Head{SpaceID: spaceID, Seq: 0, Hash: Genesis}, nil
	}
	if err != nil {
		return Head{}, fmt.Errorf("receipts: head: %w", err)
	}
	var b models.ReceiptBatch
	if err := idb.NewSelect().Model(&b).Column("at").Where("space_id = ? AND seq = ?", spaceID, h.Seq).Scan(ctx); err != nil {
		return Head{}, fmt.Errorf("receipts: head entry: %w", err)
	}
	at := b.At.UTC()
	return Head{SpaceID: spaceID, Seq: h.Seq, Hash: h.Hash, At: &at}, nil
}

// Filter narrows a page of the chain: sealed receipts with seq > After (or, with Before set, seq <
// Before), of Kind and by ActorKey when set, at most Limit.
type Filter struct {
	After    int64
	Before   int64
	Kind     string
	ActorKey string
	Limit    int
}

// ListFiltered returns a page of the space's sealed receipts matching f in chain order (oldest
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
	return decodeResolved(ctx, idb, spaceID, rows)
}

// decodeResolved decodes stored receipts of the space and resolves the manifests they name.
func decodeResolved(ctx context.Context, idb bun.IDB, spaceID string, rows []models.Receipt) ([]Receipt, error) {
	list, err := decodeRows(rows)
	if err != nil {
		return nil, err
	}
	if err := resolveManifests(ctx, idb, spaceID, list); err != nil {
		return nil, err
	}
	return list, nil
}

// decodeRows decodes stored receipts.
func decodeRows(rows []models.Receipt) ([]Receipt, error) {
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
