package receipts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// Verification is the result of walking a chain: OK, how many receipts (Count) in how many
// entries (Batches) were recomputed, and how many receipts are committed but not sealed yet
// (Unsealed: not in the chain, so not covered by it). When OK is false, Reason says what does
// not hold and Broken names the receipt where the walk stopped (for an entry-level failure,
// the entry's last receipt, whose seq is the entry's), BrokenBatch the entry, when known.
type Verification struct {
	OK          bool     `json:"ok"`
	Count       int64    `json:"count"`
	Batches     int64    `json:"batches"`
	Unsealed    int64    `json:"unsealed"`
	Broken      *Receipt `json:"broken,omitempty"`
	BrokenBatch *Batch   `json:"broken_batch,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

// Reasons a Verification gives.
const (
	// ReasonMissingEntry: a receipt or an entry is missing (a gap in the sequence numbers);
	// Broken is the receipt after the gap, if any.
	ReasonMissingEntry = "missing_entry"
	// ReasonBrokenLink: an entry's prev_hash is not the previous entry's hash.
	ReasonBrokenLink = "broken_link"
	// ReasonHashMismatch: a receipt's content does not give its stored hash (Broken is that
	// receipt), or an entry's fields do not give its hash.
	ReasonHashMismatch = "hash_mismatch"
	// ReasonRootMismatch: an entry's receipts do not give its Merkle root: one of them was
	// changed (with its stored leaf hash recomputed), inserted or removed.
	ReasonRootMismatch = "root_mismatch"
	// ReasonTruncated: the stored head row does not match the chain's last entry, or sealed
	// receipts lie past it.
	ReasonTruncated = "truncated"
	// ReasonHeadRewritten: the chain holds no entry ending at the signed head's sequence, or
	// one with another hash: the chain was rewritten at or before that entry (hashes
	// recomputed).
	ReasonHeadRewritten = "head_rewritten"
	// ReasonHeadRolledBack: the chain ends before the signed head's sequence: it was truncated
	// or restored from an older copy.
	ReasonHeadRolledBack = "head_rolled_back"
	// ReasonHeadOtherSpace: the signed head belongs to another space.
	ReasonHeadOtherSpace = "head_other_space"
	// ReasonManifestMismatch: a receipt names a manifest (issue 32) that is not stored, or
	// whose stored content does not give its hash: what the read delivered was changed or
	// removed. Broken is that receipt.
	ReasonManifestMismatch = "manifest_mismatch"
)

// Walker recomputes a chain one entry at a time, in sequence order, from the genesis: the
// check Verify makes, usable on entries and receipts read from the database or from the API's
// GET /v1/receipts pages (which carry the entries of their receipts). With Since set, it also
// checks that the chain extends that (older, signed) head: the entry ending at Since.Seq must
// carry Since.Hash.
type Walker struct {
	// Since, when set, is a head the chain must extend.
	Since *Head
	// RequireManifests, when set, fails a receipt that names a manifest without carrying it
	// (Receipt.Manifest nil): the caller resolved every manifest it could. Either way a
	// manifest carried must give the hash the receipt names.
	RequireManifests bool

	prev       string
	after      int64
	count      int64
	batches    int64
	sinceFound bool
	failed     *Verification
}

// Next checks the entry b with its receipts (those with seq b.FirstSeq..b.Seq, in seq order),
// the entry after the last one given. It returns false once the chain is broken; Result then
// says where and why.
func (w *Walker) Next(b Batch, receipts []Receipt) bool {
	if w.failed != nil {
		return false
	}
	if w.prev == "" {
		w.prev = Genesis
	}
	reason, r := w.checkSequence(b, receipts)
	if reason == "" {
		reason, r = checkEntryHashes(b, receipts)
	}
	if reason == "" {
		reason, r = w.checkManifests(receipts)
	}
	if reason == "" && w.Since != nil && w.Since.Seq >= b.FirstSeq && w.Since.Seq <= b.Seq {
		if w.Since.Seq != b.Seq || w.Since.Hash != b.Hash {
			reason = ReasonHeadRewritten
		} else {
			w.sinceFound = true
		}
	}
	if reason != "" {
		if r == nil && len(receipts) > 0 && receipts[len(receipts)-1].Seq == b.Seq {
			r = &receipts[len(receipts)-1]
		}
		bb := b // a copy in this branch: b itself stays on the stack
		w.failed = &Verification{Count: w.count, Batches: w.batches, Broken: r, BrokenBatch: &bb, Reason: reason}
		return false
	}
	w.prev, w.after = b.Hash, b.Seq
	w.count += int64(len(receipts))
	w.batches++
	return true
}

// checkSequence returns the reason ("" when none) and the receipt, if any, that breaks b's
// place in the chain: b must follow the last entry walked, hold exactly the receipts
// b.FirstSeq..b.Seq in order, and link to the previous entry's hash.
func (w *Walker) checkSequence(b Batch, receipts []Receipt) (string, *Receipt) {
	if b.FirstSeq != w.after+1 || b.Seq < b.FirstSeq {
		if len(receipts) > 0 {
			return ReasonMissingEntry, &receipts[0]
		}
		return ReasonMissingEntry, nil
	}
	for i := range receipts {
		if receipts[i].Seq != b.FirstSeq+int64(i) {
			return ReasonMissingEntry, &receipts[i]
		}
	}
	if int64(len(receipts)) != b.Seq-b.FirstSeq+1 {
		return ReasonMissingEntry, nil
	}
	if b.PrevHash != w.prev {
		return ReasonBrokenLink, nil
	}
	return "", nil
}

// checkEntryHashes returns the reason ("" when none) and the receipt, if any, where b's
// hashes do not hold for its version: a chained entry's one receipt gives its link and hash;
// a Merkle entry's receipts give their leaf hashes and its root, and its fields its hash.
// receipts is b's full, ordered set (checkSequence held).
func checkEntryHashes(b Batch, receipts []Receipt) (string, *Receipt) {
	switch b.Version {
	case VersionChained:
		r := receipts[0]
		switch {
		case len(receipts) != 1:
			return ReasonMissingEntry, nil
		case r.PrevHash != b.PrevHash:
			return ReasonBrokenLink, &r
		case r.ComputeHash() != r.Hash || r.Hash != b.Hash:
			return ReasonHashMismatch, &r
		}
	case VersionMerkle:
		leaves := make([]string, len(receipts))
		for i := range receipts {
			leaves[i] = receipts[i].LeafHash()
			if receipts[i].Hash != leaves[i] {
				return ReasonHashMismatch, &receipts[i]
			}
		}
		if root, err := MerkleRoot(leaves); err != nil || root != b.Root {
			return ReasonRootMismatch, nil
		}
		if b.ComputeHash() != b.Hash {
			return ReasonHashMismatch, nil
		}
	default:
		return ReasonHashMismatch, nil
	}
	return "", nil
}

// checkManifests returns ReasonManifestMismatch and the first receipt whose manifest does not
// hold (manifestHolds), or "" and nil.
func (w *Walker) checkManifests(receipts []Receipt) (string, *Receipt) {
	for i := range receipts {
		if !w.manifestHolds(receipts[i]) {
			return ReasonManifestMismatch, &receipts[i]
		}
	}
	return "", nil
}

// manifestHolds reports whether the manifest r names, if any, is the one it carries: its
// content, encoded again, gives the named hash (or, carried none, RequireManifests is off).
func (w *Walker) manifestHolds(r Receipt) bool {
	h := ManifestOf(r)
	if h == "" {
		return true
	}
	if r.Manifest == nil {
		return !w.RequireManifests
	}
	return r.ManifestHolds()
}

// ManifestHolds reports whether r's Manifest, when it names one and carries it, gives the
// hash r names (its content encoded again); true for a receipt that names none or carries
// none (nothing to check).
func (r Receipt) ManifestHolds() bool {
	h, m := ManifestOf(r), r.Manifest
	if h == "" || m == nil {
		return true
	}
	return m.Hash == h && NewManifest(m.Kind, m.View, m.Tags, m.Budget, m.Items).Hash == h
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
	v := Verification{Count: w.count, Batches: w.batches}
	switch {
	case hasHead && (headSeq != w.after || headHash != prev):
		v.Reason = ReasonTruncated
	case w.Since != nil && w.Since.Seq > 0 && !w.sinceFound:
		v.Reason = ReasonHeadRolledBack
	case w.Since != nil && w.Since.Seq == 0 && w.Since.Hash != Genesis:
		v.Reason = ReasonHeadRewritten
	default:
		v.OK = true
	}
	return v
}

// verifyPage is how many chain entries Verify reads at a time (with their receipts: at most
// verifyPage × MaxBatch receipts in memory).
const verifyPage = 64

// Verify walks the space's whole chain in pages, recomputing every receipt's leaf hash, every
// entry's Merkle root, hash and link, and counts the unsealed receipts.
func Verify(ctx context.Context, idb bun.IDB, spaceID string) (Verification, error) {
	return VerifySince(ctx, idb, spaceID, nil)
}

// VerifySince is Verify (which also checks the space's leaves in the deployment's log:
// ReasonLogMismatch) that also requires the chain to extend since, a head signed earlier
// (GET /v1/receipts/head) and kept outside the database: a chain rewritten with recomputed
// hashes fails with ReasonHeadRewritten, one truncated or rolled back to before since with
// ReasonHeadRolledBack, a head of another space with ReasonHeadOtherSpace. since nil is Verify.
// Check the head's signature before calling: VerifySince trusts its seq and hash.
func VerifySince(ctx context.Context, idb bun.IDB, spaceID string, since *Head) (Verification, error) {
	if since != nil && since.SpaceID != spaceID {
		return Verification{Reason: ReasonHeadOtherSpace}, nil
	}
	w := &Walker{Since: since, RequireManifests: true}
	after, held, err := walkStored(ctx, idb, spaceID, w)
	if err != nil {
		return Verification{}, err
	}
	if !held {
		return withUnsealed(ctx, idb, spaceID, w.Result(0, "", false))
	}
	v, err := verifyEnd(ctx, idb, spaceID, w, after)
	if err != nil {
		return Verification{}, err
	}
	return withUnsealed(ctx, idb, spaceID, v)
}

// walkStored feeds the space's stored chain to w, verifyPage entries at a time with their
// receipts (and the manifests they name), and returns the last entry's seq (0 for none) and
// whether every entry held (false: w.Result says where it broke).
func walkStored(ctx context.Context, idb bun.IDB, spaceID string, w *Walker) (int64, bool, error) {
	var after int64
	for {
		page, err := ListBatches(ctx, idb, spaceID, after, verifyPage)
		if err != nil || len(page) == 0 {
			return after, true, err
		}
		// The receipts of the page's entries, in one range (a gap shows as a missing seq).
		rs, err := listRange(ctx, idb, spaceID, page[0].FirstSeq, page[len(page)-1].Seq)
		if err != nil {
			return 0, false, err
		}
		if err := storedManifestsOf(ctx, idb, spaceID, rs); err != nil {
			return 0, false, err
		}
		for _, b := range page {
			var mine []Receipt
			for len(rs) > 0 && rs[0].Seq <= b.Seq {
				mine, rs = append(mine, rs[0]), rs[1:]
			}
			if !w.Next(b, mine) {
				return after, false, nil
			}
			after = b.Seq
		}
		if len(page) < verifyPage {
			return after, true, nil
		}
	}
}

// verifyEnd ends a walk whose entries all held (the last at seq after): the stored head must
// be its last entry, no sealed receipt may lie past it, and the space's leaves in the
// deployment's log (issue 32) must be its receipts, in order.
func verifyEnd(ctx context.Context, idb bun.IDB, spaceID string, w *Walker, after int64) (Verification, error) {
	var h head
	err := idb.NewSelect().Model(&h).Where("space_id = ?", spaceID).Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Verification{}, fmt.Errorf("receipts: head: %w", err)
	}
	v := w.Result(h.Seq, h.Hash, err == nil)
	if !v.OK {
		return v, nil
	}
	// Sealed receipts past the last entry: the entries holding them were removed.
	past, err := List(ctx, idb, spaceID, after, 1)
	if err != nil {
		return Verification{}, err
	}
	if len(past) > 0 {
		return Verification{Count: v.Count, Batches: v.Batches, Broken: &past[0], Reason: ReasonTruncated}, nil
	}
	ok, err := verifySpaceLog(ctx, idb, spaceID)
	if err != nil {
		return Verification{}, err
	}
	if !ok {
		return Verification{Count: v.Count, Batches: v.Batches, Reason: ReasonLogMismatch}, nil
	}
	return v, nil
}

// withUnsealed sets v.Unsealed to the space's count of unsealed receipts.
func withUnsealed(ctx context.Context, idb bun.IDB, spaceID string, v Verification) (Verification, error) {
	n, err := idb.NewSelect().Model((*models.Receipt)(nil)).Where("space_id = ? AND seq IS NULL", spaceID).Count(ctx)
	if err != nil {
		return Verification{}, fmt.Errorf("receipts: unsealed: %w", err)
	}
	v.Unsealed = int64(n)
	return v, nil
}

// listRange returns the space's receipts with first <= seq <= last, in seq order.
func listRange(ctx context.Context, idb bun.IDB, spaceID string, first, last int64) ([]Receipt, error) {
	var rows []models.Receipt
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND seq BETWEEN ? AND ?", spaceID, first, last).
		Order("seq ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: list: %w", err)
	}
	return decodeRows(rows)
}

// ListBatches returns up to limit chain entries of the space with seq > after, in chain
// order.
func ListBatches(ctx context.Context, idb bun.IDB, spaceID string, after int64, limit int) ([]Batch, error) {
	var rows []models.ReceiptBatch
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND seq > ?", spaceID, after).
		Order("seq ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: list entries: %w", err)
	}
	out := make([]Batch, len(rows))
	for i, row := range rows {
		out[i] = batchFromRow(row)
	}
	return out, nil
}

// BatchesOf returns the chain entries holding the receipts rs (sealed, in seq order), in
// chain order: what a page of GET /v1/receipts carries so that it can be verified.
func BatchesOf(ctx context.Context, idb bun.IDB, spaceID string, rs []Receipt) ([]Batch, error) {
	out := []Batch{}
	if len(rs) == 0 {
		return out, nil
	}
	var rows []models.ReceiptBatch
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND seq >= ? AND first_seq <= ?", spaceID, rs[0].Seq, rs[len(rs)-1].Seq).
		Order("seq ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: list entries: %w", err)
	}
	for _, row := range rows {
		out = append(out, batchFromRow(row))
	}
	return out, nil
}

// Proof is a receipt's inclusion proof: the receipt, its index in its chain entry (Batch),
// and the RFC 6962 inclusion path (sibling hashes, hex, from the leaf up) from its leaf hash
// to the entry's root. Verify checks it offline; the entry's hash ties it to the chain, and
// to a signed head with that hash.
type Proof struct {
	Receipt   Receipt  `json:"receipt"`
	LeafIndex int64    `json:"leaf_index"`
	LeafHash  string   `json:"leaf_hash"`
	Path      []string `json:"path"`
	Batch     Batch    `json:"batch"`
	// Log is the receipt's inclusion proof in the deployment's log against its latest signed
	// checkpoint (issue 32); nil while the receipt is not in a checkpoint yet (about two
	// seconds after it was sealed). VerifyInLog checks it.
	Log *LogProof `json:"log,omitempty"`
}

// ErrNotFound: Prove found no receipt with that id in the space.
var ErrNotFound = fault.New(fault.NotFound, "receipt_not_found", "no receipt with that id in this space")

// ErrUnsealed: the receipt is not sealed yet (Seal, then ask again).
var ErrUnsealed = fault.New(fault.Conflict, "receipt_unsealed", "the receipt is not in the chain yet")

// ErrChainBroken: the receipt's chain entry is missing or does not hold it (the chain was
// changed behind the API; Verify says where).
var ErrChainBroken = fault.New(fault.Conflict, "receipt_chain_broken", "the receipt's chain entry is missing or does not hold it; GET /v1/receipts/verify says where")

// Prove returns the inclusion proof of the space's receipt id in its chain entry and, once
// the receipt is in a checkpoint, in the deployment's log (Proof.Log). Errors: ErrNotFound,
// ErrUnsealed.
func Prove(ctx context.Context, idb bun.IDB, spaceID, id string) (Proof, error) {
	var row models.Receipt
	err := idb.NewSelect().Model(&row).Where("space_id = ? AND id = ?", spaceID, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Proof{}, ErrNotFound
	}
	if err != nil {
		return Proof{}, fmt.Errorf("receipts: proof: %w", err)
	}
	if row.Seq == 0 {
		return Proof{}, ErrUnsealed
	}
	var br models.ReceiptBatch
	err = idb.NewSelect().Model(&br).Where("space_id = ? AND seq >= ? AND first_seq <= ?", spaceID, row.Seq, row.Seq).
		Order("seq ASC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Proof{}, ErrChainBroken
	}
	if err != nil {
		return Proof{}, fmt.Errorf("receipts: proof entry: %w", err)
	}
	b := batchFromRow(br)
	rs, err := listRange(ctx, idb, spaceID, b.FirstSeq, b.Seq)
	if err != nil {
		return Proof{}, err
	}
	p := Proof{LeafIndex: row.Seq - b.FirstSeq, Batch: b, Path: []string{}}
	leaves := make([][]byte, len(rs))
	for i, r := range rs {
		if r.ID == id {
			p.Receipt = r
		}
		h := r.Hash
		if b.Version == VersionMerkle {
			h = r.LeafHash()
		}
		if leaves[i], err = decodeHash(h); err != nil {
			return Proof{}, err
		}
	}
	if int(p.LeafIndex) >= len(leaves) || p.Receipt.ID != id {
		return Proof{}, ErrChainBroken
	}
	p.LeafHash = encodeHashes(leaves[p.LeafIndex : p.LeafIndex+1])[0]
	if b.Version == VersionMerkle {
		p.Path = encodeHashes(merklePath(int(p.LeafIndex), leaves))
	}
	if p.Log, err = ProveInLog(ctx, idb, spaceID, row.Seq); err != nil {
		return Proof{}, err
	}
	return p, nil
}

// Verify checks p offline: the receipt's content gives the leaf hash; for a batch (version
// 2), the leaf and the path give the entry's root and the entry's fields its hash; for an
// entry from before batching (version 1), the receipt's own hash is the entry's. It returns
// an error saying what does not hold. It does not check that the entry is in a chain: the
// entry's hash is what a signed head, or GET /v1/receipts/verify, vouches for.
func (p Proof) Verify() error {
	r, b := p.Receipt, p.Batch
	switch {
	case r.SpaceID != b.SpaceID:
		return errors.New("receipts: the receipt and the entry are of different spaces")
	case r.Seq < b.FirstSeq || r.Seq > b.Seq || p.LeafIndex != r.Seq-b.FirstSeq:
		return fmt.Errorf("receipts: receipt seq %d is not leaf %d of entry %d..%d", r.Seq, p.LeafIndex, b.FirstSeq, b.Seq)
	}
	switch b.Version {
	case VersionChained:
		if r.PrevHash != b.PrevHash || r.ComputeHash() != b.Hash || b.Seq != b.FirstSeq {
			return errors.New("receipts: the receipt does not give its entry's hash")
		}
		return nil
	case VersionMerkle:
		leaf := r.LeafHash()
		if leaf != p.LeafHash {
			return errors.New("receipts: the receipt does not give the proof's leaf hash: it was changed")
		}
		if err := VerifyInclusion(p.LeafIndex, b.Seq-b.FirstSeq+1, leaf, p.Path, b.Root); err != nil {
			return err
		}
		if b.ComputeHash() != b.Hash {
			return errors.New("receipts: the entry's fields do not give its hash")
		}
		return nil
	}
	return fmt.Errorf("receipts: unknown entry version %d", b.Version)
}

func decodeHash(h string) ([]byte, error) {
	b, err := decodeHashes([]string{h})
	if err != nil {
		return nil, err
	}
	return b[0], nil
}
