package receipts

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentmemory/agentmemory/models"
)

// LogVerification is the result of VerifyLog: OK, the leaves recomputed (Size) and the
// checkpoints checked; when OK is false, Reason says what does not hold, Index names the leaf
// where the walk stopped (when a leaf), CheckpointSize the checkpoint (when one).
type LogVerification struct {
	OK             bool   `json:"ok"`
	Size           int64  `json:"size"`
	Checkpoints    int64  `json:"checkpoints"`
	Reason         string `json:"reason,omitempty"`
	Index          *int64 `json:"index,omitempty"`
	CheckpointSize *int64 `json:"checkpoint_size,omitempty"`
}

// Reasons a LogVerification (and, for ReasonLogMismatch, a Verification) gives.
const (
	// ReasonLogLeafMismatch: a leaf is not the hash of its receipt recomputed from the
	// receipt's content, or its receipt is gone: a receipt or a leaf was edited or deleted.
	ReasonLogLeafMismatch = "log_leaf_mismatch"
	// ReasonLogGap: the leaf indexes are not 0..size-1 for the log's stored size: a leaf was
	// deleted or inserted.
	ReasonLogGap = "log_gap"
	// ReasonLogOrder: a space's leaves are not its receipts 1, 2, 3... in log order: leaves
	// were reordered, or one of the space's was removed or added.
	ReasonLogOrder = "log_order"
	// ReasonCheckpointMismatch: the leaves do not give a checkpoint's root at its size (or
	// the kept one, since): leaves edited, inserted, deleted or reordered after it was
	// signed, or a forked checkpoint.
	ReasonCheckpointMismatch = "checkpoint_mismatch"
	// ReasonCheckpointSignature: a checkpoint's note does not verify under the keys given.
	ReasonCheckpointSignature = "checkpoint_signature"
	// ReasonStoredHashes: the stored tree hashes, from which proofs are computed, do not give
	// the tree of the leaves.
	ReasonStoredHashes = "stored_hashes_mismatch"
	// ReasonLogRolledBack: the log is smaller than the kept checkpoint (since).
	ReasonLogRolledBack = "log_rolled_back"
	// ReasonLogMismatch (a space's Verification): the space's leaves in the log are not its
	// sealed receipts' hashes, 1, 2, 3... in order.
	ReasonLogMismatch = "log_mismatch"
)

// verifyLogPage is how many leaves VerifyLog reads at a time.
const verifyLogPage = 5000

// logWalk recomputes the log leaf by leaf: the leaves against their receipts, each space's
// order, the tree (a compact range: O(log n) hashes) and, at each checkpoint's size, its
// root and note.
type logWalk struct {
	verifiers note.Verifiers
	cr        *compact.Range
	next      int64            // the index the next leaf must have
	spaces    map[string]int64 // the last seq seen per space
	pending   []Checkpoint     // checkpoints not reached yet, in size order
	checked   int64
	failed    *LogVerification
}

func (w *logWalk) fail(reason string, index, cp *int64) bool {
	w.failed = &LogVerification{Size: w.next, Checkpoints: w.checked, Reason: reason, Index: index, CheckpointSize: cp}
	return false
}

// leaf checks the leaf l against its receipt (nil: missing), then the checkpoints at the
// size it completes.
func (w *logWalk) leaf(l logLeafRow, r *models.Receipt) bool {
	idx := l.Idx
	if l.Idx != w.next {
		return w.fail(ReasonLogGap, &idx, nil)
	}
	if w.spaces[l.SpaceID]+1 != l.Seq {
		return w.fail(ReasonLogOrder, &idx, nil)
	}
	w.spaces[l.SpaceID] = l.Seq
	if r == nil || !bytes.Equal(recomputedLeaf(*r), l.Hash) {
		return w.fail(ReasonLogLeafMismatch, &idx, nil)
	}
	if err := w.cr.Append(l.Hash, nil); err != nil {
		return w.fail(ReasonLogLeafMismatch, &idx, nil)
	}
	w.next++
	return w.reached()
}

// reached checks the pending checkpoints of the size walked so far.
func (w *logWalk) reached() bool {
	for len(w.pending) > 0 && w.pending[0].Size <= w.next {
		cp := w.pending[0]
		w.pending = w.pending[1:]
		size := cp.Size
		if cp.Size < w.next {
			continue // a size walked past: reported by the caller's ordering, not reachable
		}
		root, err := w.cr.GetRootHash(nil)
		if err != nil || !bytes.Equal(root, cp.Hash[:]) {
			return w.fail(ReasonCheckpointMismatch, nil, &size)
		}
		if w.verifiers != nil && cp.Note != "" {
			if _, err := cp.Open(w.verifiers); err != nil {
				return w.fail(ReasonCheckpointSignature, nil, &size)
			}
		}
		w.checked++
	}
	return true
}

// recomputedLeaf is the log leaf of a stored receipt from its content: its chain hash when
// it was chained before batching (a prev_hash), else its leaf hash; nil when undecodable.
func recomputedLeaf(row models.Receipt) []byte {
	r, err := fromRow(row)
	if err != nil {
		return nil
	}
	h := r.LeafHash()
	if row.PrevHash != "" {
		h = r.ComputeHash()
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return nil
	}
	return raw
}

// VerifyLog walks the deployment's whole log: each leaf against its receipt recomputed from
// content (ReasonLogLeafMismatch), the indexes against the stored size (ReasonLogGap), each
// space's seq order (ReasonLogOrder), the tree's root at every stored checkpoint's size and
// at since's (a checkpoint kept outside the database: a fork or a rewritten log fails,
// ReasonCheckpointMismatch; a log smaller than it, ReasonLogRolledBack), each checkpoint's
// signature under verifiers when given (ReasonCheckpointSignature), and the stored hashes
// proofs come from (ReasonStoredHashes). Memory: one page of leaves and O(log n) hashes.
func VerifyLog(ctx context.Context, idb bun.IDB, verifiers note.Verifiers, since *Checkpoint) (LogVerification, error) {
	var size int64
	if err := idb.NewRaw("SELECT size FROM receipt_log_state WHERE id = 1").Scan(ctx, &size); err != nil {
		return LogVerification{}, fmt.Errorf("receipts: log size: %w", err)
	}
	cps, err := allCheckpoints(ctx, idb, since)
	if err != nil {
		return LogVerification{}, err
	}
	if since != nil && since.Size > size {
		s := since.Size
		return LogVerification{Reason: ReasonLogRolledBack, CheckpointSize: &s}, nil
	}
	rf := compact.RangeFactory{Hash: hasher.HashChildren}
	w := &logWalk{verifiers: verifiers, cr: rf.NewEmptyRange(0), spaces: map[string]int64{}, pending: cps}
	if ok, err := w.walk(ctx, idb); err != nil || !ok {
		return resultOf(w), err
	}
	if w.next != size {
		i := w.next
		return LogVerification{Size: w.next, Checkpoints: w.checked, Reason: ReasonLogGap, Index: &i}, nil
	}
	if len(w.pending) > 0 {
		s := w.pending[0].Size
		return LogVerification{Size: w.next, Checkpoints: w.checked, Reason: ReasonCheckpointMismatch, CheckpointSize: &s}, nil
	}
	if size > 0 {
		stored, err := tlog.TreeHash(size, newHashStore(ctx, idb))
		root, rerr := w.cr.GetRootHash(nil)
		if err != nil || rerr != nil || !bytes.Equal(stored[:], root) {
			return LogVerification{Size: w.next, Checkpoints: w.checked, Reason: ReasonStoredHashes}, nil
		}
	}
	return LogVerification{OK: true, Size: w.next, Checkpoints: w.checked}, nil
}

func resultOf(w *logWalk) LogVerification {
	if w.failed != nil {
		return *w.failed
	}
	return LogVerification{Size: w.next, Checkpoints: w.checked}
}

// walk reads the leaves in index order, a page at a time with their receipts, and checks
// each; false once one fails.
func (w *logWalk) walk(ctx context.Context, idb bun.IDB) (bool, error) {
	after := int64(-1)
	for {
		var page []logLeafRow
		if err := idb.NewSelect().Model(&page).Where("idx > ?", after).Order("idx ASC").Limit(verifyLogPage).Scan(ctx); err != nil {
			return false, fmt.Errorf("receipts: log leaves: %w", err)
		}
		if len(page) == 0 {
			return true, nil
		}
		byKey, err := receiptsOfLeaves(ctx, idb, page)
		if err != nil {
			return false, err
		}
		for _, l := range page {
			r, ok := byKey[leafKey{l.SpaceID, l.Seq}]
			var rp *models.Receipt
			if ok {
				rp = &r
			}
			if !w.leaf(l, rp) {
				return false, nil
			}
		}
		after = page[len(page)-1].Idx
	}
}

type leafKey struct {
	space string
	seq   int64
}

// receiptsOfLeaves reads the receipts the leaves name, per space in one range of seqs.
func receiptsOfLeaves(ctx context.Context, idb bun.IDB, page []logLeafRow) (map[leafKey]models.Receipt, error) {
	lo, hi := map[string]int64{}, map[string]int64{}
	for _, l := range page {
		if v, ok := lo[l.SpaceID]; !ok || l.Seq < v {
			lo[l.SpaceID] = l.Seq
		}
		hi[l.SpaceID] = max(hi[l.SpaceID], l.Seq)
	}
	out := map[leafKey]models.Receipt{}
	for s := range lo {
		var rows []models.Receipt
		if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND seq BETWEEN ? AND ?", s, lo[s], hi[s]).Scan(ctx); err != nil {
			return nil, fmt.Errorf("receipts: log receipts: %w", err)
		}
		for _, r := range rows {
			out[leafKey{s, r.Seq}] = r
		}
	}
	return out, nil
}

// allCheckpoints returns the stored checkpoints and since, in size order (since before a
// stored one of its size: both are checked).
func allCheckpoints(ctx context.Context, idb bun.IDB, since *Checkpoint) ([]Checkpoint, error) {
	var rows []checkpointRow
	if err := idb.NewSelect().Model(&rows).Order("size ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: checkpoints: %w", err)
	}
	out := make([]Checkpoint, 0, len(rows)+1)
	placed := since == nil
	for _, row := range rows {
		if !placed && since.Size <= row.Size {
			out, placed = append(out, *since), true
		}
		c, err := checkpointFromRow(row)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if !placed {
		out = append(out, *since)
	}
	return out, nil
}

// verifySpaceLog checks the space's leaves in the log against its sealed receipts: seqs 1, 2,
// 3... in log order, each leaf the receipt's stored hash (the chain walk recomputed those).
// false when they do not hold. Receipts not in the log yet are not checked.
func verifySpaceLog(ctx context.Context, idb bun.IDB, spaceID string) (bool, error) {
	var after int64
	lastIdx := int64(-1)
	for {
		var rows []struct {
			Idx  int64  `bun:"idx"`
			Seq  int64  `bun:"seq"`
			Leaf []byte `bun:"leaf"`
			Hash string `bun:"hash"`
		}
		if err := idb.NewRaw(`SELECT l.idx, l.seq, l.hash AS leaf, COALESCE(r.hash, '') AS hash FROM receipt_log_leaves l
LEFT JOIN receipts r ON r.space_id = l.space_id AND r.seq = l.seq
WHERE l.space_id = ? AND l.seq > ? ORDER BY l.seq ASC LIMIT ?`, spaceID, after, verifyLogPage).Scan(ctx, &rows); err != nil {
			return false, fmt.Errorf("receipts: space log: %w", err)
		}
		for _, r := range rows {
			if r.Seq != after+1 || r.Idx <= lastIdx || hex.EncodeToString(r.Leaf) != r.Hash {
				return false, nil
			}
			after, lastIdx = r.Seq, r.Idx
		}
		if len(rows) < verifyLogPage {
			return true, nil
		}
	}
}
