package main

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
)

// startWorker starts the Temporal worker with every workflow and activity. Its Stop waits up
// to AGENTMEMORY_SHUTDOWN_TIMEOUT for running activities.
func (a *app) startWorker(c client.Client) (sdkworker.Worker, error) {
	w := sdkworker.New(c, a.cfg.TaskQueue, sdkworker.Options{WorkerStopTimeout: a.cfg.ShutdownTimeout})
	if err := w.Start(); err != nil {
		return nil, err
	}
	return w, nil
}

// quietLogger drops the Temporal SDK's own logging, which may carry workflow ids.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

var _ log.Logger = quietLogger{}
