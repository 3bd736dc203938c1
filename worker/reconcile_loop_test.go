package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/worker"
	"github.com/agentmemory/agentmemory/workflows"
)

// Issue 11 §3: an erasure whose request committed its row but never told Temporal (Temporal
// down, the process killed) is started by the worker's periodic reconcile loop, not only at
// the next start or retention sweep. The loop here runs every 100 ms with no minimum age. The
// row is left running (a request killed after its commit) or pending (a request that got an
// ambiguous answer from Temporal).
func TestReconcileLoopStartsAnOrphanOnItsPeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, status := range []string{"running", "pending"} {
			t.Run(engine+"/"+status, func(t *testing.T) { orphanStartsOnLoop(t, engine, status) })
		}
	}
}

// orphanStartsOnLoop leaves one erasure in status with no workflow and runs the loop until
// it starts it.
func orphanStartsOnLoop(t *testing.T, engine, status string) {
	ctx := context.Background()
	e := apptest.New(t, engine) // no Workflows: the API tells Temporal nothing
	officer := auth.Principal{SpaceID: e.SpaceID, KeyID: "key_officer", Kind: auth.KindPerson, Roles: []string{auth.RoleCompliance}}
	erasureID, err := e.Deps.Compliance.RequestErasure(ctx, officer, compliance.ErasureRequest{ConversationID: "conv-orphan"})
	require.NoError(t, err)
	_, err = e.DB.NewUpdate().Model((*models.Erasure)(nil)).Set("status = ?", status).Where("id = ?", erasureID).Exec(ctx)
	require.NoError(t, err)
	wfID := workflows.ErasureWorkflowID(erasureID)
	_, err = temporalClient.DescribeWorkflowExecution(ctx, wfID, "")
	var notFound *serviceerror.NotFound
	require.True(t, errors.As(err, &notFound), "no workflow before the loop runs, got %v", err)

	starter := worker.Starter{Client: temporalClient, TaskQueue: fmt.Sprintf("reconcile-loop-%s-%s-%d", engine, status, time.Now().UnixNano())}
	var passes, started atomic.Int64
	loop := &worker.ReconcileLoop{Interval: 100 * time.Millisecond, Run: func(ctx context.Context) {
		res, err := e.Deps.Compliance.Reconcile(ctx, starter, e.SpaceID, 0)
		if err == nil {
			started.Add(int64(res.Started))
		}
		passes.Add(1)
	}}
	loop.Start()
	defer loop.Stop()

	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for started.Load() == 0 {
		select {
		case <-deadline.Done():
			t.Fatalf("the loop ran %d passes and started nothing", passes.Load())
		case <-time.After(50 * time.Millisecond):
		}
	}
	_, err = temporalClient.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err, "the orphan's workflow exists under its deterministic id")

	// Later passes find the workflow and start nothing more.
	seen := passes.Load()
	for passes.Load() < seen+2 {
		select {
		case <-deadline.Done():
			t.Fatal("the loop stopped running")
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.Equal(t, int64(1), started.Load())
}

// Stop cancels a running pass and returns only once it has returned; Stop twice is harmless.
func TestReconcileLoopStopCancelsThePass(t *testing.T) {
	entered := make(chan struct{}, 1)
	var returned atomic.Bool
	loop := &worker.ReconcileLoop{Interval: 10 * time.Millisecond, Timeout: time.Hour, Run: func(ctx context.Context) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		returned.Store(true)
	}}
	loop.Start()
	<-entered
	loop.Stop()
	require.True(t, returned.Load(), "Stop returned before the pass did")
	loop.Stop()
}
