package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Issue 15: `space create` makes a space whose documents change only through change
// requests; --direct-put makes one that takes a direct PUT.
func TestSpaceCreateDirectPutFlag(t *testing.T) {
	dir := t.TempDir()
	create := func(args ...string) string {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), append([]string{"space", "create"}, append(args, "--data-dir", dir)...), env(nil), &out, io.Discard))
		var got map[string]string
		require.NoError(t, json.Unmarshal(out.Bytes(), &got), "stdout: %s", out.String())
		return got["space_id"]
	}
	governed, open := create("governed"), create("open", "--direct-put")
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.DataDir = dir
	d, _, err := app.OpenMigrated(context.Background(), cfg)
	require.NoError(t, err)
	defer d.Close()
	docs := spaces.Documents{DB: d}
	on, err := docs.DirectPut(context.Background(), governed)
	require.NoError(t, err)
	require.False(t, on, "the default: change requests only")
	on, err = docs.DirectPut(context.Background(), open)
	require.NoError(t, err)
	require.True(t, on)
}
