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
	// states holds *state values keyed by key, reset after each use, so a hash neither sets
	// up the key again nor allocates but its answer (issue 16: one or two per
	// working-memory request).
	states *sync.Pool
}

// state is a keyed HMAC state at its start, with room for a message and its sum.
type state struct {
	mac hash.Hash
	msg []byte
	sum [sha256.Size]byte
}

// New returns a Hasher keyed by secret (the server secret, at least 32 bytes).
func New(secret []byte) Hasher {
	key := append([]byte(nil), secret...)
	return Hasher{key: key, states: &sync.Pool{New: func() any { return &state{mac: hmac.New(sha256.New, key)} }}}
}

// Hash returns the hex HMAC-SHA256 of (space, kind, value), each part length-prefixed so that
// no two different triples collide. The same inputs give the same hash on every replica.
func (h Hasher) Hash(spaceID, kind, value string) string {
	var st *state
	if h.states == nil {
		st = &state{mac: hmac.New(sha256.New, h.key)}
	} else {
		st = h.states.Get().(*state)
	}
	msg := st.msg[:0]
	for _, part := range [...]string{spaceID, kind, value} {
		l := len(part)
		msg = append(msg, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
		msg = append(msg, part...)
	}
	st.mac.Write(msg)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], st.mac.Sum(st.sum[:0]))
	if h.states != nil {
		st.msg = msg
		st.mac.Reset()
		h.states.Put(st)
	}
	return string(out[:])
}

// Key derives a sub-key for a named purpose (e.g. "known-subjects", "subject-keys") so that one
// secret never serves two purposes directly.
func (h Hasher) Key(purpose string) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("github.com/agentmemory/agentmemory/" + purpose))
	return m.Sum(nil)
}
