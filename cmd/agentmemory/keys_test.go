package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keystore"
)

func randomKEK(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

// `agentmemory keys rewrap` moves every key to the current KEK in batches, prints the counts,
// changes nothing the second time, and refuses to run without the shared key store.
func TestKeysRewrapCommand(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t, "postgres")
	oldKEK, newKEK := randomKEK(t), randomKEK(t)
	old, err := keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: oldKEK})
	require.NoError(t, err)
	want := map[string][]byte{}
	for i := range 5 {
		id := fmt.Sprintf("sh_%d", i)
		want[id], err = old.DataKey(ctx, id, true)
		require.NoError(t, err)
	}
	old.Close()

	vars := map[string]string{
		"AGENTMEMORY_KEYSTORE_URL": url,
		"AGENTMEMORY_KEK":          base64.StdEncoding.EncodeToString(newKEK),
		"AGENTMEMORY_KEK_PREVIOUS": base64.StdEncoding.EncodeToString(oldKEK),
	}
	rewrap := func(vars map[string]string) (string, error) {
		var out, errb bytes.Buffer
		err := run(ctx, []string{"keys", "rewrap", "--batch", "2"}, env(vars), &out, &errb)
		return out.String(), err
	}
	out, err := rewrap(vars)
	require.NoError(t, err)
	id := keystore.KEKID(newKEK)
	require.Equal(t, "rewrapped 5 keys under KEK "+id+" (0 already current, 0 under an unknown KEK)\n", out)
	out, err = rewrap(vars)
	require.NoError(t, err)
	require.Equal(t, "rewrapped 0 keys under KEK "+id+" (5 already current, 0 under an unknown KEK)\n", out)

	// The old KEK is retired: every key opens under the new one alone.
	only, err := keystore.OpenPostgres(ctx, url, keystore.PostgresOptions{KEK: newKEK})
	require.NoError(t, err)
	defer only.Close()
	for id, k := range want {
		got, err := only.DataKey(ctx, id, false)
		require.NoError(t, err)
		require.Equal(t, k, got)
	}

	// Under a KEK that wrapped none of them, and without the old one: the store refuses to
	// open (its canary is under the new KEK), non-zero, nothing printed, nothing changed.
	wrong := randomKEK(t)
	third := map[string]string{"AGENTMEMORY_KEYSTORE_URL": url, "AGENTMEMORY_KEK": base64.StdEncoding.EncodeToString(wrong)}
	out, err = rewrap(third)
	require.ErrorIs(t, err, keystore.ErrWrongKEK)
	require.ErrorContains(t, err, keystore.KEKID(newKEK))
	require.ErrorContains(t, err, keystore.KEKID(wrong))
	require.Empty(t, out)
	out, err = rewrap(vars)
	require.NoError(t, err)
	require.Equal(t, "rewrapped 0 keys under KEK "+id+" (5 already current, 0 under an unknown KEK)\n", out)

	_, err = rewrap(map[string]string{})
	require.ErrorContains(t, err, "AGENTMEMORY_KEYSTORE_URL is not set")
}

// A key store URL that names the main database in another spelling (an added parameter here;
// in production another host alias, port default or scheme) is refused at start: the check
// looks at what the main database holds, not at the URL's text (issue 12 §5). A key store in
// a database of its own starts.
func TestKeystoreInTheMainDatabaseIsRefused(t *testing.T) {
	ctx := context.Background()
	mainURL := dbtest.URL(t, "postgres")
	vars := map[string]string{
		"DATABASE_URL":             mainURL,
		"AGENTMEMORY_SECRET":       "keystore-apart-secret-0123456789abcdef",
		"AGENTMEMORY_KEYSTORE_URL": mainURL + "&application_name=keys",
		"AGENTMEMORY_KEK":          base64.StdEncoding.EncodeToString(randomKEK(t)),
		"AGENTMEMORY_DATA_DIR":     t.TempDir(),
	}
	cfg, err := config.Load(env(vars))
	require.NoError(t, err, "the URLs differ as text")
	_, err = openApp(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	require.ErrorContains(t, err, "names the database of DATABASE_URL")

	// A fresh main database: the refused attempt above left the key store's table in this one.
	vars["DATABASE_URL"], vars["AGENTMEMORY_KEYSTORE_URL"] = dbtest.URL(t, "postgres"), dbtest.URL(t, "postgres")
	cfg, err = config.Load(env(vars))
	require.NoError(t, err)
	a, err := openApp(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	require.NoError(t, err)
	a.Close()
}
