package keyed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHashReusesStatesExactly: a hash from a reused keyed state is the HMAC of its parts, every
// time, from any copy of the Hasher and from the zero-pool fallback alike.
func TestHashReusesStatesExactly(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	want := func(parts ...string) string {
		m := hmac.New(sha256.New, secret)
		for _, p := range parts {
			m.Write([]byte{byte(len(p) >> 24), byte(len(p) >> 16), byte(len(p) >> 8), byte(len(p))})
			m.Write([]byte(p))
		}
		return hex.EncodeToString(m.Sum(nil))
	}
	h := New(secret)
	copied := h
	unpooled := Hasher{key: secret}
	for i := range 3 {
		require.Equal(t, want("sp_1", "scope:conversation", "c-1"), h.Hash("sp_1", "scope:conversation", "c-1"), "round %d", i)
		require.Equal(t, want("sp_2", "subject", "email:a@b.c"), copied.Hash("sp_2", "subject", "email:a@b.c"), "round %d", i)
		require.Equal(t, want("sp_1", "scope:conversation", "c-1"), unpooled.Hash("sp_1", "scope:conversation", "c-1"))
	}
	require.NotEqual(t, h.Hash("a", "bc", "d"), h.Hash("ab", "c", "d"))
}
