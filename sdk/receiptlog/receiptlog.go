// Package receiptlog verifies offline what the receipt log's routes answer (issue 32): a
// checkpoint's signature, a receipt's inclusion in a checkpoint's tree and the consistency of
// two checkpoints. It is the one package of the Go SDK that imports a module beyond the
// standard library, golang.org/x/mod (sumdb/note and sumdb/tlog, the formats the service
// signs and proves in), so a program that verifies nothing never downloads it.
package receiptlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentmemory/agentmemory/sdk"
)

// hash is h as a tlog hash; an error unless it is 32 bytes.
func hash(h []byte) (tlog.Hash, error) {
	var out tlog.Hash
	if len(h) != tlog.HashSize {
		return out, fmt.Errorf("receiptlog: a hash of %d bytes, not %d", len(h), tlog.HashSize)
	}
	copy(out[:], h)
	return out, nil
}

// hashes is hs as tlog hashes (hash).
func hashes(hs [][]byte) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(hs))
	for i, h := range hs {
		var err error
		if out[i], err = hash(h); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Verifiers builds the note verifiers of the deployment's public keys (the
// "public_key" members of GET /v1/signing-keys: 32-byte Ed25519 keys in standard base64).
func Verifiers(publicKeys ...string) (note.Verifiers, error) {
	var list []note.Verifier
	for _, k := range publicKeys {
		raw, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("receiptlog: %q is not an Ed25519 public key in base64", k)
		}
		vkey, err := note.NewEd25519VerifierKey(sdk.CheckpointKeyName, raw)
		if err != nil {
			return nil, err
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return note.VerifierList(list...), nil
}

// OpenCheckpoint checks that cp's note is signed by one of verifiers and states cp's size
// and root.
func OpenCheckpoint(cp sdk.ReceiptCheckpoint, verifiers note.Verifiers) error {
	n, err := note.Open([]byte(cp.Note), verifiers)
	if err != nil {
		return fmt.Errorf("receiptlog: checkpoint: %w", err)
	}
	t, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return fmt.Errorf("receiptlog: checkpoint: %w", err)
	}
	h, err := hash(cp.Hash)
	if err != nil {
		return fmt.Errorf("receiptlog: checkpoint: %w", err)
	}
	if t.N != cp.Size || t.Hash != h {
		return errors.New("receiptlog: the checkpoint's note states another tree")
	}
	return nil
}

// VerifyReceipt checks offline that p's leaf hash is leaf p.Log.Index of the tree of
// p.Log.Checkpoint, and that the checkpoint is signed by verifiers (Verifiers).
// The leaf hash is taken as the proof gives it: recomputing it from the receipt's content
// (RFC 8785 canonical JSON) is what `agentmemory receipts verify-proof` adds.
func VerifyReceipt(p sdk.ReceiptProof, verifiers note.Verifiers) error {
	if p.Log == nil {
		return errors.New("receiptlog: the proof has no log part yet: ask again in a few seconds")
	}
	if err := OpenCheckpoint(p.Log.Checkpoint, verifiers); err != nil {
		return err
	}
	raw, err := hex.DecodeString(p.LeafHash)
	if err != nil || len(raw) != tlog.HashSize {
		return fmt.Errorf("receiptlog: leaf hash %q is not a SHA-256 hash in hex", p.LeafHash)
	}
	cp := p.Log.Checkpoint
	root, err := hash(cp.Hash)
	if err != nil {
		return err
	}
	proof, err := hashes(p.Log.Hashes)
	if err != nil {
		return err
	}
	if err := tlog.CheckRecord(proof, cp.Size, root, p.Log.Index, tlog.Hash(raw)); err != nil {
		return fmt.Errorf("receiptlog: the receipt is not in the checkpoint's tree: %w", err)
	}
	return nil
}

// VerifyConsistency checks offline that newer extends older (a checkpoint kept
// earlier) through c, both signed by verifiers; a fork is sdk.ErrReceiptFork.
func VerifyConsistency(older, newer sdk.ReceiptCheckpoint, c sdk.ReceiptConsistency, verifiers note.Verifiers) error {
	if err := OpenCheckpoint(older, verifiers); err != nil {
		return err
	}
	if err := OpenCheckpoint(newer, verifiers); err != nil {
		return err
	}
	if older.Size > newer.Size {
		older, newer = newer, older
	}
	if older.Size == newer.Size {
		if string(older.Hash) != string(newer.Hash) {
			return fmt.Errorf("%w: two trees of size %d", sdk.ErrReceiptFork, older.Size)
		}
		return nil
	}
	if c.From.Size != older.Size || c.To.Size != newer.Size {
		return fmt.Errorf("receiptlog: the consistency proof is from %d to %d, not %d to %d", c.From.Size, c.To.Size, older.Size, newer.Size)
	}
	return checkTree(c.Hashes, older, newer)
}

// checkTree is VerifyConsistency's proof check: hs proves older's tree a prefix of newer's.
func checkTree(hs [][]byte, older, newer sdk.ReceiptCheckpoint) error {
	proof, err := hashes(hs)
	if err != nil {
		return err
	}
	oldRoot, err := hash(older.Hash)
	if err != nil {
		return err
	}
	newRoot, err := hash(newer.Hash)
	if err != nil {
		return err
	}
	if err := tlog.CheckTree(proof, newer.Size, newRoot, older.Size, oldRoot); err != nil {
		return fmt.Errorf("%w: %w", sdk.ErrReceiptFork, err)
	}
	return nil
}
