package sdk

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// CheckpointKeyName is the key name the receipt log's checkpoints are signed under (issue 32).
const CheckpointKeyName = "agentmemory-receipts"

// ReceiptCheckpoint is a signed tree head of the deployment's receipt log
// (GET /v1/receipts/checkpoint): the tree's size, its root hash (base64 in JSON), the signed
// note (golang.org/x/mod/sumdb/note over tlog.FormatTree) and when it was signed. Hashes are
// 32-byte SHA-256 values (base64 in JSON); package sdk/receiptlog verifies them offline.
type ReceiptCheckpoint struct {
	Size int64     `json:"size"`
	Hash []byte    `json:"hash"`
	Note string    `json:"note"`
	At   time.Time `json:"at"`
}

// ReceiptLogProof is a receipt's inclusion proof in the receipt log: its leaf index, the
// checkpoint whose tree holds it and tlog.ProveRecord's hashes (32 bytes each).
type ReceiptLogProof struct {
	Index      int64             `json:"index"`
	Checkpoint ReceiptCheckpoint `json:"checkpoint"`
	Hashes     [][]byte          `json:"hashes"`
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
	Size int64  `json:"size"`
	Hash []byte `json:"hash"`
}

// ReceiptConsistency is GET /v1/receipts/consistency's answer: the proof that the log's tree
// at From is a prefix of its tree at To, and the signed checkpoint of size To when there is
// one.
type ReceiptConsistency struct {
	From       ReceiptTreeHead    `json:"from"`
	To         ReceiptTreeHead    `json:"to"`
	Hashes     [][]byte           `json:"hashes"`
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
