package keystore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"agentmemory/internal/db/dbtest"
	"agentmemory/internal/keystore"
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

// rows reads the key table as it is stored: subject id -> (kek id, wrapped bytes).
func rows(t *testing.T, url string) map[string][2]string {
	t.Helper()
	d, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer d.Close()
	r, err := d.Query("SELECT subject_id, kek_id, wrapped FROM subject_keys")
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
	old, other := newKEK(t), newKEK(t)
	_, err := openPG(t, url, old).DataKey(ctx, "sh_ana", true)
	require.NoError(t, err)
	before := rows(t, url)

	s := openPG(t, url, other)
	for _, create := range []bool{false, true} {
		_, err := s.DataKey(ctx, "sh_ana", create)
		require.ErrorIs(t, err, keystore.ErrUnknownKEK, "create=%v", create)
		require.NotErrorIs(t, err, keystore.ErrNoKey)
		require.Contains(t, err.Error(), keystore.KEKID(old))
	}
	require.Equal(t, before, rows(t, url), "the row changed under an unknown KEK")
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
	// The old KEK alone no longer opens anything.
	_, err = openPG(t, url, oldKEK).DataKey(ctx, "sh_00", false)
	require.ErrorIs(t, err, keystore.ErrUnknownKEK)
}

// Rewrap leaves keys under an unknown KEK as they are, rewraps the rest and says so.
func TestPostgresRewrapUnknownKEK(t *testing.T) {
	ctx := context.Background()
	url := keyDB(t)
	lost, prev, cur := newKEK(t), newKEK(t), newKEK(t)
	_, err := openPG(t, url, lost).DataKey(ctx, "sh_lost", true)
	require.NoError(t, err)
	_, err = openPG(t, url, prev).DataKey(ctx, "sh_prev", true)
	require.NoError(t, err)

	res, err := openPG(t, url, cur, prev).Rewrap(ctx, 0)
	require.ErrorIs(t, err, keystore.ErrUnknownKEK)
	require.Equal(t, keystore.RewrapResult{Rewrapped: 1, Unknown: 1}, res)
	stored := rows(t, url)
	require.Equal(t, keystore.KEKID(lost), stored["sh_lost"][0])
	require.Equal(t, keystore.KEKID(cur), stored["sh_prev"][0])
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
