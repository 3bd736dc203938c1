// Package signing signs and verifies the service's proofs (PR-3): erasure certificates and
// receipt-chain heads. A document is signed over its canonical JSON (RFC 8785, JCS) with
// Ed25519; the detached signature names the key by its id, so a verifier holding the published
// public keys (GET /v1/signing-keys) checks it offline with any JCS + Ed25519 implementation.
//
// Rotation: the Signer signs with one current key and keeps the public keys of previous ones,
// so signatures made before a rotation stay verifiable for as long as those keys are listed.
package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/note"
)

// Algorithm is the only signature algorithm: Ed25519 (RFC 8032) over the JCS bytes.
const Algorithm = "Ed25519"

// Errors Verify returns (wrapped); callers match them with errors.Is.
var (
	// ErrUnknownKey: the signature names a key id that is not among the keys given.
	ErrUnknownKey = errors.New("signing: unknown key id")
	// ErrBadSignature: the signature does not verify over the document's canonical bytes
	// (a changed byte, a different document or a different key).
	ErrBadSignature = errors.New("signing: signature does not verify")
	// ErrAlgorithm: the signature names an algorithm other than Ed25519.
	ErrAlgorithm = errors.New("signing: unsupported algorithm")
)

// Signature is a detached signature as the API returns it: the key id, the algorithm and the
// signature bytes in standard base64 (with padding), 64 bytes once decoded.
type Signature struct {
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm"`
	Value     string `json:"value"`
}

// PublicKey is a published verification key: its id (KeyID of the key), the algorithm, the
// 32-byte public key in standard base64, and its validity. Current marks the key that signs
// now; a previous key has Current false and, when known, ValidUntil (the time it stopped
// signing, RFC 3339 UTC).
type PublicKey struct {
	KeyID      string     `json:"key_id"`
	Algorithm  string     `json:"algorithm"`
	PublicKey  string     `json:"public_key"`
	Current    bool       `json:"current"`
	ValidFrom  *time.Time `json:"valid_from,omitempty"`
	ValidUntil *time.Time `json:"valid_until,omitempty"`
}

// Canonical returns the RFC 8785 (JCS) canonical form of the JSON document doc: members
// sorted by UTF-16 code units, no insignificant white space, numbers in ECMAScript form.
// It fails on input that is not a single valid JSON value.
func Canonical(doc []byte) ([]byte, error) {
	out, err := jcs.Transform(doc)
	if err != nil {
		return nil, fmt.Errorf("signing: canonical json: %w", err)
	}
	return out, nil
}

// KeyID is the id of an Ed25519 public key: the first 16 hex characters (8 bytes) of the
// SHA-256 of its 32 raw bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])[:16]
}

// Signer signs with the current private key and publishes it with the previous public keys.
// The zero value is not usable; build one with NewSigner. A Signer is safe for concurrent use.
type Signer struct {
	priv      ed25519.PrivateKey
	id        string
	validFrom *time.Time
	previous  []PublicKey
}

// NewSigner returns a Signer with the current key priv (64 bytes, as ed25519.NewKeyFromSeed
// returns) and the previous public keys, which stay published for verification. A previous
// key equal to the current one is dropped. validFrom, when not zero, is published as the
// current key's valid_from.
func NewSigner(priv ed25519.PrivateKey, validFrom time.Time, previous ...PublicKey) (*Signer, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signing: private key must be %d bytes, got %d", ed25519.PrivateKeySize, len(priv))
	}
	s := &Signer{priv: priv, id: KeyID(priv.Public().(ed25519.PublicKey))}
	if !validFrom.IsZero() {
		t := validFrom.UTC()
		s.validFrom = &t
	}
	for _, p := range previous {
		if p.KeyID == s.id {
			continue
		}
		p.Current = false
		s.previous = append(s.previous, p)
	}
	return s, nil
}

// KeyID is the id of the current key.
func (s *Signer) KeyID() string { return s.id }

// Sign canonicalises the JSON document doc (Canonical) and signs those bytes with the current
// key. It fails only when doc is not valid JSON.
func (s *Signer) Sign(doc []byte) (Signature, error) {
	canon, err := Canonical(doc)
	if err != nil {
		return Signature{}, err
	}
	return Signature{KeyID: s.id, Algorithm: Algorithm, Value: base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, canon))}, nil
}

// Keys lists the published keys: the current one first, then the previous ones in the order
// given to NewSigner.
func (s *Signer) Keys() []PublicKey {
	pub := s.priv.Public().(ed25519.PublicKey)
	out := []PublicKey{{KeyID: s.id, Algorithm: Algorithm, PublicKey: base64.StdEncoding.EncodeToString(pub), Current: true, ValidFrom: s.validFrom}}
	return append(out, s.previous...)
}

// Verify checks sig over the canonical form of the JSON document doc against keys (as
// GET /v1/signing-keys lists them). It returns nil when the signature verifies under the key
// it names, whatever that key's validity (a rotated key still verifies what it signed);
// otherwise an error wrapping ErrAlgorithm, ErrUnknownKey or ErrBadSignature, or a decoding
// error for a malformed document, key or signature value.
func Verify(doc []byte, sig Signature, keys []PublicKey) error {
	if sig.Algorithm != Algorithm {
		return fmt.Errorf("%w: %q", ErrAlgorithm, sig.Algorithm)
	}
	var key *PublicKey
	for i := range keys {
		if keys[i].KeyID == sig.KeyID {
			key = &keys[i]
			break
		}
	}
	if key == nil {
		return fmt.Errorf("%w: %q", ErrUnknownKey, sig.KeyID)
	}
	pub, err := ParsePublicKey(key.PublicKey)
	if err != nil {
		return err
	}
	// The id is recomputed: a key list whose id does not match its key is refused.
	if KeyID(pub) != sig.KeyID {
		return fmt.Errorf("%w: key %q does not hash to its id", ErrUnknownKey, sig.KeyID)
	}
	raw, err := base64.StdEncoding.DecodeString(sig.Value)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return fmt.Errorf("%w: value is not a base64 Ed25519 signature", ErrBadSignature)
	}
	canon, err := Canonical(doc)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, canon, raw) {
		return ErrBadSignature
	}
	return nil
}

// ParsePrivateKey decodes an Ed25519 private key from standard or URL-safe base64 (padding
// optional): either the 32-byte seed or the 64-byte private key (seed then public key, whose
// public half must match the seed).
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	raw, err := decodeBase64(s)
	if err != nil {
		return nil, errors.New("signing: private key is not base64")
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !bytes.Equal(priv[ed25519.SeedSize:], raw[ed25519.SeedSize:]) {
			return nil, errors.New("signing: private key's public half does not match its seed")
		}
		return priv, nil
	default:
		return nil, fmt.Errorf("signing: private key must be a %d-byte seed or a %d-byte key, got %d bytes", ed25519.SeedSize, ed25519.PrivateKeySize, len(raw))
	}
}

// ParsePublicKey decodes a 32-byte Ed25519 public key from standard or URL-safe base64.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	raw, err := decodeBase64(s)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("signing: public key must be %d bytes of base64", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// ParsePrevious decodes a comma-separated list of previous public keys, each "BASE64" or
// "BASE64@UNTIL" where UNTIL is the RFC 3339 time the key stopped signing. Empty input gives
// an empty list.
func ParsePrevious(list string) ([]PublicKey, error) {
	var out []PublicKey
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, until, hasUntil := strings.Cut(item, "@")
		pub, err := ParsePublicKey(k)
		if err != nil {
			return nil, err
		}
		p := PublicKey{KeyID: KeyID(pub), Algorithm: Algorithm, PublicKey: base64.StdEncoding.EncodeToString(pub)}
		if hasUntil {
			t, err := time.Parse(time.RFC3339, strings.TrimSpace(until))
			if err != nil {
				return nil, fmt.Errorf("signing: previous key %s: valid-until %q is not RFC 3339", p.KeyID, until)
			}
			t = t.UTC()
			p.ValidUntil = &t
		}
		out = append(out, p)
	}
	return out, nil
}

// GenerateKey returns a new random Ed25519 seed in standard base64 (the form
// AGENTMEMORY_SIGNING_KEY takes) and its public key in standard base64.
func GenerateKey() (seed, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("signing: generate key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(priv.Seed()), base64.StdEncoding.EncodeToString(pub), nil
}

// PublicOf returns the standard-base64 public key of a private key (seed or full key) given as
// ParsePrivateKey takes it: what to append to AGENTMEMORY_SIGNING_KEYS_PREVIOUS on rotation.
func PublicOf(private string) (string, error) {
	priv, err := ParsePrivateKey(private)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Envelope splits a signed document as the API returns it, {"NAME": DOCUMENT, "signature":
// SIGNATURE} with exactly one member besides "signature" (NAME is "certificate" or "head"),
// into its parts. DOCUMENT is returned as received; Verify canonicalises it.
//
// A member given twice is refused: readers that keep the first value and readers that keep
// the last must see the same document.
func Envelope(data []byte) (name string, doc json.RawMessage, sig Signature, err error) {
	m, err := uniqueMembers(data)
	if err != nil {
		return "", nil, Signature{}, err
	}
	rawSig, ok := m["signature"]
	if !ok {
		return "", nil, Signature{}, errors.New(`signing: envelope has no "signature" member`)
	}
	if err := json.Unmarshal(rawSig, &sig); err != nil {
		return "", nil, Signature{}, fmt.Errorf("signing: signature: %w", err)
	}
	delete(m, "signature")
	if len(m) != 1 {
		return "", nil, Signature{}, fmt.Errorf("signing: envelope must hold one document besides the signature, found %d members", len(m))
	}
	for k, v := range m {
		name, doc = k, v
	}
	return name, doc, sig, nil
}

// uniqueMembers decodes a JSON object into its members, refusing a member name given twice.
func uniqueMembers(data []byte) (map[string]json.RawMessage, error) {
	notObject := func(err error) error { return fmt.Errorf("signing: envelope is not a JSON object: %w", err) }
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return nil, notObject(err)
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, notObject(errors.New("expected {"))
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, notObject(errors.New("expected a member name"))
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("signing: envelope member %q appears twice", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, notObject(err)
		}
		m[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, notObject(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject(errors.New("data after the object"))
	}
	return m, nil
}

// noteSigner signs sumdb notes (golang.org/x/mod/sumdb/note) with a Signer's current key.
type noteSigner struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
}

func (n noteSigner) Name() string                    { return n.name }
func (n noteSigner) KeyHash() uint32                 { return n.hash }
func (n noteSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(n.priv, msg), nil }

// NoteSigner returns a signer of sumdb notes (the checkpoint format of Go's checksum database,
// golang.org/x/mod/sumdb/note) under the key name name with s's current key: Ed25519 over the
// note's text, the key hash the one note.NewEd25519VerifierKey gives for name and the public
// key. It fails on a name note does not accept (empty, with a space or a '+').
func (s *Signer) NoteSigner(name string) (note.Signer, error) {
	v, err := NoteVerifier(name, s.priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return noteSigner{name: name, hash: v.KeyHash(), priv: s.priv}, nil
}

// NoteVerifier returns the sumdb note verifier of the Ed25519 public key pub under the key
// name name.
func NoteVerifier(name string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return nil, fmt.Errorf("signing: note key: %w", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("signing: note key: %w", err)
	}
	return v, nil
}

// NoteVerifiers returns the sumdb note verifiers of keys (as GET /v1/signing-keys lists
// them) under the key name name: a note signed by any of them, current or previous, opens.
func NoteVerifiers(name string, keys []PublicKey) (note.Verifiers, error) {
	list := make([]note.Verifier, 0, len(keys))
	for _, k := range keys {
		raw, err := base64.StdEncoding.DecodeString(k.PublicKey)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("signing: key %s: not a %d-byte Ed25519 public key in base64", k.KeyID, ed25519.PublicKeySize)
		}
		v, err := NoteVerifier(name, raw)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return note.VerifierList(list...), nil
}
