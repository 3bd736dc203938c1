package receipts

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// The deployment's receipt log (issue 32). Every space's sealed receipts are also leaves of
// ONE append-only Merkle tree per deployment, in the order the log appended them: the tree of
// RFC 6962 (the same leaf and node hashes as a batch's tree) kept as Go's checksum database
// keeps its own, with the stored hashes of golang.org/x/mod/sumdb/tlog (receipt_log_hashes)
// and a signed checkpoint (a sumdb note of tlog.FormatTree) at most once per CheckpointEvery
// while the log grows (receipt_checkpoints).
//
// The log is appended behind the chains, never by a request: AppendLog (Log.Run's pass,
// every second) takes the receipts sealed since its last pass, space by space in seq order,
// and appends their leaf hashes, the tree's new stored hashes and, when due, a checkpoint, in
// one transaction serialised on the log's state row. A request is answered once its receipt
// is durable in its space's chain, as before; its inclusion in a checkpoint follows within
// about two passes. The group committer's transactions do not touch the log's tables.
//
// A leaf is the receipt's hash as its chain entry holds it: for a batched receipt its RFC
// 6962 leaf hash (LeafHash: SHA-256 of 0x00 and the canonical receipt, naming its space and
// seq), for a receipt chained one by one before batching its chain hash (ComputeHash:
// SHA-256 of a JSON array, whose first byte '[' is never a node's 0x01). The leaf of a space's
// receipt is found by space and seq (receipt_log_leaves, indexed by space).

// CheckpointName is the key name the log's checkpoints are signed under: the note's
// signature line reads "— agentmemory-receipts <base64 of key hash and signature>", and a
// verifier builds the key with note.NewEd25519VerifierKey(CheckpointName, public key).
const CheckpointName = "agentmemory-receipts"

// CheckpointEvery is the least time between two checkpoints: while the log grows, AppendLog
// signs a new one when the latest is at least this old.
const CheckpointEvery = time.Second

// logPass is the most leaves one AppendLog transaction appends.
const logPass = 10000

// logInsertChunk is the most rows one insert of the log's tables writes.
const logInsertChunk = 1000

type logLeafRow struct {
	bun.BaseModel `bun:"table:receipt_log_leaves"`

	Idx     int64  `bun:"idx,pk"`
	SpaceID string `bun:"space_id"`
	Seq     int64  `bun:"seq"`
	Hash    []byte `bun:"hash"`
}

type logHashRow struct {
	bun.BaseModel `bun:"table:receipt_log_hashes"`

	Idx  int64  `bun:"idx,pk"`
	Hash []byte `bun:"hash"`
}

type checkpointRow struct {
	bun.BaseModel `bun:"table:receipt_checkpoints"`

	Size int64     `bun:"size,pk"`
	Hash string    `bun:"hash"`
	Note string    `bun:"note"`
	At   time.Time `bun:"at"`
}

// Checkpoint is a signed tree head of the deployment's receipt log: the tree's Size (leaves)
// and root Hash (base64 in JSON, as in the note), the Note (tlog.FormatTree's text followed
// by a blank line and its signature lines, Ed25519 under CheckpointName; no signature line
// when the deployment has no signing key), and when it was signed (RFC 3339 UTC).
type Checkpoint struct {
	Size int64     `json:"size"`
	Hash tlog.Hash `json:"hash"`
	Note string    `json:"note"`
	At   time.Time `json:"at"`
}

func checkpointFromRow(row checkpointRow) (Checkpoint, error) {
	h, err := tlog.ParseHash(row.Hash)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("receipts: checkpoint %d: %w", row.Size, err)
	}
	return Checkpoint{Size: row.Size, Hash: h, Note: row.Note, At: row.At.UTC()}, nil
}

// AppendLog appends to the log the receipts sealed since its last pass (at most logPass; it
// returns how many, so a caller catching up calls it again until it returns fewer), and,
// when the log then holds more leaves than its latest checkpoint and that one is at least
// CheckpointEvery older than now (or there is none), signs a checkpoint of its size with
// signer (nil: unsigned). The reads, the hashing, the signature and the statements' text are
// prepared first, without a lock (prepareAppend); one transaction serialised on the log's
// state row then writes them if the log is still the size they were prepared for, else
// appends nothing (another appender got there first: the next pass goes on). Appenders on
// any number of processes never fork the log, and on SQLite the database's write lock is
// held only for the inserts.
func AppendLog(ctx context.Context, d *bun.DB, signer note.Signer, now time.Time) (int, error) {
	a, err := prepareAppend(ctx, d, signer, now)
	if err != nil || a == nil {
		return 0, err
	}
	n := 0
	err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		size, err := lockLog(ctx, tx)
		if err != nil || size != a.size {
			return err
		}
		for _, q := range a.statements {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("receipts: append log: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE receipt_log_state SET size = ? WHERE id = 1", a.size+int64(a.leaves)); err != nil {
			return fmt.Errorf("receipts: log size: %w", err)
		}
		n = a.leaves
		return insertCheckpoint(ctx, tx, a.checkpoint, now)
	})
	return n, err
}

// pendingAppend is what one AppendLog writes: after the log's size, leaves leaves and their
// stored hashes (statements: complete insert texts), and the checkpoint due, if any.
type pendingAppend struct {
	size       int64
	leaves     int
	statements []string
	checkpoint *checkpointRow
}

// prepareAppend reads the log's size and the leaves to append, computes their stored hashes
// and, when due, signs the checkpoint of the new size, without a lock; nil when there is
// nothing to write.
func prepareAppend(ctx context.Context, d *bun.DB, signer note.Signer, now time.Time) (*pendingAppend, error) {
	var size int64
	if err := d.QueryRowContext(ctx, "SELECT size FROM receipt_log_state WHERE id = 1").Scan(&size); err != nil {
		return nil, fmt.Errorf("receipts: log size: %w", err)
	}
	leaves, err := pendingLeaves(ctx, d, size, logPass)
	if err != nil {
		return nil, err
	}
	store := newHashStore(ctx, d)
	hashes, err := storedHashes(store, size, leaves)
	if err != nil {
		return nil, err
	}
	a := &pendingAppend{size: size, leaves: len(leaves)}
	a.statements = append(insertTexts(d, leaves), insertTexts(d, hashes)...)
	if a.checkpoint, err = dueCheckpoint(ctx, d, store, size+int64(len(leaves)), signer, now); err != nil {
		return nil, err
	}
	if len(leaves) == 0 && a.checkpoint == nil {
		return nil, nil
	}
	return a, nil
}

// CatchUpLog runs AppendLog until the log holds every receipt sealed when it was called.
func CatchUpLog(ctx context.Context, d *bun.DB, signer note.Signer, now time.Time) (int, error) {
	total := 0
	for {
		n, err := AppendLog(ctx, d, signer, now)
		total += n
		if err != nil || n < logPass {
			return total, err
		}
	}
}

// lockLog locks the log's state row inside tx until tx ends (an update first: on SQLite it
// takes the database's write lock, on PostgreSQL the row's) and returns the log's size.
func lockLog(ctx context.Context, tx bun.Tx) (int64, error) {
	if _, err := tx.ExecContext(ctx, "UPDATE receipt_log_state SET size = size WHERE id = 1"); err != nil {
		return 0, fmt.Errorf("receipts: lock log: %w", err)
	}
	var size int64
	if err := tx.QueryRowContext(ctx, "SELECT size FROM receipt_log_state WHERE id = 1").Scan(&size); err != nil {
		return 0, fmt.Errorf("receipts: lock log: %w", err)
	}
	return size, nil
}

// spaceLag is a space whose chain head is past the last of its receipts in the log.
type spaceLag struct {
	SpaceID string
	Head    int64
	Logged  int64
}

// pendingLeaves returns up to limit leaves to append after size: the sealed receipts not in
// the log yet, space by space (in id order), each space's in seq order, with their indexes.
func pendingLeaves(ctx context.Context, tx bun.IDB, size int64, limit int) ([]logLeafRow, error) {
	rows, err := tx.QueryContext(ctx, `SELECT h.space_id, h.seq,
	COALESCE((SELECT MAX(l.seq) FROM receipt_log_leaves l WHERE l.space_id = h.space_id), 0)
FROM receipt_heads h WHERE h.seq > 0 ORDER BY h.space_id`)
	if err != nil {
		return nil, fmt.Errorf("receipts: log lag: %w", err)
	}
	var lags []spaceLag
	for rows.Next() {
		var l spaceLag
		if err := rows.Scan(&l.SpaceID, &l.Head, &l.Logged); err != nil {
			_ = rows.Close() // the scan error is the one returned
			return nil, fmt.Errorf("receipts: log lag: %w", err)
		}
		if l.Head > l.Logged {
			lags = append(lags, l)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("receipts: log lag: %w", err)
	}
	var out []logLeafRow
	for _, l := range lags {
		if len(out) >= limit {
			break
		}
		more, err := sealedHashes(ctx, tx, l, limit-len(out))
		if err != nil {
			return nil, err
		}
		for _, m := range more {
			m.Idx = size + int64(len(out))
			out = append(out, m)
		}
	}
	return out, nil
}

// sealedHashes returns the hashes of up to limit of l's space's receipts past l.Logged, up to
// its head, in seq order.
func sealedHashes(ctx context.Context, tx bun.IDB, l spaceLag, limit int) ([]logLeafRow, error) {
	var rows []struct {
		Seq  int64  `bun:"seq"`
		Hash string `bun:"hash"`
		ID   string `bun:"id"`
	}
	if err := tx.NewSelect().Table("receipts").Column("seq", "hash", "id").
		Where("space_id = ? AND seq > ? AND seq <= ?", l.SpaceID, l.Logged, l.Head).
		Order("seq ASC").Limit(int64(limit)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("receipts: log receipts: %w", err)
	}
	out := make([]logLeafRow, len(rows))
	for i, r := range rows {
		h, err := hex.DecodeString(r.Hash)
		if err != nil || len(h) != tlog.HashSize {
			return nil, fmt.Errorf("receipts: log: receipt %s has no valid hash", r.ID)
		}
		out[i] = logLeafRow{SpaceID: l.SpaceID, Seq: r.Seq, Hash: h}
	}
	return out, nil
}

// storedHashes returns the tree's stored hashes that leaves (indexes size, size+1, ...) add,
// reading the ones before through store (which keeps the new ones too).
func storedHashes(store *hashStore, size int64, leaves []logLeafRow) ([]logHashRow, error) {
	var hashes []logHashRow
	for i, l := range leaves {
		n := size + int64(i)
		hs, err := tlog.StoredHashesForRecordHash(n, tlog.Hash(l.Hash), store)
		if err != nil {
			return nil, fmt.Errorf("receipts: log hashes: %w", err)
		}
		base := tlog.StoredHashIndex(0, n)
		for j, h := range hs {
			store.mem[base+int64(j)] = h
			hashes = append(hashes, logHashRow{Idx: base + int64(j), Hash: h[:]})
		}
	}
	return hashes, nil
}

// insertTexts returns the complete texts (values interpolated by bun, through idb) of
// multi-row inserts of rows, at most logInsertChunk rows each.
func insertTexts[T any](idb bun.IDB, rows []T) []string {
	var out []string
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), logInsertChunk)]
		out = append(out, idb.NewInsert().Model(&chunk).String())
		rows = rows[len(chunk):]
	}
	return out
}

// dueCheckpoint returns the checkpoint of the log at size, signed, when one is due (see
// AppendLog), else nil.
func dueCheckpoint(ctx context.Context, idb bun.IDB, store *hashStore, size int64, signer note.Signer, now time.Time) (*checkpointRow, error) {
	if size == 0 {
		return nil, nil
	}
	last, ok, err := LatestCheckpoint(ctx, idb)
	if err != nil {
		return nil, err
	}
	if ok && (last.Size >= size || now.Sub(last.At) < CheckpointEvery) {
		return nil, nil
	}
	th, err := tlog.TreeHash(size, store)
	if err != nil {
		return nil, fmt.Errorf("receipts: checkpoint: %w", err)
	}
	msg, err := SignTree(tlog.Tree{N: size, Hash: th}, signer)
	if err != nil {
		return nil, err
	}
	return &checkpointRow{Size: size, Hash: th.String(), Note: string(msg), At: now.UTC().Truncate(time.Microsecond)}, nil
}

// insertCheckpoint stores c inside tx (the log's state row locked) unless it is nil or no
// longer due: another appender signed one meanwhile (of its size or later, or less than
// CheckpointEvery before now).
func insertCheckpoint(ctx context.Context, tx bun.Tx, c *checkpointRow, now time.Time) error {
	if c == nil {
		return nil
	}
	last, ok, err := LatestCheckpoint(ctx, tx)
	if err != nil {
		return err
	}
	if ok && (last.Size >= c.Size || now.Sub(last.At) < CheckpointEvery) {
		return nil
	}
	if _, err := tx.NewInsert().Model(c).Exec(ctx); err != nil {
		return fmt.Errorf("receipts: checkpoint: %w", err)
	}
	return nil
}

// SignTree returns the signed note of the tree t: tlog.FormatTree's text signed by signer
// (nil: no signature line).
func SignTree(t tlog.Tree, signer note.Signer) ([]byte, error) {
	var signers []note.Signer
	if signer != nil {
		signers = append(signers, signer)
	}
	msg, err := note.Sign(&note.Note{Text: string(tlog.FormatTree(t))}, signers...)
	if err != nil {
		return nil, fmt.Errorf("receipts: sign checkpoint: %w", err)
	}
	return msg, nil
}

// LatestCheckpoint returns the log's latest checkpoint; false when it has none yet.
func LatestCheckpoint(ctx context.Context, idb bun.IDB) (Checkpoint, bool, error) {
	var row checkpointRow
	err := idb.NewSelect().Model(&row).Order("size DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("receipts: checkpoint: %w", err)
	}
	c, err := checkpointFromRow(row)
	return c, err == nil, err
}

// hashStore reads the log's stored hashes (tlog.HashReader) through idb, keeping what it read
// and what the caller appended (mem) for the next reads.
type hashStore struct {
	ctx context.Context
	idb bun.IDB
	mem map[int64]tlog.Hash
}

func newHashStore(ctx context.Context, idb bun.IDB) *hashStore {
	return &hashStore{ctx: ctx, idb: idb, mem: map[int64]tlog.Hash{}}
}

// ReadHashes returns the stored hashes at indexes, in that order (tlog.HashReader); an error
// when one is not stored.
func (s *hashStore) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	var missing []int64
	for _, i := range indexes {
		if _, ok := s.mem[i]; !ok {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		var rows []logHashRow
		if err := s.idb.NewSelect().Model(&rows).Where("idx IN (?)", bun.In(missing)).Scan(s.ctx); err != nil {
			return nil, fmt.Errorf("receipts: log hashes: %w", err)
		}
		for _, r := range rows {
			if len(r.Hash) != tlog.HashSize {
				return nil, fmt.Errorf("receipts: log hash %d is not %d bytes", r.Idx, tlog.HashSize)
			}
			s.mem[r.Idx] = tlog.Hash(r.Hash)
		}
	}
	out := make([]tlog.Hash, len(indexes))
	for k, i := range indexes {
		h, ok := s.mem[i]
		if !ok {
			return nil, fmt.Errorf("receipts: log hash %d is not stored", i)
		}
		out[k] = h
	}
	return out, nil
}

// LogProof is a receipt's inclusion proof in the deployment's log: its leaf Index, the
// Checkpoint whose tree holds it, and Hashes (tlog.ProveRecord's, base64 in JSON; at most
// about 2·log2(size)), which with the leaf hash give the checkpoint's root. The hashes are of
// subtrees: they reveal no other receipt's content, nor whose it is.
type LogProof struct {
	Index      int64            `json:"index"`
	Checkpoint Checkpoint       `json:"checkpoint"`
	Hashes     tlog.RecordProof `json:"hashes"`
}

// ProveInLog returns the inclusion proof of the space's receipt seq in the log's latest
// checkpoint; nil (no error) while the receipt is not in that checkpoint's tree yet (a pass
// of the log, every second, adds it).
func ProveInLog(ctx context.Context, idb bun.IDB, spaceID string, seq int64) (*LogProof, error) {
	cp, ok, err := LatestCheckpoint(ctx, idb)
	if err != nil || !ok {
		return nil, err
	}
	var leaf logLeafRow
	err = idb.NewSelect().Model(&leaf).Where("space_id = ? AND seq = ?", spaceID, seq).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("receipts: log leaf: %w", err)
	}
	if leaf.Idx >= cp.Size {
		return nil, nil
	}
	p, err := tlog.ProveRecord(cp.Size, leaf.Idx, newHashStore(ctx, idb))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLogBroken, err)
	}
	if p == nil {
		p = tlog.RecordProof{} // a tree of one leaf: no hash, an empty list
	}
	return &LogProof{Index: leaf.Idx, Checkpoint: cp, Hashes: p}, nil
}

// ErrLogBroken: the log's stored hashes cannot give a proof in its latest checkpoint (the
// log was changed behind the API; VerifyLog says where).
var ErrLogBroken = fault.New(fault.Conflict, "receipt_log_broken", "the receipt log's stored hashes do not cover its latest checkpoint; `agentmemory receipts verify --log` says where")

// TreeHead is a size of the log and the root hash of its tree at that size (base64 in JSON).
type TreeHead struct {
	Size int64     `json:"size"`
	Hash tlog.Hash `json:"hash"`
}

// Consistency is the proof that the log's tree at From is a prefix of its tree at To (the log
// only grew in between): tlog.ProveTree's Hashes (base64 in JSON). Checkpoint is the signed
// checkpoint of size To.Size, when there is one.
type Consistency struct {
	From       TreeHead       `json:"from"`
	To         TreeHead       `json:"to"`
	Hashes     tlog.TreeProof `json:"hashes"`
	Checkpoint *Checkpoint    `json:"checkpoint,omitempty"`
}

// ErrTreeRange: the sizes of a consistency proof are not 1 <= from <= to <= the latest
// checkpoint's size.
var ErrTreeRange = fault.New(fault.Invalid, "invalid_tree_range", "from and to must be tree sizes with 1 <= from <= to <= the latest checkpoint's size")

// ProveConsistency returns the consistency proof between the log's trees of sizes from and
// to (to 0: the latest checkpoint's). Error: ErrTreeRange.
func ProveConsistency(ctx context.Context, idb bun.IDB, from, to int64) (Consistency, error) {
	cp, ok, err := LatestCheckpoint(ctx, idb)
	if err != nil {
		return Consistency{}, err
	}
	if to == 0 {
		to = cp.Size
	}
	if !ok || from < 1 || from > to || to > cp.Size {
		return Consistency{}, ErrTreeRange
	}
	store := newHashStore(ctx, idb)
	c := Consistency{From: TreeHead{Size: from}, To: TreeHead{Size: to}}
	if c.From.Hash, err = tlog.TreeHash(from, store); err != nil {
		return Consistency{}, fmt.Errorf("%w: %w", ErrLogBroken, err)
	}
	if c.To.Hash, err = tlog.TreeHash(to, store); err != nil {
		return Consistency{}, fmt.Errorf("%w: %w", ErrLogBroken, err)
	}
	if c.Hashes, err = tlog.ProveTree(to, from, store); err != nil {
		return Consistency{}, fmt.Errorf("%w: %w", ErrLogBroken, err)
	}
	if c.Hashes == nil {
		c.Hashes = tlog.TreeProof{} // from == to: no hash, an empty list
	}
	var row checkpointRow
	err = idb.NewSelect().Model(&row).Where("size = ?", to).Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Consistency{}, fmt.Errorf("receipts: checkpoint: %w", err)
	}
	if err == nil {
		at, err := checkpointFromRow(row)
		if err != nil {
			return Consistency{}, err
		}
		c.Checkpoint = &at
	}
	return c, nil
}
