package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newSigner(t *testing.T, previous ...PublicKey) (*Signer, string) {
	t.Helper()
	seed, _, err := GenerateKey()
	require.NoError(t, err)
	priv, err := ParsePrivateKey(seed)
	require.NoError(t, err)
	s, err := NewSigner(priv, time.Time{}, previous...)
	require.NoError(t, err)
	return s, seed
}

func TestCanonicalIsJCS(t *testing.T) {
	// RFC 8785 §3.2.2/3.2.3: members sorted, no white space, numbers in ECMAScript form.
	got, err := Canonical([]byte(`{ "b": [1.0, 2e1, "x"], "a": {"d": true, "c": null}, "é": 1E-7 }`))
	require.NoError(t, err)
	require.Equal(t, `{"a":{"c":null,"d":true},"b":[1,20,"x"],"é":1e-7}`, string(got))
	_, err = Canonical([]byte(`{"a":`))
	require.Error(t, err)
}

func TestKeyIDIsSHA256Prefix(t *testing.T) {
	pub := ed25519.PublicKey(make([]byte, 32))
	// sha256 of 32 zero bytes = 66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925
	require.Equal(t, "66687aadf862bd77", KeyID(pub))
}

func TestSignVerify(t *testing.T) {
	s, _ := newSigner(t)
	doc := []byte(`{"erasure_id":"er_1","total":3,"items":[{"kind":"state","count":3}]}`)
	sig, err := s.Sign(doc)
	require.NoError(t, err)
	require.Equal(t, Algorithm, sig.Algorithm)
	require.Equal(t, s.KeyID(), sig.KeyID)
	require.NoError(t, Verify(doc, sig, s.Keys()))

	// Formatting does not matter: the same document re-ordered and re-spaced verifies.
	require.NoError(t, Verify([]byte("{\n \"total\": 3, \"items\": [{\"count\":3,\"kind\":\"state\"}], \"erasure_id\": \"er_1\"}"), sig, s.Keys()))

	// Any changed byte of content fails.
	for i := range doc {
		changed := append([]byte(nil), doc...)
		changed[i] ^= 0x01
		err := Verify(changed, sig, s.Keys())
		require.Error(t, err, "byte %d changed (%q) still verifies", i, changed)
	}
	// A changed signature byte fails.
	raw, _ := base64.StdEncoding.DecodeString(sig.Value)
	raw[10] ^= 0x80
	bad := sig
	bad.Value = base64.StdEncoding.EncodeToString(raw)
	require.ErrorIs(t, Verify(doc, bad, s.Keys()), ErrBadSignature)

	// Another key's list does not know the id; a forged list with the right id but another
	// key is refused.
	other, _ := newSigner(t)
	require.ErrorIs(t, Verify(doc, sig, other.Keys()), ErrUnknownKey)
	forged := other.Keys()
	forged[0].KeyID = sig.KeyID
	require.ErrorIs(t, Verify(doc, sig, forged), ErrUnknownKey)

	wrongAlg := sig
	wrongAlg.Algorithm = "RS256"
	require.ErrorIs(t, Verify(doc, wrongAlg, s.Keys()), ErrAlgorithm)
}

func TestRotationKeepsOldSignaturesVerifiable(t *testing.T) {
	old, oldSeed := newSigner(t)
	doc := []byte(`{"seq":7,"hash":"ab"}`)
	oldSig, err := old.Sign(doc)
	require.NoError(t, err)

	oldPub, err := PublicOf(oldSeed)
	require.NoError(t, err)
	prev, err := ParsePrevious(" " + oldPub + "@2026-12-01T10:00:00Z , ")
	require.NoError(t, err)
	require.Len(t, prev, 1)
	require.Equal(t, old.KeyID(), prev[0].KeyID)
	require.Equal(t, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), *prev[0].ValidUntil)

	cur, _ := newSigner(t, prev...)
	keys := cur.Keys()
	require.Len(t, keys, 2)
	require.True(t, keys[0].Current)
	require.False(t, keys[1].Current)
	require.Equal(t, old.KeyID(), keys[1].KeyID)

	newSig, err := cur.Sign(doc)
	require.NoError(t, err)
	require.NotEqual(t, oldSig.KeyID, newSig.KeyID)
	require.NoError(t, Verify(doc, oldSig, keys), "a signature of the rotated key must still verify")
	require.NoError(t, Verify(doc, newSig, keys))

	// Once the old key is no longer published, its signatures no longer verify.
	require.ErrorIs(t, Verify(doc, oldSig, keys[:1]), ErrUnknownKey)
}

func TestParsePrivateKey(t *testing.T) {
	seed, pub, err := GenerateKey()
	require.NoError(t, err)
	priv, err := ParsePrivateKey(seed)
	require.NoError(t, err)
	full := base64.RawURLEncoding.EncodeToString(priv)
	priv2, err := ParsePrivateKey(full)
	require.NoError(t, err)
	require.Equal(t, priv, priv2)
	got, err := PublicOf(seed)
	require.NoError(t, err)
	require.Equal(t, pub, got)

	mismatched := append([]byte(nil), priv...)
	mismatched[40] ^= 1
	_, err = ParsePrivateKey(base64.StdEncoding.EncodeToString(mismatched))
	require.Error(t, err)
	_, err = ParsePrivateKey("c2hvcnQ=")
	require.Error(t, err)
	_, err = ParsePrivateKey("not base64!")
	require.Error(t, err)
	_, err = ParsePrevious("AAAA")
	require.Error(t, err)
	_, err = ParsePrevious(pub + "@yesterday")
	require.Error(t, err)
}

func TestEnvelope(t *testing.T) {
	s, _ := newSigner(t)
	doc := json.RawMessage(`{"seq":1}`)
	sig, err := s.Sign(doc)
	require.NoError(t, err)
	data, err := json.Marshal(map[string]any{"head": doc, "signature": sig})
	require.NoError(t, err)
	name, got, gotSig, err := Envelope(data)
	require.NoError(t, err)
	require.Equal(t, "head", name)
	require.Equal(t, sig, gotSig)
	require.NoError(t, Verify(got, gotSig, s.Keys()))

	for _, bad := range []string{`[]`, `{"head":{}}`, `{"head":{},"other":{},"signature":{}}`, `{"signature":{}}`} {
		_, _, _, err := Envelope([]byte(bad))
		require.Error(t, err, bad)
	}
}
