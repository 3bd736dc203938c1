package keystore

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// ErrUnknownKEK is returned (wrapped, with the KEK id) when a subject key was wrapped by a
// key-encryption key this process does not hold: neither AGENTMEMORY_KEK nor one of
// AGENTMEMORY_KEK_PREVIOUS. The store fails closed: it never treats such a key as missing
// (which would read as "erased") nor creates a new one over it.
var ErrUnknownKEK = errors.New("keystore: subject key wrapped by an unknown key-encryption key (set AGENTMEMORY_KEK_PREVIOUS to the KEK it was wrapped with)")

// postgresSchema is the key database's whole schema, created on open (idempotent). One row
// per subject: the subject key wrapped (AES-256-GCM, nonce || ciphertext, the subject id as
// additional data) by the KEK whose id is kek_id.
const postgresSchema = `CREATE TABLE IF NOT EXISTS subject_keys (
	subject_id TEXT PRIMARY KEY,
	kek_id     TEXT NOT NULL,
	wrapped    BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// generationSchema is the key database's destroy generation (Generation): one row, bumped in
// the transaction of every Destroy that deleted a key.
const generationSchema = `CREATE TABLE IF NOT EXISTS subject_key_generation (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	generation BIGINT NOT NULL
)`

// kek is one key-encryption key and its public id.
type kek struct {
	id   string
	aead cipher.AEAD
}

// KEKID is the public id of a 32-byte key-encryption key: 16 hex characters of a SHA-256 of
// the key under a fixed label. It names the KEK in rows and messages without revealing it.
func KEKID(key []byte) string {
	h := sha256.Sum256(append([]byte("agentmemory keystore kek id\x00"), key...))
	return hex.EncodeToString(h[:8])
}

func newKEK(key []byte) (kek, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return kek{}, errors.New("keystore: a key-encryption key is 32 bytes")
	}
	return kek{id: KEKID(key), aead: aead}, nil
}

// Postgres is a Store in its own PostgreSQL database (AGENTMEMORY_KEYSTORE_URL), shared by
// every API and worker replica. Subject keys are wrapped by the current KEK; keys wrapped by a
// previous KEK still open until `agentmemory keys rewrap` moves them to the current one. Safe
// for concurrent use by any number of processes.
type Postgres struct {
	db       *sql.DB
	current  kek
	previous []kek
}

// PostgresOptions configure OpenPostgres.
type PostgresOptions struct {
	// KEK is the current 32-byte key-encryption key: it wraps every new key and every rewrap.
	KEK []byte
	// Previous are older 32-byte KEKs, used only to open keys they wrapped (during rotation).
	Previous [][]byte
	// MaxOpenConns caps the pool (default 4: key look-ups are short).
	MaxOpenConns int
}

// OpenPostgres connects to the key database at url (postgres:// or postgresql://), pings it
// and creates its schema if missing. Errors never echo the URL (it may hold a password).
func OpenPostgres(ctx context.Context, url string, opt PostgresOptions) (*Postgres, error) {
	cur, err := newKEK(opt.KEK)
	if err != nil {
		return nil, err
	}
	p := &Postgres{current: cur}
	for _, k := range opt.Previous {
		pk, err := newKEK(k)
		if err != nil {
			return nil, err
		}
		if pk.id != cur.id {
			p.previous = append(p.previous, pk)
		}
	}
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, errors.New("keystore: AGENTMEMORY_KEYSTORE_URL must start with postgres:// or postgresql://")
	}
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errors.New("keystore: AGENTMEMORY_KEYSTORE_URL is not a valid PostgreSQL connection string")
	}
	p.db = stdlib.OpenDB(*cc)
	n := opt.MaxOpenConns
	if n <= 0 {
		n = 4
	}
	p.db.SetMaxOpenConns(n)
	p.db.SetMaxIdleConns(n)
	if err := p.db.PingContext(ctx); err != nil {
		_ = p.db.Close() // the ping error is the one to report
		return nil, fmt.Errorf("keystore: ping key database: %w", err)
	}
	if err := p.createSchema(ctx); err != nil {
		_ = p.db.Close() // the schema error is the one to report
		return nil, err
	}
	return p, nil
}

// createSchema creates the table under a transaction-scoped advisory lock, so that replicas
// starting together do not race on CREATE TABLE IF NOT EXISTS.
func (p *Postgres) createSchema(ctx context.Context) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keystore: create schema: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('agentmemory.keystore.' || current_schema(), 0))"); err != nil {
		return fmt.Errorf("keystore: create schema: %w", err)
	}
	for _, stmt := range []string{postgresSchema, generationSchema} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("keystore: create schema: %w", err)
		}
	}
	if err := p.checkCanary(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keystore: create schema: %w", err)
	}
	return nil
}

// CanaryID is the reserved key id of the key store's canary: a random key wrapped by a KEK like
// any subject key, written by the first process that opens an empty store. A process whose
// KEKs cannot open it refuses to start (OpenPostgres), so a replica given a wrong
// AGENTMEMORY_KEK never wraps subject keys the other replicas cannot open. `keys rewrap`
// rewraps it with the subject keys (it is not counted in RewrapResult). No subject id has
// this shape (subject key ids are "sh_<hash>" or profile ids).
const CanaryID = "keystore:canary"

// ErrWrongKEK is returned (wrapped, with the KEK ids, never the KEKs) by OpenPostgres when the
// key store's canary, or every existing key of a store without a canary, is wrapped by a KEK
// this process does not hold. It also wraps ErrUnknownKEK.
var ErrWrongKEK = errors.New("keystore: AGENTMEMORY_KEK does not open this key store (a wrong KEK, or the KEK the store was rotated to is missing)")

// kekIDs lists this process's KEK ids for messages: the current one, then the previous ones.
func (p *Postgres) kekIDs() string {
	ids := "current " + p.current.id
	if len(p.previous) > 0 {
		prev := make([]string, len(p.previous))
		for i, k := range p.previous {
			prev[i] = k.id
		}
		ids += ", previous " + strings.Join(prev, ", ")
	}
	return ids
}

// wrongKEKError is ErrWrongKEK with its detail; errors.Is matches ErrWrongKEK and ErrUnknownKEK.
type wrongKEKError struct{ msg string }

func (e wrongKEKError) Error() string { return e.msg }

func (e wrongKEKError) Is(target error) bool {
	return target == ErrWrongKEK || target == ErrUnknownKEK
}

// wrongKEK is the open error naming the store's KEK id and this process's (ids only).
func (p *Postgres) wrongKEK(what, storeKEK string) error {
	return wrongKEKError{msg: fmt.Sprintf("%s: %s is wrapped by KEK id %s, this process holds KEK ids %s (set AGENTMEMORY_KEK to the store's KEK, or keep it in AGENTMEMORY_KEK_PREVIOUS during a rotation)",
		ErrWrongKEK.Error(), what, storeKEK, p.kekIDs())}
}

// checkCanary runs in createSchema's transaction (under its advisory lock): it opens the
// canary, or writes one under the current KEK when the store has none. A store without a
// canary (created before it existed) whose keys are all under KEKs this process does not hold
// is refused too, rather than stamped with a wrong KEK's canary.
func (p *Postgres) checkCanary(ctx context.Context, tx *sql.Tx) error {
	var kekID string
	var wrapped []byte
	err := tx.QueryRowContext(ctx, "SELECT kek_id, wrapped FROM subject_keys WHERE subject_id = $1", CanaryID).Scan(&kekID, &wrapped)
	if err == nil {
		return p.openCanary(kekID, wrapped)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("keystore: read canary: %w", err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT DISTINCT kek_id FROM subject_keys")
	if err != nil {
		return fmt.Errorf("keystore: read canary: %w", err)
	}
	var stored []string
	known := false
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("keystore: read canary: %w", err)
		}
		stored = append(stored, id)
		if _, err := p.kekByID(id); err == nil {
			known = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("keystore: read canary: %w", err)
	}
	if len(stored) > 0 && !known {
		return p.wrongKEK("every key in the store", strings.Join(stored, ", "))
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	w, err := seal(p.current.aead, key, []byte(CanaryID))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO subject_keys (subject_id, kek_id, wrapped) VALUES ($1, $2, $3)", CanaryID, p.current.id, w); err != nil {
		return fmt.Errorf("keystore: write canary: %w", err)
	}
	return nil
}

// openCanary unwraps the canary: an unknown KEK id is ErrWrongKEK; a known id whose key does
// not open it (a corrupt row) is an unwrap error.
func (p *Postgres) openCanary(kekID string, wrapped []byte) error {
	if _, err := p.kekByID(kekID); err != nil {
		return p.wrongKEK("the key store's canary", kekID)
	}
	if _, err := p.unwrap(CanaryID, kekID, wrapped); err != nil {
		return fmt.Errorf("keystore: canary: %w", err)
	}
	return nil
}

// Close closes the pool.
func (p *Postgres) Close() error { return p.db.Close() }

// Ping checks that the key database answers and that this process still opens its canary
// (GET /readyz): a missing canary or one rewrapped under a KEK this process does not hold
// fails it.
func (p *Postgres) Ping(ctx context.Context) error {
	kekID, wrapped, err := p.load(ctx, CanaryID)
	if errors.Is(err, ErrNoKey) {
		return errors.New("keystore: the key store's canary is missing")
	}
	if err != nil {
		return err
	}
	return p.openCanary(kekID, wrapped)
}

// Exists implements Store: whether a row for subjectID exists, whatever KEK wrapped it (the
// key is not opened, so a key under an unknown KEK is found, counted and destroyable).
func (p *Postgres) Exists(ctx context.Context, subjectID string) (bool, error) {
	var ok bool
	if err := p.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM subject_keys WHERE subject_id = $1)", subjectID).Scan(&ok); err != nil {
		return false, fmt.Errorf("keystore: read key: %w", err)
	}
	return ok, nil
}

// kekByID returns the KEK with this id, or ErrUnknownKEK.
func (p *Postgres) kekByID(id string) (kek, error) {
	if id == p.current.id {
		return p.current, nil
	}
	for _, k := range p.previous {
		if k.id == id {
			return k, nil
		}
	}
	return kek{}, fmt.Errorf("%w: kek id %s", ErrUnknownKEK, id)
}

// unwrap opens a stored key with the KEK named by kekID.
func (p *Postgres) unwrap(subjectID, kekID string, wrapped []byte) ([]byte, error) {
	k, err := p.kekByID(kekID)
	if err != nil {
		return nil, err
	}
	key, err := open(k.aead, wrapped, []byte(subjectID))
	if err != nil {
		return nil, fmt.Errorf("keystore: unwrap: %w", err)
	}
	return key, nil
}

// DataKey implements Store. A key wrapped by an unknown KEK is ErrUnknownKEK (never ErrNoKey,
// never replaced); a row that does not open under its KEK is an unwrap error.
func (p *Postgres) DataKey(ctx context.Context, subjectID string, create bool) ([]byte, error) {
	if subjectID == CanaryID {
		return nil, errReserved
	}
	kekID, wrapped, err := p.load(ctx, subjectID)
	switch {
	case err == nil:
		return p.unwrap(subjectID, kekID, wrapped)
	case !errors.Is(err, ErrNoKey):
		return nil, err
	case !create:
		return nil, ErrNoKey
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	w, err := seal(p.current.aead, key, []byte(subjectID))
	if err != nil {
		return nil, err
	}
	// Another replica may create the same key at the same moment: the first insert wins and
	// both return the stored key.
	if _, err := p.db.ExecContext(ctx,
		"INSERT INTO subject_keys (subject_id, kek_id, wrapped) VALUES ($1, $2, $3) ON CONFLICT (subject_id) DO NOTHING",
		subjectID, p.current.id, w); err != nil {
		return nil, fmt.Errorf("keystore: create key: %w", err)
	}
	kekID, wrapped, err = p.load(ctx, subjectID)
	if err != nil {
		return nil, err
	}
	return p.unwrap(subjectID, kekID, wrapped)
}

// errReserved refuses the canary's id as a subject id.
var errReserved = errors.New("keystore: " + CanaryID + " is reserved for the key store's canary")

// load reads a row; a missing row is ErrNoKey.
func (p *Postgres) load(ctx context.Context, subjectID string) (string, []byte, error) {
	var kekID string
	var wrapped []byte
	err := p.db.QueryRowContext(ctx, "SELECT kek_id, wrapped FROM subject_keys WHERE subject_id = $1", subjectID).Scan(&kekID, &wrapped)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, ErrNoKey
	}
	if err != nil {
		return "", nil, fmt.Errorf("keystore: read key: %w", err)
	}
	return kekID, wrapped, nil
}

// Destroy implements Store: in one transaction the row's wrapped key is overwritten with
// random bytes and the row deleted; then the table is vacuumed, so that the dead row versions
// (the original and the overwritten one) are pruned from the table's pages. Destroying a
// missing key is not an error, and the vacuum runs even then, so a retried Destroy whose
// first vacuum failed completes it.
//
// What this does not reach: the key database's WAL and its backups still hold the wrapped key
// until they age out, which is why they must be short-lived and kept apart from the main
// database's (docs/production.md, "Key store"); rotating the KEK and discarding the old one
// makes every such leftover copy unreadable.
func (p *Postgres) Destroy(ctx context.Context, subjectID string) error {
	if subjectID == CanaryID {
		return errReserved
	}
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keystore: destroy: %w", err)
	}
	defer tx.Rollback()      //nolint:errcheck
	junk := make([]byte, 60) // nonce 12 + key 32 + tag 16: the size of a wrapped key
	if _, err := rand.Read(junk); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE subject_keys SET wrapped = $2, kek_id = '' WHERE subject_id = $1", subjectID, junk); err != nil {
		return fmt.Errorf("keystore: destroy: overwrite: %w", err)
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM subject_keys WHERE subject_id = $1", subjectID)
	if err != nil {
		return fmt.Errorf("keystore: destroy: delete: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		// a key was deleted (or the count is unknown): every replica's cache must see it
		if _, err := tx.ExecContext(ctx, `INSERT INTO subject_key_generation (id, generation) VALUES (1, 1)
ON CONFLICT (id) DO UPDATE SET generation = subject_key_generation.generation + 1`); err != nil {
			return fmt.Errorf("keystore: destroy: generation: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keystore: destroy: %w", err)
	}
	if _, err := p.db.ExecContext(ctx, "VACUUM subject_keys"); err != nil {
		return fmt.Errorf("keystore: destroy: vacuum: %w", err)
	}
	return nil
}

// Generation implements Generations: the key database's destroy generation, bumped in the
// transaction of every Destroy that deleted a key (0 before the first). One primary-key row.
func (p *Postgres) Generation(ctx context.Context) (uint64, error) {
	var g int64
	err := p.db.QueryRowContext(ctx, "SELECT generation FROM subject_key_generation WHERE id = 1").Scan(&g)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("keystore: destroy generation: %w", err)
	}
	return uint64(g), nil
}

// RewrapResult counts what Rewrap did to subject keys (the canary is rewrapped too, uncounted).
type RewrapResult struct {
	// Rewrapped keys moved from a previous KEK to the current one.
	Rewrapped int
	// Current keys were already wrapped by the current KEK.
	Current int
	// Unknown keys are wrapped by a KEK this process does not hold; they were left as they are.
	Unknown int
}

// Rewrap moves every key wrapped by a previous KEK to the current KEK, batch rows per
// transaction (default 500), online: readers keep opening keys throughout (a row is either
// still under its old KEK, which this process holds, or already under the new one), and a
// concurrent Destroy waits at most for one batch. It is idempotent: a second run rewraps
// nothing. Keys under a KEK this process does not hold are counted in Unknown and left
// untouched; Rewrap then returns the counts and an error wrapping ErrUnknownKEK. The table is
// vacuumed at the end so that the old wrapped versions leave the table's pages.
func (p *Postgres) Rewrap(ctx context.Context, batch int) (RewrapResult, error) {
	if batch <= 0 {
		batch = 500
	}
	var res RewrapResult
	if err := p.db.QueryRowContext(ctx, "SELECT count(*) FROM subject_keys WHERE kek_id = $1 AND subject_id <> $2", p.current.id, CanaryID).Scan(&res.Current); err != nil {
		return res, fmt.Errorf("keystore: rewrap: %w", err)
	}
	after := ""
	for {
		n, last, rewrapped, unknown, err := p.rewrapBatch(ctx, after, batch)
		res.Rewrapped += rewrapped
		res.Unknown += unknown
		if err != nil {
			return res, err
		}
		if n < batch {
			break
		}
		after = last
	}
	if _, err := p.db.ExecContext(ctx, "VACUUM subject_keys"); err != nil {
		return res, fmt.Errorf("keystore: rewrap: vacuum: %w", err)
	}
	if res.Unknown > 0 {
		return res, fmt.Errorf("%w: %d keys left as they are", ErrUnknownKEK, res.Unknown)
	}
	return res, nil
}

// rewrapBatch rewraps up to limit rows not under the current KEK whose subject id sorts after
// after, in one transaction holding their row locks. It returns how many rows it looked at,
// the last subject id, and how many it rewrapped and left (unknown KEK).
func (p *Postgres) rewrapBatch(ctx context.Context, after string, limit int) (n int, last string, rewrapped, unknown int, err error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx,
		"SELECT subject_id, kek_id, wrapped FROM subject_keys WHERE kek_id <> $1 AND subject_id > $2 ORDER BY subject_id LIMIT $3 FOR UPDATE",
		p.current.id, after, limit)
	if err != nil {
		return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
	}
	type row struct {
		subject, kekID string
		wrapped        []byte
	}
	var batch []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.subject, &r.kekID, &r.wrapped); err != nil {
			rows.Close()
			return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
		}
		batch = append(batch, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
	}
	for _, r := range batch {
		canary := r.subject == CanaryID // rewrapped like a key, not counted as one
		key, err := p.unwrap(r.subject, r.kekID, r.wrapped)
		if errors.Is(err, ErrUnknownKEK) {
			if !canary {
				unknown++
			}
			continue
		}
		if err != nil {
			return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
		}
		w, err := seal(p.current.aead, key, []byte(r.subject))
		if err != nil {
			return 0, "", 0, 0, err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE subject_keys SET kek_id = $2, wrapped = $3 WHERE subject_id = $1", r.subject, p.current.id, w); err != nil {
			return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
		}
		if !canary {
			rewrapped++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, "", 0, 0, fmt.Errorf("keystore: rewrap: %w", err)
	}
	if len(batch) > 0 {
		last = batch[len(batch)-1].subject
	}
	return len(batch), last, rewrapped, unknown, nil
}
