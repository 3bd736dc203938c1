package main

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/worker"
)

// defaultOllamaHost is used when OLLAMA_HOST is empty: distillations wait (durably) while
// nothing answers there.
const defaultOllamaHost = "http://127.0.0.1:11434"

// startWorker starts the Temporal worker with every workflow and activity, reconciles orphaned
// workflows once, then every AGENTMEMORY_RECONCILE_INTERVAL (issue 11 §3). Its Stop ends the
// reconcile loop (cancelling a running pass), then waits up to AGENTMEMORY_SHUTDOWN_TIMEOUT
// for running activities.
func (a *app) startWorker(c client.Client) (sdkworker.Worker, error) {
	if err := worker.EnsureRetentionSchedule(context.Background(), c, a.cfg.TaskQueue, a.cfg.SweepEvery); err != nil {
		return nil, err
	}
	host := a.cfg.OllamaHost
	if host == "" {
		host = defaultOllamaHost
	}
	model, err := llm.New(llm.Config{Host: host, Model: a.cfg.OllamaModel, DetectorModel: a.cfg.DetectorModel})
	if err != nil {
		return nil, err
	}
	acts := &activities.Activities{Turns: a.turns, Model: model, Proposals: a.proposals, Now: time.Now}
	starter := worker.Starter{Client: c, TaskQueue: a.cfg.TaskQueue}
	w := worker.New(c, a.cfg.TaskQueue, sdkworker.Options{WorkerStopTimeout: a.cfg.ShutdownTimeout}, acts,
		&activities.ComplianceActivities{Compliance: a.compliance, Workflows: starter})
	if err := w.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	a.reconcileWorkflows(ctx, starter)
	cancel()
	loop := &worker.ReconcileLoop{Interval: a.cfg.ReconcileInterval, Timeout: time.Minute,
		Run: func(ctx context.Context) { a.reconcileWorkflows(ctx, starter) }}
	loop.Start()
	return reconcilingWorker{Worker: w, loop: loop}, nil
}

// reconcilingWorker is the Temporal worker with its reconcile loop: Stop stops both, the loop
// first.
type reconcilingWorker struct {
	sdkworker.Worker
	loop *worker.ReconcileLoop
}

// Stop ends the reconcile loop, then the worker.
func (w reconcilingWorker) Stop() {
	w.loop.Stop()
	w.Worker.Stop()
}

// reconcileWorkflows starts the missing workflows of erasures and exports (pending or running)
// and of distillations (drafting) whose request died or failed between its commit and its
// workflow start, and fails those rows whose workflow ended without finishing them; it runs on worker start and then every AGENTMEMORY_RECONCILE_INTERVAL (every
// retention sweep does it again). A failure is logged, not fatal: the next pass retries.
func (a *app) reconcileWorkflows(ctx context.Context, starter worker.Starter) {
	res, err := a.compliance.Reconcile(ctx, starter, "", compliance.DefaultReconcileMinAge)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // shutting down
		}
		a.log.Warn("reconcile of orphaned workflows failed; the next pass retries",
			"checked", res.Checked, "started", res.Started, "err", err)
		return
	}
	if res.Started > 0 || res.Failed > 0 {
		a.log.Info("reconciled orphaned compliance workflows", "checked", res.Checked, "started", res.Started,
			"failed_ended", res.Failed)
	}
}

// quietLogger drops the Temporal SDK's own logging, which may carry workflow ids.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

var _ log.Logger = quietLogger{}
