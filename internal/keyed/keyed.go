// Package keyed derives keyed hashes (HMAC-SHA256 under the server secret) for identifiers
// that must be looked up but never stored in clear: scope ids, subject handles (WM-3).
package keyed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sync"
)

// Hasher computes keyed hashes. The zero value is not usable; build one with New. Copies
// share their keyed states.
type Hasher struct {
	key []byte
	// macs holds HMAC states keyed by key, reset after each use, so a hash does not set up
	// the key again (issue 16: one or two per working-memory request).
	macs *sync.Pool
}

// New returns a Hasher keyed by secret (the server secret, at least 32 bytes).
func New(secret []byte) Hasher {
	key := append([]byte(nil), secret...)
	return Hasher{key: key, macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// mac is a keyed HMAC state at its start; done returns it.
func (h Hasher) mac() (m hash.Hash, done func()) {
	if h.macs == nil {
		return hmac.New(sha256.New, h.key), func() {}
	}
	m = h.macs.Get().(hash.Hash)
	return m, func() { m.Reset(); h.macs.Put(m) }
}

// Hash returns the hex HMAC-SHA256 of (space, kind, value), each part length-prefixed so that
// no two different triples collide. The same inputs give the same hash on every replica.
func (h Hasher) Hash(spaceID, kind, value string) string {
	m, done := h.mac()
	defer done()
	for _, part := range [...]string{spaceID, kind, value} {
		var n [4]byte
		l := len(part)
		n[0], n[1], n[2], n[3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
		m.Write(n[:])
		m.Write([]byte(part))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0]))
}

// Key derives a sub-key for a named purpose (e.g. "known-subjects", "subject-keys") so that one
// secret never serves two purposes directly.
func (h Hasher) Key(purpose string) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("github.com/agentmemory/agentmemory/" + purpose))
	return m.Sum(nil)
}
