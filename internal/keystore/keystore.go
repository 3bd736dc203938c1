// Package keystore keeps the per-subject data keys that seal a subject's personal data
// (GOV-2, MS-4). Keys live apart from the database (by default in their own file), wrapped by
// a key derived from the server secret; destroying a subject's key makes every copy of its
// sealed data unreadable, backups of the database included.
package keystore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrNoKey is returned by DataKey when the subject has no key: never created, or destroyed.
var ErrNoKey = errors.New("keystore: no key for this subject")

// Store holds data keys by subject id. Implementations must be safe for concurrent use; a KMS
// or Vault can stand in for File.
type Store interface {
	// DataKey returns the subject's 32-byte key, creating it when create is true. Without
	// create, a missing or destroyed key is ErrNoKey.
	DataKey(ctx context.Context, subjectID string, create bool) ([]byte, error)
	// Destroy forgets the subject's key for good; destroying a missing key is not an error.
	// It never opens the key, so a key the process cannot unwrap is destroyed too.
	Destroy(ctx context.Context, subjectID string) error
	// Exists reports whether the subject has a stored key, without opening it: an erasure
	// finds and counts keys it cannot unwrap (e.g. under an unknown KEK) and destroys them.
	Exists(ctx context.Context, subjectID string) (bool, error)
}

// File is a Store in one JSON file of wrapped keys, shared safely by several processes on one
// machine through an exclusive file lock around every change.
type File struct {
	path string
	kek  cipher.AEAD
	mu   sync.Mutex
	keys map[string]string // subject id -> base64 of the wrapped key
	gen  uint64            // the destroy generation keys was loaded at
}

// OpenFile opens (or creates) the key file at path; kek is the 32-byte key-encryption key
// (derived from the server secret).
func OpenFile(path string, kek []byte) (*File, error) {
	aead, err := newAEAD(kek)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	f := &File{path: path, kek: aead}
	if err := f.withLock(func() error { return nil }); err != nil {
		return nil, err
	}
	return f, nil
}

// DataKey implements Store.
func (f *File) DataKey(ctx context.Context, subjectID string, create bool) ([]byte, error) {
	f.mu.Lock()
	wrapped, ok := f.keys[subjectID]
	loaded := f.gen
	f.mu.Unlock()
	if g, err := f.Generation(ctx); ok && (err != nil || g != loaded) {
		ok = false // another process destroyed a key since the file was read: read it again
	}
	if !ok {
		// Another process may have created it: re-read under the lock, and create if asked.
		err := f.withLock(func() error {
			if w, found := f.keys[subjectID]; found {
				wrapped, ok = w, true
				return nil
			}
			if !create {
				return nil
			}
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return err
			}
			w, err := seal(f.kek, key, []byte(subjectID))
			if err != nil {
				return err
			}
			f.keys[subjectID] = base64.StdEncoding.EncodeToString(w)
			wrapped, ok = f.keys[subjectID], true
			return f.save()
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNoKey
		}
	}
	raw, err := base64.StdEncoding.DecodeString(wrapped)
	if err != nil {
		return nil, fmt.Errorf("keystore: corrupt entry: %w", err)
	}
	key, err := open(f.kek, raw, []byte(subjectID))
	if err != nil {
		return nil, fmt.Errorf("keystore: unwrap: %w", err)
	}
	return key, nil
}

// Exists implements Store.
func (f *File) Exists(_ context.Context, subjectID string) (bool, error) {
	found := false
	err := f.withLock(func() error {
		_, found = f.keys[subjectID]
		return nil
	})
	return found, err
}

// Destroy implements Store: the entry is removed from the file, which is rewritten and synced,
// and the destroy generation (Generation) moves, before and after the rewrite: before, so that
// a crash after the rewrite still leaves it moved; after, so that a replica that read the key
// again between the two drops it again.
func (f *File) Destroy(_ context.Context, subjectID string) error {
	return f.withLock(func() error {
		if _, ok := f.keys[subjectID]; !ok {
			return nil
		}
		if err := f.bumpGeneration(); err != nil {
			return err
		}
		delete(f.keys, subjectID)
		if err := f.save(); err != nil {
			return err
		}
		return f.bumpGeneration()
	})
}

// Generation implements Generations: the count kept in the small file next to the key file
// (<path>.destroyed, rewritten by every Destroy that removed a key; 0 while there is none),
// read without the lock (it is replaced by a rename, so a reader sees one whole version).
func (f *File) Generation(context.Context) (uint64, error) {
	data, err := os.ReadFile(f.path + ".destroyed")
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("keystore: read destroy generation: %w", err)
	}
	g, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("keystore: parse destroy generation: %w", err)
	}
	return g, nil
}

// bumpGeneration adds 1 to the destroy generation; the caller holds the file lock.
func (f *File) bumpGeneration() error {
	g, err := f.Generation(context.Background())
	if err != nil {
		g = 0 // an unreadable count is replaced: any change is what readers look for
	}
	return writeSynced(f.path+".destroyed", []byte(strconv.FormatUint(g+1, 10)))
}

// withLock takes the file lock, reloads the file into memory, and runs fn.
func (f *File) withLock(fn func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	lock, err := os.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("keystore: lock: %w", err)
	}
	defer func() { _ = lock.Close() }() // a lock file, never written: closing it also drops the flock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("keystore: lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }() // the Close above drops the lock if this fails
	data, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.keys = map[string]string{}
	case err != nil:
		return fmt.Errorf("keystore: read: %w", err)
	default:
		keys := map[string]string{}
		if err := json.Unmarshal(data, &keys); err != nil {
			return fmt.Errorf("keystore: parse %s: %w", f.path, err)
		}
		f.keys = keys
	}
	if g, err := f.Generation(context.Background()); err == nil {
		f.gen = g
	} // else DataKey, which compares the generation with an error, reloads the file every time
	return fn()
}

// save writes the keys to a temporary file, syncs it and renames it over the old one.
func (f *File) save() error {
	data, err := json.Marshal(f.keys)
	if err != nil {
		return err
	}
	return writeSynced(f.path, data)
}

// writeSynced writes data to a temporary file next to path, syncs it and renames it over path.
func writeSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("keystore: write: %w", err)
	}
	if _, err := out.Write(data); err != nil {
		_ = out.Close() // the write error is the one to report; the temporary file is not renamed
		return fmt.Errorf("keystore: write: %w", err)
	}
	if err := out.Sync(); err != nil {
		_ = out.Close() // the sync error is the one to report; the temporary file is not renamed
		return fmt.Errorf("keystore: sync: %w", err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Seal encrypts plaintext under a 32-byte data key with AES-256-GCM; ad (e.g. the row id) is
// authenticated but not stored. The output is nonce || ciphertext.
func Seal(key, plaintext, ad []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return seal(aead, plaintext, ad)
}

// Open decrypts what Seal produced; a wrong key, ad or tampered data is an error.
func Open(key, sealed, ad []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return open(aead, sealed, ad)
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, errors.New("keystore: keys are 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func seal(aead cipher.AEAD, plaintext, ad []byte) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plaintext, ad), nil
}

func open(aead cipher.AEAD, sealed, ad []byte) ([]byte, error) {
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("keystore: sealed data too short")
	}
	n := aead.NonceSize()
	return aead.Open(nil, sealed[:n], sealed[n:], ad)
}
