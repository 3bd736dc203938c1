package receipts_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Adversarial (issue 16): on PostgreSQL the group commit sends its receipts as one statement
// of SQL text with the values written in (bun's text): values holding the characters bun
// and PostgreSQL treat specially (?, \?, ?0, $1, quotes, backslashes, an E-string, a NUL-free
// control character, non-ASCII) are stored exactly, and the chain verifies.
func TestGroupCommitStoresAwkwardTextExactly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		space, _, err := spaces.CreateWith(ctx, d, "awkward", time.Now(), spaces.CreateOptions{})
		require.NoError(t, err)
		l := receipts.NewLog(d, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
		awkward := []string{`a?b`, `\?`, `?0 ?1 ?name`, `$1 $$x$$`, `it's ''quoted''`, `back\slash\\`, `E'\x41'`, "tab\tnew\nline", "é ✓ 😀", `--`, `/*`}
		for i, s := range awkward {
			r, err := l.Record(ctx, space, receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_?",
				ObjectIDs: []string{s}, Detail: map[string]any{"text": s, "i": i}}, time.Now())
			require.NoError(t, err, "%q", s)
			require.NotZero(t, r.Seq, "%q: sealed", s)
		}
		all, err := receipts.List(ctx, d, space, 0, 1000)
		require.NoError(t, err)
		var got []string
		for _, r := range all {
			if r.Action == "block.read" {
				got = append(got, r.ObjectIDs[0])
				require.Equal(t, r.ObjectIDs[0], r.Detail["text"])
			}
		}
		require.Equal(t, awkward, got)
		v, err := receipts.Verify(ctx, d, space)
		require.NoError(t, err)
		require.True(t, v.OK, "%+v", v)
	})
}
