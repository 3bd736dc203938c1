package receipts

import (
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Errors of the offline checks of the log (each wrapped with what failed).
var (
	// ErrCheckpointSignature: a checkpoint's note is not signed by any of the keys given, or
	// does not state the checkpoint's size and hash.
	ErrCheckpointSignature = errors.New("receipts: the checkpoint's note does not verify")
	// ErrNotInTree: a receipt's leaf and its inclusion hashes do not give the checkpoint's root.
	ErrNotInTree = errors.New("receipts: the receipt is not in the checkpoint's tree")
	// ErrFork: two signed checkpoints of one log that cannot both be true: the same size with
	// different hashes, or a consistency proof between them that does not hold.
	ErrFork = errors.New("receipts: the checkpoints fork: the log was rewritten")
)

// Open checks that c's note is signed by one of verifiers (note.Open) and states c's size and
// root hash (tlog.ParseTree), and returns the tree it states.
func (c Checkpoint) Open(verifiers note.Verifiers) (tlog.Tree, error) {
	n, err := note.Open([]byte(c.Note), verifiers)
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("%w: %w", ErrCheckpointSignature, err)
	}
	t, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("%w: %w", ErrCheckpointSignature, err)
	}
	if t.N != c.Size || t.Hash != c.Hash {
		return tlog.Tree{}, fmt.Errorf("%w: the note states size %d and hash %s, not %d and %s", ErrCheckpointSignature, t.N, t.Hash, c.Size, c.Hash)
	}
	return t, nil
}

// Verify checks p offline for the leaf hash leaf: its checkpoint opens (Open) and leaf, at
// p.Index, with p.Hashes gives the checkpoint's root (tlog.CheckRecord).
func (p LogProof) Verify(leaf tlog.Hash, verifiers note.Verifiers) error {
	t, err := p.Checkpoint.Open(verifiers)
	if err != nil {
		return err
	}
	if err := tlog.CheckRecord(p.Hashes, t.N, t.Hash, p.Index, leaf); err != nil {
		return fmt.Errorf("%w: leaf %d of %d: %w", ErrNotInTree, p.Index, t.N, err)
	}
	return nil
}

// logLeafOf is the log's leaf of a receipt of an entry of version: its leaf hash (batched),
// or its chain hash (before batching), recomputed from its content.
func logLeafOf(r Receipt, version int) (tlog.Hash, error) {
	h := r.LeafHash()
	if version == VersionChained {
		h = r.ComputeHash()
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != tlog.HashSize {
		return tlog.Hash{}, fmt.Errorf("receipts: the hash of receipt %s cannot be computed", r.ID)
	}
	return tlog.Hash(raw), nil
}

// VerifyInLog checks p offline in full: the batch proof (Verify) and, from the receipt's
// content, its inclusion in the signed checkpoint of p.Log (LogProof.Verify) under
// verifiers (the deployment's public keys: signing.NoteVerifiers(CheckpointName, keys)).
// A proof without Log (the receipt is not in a checkpoint yet) is an error.
func (p Proof) VerifyInLog(verifiers note.Verifiers) error {
	if err := p.Verify(); err != nil {
		return err
	}
	if p.Log == nil {
		return errors.New("receipts: the proof has no log part: the receipt is not in a checkpoint yet")
	}
	leaf, err := logLeafOf(p.Receipt, p.Batch.Version)
	if err != nil {
		return err
	}
	return p.Log.Verify(leaf, verifiers)
}

// VerifyConsistency checks offline that the signed checkpoint newer extends the signed
// checkpoint older (kept from an earlier GET /v1/receipts/checkpoint) through c
// (GET /v1/receipts/consistency?from=older.Size&to=newer.Size): both notes open under
// verifiers, c's ends are the two checkpoints' trees, and its hashes prove the older tree a
// prefix of the newer (tlog.CheckTree). Two checkpoints of one size with different hashes,
// or a proof that does not hold, are ErrFork.
func VerifyConsistency(older, newer Checkpoint, c Consistency, verifiers note.Verifiers) error {
	ot, err := older.Open(verifiers)
	if err != nil {
		return fmt.Errorf("older checkpoint: %w", err)
	}
	nt, err := newer.Open(verifiers)
	if err != nil {
		return fmt.Errorf("newer checkpoint: %w", err)
	}
	switch {
	case ot.N > nt.N:
		return VerifyConsistency(newer, older, c, verifiers)
	case ot.N == nt.N && ot.Hash != nt.Hash:
		return fmt.Errorf("%w: two trees of size %d: %s and %s", ErrFork, ot.N, ot.Hash, nt.Hash)
	case ot.N == nt.N:
		return nil
	}
	if c.From.Size != ot.N || c.To.Size != nt.N {
		return fmt.Errorf("receipts: the consistency proof is from %d to %d, not %d to %d", c.From.Size, c.To.Size, ot.N, nt.N)
	}
	if c.From.Hash != ot.Hash || c.To.Hash != nt.Hash {
		return fmt.Errorf("%w: the log's trees at %d and %d are not the signed ones", ErrFork, ot.N, nt.N)
	}
	if err := tlog.CheckTree(c.Hashes, nt.N, nt.Hash, ot.N, ot.Hash); err != nil {
		return fmt.Errorf("%w: %w", ErrFork, err)
	}
	return nil
}
