package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// The "create a space" hint is printed only while the database holds no space (issue 27: it
// was printed on every start).
func TestSpaceHintOnlyWithoutSpaces(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		var out bytes.Buffer
		require.NoError(t, printSpaceHint(ctx, d, &out, "/bin/agentmemory", "./data"))
		require.Equal(t, "create a space and its admin key with:\n  /bin/agentmemory space create my-space --data-dir ./data\n", out.String())

		_, _, err := spaces.CreateWith(ctx, d, "demo", time.Now(), spaces.CreateOptions{})
		require.NoError(t, err)
		out.Reset()
		require.NoError(t, printSpaceHint(ctx, d, &out, "/bin/agentmemory", "./data"))
		require.Empty(t, out.String(), "a space exists: no hint")

		require.NoError(t, d.Close())
		err = printSpaceHint(ctx, d, &out, "/bin/agentmemory", "./data")
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "count spaces"), err.Error())
	})
}
