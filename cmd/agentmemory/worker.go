package main

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/app"
)

// runWorker runs the worker (app.StartWorker: the retention schedule, every workflow and
// activity, the orphan reconciler), its metrics listener and the outbox relay until ctx
// ends, then waits for running activities (up to AGENTMEMORY_SHUTDOWN_TIMEOUT).
func runWorker(ctx context.Context, a *app.App, tc client.Client) error {
	w, err := a.StartWorker(tc)
	if err != nil {
		return err
	}
	stopMetrics, err := serveMetrics(a, a.Config.MetricsAddr)
	if err != nil {
		w.Stop()
		return err
	}
	defer stopMetrics()
	defer a.StartRelay(ctx)()
	defer a.StartSealer(ctx)()
	a.Log.Info("worker started", "task_queue", a.Config.TaskQueue)
	<-ctx.Done()
	a.Log.Info("worker stopping: waiting for running activities", "timeout", a.Config.ShutdownTimeout.String())
	w.Stop()
	a.Log.Info("worker stopped")
	return nil
}
