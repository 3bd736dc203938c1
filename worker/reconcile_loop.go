package worker

import (
	"context"
	"sync"
	"time"
)

// DefaultReconcileInterval is how often a worker reconciles when its configuration names no
// period (AGENTMEMORY_RECONCILE_INTERVAL): with compliance.DefaultReconcileMinAge (30 s) an
// orphaned erasure, export or distillation starts within a minute of its request (issue 11 §3).
const DefaultReconcileInterval = 20 * time.Second

// ReconcileLoop runs a reconcile pass every Interval (DefaultReconcileInterval when zero or
// less) in its own goroutine, from Start until Stop, so that a workflow whose start was lost
// (the API's request died between its commit and the start, or Temporal did not answer) is
// started by a worker within Interval plus the reconciler's minimum age, instead of waiting
// for the next retention sweep. Run gets a context that ends on Stop or after Timeout
// (Interval when zero or less); passes never overlap. Run reports its own failures: the next
// pass retries.
type ReconcileLoop struct {
	Interval time.Duration
	Timeout  time.Duration
	Run      func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts the loop; its first pass runs one Interval from now (the worker reconciles once
// at start on its own). Starting a started loop does nothing.
func (l *ReconcileLoop) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	every := l.Interval
	if every <= 0 {
		every = DefaultReconcileInterval
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = every
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pass, cancelPass := context.WithTimeout(ctx, timeout)
			l.Run(pass)
			cancelPass()
		}
	}(l.done)
}

// Stop ends the loop: a running pass sees its context cancelled, and Stop returns once it has
// returned. Stopping a stopped (or never started) loop does nothing.
func (l *ReconcileLoop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
