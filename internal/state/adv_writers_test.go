package state_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/state"
)

// Adversarial (issue 16, the per-replica writer queue): many writers of one state over two
// services (replicas, each with its own queue and remembered rows) on one database, a third
// of them with a context that ends while they wait or write. Every write answers stored at a
// version of its own or an error; the state's
// version counts every stored write (and at most one for each write that failed mid-statement)
// and its body is the last stored one's.
func TestWritersQueueWithCancelsAcrossReplicas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		s1, p := newService(t, d, nil)
		s2 := &state.Service{DB: s1.DB, Docs: s1.Docs, Hasher: s1.Hasher, Now: time.Now}
		services := []*state.Service{s1, s2}
		const n = 24
		type outcome struct {
			version int64
			err     error
		}
		out := make([]outcome, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				ctx := context.Background()
				if i%3 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(i%7)*time.Millisecond+time.Duration(i)*100*time.Microsecond)
					defer cancel()
				}
				r, err := services[i%2].Write(ctx, p, "", write(fmt.Sprintf(`{"step": "w%d"}`, i)))
				if err == nil && !r.Stored {
					err = fmt.Errorf("not stored: %+v", r)
				}
				out[i] = outcome{r.Version, err}
			}(i)
		}
		wg.Wait()
		versions := map[int64]int{}
		var failed []string
		for i, o := range out {
			if o.err != nil {
				require.True(t, i%3 == 0, "write %d failed without a cancel: %v", i, o.err)
				failed = append(failed, fmt.Sprintf("write %d: %v", i, o.err))
				continue
			}
			_, dup := versions[o.version]
			require.False(t, dup, "two writes answered version %d", o.version)
			versions[o.version] = i
		}
		got, err := s1.Read(context.Background(), p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.NoError(t, err)
		// A write whose context ends while its statement runs may have been applied by the
		// server although the client saw the context's error (PostgreSQL: the statement had
		// run when the cancel arrived): that ambiguity is the database client's, so a failed
		// write may add a version, never more than one each, and never a lost stored write.
		require.GreaterOrEqual(t, got.Version, int64(len(versions)), "failed: %q", failed)
		require.LessOrEqual(t, got.Version, int64(len(versions)+len(failed)), "failed: %q", failed)
		if i, ok := versions[got.Version]; ok {
			require.JSONEq(t, fmt.Sprintf(`{"step": "w%d"}`, i), string(got.Body))
		}
	})
}

// Adversarial: concurrent compare-and-swap writes at one version over two replicas: exactly
// one is stored, every other answers the conflict with the current version.
func TestConcurrentCASOneWins(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		s1, p := newService(t, d, nil)
		s2 := &state.Service{DB: s1.DB, Docs: s1.Docs, Hasher: s1.Hasher, Now: time.Now}
		first, err := s1.Write(context.Background(), p, "", write(`{"step": "start"}`))
		require.NoError(t, err)
		const n = 12
		errs := make([]error, n)
		stored := make([]bool, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				req := write(fmt.Sprintf(`{"step": "cas%d"}`, i))
				req.Mode, req.IfVersion = state.ModeCAS, &first.Version
				r, err := []*state.Service{s1, s2}[i%2].Write(context.Background(), p, "", req)
				errs[i], stored[i] = err, err == nil && r.Stored
			}(i)
		}
		wg.Wait()
		wins := 0
		for i := range errs {
			if stored[i] {
				wins++
				continue
			}
			fe := fault.As(errs[i])
			require.NotNil(t, fe, "write %d: %v", i, errs[i])
			require.Equal(t, state.CodeConflict, fe.Code, "write %d", i)
			require.ErrorIs(t, errs[i], state.ErrConflict, "write %d", i)
			var ce *state.ConflictError
			require.ErrorAs(t, errs[i], &ce, "write %d", i)
			require.Equal(t, ce.Current, fe.Extra["version"], "write %d: the fault carries the stored version", i)
		}
		require.Equal(t, 1, wins)
	})
}
