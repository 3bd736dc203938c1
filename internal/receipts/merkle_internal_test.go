package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/compact"
)

// The batch tree is RFC 6962's: for every size up to 33 (odd sizes and powers of two alike)
// the root equals the one transparency-dev/merkle's compact range computes independently, and
// every leaf's path verifies with its verifier; a changed leaf, a wrong index or a cut path
// does not.
func TestMerkleRootAndPaths(t *testing.T) {
	rf := &compact.RangeFactory{Hash: hasher.HashChildren}
	for size := 1; size <= 33; size++ {
		leaves := make([][]byte, size)
		hexLeaves := make([]string, size)
		r := rf.NewEmptyRange(0)
		for i := range leaves {
			leaves[i] = hasher.HashLeaf(fmt.Appendf(nil, "receipt %d", i))
			hexLeaves[i] = hex.EncodeToString(leaves[i])
			require.NoError(t, r.Append(leaves[i], nil))
		}
		want, err := r.GetRootHash(nil)
		require.NoError(t, err)
		root, err := MerkleRoot(hexLeaves)
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(want), root, "size %d", size)
		for m := range size {
			path := encodeHashes(merklePath(m, leaves))
			require.NoError(t, VerifyInclusion(int64(m), int64(size), hexLeaves[m], path, root), "size %d leaf %d", size, m)
			other := hex.EncodeToString(hasher.HashLeaf([]byte("changed")))
			require.Error(t, VerifyInclusion(int64(m), int64(size), other, path, root), "a changed leaf")
			if size > 1 {
				require.Error(t, VerifyInclusion(int64((m+1)%size), int64(size), hexLeaves[m], path, root), "another index")
				require.Error(t, VerifyInclusion(int64(m), int64(size), hexLeaves[m], path[:len(path)-1], root), "a cut path")
			}
		}
	}
	_, err := MerkleRoot(nil)
	require.Error(t, err, "a batch is never empty")
}

// Leaves and nodes are domain-separated (0x00 and 0x01 prefixes): a two-leaf root is not the
// leaf hash of the two hashes glued together.
func TestMerkleDomainSeparation(t *testing.T) {
	a, b := hasher.HashLeaf([]byte("a")), hasher.HashLeaf([]byte("b"))
	plain := sha256.Sum256(append(append([]byte{}, a...), b...))
	root := merkleRoot([][]byte{a, b})
	require.NotEqual(t, plain[:], root)
	require.NotEqual(t, hasher.HashLeaf(append(append([]byte{}, a...), b...)), root)
	want := sha256.Sum256(append(append([]byte{1}, a...), b...))
	require.Equal(t, want[:], root)
}
