package keystore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keystore"
)

func newKEK(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

// keyDB is a fresh PostgreSQL schema standing for the key database (dropped after the test).
func keyDB(t *testing.T) string {
	t.Helper()
	return dbtest.URL(t, "postgres")
}

func openPG(t *testing.T, url string, cur []byte, prev ...[]byte) *keystore.Postgres {
	t.Helper()
	s, err := keystore.OpenPostgres(context.Background(), url, keystore.PostgresOptions{KEK: cur, Previous: prev})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// rows reads the subject keys as they are stored: subject id -> (kek id, wrapped bytes). The
// canary is left out (canary reads it).
func rows(t *testing.T, url string) map[string][2]string {
	t.Helper()
	d, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer d.Close()
	r, err := d.Query("SELECT subject_id, kek_id, wrapped FROM subject_keys WHERE subject_id <> $1", keystore.CanaryID)
	require.NoError(t, err)
	defer r.Close()
	out := map[string][2]string{}
	for r.Next() {
		var id, kid string
		var w []byte
		require.NoError(t, r.Scan(&id, &kid, &w))
		out[id] = [2]string{kid, string(w)}
	}
	require.NoError(t, r.Err())
	return out
}

// canary returns the KEK id of the stored canary ("" when there is none).
func canary(t *testing.T, url string) string {
	t.Helper()
	d, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer d.Close()
	var id string
	err = d.QueryRow("SELECT kek_id FROM subject_keys WHERE subject_id = $1", keystore.CanaryID).Scan(&id)
	if err == sql.ErrNoRows {
		return ""
	}
	require.NoError(t, err)
	return id
}

// foreignKey stores a key for subject wrapped by lost, a KEK no store in the test holds, as a
// replica with a wrong KEK did before the canary existed.
func foreignKey(t *testing.T, url, subject string, lost []byte) {
	t.Helper()
	key := newKEK(t)
	w, err := keystore.Seal(lost, key, []byte(subject))
	require.NoError(t, err)
	d, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.Exec("INSERT INTO subject_keys (subject_id, kek_id, wrapped) VALUES ($1, $2, $3)", subject, keystore.KEKID(lost), w)
	require.NoError(t, err)
}

// Two replicas sharing the key database see one key per subject: one creates, the other
// opens it; after one destroys it, the other fails closed (ErrNoKey) and the row is gone.
func TestPostgresSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	url, kek := keyDB(t), newKEK(t)
	a, b := openPG(t, url, kek), openPG(t, url, kek)

	_, err := b.DataKey(ctx, "sh_ana", false)
	require.ErrorIs(t, err, keystore.ErrNoKey)
	key, err := a.DataKey(ctx, "sh_ana", true)
	require.NoError(t, err)
	require.Len(t, key, 32)
	got, err := b.DataKey(ctx, "sh_ana", false)
	require.NoError(t, err)
	require.Equal(t, key, got, "replica b opened another key than the one a created")
	again, err := b.DataKey(ctx, "sh_ana", true)
	require.NoError(t, err)
	require.Equal(t, key, again, "create on an existing key must return it, not replace it")

	stored := rows(t, url)
	require.Len(t, stored, 1)
	require.Equal(t, keystore.KEKID(kek), stored["sh_ana"][0])
	require.False(t, bytes.Contains([]byte(stored["sh_ana"][1]), key), "the key is stored in clear")

	sealed, err := keystore.Seal(key, []byte("Ana Souza"), []byte("row-1"))
	require.NoError(t, err)
	require.NoError(t, a.Destroy(ctx, "sh_ana"))
	_, err = b.DataKey(ctx, "sh_ana", false)
	require.ErrorIs(t, err, keystore.ErrNoKey)
	_, err = a.DataKey(ctx, "sh_ana", false)
	require.ErrorIs(t, err, keystore.ErrNoKey)
	require.Empty(t, rows(t, url), "the destroyed row is still in the key table")
	require.NoError(t, b.Destroy(ctx, "sh_ana"), "destroying a missing key is not an error")

	// A new key for the same subject (e.g. a new customer with the same handle) does not
	// open what the destroyed one sealed.
	fresh, err := b.DataKey(ctx, "sh_ana", true)
	require.NoError(t, err)
	_, err = keystore.Open(fresh, sealed, []byte("row-1"))
	require.Error(t, err)
}

// Replicas creating the same subject's key at once all end up with the one stored key.
func TestPostgresConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	url, kek := keyDB(t), newKEK(t)
	stores := []*keystore.Postgres{openPG(t, url, kek), openPG(t, url, kek), openPG(t, url, kek)}
	keys := make([][]byte, 12)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := stores[i%len(stores)].DataKey(ctx, "sh_race", true)
			if err == nil {
				keys[i] = k
			}
		}()
	}
	wg.Wait()
	for i := range keys {
		require.Equal(t, keys[0], keys[i], "caller %d got another key", i)
	}
	require.Len(t, keys[0], 32)
	require.Len(t, rows(t, url), 1)
}

// A key wrapped by a KEK the process does not hold fails closed: an error naming the cause,
// never ErrNoKey (which reads as "erased") and never a new key written over it.
func TestPostgresUnknownKEKFailsClosed(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	lost := newKEK(t)
	s := openPG(t, url, newKEK(t))
	foreignKey(t, url, "sh_ana", lost)
	before := rows(t, url)

	for _, create := range []bool{false, true} {
		_, err := s.DataKey(ctx, "sh_ana", create)
		require.ErrorIs(t, err, keystore.ErrUnknownKEK, "create=%v", create)
		require.NotErrorIs(t, err, keystore.ErrNoKey)
		require.Contains(t, err.Error(), keystore.KEKID(lost))
	}
	require.Equal(t, before, rows(t, url), "the row changed under an unknown KEK")
}

// Issue 12 §5: a replica started with a wrong AGENTMEMORY_KEK against a shared key store
// refuses to open (the canary, written by the first process, does not open under its KEK):
// the error names both KEK ids and never a KEK; the store is unchanged and no key is created.
// With the right KEK as previous (a rotation) it opens.
func TestPostgresWrongKEKRefusedAtOpen(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	right, wrong := newKEK(t), newKEK(t)
	first := openPG(t, url, right)
	require.Equal(t, keystore.KEKID(right), canary(t, url), "the first open writes the canary under its KEK")
	_, err := first.DataKey(ctx, "sh_ana", true)
	require.NoError(t, err)
	before := rows(t, url)

	_, err = keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: wrong})
	require.ErrorIs(t, err, keystore.ErrWrongKEK)
	require.ErrorIs(t, err, keystore.ErrUnknownKEK)
	require.Contains(t, err.Error(), keystore.KEKID(right), "the message names the store's KEK id")
	require.Contains(t, err.Error(), keystore.KEKID(wrong), "the message names this process's KEK id")
	for _, k := range [][]byte{right, wrong} {
		require.NotContains(t, err.Error(), string(k))
		require.NotContains(t, err.Error(), base64.StdEncoding.EncodeToString(k))
	}
	require.Equal(t, before, rows(t, url))
	require.Equal(t, keystore.KEKID(right), canary(t, url))

	require.NoError(t, openPG(t, url, wrong, right).Ping(ctx), "the right KEK as previous opens it")
	require.NoError(t, first.Ping(ctx), "the canary opens: /readyz reports the key store ok")
}

// A store created before the canary existed: opening it with a KEK that wrapped none of its
// keys is refused (no canary is written under the wrong KEK); the right KEK writes it.
func TestPostgresNoCanaryWrongKEKRefused(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	right, wrong := newKEK(t), newKEK(t)
	openPG(t, url, right)
	d, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.Exec("DELETE FROM subject_keys WHERE subject_id = $1", keystore.CanaryID)
	require.NoError(t, err)
	foreignKey(t, url, "sh_ana", right)

	_, err = keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: wrong})
	require.ErrorIs(t, err, keystore.ErrWrongKEK)
	require.Contains(t, err.Error(), keystore.KEKID(right))
	require.Empty(t, canary(t, url), "a canary was written under the wrong KEK")
	openPG(t, url, right)
	require.Equal(t, keystore.KEKID(right), canary(t, url))
}

// /readyz: a canary that no longer opens (removed, or rewrapped by a rotation this process
// does not know) fails Ping.
func TestPostgresPingChecksCanary(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	a, b := newKEK(t), newKEK(t)
	old := openPG(t, url, a)
	require.NoError(t, old.Ping(ctx))
	_, err := openPG(t, url, b, a).Rewrap(ctx, 0)
	require.NoError(t, err)
	require.ErrorIs(t, old.Ping(ctx), keystore.ErrWrongKEK, "a replica left on the retired KEK must not read ready")
}

// Issue 12 §5: destroying a key never opens it: a key wrapped by a KEK this process does not
// hold exists, is destroyed (row gone) and then no longer exists.
func TestPostgresDestroyUnknownKEK(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	s := openPG(t, url, newKEK(t))
	foreignKey(t, url, "sh_ana", newKEK(t))
	ok, err := s.Exists(ctx, "sh_ana")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.Exists(ctx, "sh_bob")
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, s.Destroy(ctx, "sh_ana"))
	require.Empty(t, rows(t, url))
	ok, err = s.Exists(ctx, "sh_ana")
	require.NoError(t, err)
	require.False(t, ok)
	require.NotEmpty(t, canary(t, url), "destroy left the canary")
	require.Error(t, s.Destroy(ctx, keystore.CanaryID), "the canary is not a subject key")
	_, err = s.DataKey(ctx, keystore.CanaryID, true)
	require.Error(t, err)
}

// KEK rotation: with the new KEK current and the old one previous, old keys still open;
// rewrap moves them all (in batches) to the new KEK, idempotently; then the old KEK can go.
func TestPostgresRotationAndRewrap(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	oldKEK, newK := newKEK(t), newKEK(t)
	old := openPG(t, url, oldKEK)
	want := map[string][]byte{}
	for i := range 7 {
		id := fmt.Sprintf("sh_%02d", i)
		k, err := old.DataKey(ctx, id, true)
		require.NoError(t, err)
		want[id] = k
	}

	rotating := openPG(t, url, newK, oldKEK)
	k, err := rotating.DataKey(ctx, "sh_03", false)
	require.NoError(t, err)
	require.Equal(t, want["sh_03"], k, "a key under the previous KEK must open during rotation")
	fresh, err := rotating.DataKey(ctx, "sh_new", true)
	require.NoError(t, err)
	want["sh_new"] = fresh
	require.Equal(t, keystore.KEKID(newK), rows(t, url)["sh_new"][0], "new keys are wrapped by the current KEK")

	res, err := rotating.Rewrap(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, keystore.RewrapResult{Rewrapped: 7, Current: 1}, res)
	for id, r := range rows(t, url) {
		require.Equal(t, keystore.KEKID(newK), r[0], "%s is still under the old KEK", id)
	}
	require.Equal(t, keystore.KEKID(newK), canary(t, url), "rewrap moves the canary too")
	res, err = rotating.Rewrap(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, keystore.RewrapResult{Current: 8}, res, "a second rewrap must change nothing")

	// The old KEK retired: every key opens with the new one alone.
	only := openPG(t, url, newK)
	for id, k := range want {
		got, err := only.DataKey(ctx, id, false)
		require.NoError(t, err, id)
		require.Equal(t, k, got, id)
	}
	require.NoError(t, only.Ping(ctx))
	// The old KEK alone no longer opens the store.
	_, err = keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: oldKEK})
	require.ErrorIs(t, err, keystore.ErrWrongKEK)
}

// Rewrap leaves keys under an unknown KEK as they are, rewraps the rest and says so.
func TestPostgresRewrapUnknownKEK(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	lost, prev, cur := newKEK(t), newKEK(t), newKEK(t)
	_, err := openPG(t, url, prev).DataKey(ctx, "sh_prev", true)
	require.NoError(t, err)
	foreignKey(t, url, "sh_lost", lost)

	res, err := openPG(t, url, cur, prev).Rewrap(ctx, 0)
	require.ErrorIs(t, err, keystore.ErrUnknownKEK)
	require.Equal(t, keystore.RewrapResult{Rewrapped: 1, Unknown: 1}, res)
	stored := rows(t, url)
	require.Equal(t, keystore.KEKID(lost), stored["sh_lost"][0])
	require.Equal(t, keystore.KEKID(cur), stored["sh_prev"][0])
	require.Equal(t, keystore.KEKID(cur), canary(t, url))
}

func TestOpenPostgresRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	_, err := keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: make([]byte, 16)})
	require.ErrorContains(t, err, "32 bytes")
	_, err = keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: newKEK(t), Previous: [][]byte{{1, 2}}})
	require.ErrorContains(t, err, "32 bytes")
	_, err = keystore.OpenPostgres(ctx, "sqlite://keys.db", keystore.PostgresOptions{KEK: newKEK(t)})
	require.ErrorContains(t, err, "postgres://")
	_, err = keystore.OpenPostgres(ctx, "postgres://u:hunter2@[bad/x", keystore.PostgresOptions{KEK: newKEK(t)})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2", "the error echoes the password")

	s := openPG(t, url, newKEK(t))
	require.NoError(t, s.Ping(ctx))
	require.NoError(t, s.Close())
	require.Error(t, s.Ping(ctx))
}

// BenchmarkPostgresDataKey compares a key read from the PostgreSQL key store (a query and an
// unwrap per read) with one through keystore.Cached (docs/bench.md).
func BenchmarkPostgresDataKey(b *testing.B) {
	ctx := context.Background()
	kek := make([]byte, 32)
	if _, err := rand.Read(kek); err != nil {
		b.Fatal(err)
	}
	pg, err := keystore.OpenPostgres(ctx, dbtest.URL(b, "postgres"), keystore.PostgresOptions{KEK: kek})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("nl_%d", i)
		if _, err := pg.DataKey(ctx, ids[i], true); err != nil {
			b.Fatal(err)
		}
	}
	// "cached-before" is the cache as it was before issue 29 §2 (the store's destroy
	// generation hidden from it); "cached" compares the generation once per request of 40
	// reads (a block of 40 notes); "cached-unmarked" compares it at every read.
	hidden := struct{ keystore.Store }{pg}
	for _, s := range []struct {
		name    string
		store   keystore.Store
		perCall int
	}{{"postgres", pg, 0}, {"cached-before", keystore.Cached(hidden, 0, 0), 40}, {"cached", keystore.Cached(pg, 0, 0), 40}, {"cached-unmarked", keystore.Cached(pg, 0, 0), 0}} {
		b.Run(s.name, func(b *testing.B) {
			rctx := ctx
			for i := 0; b.Loop(); i++ {
				if s.perCall > 0 && i%s.perCall == 0 {
					rctx = keystore.ForRequest(ctx)
				}
				if _, err := s.store.DataKey(rctx, ids[i%len(ids)], false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Issue 29 §2 on the shared PostgreSQL key store: replica A caches a key, replica B (its own
// connection pool and cache) destroys it, and A's next request no longer gets it; a key
// nobody destroyed still opens, and a destroy of a missing key moves nothing.
func TestPostgresCacheForgetsAKeyAnotherReplicaDestroyed(t *testing.T) {
	ctx := context.Background()
	url, kek := keyDB(t), newKEK(t)
	pa, pb := openPG(t, url, kek), openPG(t, url, kek)
	a, b := keystore.Cached(pa, 0, time.Hour), keystore.Cached(pb, 0, time.Hour)
	key, err := a.DataKey(ctx, "nl_gone", true)
	require.NoError(t, err)
	kept, err := a.DataKey(ctx, "nl_kept", true)
	require.NoError(t, err)
	got, err := a.DataKey(keystore.ForRequest(ctx), "nl_gone", false)
	require.NoError(t, err)
	require.Equal(t, key, got, "A holds the key")

	g0, err := pa.Generation(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Destroy(ctx, "never-created"))
	g1, err := pa.Generation(ctx)
	require.NoError(t, err)
	require.Equal(t, g0, g1, "destroying a missing key changes no replica's cache")

	require.NoError(t, b.Destroy(ctx, "nl_gone"))
	_, err = a.DataKey(keystore.ForRequest(ctx), "nl_gone", false)
	require.ErrorIs(t, err, keystore.ErrNoKey, "A's next request")
	_, err = a.DataKey(ctx, "nl_gone", false)
	require.ErrorIs(t, err, keystore.ErrNoKey, "an unmarked read")
	still, err := a.DataKey(keystore.ForRequest(ctx), "nl_kept", false)
	require.NoError(t, err)
	require.Equal(t, kept, still)
}
