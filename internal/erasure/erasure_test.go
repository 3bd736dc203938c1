package erasure

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The personal-data rule matches the migrations' naming of keyed hashes, sealed bytes and
// references to profiles and keys, and nothing else.
func TestPersonal(t *testing.T) {
	for _, c := range []string{"subject_hash", "handle_hash", "scope_hashes", "sealed", "sealed_note", "profile_id", "key_id", "subject"} {
		require.True(t, Personal(c), c)
	}
	for _, c := range []string{"id", "space_id", "hash", "body", "text", "status", "created_at", "payload"} {
		require.False(t, Personal(c), c)
	}
}

func TestReachAndRegistry(t *testing.T) {
	r := Reach{}
	r.Add("turn", "a", "b")
	r.Add("link")
	require.Equal(t, 2, r.Count())
	require.Len(t, r, 1, "no entry for a kind without ids")
	var reg Registry
	require.Nil(t, reg.Get("state"))
	require.Equal(t, []Column{{"t", "subject_hash"}}, reg.Uncovered([]Column{{"t", "subject_hash"}, {"receipts", "prev_hash"}}))
}
