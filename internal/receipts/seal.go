package receipts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
)

// Batch versions.
const (
	// VersionChained is an entry from before batching: one receipt, whose Hash (ComputeHash)
	// is the entry's hash.
	VersionChained = 1
	// VersionMerkle is a batch: the RFC 6962 Merkle root of its receipts' leaf hashes.
	VersionMerkle = 2
)

// MaxBatch is the most receipts one chain entry seals (an inclusion path has at most 10
// hashes).
const MaxBatch = 1024

// Batch is one entry of a space's receipt chain: the receipts FirstSeq..Seq (Count of them),
// the Merkle Root of their leaf hashes, the previous entry's hash, and its own Hash
// (ComputeHash). At is the time of its last receipt. Seq is the entry's position: a head's seq
// is always an entry's seq.
type Batch struct {
	SpaceID  string    `json:"space_id"`
	Seq      int64     `json:"seq"`
	FirstSeq int64     `json:"first_seq"`
	Count    int64     `json:"count"`
	Version  int       `json:"version"`
	Root     string    `json:"root"`
	PrevHash string    `json:"prev_hash"`
	Hash     string    `json:"hash"`
	At       time.Time `json:"at"`
}

// ComputeHash is the hash b must carry. Version 2: the hex SHA-256 of the RFC 8785 (JCS)
// canonical JSON of {"type": "receipt_batch", "space_id", "seq", "first_seq", "root",
// "prev_hash", "at"} (at in RFC 3339 UTC with microseconds). Version 1 entries carry their
// receipt's hash (Receipt.ComputeHash), which the walker checks against the receipt.
func (b Batch) ComputeHash() string {
	if canon, ok := b.canonical(); ok {
		return hex.EncodeToString(sha256Sum(canon))
	}
	doc, err := json.Marshal(map[string]any{
		"type": "receipt_batch", "space_id": b.SpaceID, "seq": b.Seq, "first_seq": b.FirstSeq,
		"root": b.Root, "prev_hash": b.PrevHash, "at": b.At.UTC().Format(timeFormat),
	})
	if err != nil {
		return ""
	}
	canon, err := signing.Canonical(doc)
	if err != nil {
		return ""
	}
	return hex.EncodeToString(sha256Sum(canon))
}

// canonical writes the JCS document ComputeHash hashes directly, its members in their fixed
// canonical order (as leafCanonical does for a receipt); false for a string that is not valid
// UTF-8, which ComputeHash then encodes the general way (the same bytes:
// TestBatchCanonicalMatchesJCS).
func (b Batch) canonical() ([]byte, bool) {
	out := make([]byte, 0, 320)
	var ok bool
	out = append(out, `{"at":"`...)
	out = b.At.UTC().AppendFormat(out, timeFormat)
	out = append(out, `","first_seq":`...)
	out = strconv.AppendInt(out, b.FirstSeq, 10)
	out = append(out, `,"prev_hash":`...)
	if out, ok = appendJCSString(out, b.PrevHash); !ok {
		return nil, false
	}
	out = append(out, `,"root":`...)
	if out, ok = appendJCSString(out, b.Root); !ok {
		return nil, false
	}
	out = append(out, `,"seq":`...)
	out = strconv.AppendInt(out, b.Seq, 10)
	out = append(out, `,"space_id":`...)
	if out, ok = appendJCSString(out, b.SpaceID); !ok {
		return nil, false
	}
	return append(out, `,"type":"receipt_batch"}`...), true
}

func batchFromRow(row models.ReceiptBatch) Batch {
	return Batch{
		SpaceID: row.SpaceID, Seq: row.Seq, FirstSeq: row.FirstSeq, Count: row.Seq - row.FirstSeq + 1,
		Version: row.Version, Root: row.Root, PrevHash: row.PrevHash, Hash: row.Hash, At: row.At.UTC(),
	}
}

// Seal seals the space's unsealed receipts into chain entries (at most MaxBatch receipts
// each) in one transaction, and returns the space's head after it, durable (Flush after
// reading it): a head that may be signed or shown. Any process may call it at any time:
// sealers serialise on the space's head row, and receipts committed after it read them go
// into a later entry.
func Seal(ctx context.Context, d *bun.DB, spaceID string) (Head, error) {
	if err := SealPending(ctx, d, spaceID); err != nil {
		return Head{}, err
	}
	h, err := CurrentHead(ctx, d, spaceID)
	if err != nil {
		return Head{}, err
	}
	if err := Flush(ctx, d); err != nil {
		return Head{}, err
	}
	return h, nil
}

// SealPending is Seal without reading the head after it: for callers that read the chain
// themselves (verify, list, proof), which must still answer when the head's entry is gone
// (a chain changed behind the API: Verify reports it, where CurrentHead fails). Those call
// Flush after their reads, before they show them (see the package comment).
func SealPending(ctx context.Context, d *bun.DB, spaceID string) error {
	return d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for {
			sealed, err := sealSpace(ctx, tx, spaceID, nil, nil)
			if err != nil || sealed == nil || sealed.Count < MaxBatch {
				return err
			}
		}
	})
}

// lockHead locks the space's head row inside tx (creating it at Genesis the first time) and
// returns it. On SQLite the transaction already holds the database's write lock, and inside
// a bun.Tx the read is a statement prepared once per pool (db.Query); on PostgreSQL it is
// SELECT ... FOR UPDATE, its text naming the space (a lock waiter shows in pg_stat_activity).
func lockHead(ctx context.Context, tx bun.IDB, spaceID string) (head, error) {
	lock := func() (head, error) {
		h := head{SpaceID: spaceID}
		var rows *sql.Rows
		var err error
		if db.IsSQLite(tx) {
			rows, err = db.Query(ctx, tx, "SELECT seq, hash FROM receipt_heads WHERE space_id = ?", spaceID)
		} else {
			rows, err = tx.QueryContext(ctx, "SELECT seq, hash FROM receipt_heads WHERE space_id = ? FOR UPDATE", spaceID)
		}
		if err != nil {
			return h, err
		}
		return h, db.ScanFirst(rows, &h.Seq, &h.Hash)
	}
	h, err := lock()
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := tx.NewInsert().Model(&head{SpaceID: spaceID, Seq: 0, Hash: Genesis}).
			On("CONFLICT (space_id) DO NOTHING").Exec(ctx); err != nil {
			return head{}, fmt.Errorf("receipts: head: %w", err)
		}
		h, err = lock()
	}
	if err != nil {
		return head{}, fmt.Errorf("receipts: lock head: %w", err)
	}
	return h, nil
}

// sealing is one chain entry seal appended: the entry, and the ids and leaf hashes of its
// receipts in seq order.
type sealing struct {
	Batch
	ids, leaves []string
}

// record is a receipt not stored yet, with its row, and, when newRecord could split it, the
// SHA-256 state of its leaf (0x00 and the canonical document up to the seq) and the
// document's bytes after the seq: the leaf hash is then a short hash under the head's lock,
// the encoding and most of the hashing done before, in the request's goroutine. insert,
// when set, holds the row's values as insertFresh binds them, but seq and hash (see
// insertColumns).
type record struct {
	r      Receipt
	row    *models.Receipt
	leaf   hash.Cloner
	post   []byte
	insert []any
}

// seqMarker is what leafCanonical writes around a seq of 0: the end of object_ids, the seq,
// and the start of space_id. Only object_ids is an array (detail values are scalars) and no
// string holds an unescaped quote, so its last occurrence is the seq's.
const seqMarker = `],"seq":0,"space_id":`

// newRecord is newReceipt's receipt and row as a record, with its leaf document split around
// the seq and its first part hashed when the direct encoding applies (else sealing calls
// LeafHash). With d set (the database the Log writes to), the row's values are bound ahead
// for insertFresh.
func newRecord(d *bun.DB, spaceID string, e Entry, now time.Time) (record, error) {
	r, row, err := newReceipt(spaceID, e, now)
	if err != nil {
		return record{}, err
	}
	rec := record{r: r, row: row}
	zero := r
	zero.Seq = 0
	if canon, ok := leafCanonical(zero, r.ObjectIDs, r.Detail); ok {
		if i := bytes.LastIndex(canon, []byte(seqMarker)); i >= 0 {
			cut := i + len(`],"seq":`)
			h := sha256.New().(hash.Cloner)
			h.Write([]byte{rfc6962.RFC6962LeafHashPrefix})
			h.Write(canon[:cut])
			rec.leaf, rec.post = h, canon[cut+1:]
		}
	}
	if d != nil && db.IsSQLite(d) {
		rec.insert = []any{row.SpaceID, row.ID, row.Kind, row.Action, row.ActorKeyID, row.ObjectIDs, row.Detail, db.TimeArg(d, row.At)}
	}
	return rec, nil
}

// leafHash is LeafHash of rec's receipt at seq.
func (rec record) leafHash(seq int64) string {
	if rec.leaf != nil {
		if h, err := rec.leaf.Clone(); err == nil { // SHA-256 clones but under GOFIPS140=v1.0.0
			var digits [20]byte
			h.Write(strconv.AppendInt(digits[:0], seq, 10))
			h.Write(rec.post)
			var sum [sha256.Size]byte
			return hex.EncodeToString(h.Sum(sum[:0]))
		}
	}
	r := rec.r
	r.Seq = seq
	return r.LeafHash()
}

// sealSpace locks the space's head inside tx and appends one chain entry holding up to
// MaxBatch-len(fresh) of its unsealed receipts (narrowed by where, when set; in insertion
// order) followed by fresh, which it inserts sealed. It returns the entry (nil when there was
// nothing to seal).
func sealSpace(ctx context.Context, tx bun.IDB, spaceID string, where func(*bun.SelectQuery) *bun.SelectQuery, fresh []record) (*sealing, error) {
	h, err := lockHead(ctx, tx, spaceID)
	if err != nil {
		return nil, err
	}
	return sealLocked(ctx, tx, h, true, where, fresh)
}

// sealLocked is sealSpace for the head h the caller already holds locked in tx; with
// leftovers false it seals fresh alone, without looking for unsealed receipts (the group
// committer: those are sealed by a pass of their own).
func sealLocked(ctx context.Context, tx bun.IDB, h head, leftovers bool, where func(*bun.SelectQuery) *bun.SelectQuery, fresh []record) (*sealing, error) {
	spaceID := h.SpaceID
	var rows []models.Receipt
	if room := MaxBatch - len(fresh); leftovers && room > 0 {
		q := tx.NewSelect().Model(&rows).Where("space_id = ? AND seq IS NULL", spaceID)
		if where != nil {
			q = where(q)
		}
		if err := q.Order("n ASC").Limit(int64(room)).Scan(ctx); err != nil {
			return nil, fmt.Errorf("receipts: unsealed: %w", err)
		}
	}
	if len(rows)+len(fresh) == 0 {
		return nil, nil
	}
	stored := make([]record, len(rows))
	for i := range rows {
		r, err := fromRow(rows[i])
		if err != nil {
			return nil, fmt.Errorf("receipts: decode %s: %w", rows[i].ID, err)
		}
		stored[i] = record{r: r, row: &rows[i]}
	}
	return seal(ctx, tx, h, stored, fresh)
}

// seal appends to the chain whose head h the caller holds locked one entry holding stored
// (unsealed receipts already stored, updated here) followed by fresh (inserted here): each
// gets the next seq and its leaf hash, in its row too.
func seal(ctx context.Context, tx bun.IDB, h head, stored, fresh []record) (*sealing, error) {
	out, err := nextEntry(h, append(slices.Clone(stored), fresh...))
	if err != nil {
		return nil, err
	}
	b := out.Batch
	if len(stored) > 0 {
		// Exactly the receipts read, by primary key (one committed meanwhile waits for the next
		// entry), in one statement on both engines.
		var seqs, hashes strings.Builder
		args := make([]any, 0, 4*len(stored)+1)
		for _, rec := range stored {
			seqs.WriteString(" WHEN ? THEN ?")
			args = append(args, rec.row.N, rec.row.Seq)
		}
		ns := make([]int64, len(stored))
		for i, rec := range stored {
			hashes.WriteString(" WHEN ? THEN ?")
			args = append(args, rec.row.N, rec.row.Hash)
			ns[i] = rec.row.N
		}
		args = append(args, bun.In(ns))
		if _, err := tx.NewRaw("UPDATE receipts SET seq = CASE n"+seqs.String()+" END, hash = CASE n"+hashes.String()+" END WHERE n IN (?)",
			args...).Exec(ctx); err != nil {
			return nil, fmt.Errorf("receipts: seal: %w", err)
		}
	}
	if !db.IsSQLite(tx) {
		// PostgreSQL: the fresh receipts, the entry and the head's move in one round trip:
		// the head stays locked for less time.
		rows := make([]*models.Receipt, len(fresh))
		for i, rec := range fresh {
			rows[i] = rec.row
		}
		if _, err := tx.ExecContext(ctx, appendStatement(tx, b, rows)); err != nil {
			return nil, fmt.Errorf("receipts: seal: %w", err)
		}
		return out, nil
	}
	// SQLite: statements prepared once per pool, values bound (bun's interpolated text would
	// be compiled again on every call): the fresh receipts in multi-row inserts, the entry,
	// the head's move.
	if err := insertFresh(ctx, tx, fresh); err != nil {
		return nil, err
	}
	if _, err := db.Exec(ctx, tx, "INSERT INTO receipt_batches (space_id, seq, first_seq, version, root, prev_hash, hash, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		b.SpaceID, b.Seq, b.FirstSeq, b.Version, b.Root, b.PrevHash, b.Hash, db.TimeArg(tx.NewSelect().DB(), b.At)); err != nil {
		return nil, fmt.Errorf("receipts: chain entry: %w", err)
	}
	if _, err := db.Exec(ctx, tx, "UPDATE receipt_heads SET seq = ?, hash = ? WHERE space_id = ?", b.Seq, b.Hash, h.SpaceID); err != nil {
		return nil, fmt.Errorf("receipts: move head: %w", err)
	}
	return out, nil
}

// nextEntry is the chain entry after the head h holding all (at least one receipt), in that
// order: each gets the next seq and its leaf hash, in its row too.
func nextEntry(h head, all []record) (*sealing, error) {
	out := &sealing{ids: make([]string, len(all)), leaves: make([]string, len(all))}
	leaves := make([][]byte, len(all))
	for i, rec := range all {
		rec.r.Seq = h.Seq + 1 + int64(i)
		leaf := rec.leafHash(rec.r.Seq)
		var err error
		if leaves[i], err = hex.DecodeString(leaf); err != nil || leaf == "" {
			return nil, fmt.Errorf("receipts: leaf of %s", rec.r.ID)
		}
		rec.row.Seq, rec.row.Hash = rec.r.Seq, leaf
		out.ids[i], out.leaves[i] = rec.r.ID, leaf
	}
	last := all[len(all)-1]
	out.Batch = Batch{
		SpaceID: h.SpaceID, Seq: h.Seq + int64(len(all)), FirstSeq: h.Seq + 1, Count: int64(len(all)),
		Version: VersionMerkle, Root: hex.EncodeToString(merkleRoot(leaves)), PrevHash: h.Hash,
		At: last.r.At.UTC().Truncate(time.Microsecond),
	}
	out.Hash = out.ComputeHash()
	return out, nil
}

// appendStatement is PostgreSQL's one statement that inserts rows (sealed receipts) and the
// chain entry b and moves the space's head to b (data-modifying CTEs, all run). The text is
// complete (values interpolated by bun, through idb): run without arguments, it is sent as it
// is.
func appendStatement(idb bun.IDB, b Batch, rows []*models.Receipt) string {
	entry := idb.NewInsert().Model(&models.ReceiptBatch{
		SpaceID: b.SpaceID, Seq: b.Seq, FirstSeq: b.FirstSeq, Version: b.Version, Root: b.Root,
		PrevHash: b.PrevHash, Hash: b.Hash, At: b.At,
	})
	move := idb.NewUpdate().Model((*head)(nil)).Set("seq = ?, hash = ?", b.Seq, b.Hash).Where("space_id = ?", b.SpaceID)
	var q strings.Builder
	q.WriteString("WITH entry AS (" + entry.String() + ")")
	if len(rows) > 0 {
		q.WriteString(", fresh AS (" + idb.NewInsert().Model(&rows).String() + ")")
	}
	q.WriteString(" " + move.String())
	return q.String()
}

// insertChunk is the most rows one prepared insert of insertFresh holds: a group of up to
// insertChunk receipts is one statement, and at most insertChunk statement texts are
// prepared per pool.
const insertChunk = 64

// insertColumns are the columns insertFresh writes, in order: a record's insert values, then
// seq and hash (prev_hash keeps its default, empty, as every batched receipt's).
const insertColumns = "(space_id, id, kind, action, actor_key_id, object_ids, detail, at, seq, hash)"

// insertFresh inserts the rows of fresh (sealed receipts: seq and hash set) inside tx in
// multi-row INSERTs of at most insertChunk rows, each prepared once per pool and row count.
func insertFresh(ctx context.Context, tx bun.IDB, fresh []record) error {
	d := tx.NewSelect().DB()
	for len(fresh) > 0 {
		n := min(len(fresh), insertChunk)
		var q strings.Builder
		q.WriteString("INSERT INTO receipts " + insertColumns + " VALUES ")
		args := make([]any, 0, 10*n)
		for i, rec := range fresh[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			row := rec.row
			if rec.insert != nil {
				args = append(args, rec.insert...)
			} else {
				args = append(args, row.SpaceID, row.ID, row.Kind, row.Action, row.ActorKeyID, row.ObjectIDs, row.Detail, db.TimeArg(d, row.At))
			}
			args = append(args, row.Seq, row.Hash)
		}
		if _, err := db.Exec(ctx, tx, q.String(), args...); err != nil {
			return fmt.Errorf("receipts: insert: %w", err)
		}
		fresh = fresh[n:]
	}
	return nil
}

// unsealedSpaces lists the spaces holding unsealed receipts (at most limit).
func unsealedSpaces(ctx context.Context, idb bun.IDB, limit int) ([]string, error) {
	var spaces []string
	if err := idb.NewSelect().Model((*models.Receipt)(nil)).ColumnExpr("DISTINCT space_id").
		Where("seq IS NULL").Limit(int64(limit)).Scan(ctx, &spaces); err != nil {
		return nil, fmt.Errorf("receipts: unsealed spaces: %w", err)
	}
	return spaces, nil
}

// Read is the one way to show the space's chain (issue 30 §3): it seals the space's pending
// receipts (SealPending: every committed receipt is shown), runs read (List, ListFiltered,
// BatchesOf, Verify, Prove, ...), and then makes everything read durable (Flush) before it
// returns, so the caller shows nothing a crash could still lose. read's error is returned
// as it is, and nothing is flushed after it.
func Read(ctx context.Context, d *bun.DB, spaceID string, read func(ctx context.Context) error) error {
	if err := SealPending(ctx, d, spaceID); err != nil {
		return err
	}
	if err := read(ctx); err != nil {
		return err
	}
	return Flush(ctx, d)
}
