package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `agentmemory restore --data-dir D` runs the restore procedure on the embedded SQLite
// database of D (migrating it first) and prints one line per step; a second run has nothing
// more to seal or drop (issue 29 §1).
func TestRestoreCommand(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600))
	getenv := func(string) string { return "" }
	for i := 0; i < 2; i++ {
		var out, errOut bytes.Buffer
		require.NoError(t, run(context.Background(), []string{"restore", "--data-dir", dir}, getenv, &out, &errOut), errOut.String())
		require.Contains(t, out.String(), "turns_unreadable_removed: 0")
		require.Contains(t, out.String(), "notes_fulltext_rebuilt: 0")
		require.Contains(t, out.String(), "restore: done")
	}
	_, err := os.Stat(filepath.Join(dir, "agentmemory.db"))
	require.NoError(t, err)
	var out bytes.Buffer
	err = run(context.Background(), []string{"restore", "--data-dir", t.TempDir()}, getenv, &out, &out)
	require.ErrorContains(t, err, "AGENTMEMORY_SECRET", "without the server secret the key store cannot be opened: refused")
}
