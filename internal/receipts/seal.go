package receipts

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

func batchFromRow(row models.ReceiptBatch) Batch {
	return Batch{
		SpaceID: row.SpaceID, Seq: row.Seq, FirstSeq: row.FirstSeq, Count: row.Seq - row.FirstSeq + 1,
		Version: row.Version, Root: row.Root, PrevHash: row.PrevHash, Hash: row.Hash, At: row.At.UTC(),
	}
}

// Seal seals the space's unsealed receipts into chain entries (at most MaxBatch receipts
// each) in one transaction, and returns the space's head after it. Any process may call it
// at any time: sealers serialise on the space's head row, and receipts committed after it
// read them go into a later entry.
func Seal(ctx context.Context, d *bun.DB, spaceID string) (Head, error) {
	if err := SealPending(ctx, d, spaceID); err != nil {
		return Head{}, err
	}
	return CurrentHead(ctx, d, spaceID)
}

// SealPending is Seal without reading the head after it: for callers that read the chain
// themselves (verify, list, proof), which must still answer when the head's entry is gone
// (a chain changed behind the API: Verify reports it, where CurrentHead fails).
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
// returns it. On SQLite the transaction already holds the database's write lock.
func lockHead(ctx context.Context, tx bun.IDB, spaceID string) (head, error) {
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
			return head{}, fmt.Errorf("receipts: head: %w", err)
		}
		err = lock()
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

// record is a receipt not stored yet, with its row.
type record struct {
	r   Receipt
	row *models.Receipt
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
	var rows []models.Receipt
	if room := MaxBatch - len(fresh); room > 0 {
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
	all := append(slices.Clone(stored), fresh...)
	out := &sealing{ids: make([]string, len(all)), leaves: make([]string, len(all))}
	leaves := make([][]byte, len(all))
	for i, rec := range all {
		rec.r.Seq = h.Seq + 1 + int64(i)
		leaf := rec.r.LeafHash()
		var err error
		if leaves[i], err = hex.DecodeString(leaf); err != nil || leaf == "" {
			return nil, fmt.Errorf("receipts: leaf of %s", rec.r.ID)
		}
		rec.row.Seq, rec.row.Hash = rec.r.Seq, leaf
		out.ids[i], out.leaves[i] = rec.r.ID, leaf
	}
	last := all[len(all)-1]
	b := Batch{
		SpaceID: h.SpaceID, Seq: h.Seq + int64(len(all)), FirstSeq: h.Seq + 1, Count: int64(len(all)),
		Version: VersionMerkle, Root: hex.EncodeToString(merkleRoot(leaves)), PrevHash: h.Hash,
		At: last.r.At.UTC().Truncate(time.Microsecond),
	}
	b.Hash = b.ComputeHash()
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
	var rows []*models.Receipt
	for _, rec := range fresh {
		rows = append(rows, rec.row)
	}
	entry := tx.NewInsert().Model(&models.ReceiptBatch{
		SpaceID: b.SpaceID, Seq: b.Seq, FirstSeq: b.FirstSeq, Version: b.Version, Root: b.Root,
		PrevHash: b.PrevHash, Hash: b.Hash, At: b.At,
	})
	move := tx.NewUpdate().Model((*head)(nil)).Set("seq = ?, hash = ?", b.Seq, b.Hash).Where("space_id = ?", h.SpaceID)
	if !db.IsSQLite(tx) {
		// PostgreSQL: the fresh receipts, the entry and the head's move in one round trip
		// (data-modifying CTEs, all run, in one statement): the head stays locked for less
		// time. The texts are complete (values interpolated by bun); run without arguments,
		// they are sent as they are.
		var q strings.Builder
		q.WriteString("WITH entry AS (" + entry.String() + ")")
		if len(rows) > 0 {
			q.WriteString(", fresh AS (" + tx.NewInsert().Model(&rows).String() + ")")
		}
		q.WriteString(" " + move.String())
		if _, err := tx.ExecContext(ctx, q.String()); err != nil {
			return nil, fmt.Errorf("receipts: seal: %w", err)
		}
		out.Batch = b
		return out, nil
	}
	if len(rows) > 0 {
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return nil, fmt.Errorf("receipts: insert: %w", err)
		}
	}
	if _, err := entry.Exec(ctx); err != nil {
		return nil, fmt.Errorf("receipts: chain entry: %w", err)
	}
	if _, err := move.Exec(ctx); err != nil {
		return nil, fmt.Errorf("receipts: move head: %w", err)
	}
	out.Batch = b
	return out, nil
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
