package receipts

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The Merkle tree of a batch is RFC 6962's (§2.1, the Certificate Transparency tree) over
// SHA-256: a leaf hash is SHA-256(0x00 || canonical receipt), an interior node
// SHA-256(0x01 || left || right), and a tree of n > 1 leaves splits at k, the largest power
// of two below n: root(D[0:n]) = node(root(D[0:k]), root(D[k:n])). The prefixes keep a leaf
// from passing for a node. Inclusion paths are RFC 6962's PATH(m, D[n]), verified by
// github.com/transparency-dev/merkle.

// hasher is the RFC 6962 SHA-256 tree hasher.
var hasher = rfc6962.DefaultHasher

// merkleRoot is the RFC 6962 root of leaves (at least one).
func merkleRoot(leaves [][]byte) []byte {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := split(len(leaves))
	return hasher.HashChildren(merkleRoot(leaves[:k]), merkleRoot(leaves[k:]))
}

// merklePath is RFC 6962's PATH(m, D[n]): the sibling hashes from leaf m up to the root.
func merklePath(m int, leaves [][]byte) [][]byte {
	if len(leaves) <= 1 {
		return [][]byte{}
	}
	k := split(len(leaves))
	if m < k {
		return append(merklePath(m, leaves[:k]), merkleRoot(leaves[k:]))
	}
	return append(merklePath(m-k, leaves[k:]), merkleRoot(leaves[:k]))
}

// split is the largest power of two below n (n > 1).
func split(n int) int {
	return 1 << (bits.Len(uint(n-1)) - 1)
}

// MerkleRoot returns the hex RFC 6962 root of the hex leaf hashes (at least one); it fails on
// a leaf that is not 32 bytes of hex.
func MerkleRoot(leaves []string) (string, error) {
	if len(leaves) == 0 {
		return "", errors.New("receipts: a batch has at least one receipt")
	}
	raw, err := decodeHashes(leaves)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(merkleRoot(raw)), nil
}

// VerifyInclusion checks that the hex leaf hash is leaf index (0-based) of a tree of size
// leaves whose hex root is root, given the hex inclusion path (RFC 6962 PATH). It returns
// an error saying why not.
func VerifyInclusion(index, size int64, leaf string, path []string, root string) error {
	if index < 0 || index >= size {
		return fmt.Errorf("receipts: leaf index %d outside a batch of %d", index, size)
	}
	l, err := decodeHashes([]string{leaf})
	if err != nil {
		return err
	}
	p, err := decodeHashes(path)
	if err != nil {
		return err
	}
	r, err := decodeHashes([]string{root})
	if err != nil {
		return err
	}
	if err := proof.VerifyInclusion(hasher, uint64(index), uint64(size), l[0], p, r[0]); err != nil {
		return fmt.Errorf("receipts: inclusion proof: %w", err)
	}
	return nil
}

func decodeHashes(hs []string) ([][]byte, error) {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != hasher.Size() {
			return nil, fmt.Errorf("receipts: %q is not a SHA-256 hash in hex", h)
		}
		out[i] = b
	}
	return out, nil
}

func encodeHashes(hs [][]byte) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = hex.EncodeToString(h)
	}
	return out
}
