package sdk

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// CheckpointKeyName is the key name the receipt log's checkpoints are signed under (issue 32).
const CheckpointKeyName = "agentmemory-receipts"

// ReceiptCheckpoint is a signed tree head of the deployment's receipt log
// (GET /v1/receipts/checkpoint): the tree's size, its root hash (base64 in JSON), the signed
// note (golang.org/x/mod/sumdb/note over tlog.FormatTree) and when it was signed.
type ReceiptCheckpoint struct {
	Size int64     `json:"size"`
	Hash tlog.Hash `json:"hash"`
	Note string    `json:"note"`
	At   time.Time `json:"at"`
}

// ReceiptLogProof is a receipt's inclusion proof in the receipt log: its leaf index, the
// checkpoint whose tree holds it and tlog.ProveRecord's hashes.
type ReceiptLogProof struct {
	Index      int64             `json:"index"`
	Checkpoint ReceiptCheckpoint `json:"checkpoint"`
	Hashes     tlog.RecordProof  `json:"hashes"`
}

// ReceiptProof is GET /v1/receipts/{id}/proof's answer: the receipt (as the API shows it),
// its leaf hash (hex) and its place in its chain entry, and Log, its inclusion proof in the
// receipt log (nil until the receipt is in a checkpoint, about 1.5 s after it was sealed).
type ReceiptProof struct {
	Receipt   map[string]any   `json:"receipt"`
	LeafIndex int64            `json:"leaf_index"`
	LeafHash  string           `json:"leaf_hash"`
	Path      []string         `json:"path"`
	Batch     map[string]any   `json:"batch"`
	Log       *ReceiptLogProof `json:"log,omitempty"`
}

// ReceiptTreeHead is a size of the receipt log and its tree's root hash.
type ReceiptTreeHead struct {
	Size int64     `json:"size"`
	Hash tlog.Hash `json:"hash"`
}

// ReceiptConsistency is GET /v1/receipts/consistency's answer: the proof that the log's tree
// at From is a prefix of its tree at To, and the signed checkpoint of size To when there is
// one.
type ReceiptConsistency struct {
	From       ReceiptTreeHead    `json:"from"`
	To         ReceiptTreeHead    `json:"to"`
	Hashes     tlog.TreeProof     `json:"hashes"`
	Checkpoint *ReceiptCheckpoint `json:"checkpoint,omitempty"`
}

// ErrReceiptFork: two signed checkpoints of the receipt log that cannot both hold (the same
// size with different roots, or a consistency proof between them that fails).
var ErrReceiptFork = errors.New("sdk: the receipt log's checkpoints fork")

// ReceiptProof fetches the inclusion proof of the receipt id (a key with role admin or
// compliance of its space).
func (c *Client) ReceiptProof(ctx context.Context, id string) (ReceiptProof, error) {
	var p ReceiptProof
	_, _, err := c.do(ctx, http.MethodGet, "/v1/receipts/"+url.PathEscape(id)+"/proof", nil, &p)
	return p, err
}

// ReceiptCheckpoint fetches the receipt log's latest signed checkpoint.
func (c *Client) ReceiptCheckpoint(ctx context.Context) (ReceiptCheckpoint, error) {
	var cp ReceiptCheckpoint
	_, _, err := c.do(ctx, http.MethodGet, "/v1/receipts/checkpoint", nil, &cp)
	return cp, err
}

// ReceiptConsistency fetches the consistency proof from the log's tree of size from to the
// one of size to (0: the latest checkpoint's).
func (c *Client) ReceiptConsistency(ctx context.Context, from, to int64) (ReceiptConsistency, error) {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}}
	if to > 0 {
		q.Set("to", strconv.FormatInt(to, 10))
	}
	var out ReceiptConsistency
	_, _, err := c.do(ctx, http.MethodGet, "/v1/receipts/consistency?"+q.Encode(), nil, &out)
	return out, err
}

// CheckpointVerifiers builds the note verifiers of the deployment's public keys (the
// "public_key" members of GET /v1/signing-keys: 32-byte Ed25519 keys in standard base64).
func CheckpointVerifiers(publicKeys ...string) (note.Verifiers, error) {
	var list []note.Verifier
	for _, k := range publicKeys {
		raw, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("sdk: %q is not an Ed25519 public key in base64", k)
		}
		vkey, err := note.NewEd25519VerifierKey(CheckpointKeyName, raw)
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
func OpenCheckpoint(cp ReceiptCheckpoint, verifiers note.Verifiers) error {
	n, err := note.Open([]byte(cp.Note), verifiers)
	if err != nil {
		return fmt.Errorf("sdk: checkpoint: %w", err)
	}
	t, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return fmt.Errorf("sdk: checkpoint: %w", err)
	}
	if t.N != cp.Size || t.Hash != cp.Hash {
		return errors.New("sdk: the checkpoint's note states another tree")
	}
	return nil
}

// VerifyReceiptInLog checks offline that p's leaf hash is leaf p.Log.Index of the tree of
// p.Log.Checkpoint, and that the checkpoint is signed by verifiers (CheckpointVerifiers).
// The leaf hash is taken as the proof gives it: recomputing it from the receipt's content
// (RFC 8785 canonical JSON) is what `agentmemory receipts verify-proof` adds.
func VerifyReceiptInLog(p ReceiptProof, verifiers note.Verifiers) error {
	if p.Log == nil {
		return errors.New("sdk: the proof has no log part yet: ask again in a few seconds")
	}
	if err := OpenCheckpoint(p.Log.Checkpoint, verifiers); err != nil {
		return err
	}
	raw, err := hex.DecodeString(p.LeafHash)
	if err != nil || len(raw) != tlog.HashSize {
		return fmt.Errorf("sdk: leaf hash %q is not a SHA-256 hash in hex", p.LeafHash)
	}
	cp := p.Log.Checkpoint
	if err := tlog.CheckRecord(p.Log.Hashes, cp.Size, cp.Hash, p.Log.Index, tlog.Hash(raw)); err != nil {
		return fmt.Errorf("sdk: the receipt is not in the checkpoint's tree: %w", err)
	}
	return nil
}

// VerifyReceiptConsistency checks offline that newer extends older (a checkpoint kept
// earlier) through c, both signed by verifiers; a fork is ErrReceiptFork.
func VerifyReceiptConsistency(older, newer ReceiptCheckpoint, c ReceiptConsistency, verifiers note.Verifiers) error {
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
		if older.Hash != newer.Hash {
			return fmt.Errorf("%w: two trees of size %d", ErrReceiptFork, older.Size)
		}
		return nil
	}
	if c.From.Size != older.Size || c.To.Size != newer.Size {
		return fmt.Errorf("sdk: the consistency proof is from %d to %d, not %d to %d", c.From.Size, c.To.Size, older.Size, newer.Size)
	}
	if err := tlog.CheckTree(c.Hashes, newer.Size, newer.Hash, older.Size, older.Hash); err != nil {
		return fmt.Errorf("%w: %w", ErrReceiptFork, err)
	}
	return nil
}
