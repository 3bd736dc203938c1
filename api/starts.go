package api

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// The one policy for a workflow start that fails (issue 30 §3; docs/production.md "Workflow
// starts"). Every route that records a row and starts the workflow that runs it (erasures,
// exports, retention sweeps, note erasures, distillations, knowledge documents) goes through
// startRow:
//
//  1. The workflow id is derived from the row's id and duplicates are refused, so a workflow
//     already started under it (the worker's reconciler got there first, or the first of two
//     requests) counts as started: the answer is the route's usual 202.
//  2. A start that fails ends the row (its store marks it failed with its reason:
//     start_failed for erasures and exports, workflow_unavailable for distillations and
//     knowledge documents), so nothing runs it later on its own, and the answer is 503
//     workflows_unavailable with Retry-After: the client retries with a new request. The
//     engine's error is logged (scrubbed of arguments), never answered.
//  3. Two rows are kept instead, because something else starts their workflow: an erasure
//     whose start answer was ambiguous (a deadline or unavailable after the request was
//     sent: the engine may have accepted it; definiteRefusal) stays pending and is answered
//     202, the reconciler starting it if it does not exist (issue 12 §1); and a distillation
//     sent with an Idempotency-Key, or a knowledge document that existed before the request,
//     stays as it is and is still answered 503: the retry (same key, same bytes) starts it.

// errStartFailed is the API's answer to a start that failed (rule 2): retryable.
var errStartFailed = func() *fault.Error {
	fe := fault.New(fault.Unavailable, "workflows_unavailable", "the workflow engine did not accept the request; retry")
	fe.RetryAfter = 5 * time.Second
	return fe
}()

// rowStart is one start under the policy: the workflow (its metrics name, id, function and
// argument) that runs a row, how to end the row when the start fails (nil: the row is kept,
// rule 3), and whether an ambiguous answer keeps the row pending for the reconciler.
type rowStart struct {
	name, id      string
	workflow, arg any
	end           func(ctx context.Context) error
	keepAmbiguous bool
}

// startRow starts r.workflow under the policy: nil when it started (or had started), else the
// row is ended (r.end, on a context that outlives the request's cancellation) and the answer
// is errStartFailed, or the error of ending it. With r.keepAmbiguous an ambiguous answer is
// nil: the row stays for the reconciler.
func (s *Server) startRow(ctx context.Context, r rowStart) error {
	err := s.tryStart(ctx, r.name, r.id, r.workflow, r.arg)
	switch {
	case err == nil:
		return nil
	case r.keepAmbiguous && !definiteRefusal(err):
		return nil
	case r.end != nil:
		if ferr := r.end(context.WithoutCancel(ctx)); ferr != nil {
			return ferr
		}
	}
	return errStartFailed
}

// start is startRow for a workflow with no row to end (retention sweeps, note erasures).
func (s *Server) start(ctx context.Context, name, id string, workflow any, arg any) error {
	return s.startRow(ctx, rowStart{name: name, id: id, workflow: workflow, arg: arg})
}

// errNoEngine is tryStart's answer without a Temporal client (a definite refusal).
var errNoEngine = errors.New("no workflow engine")

// tryStart runs workflow with id on the worker's task queue and returns the engine's own
// error (errNoEngine without a client), so startRow can tell a definite refusal from an
// ambiguous answer (definiteRefusal). A workflow already started under id counts as started
// (rule 1). It counts the start or failure in the metrics and logs a failure.
func (s *Server) tryStart(ctx context.Context, name, id string, workflow any, arg any) error {
	if s.Workflows == nil {
		s.Metrics.WorkflowFailed(name)
		return errNoEngine
	}
	_, err := s.Workflows.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: s.TaskQueue, WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflow, arg)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		err = nil
	}
	if err != nil {
		s.Metrics.WorkflowFailed(name)
		s.logStartFailed(ctx, name, id, err)
		return err
	}
	s.Metrics.WorkflowStarted(name)
	return nil
}

// logStartFailed logs a workflow start the engine did not accept, at warn: the workflow's
// name, its id (derived from an opaque row id: no scope id, key or personal data) and the
// Temporal client's error, which names the gRPC failure (unavailable, deadline, namespace)
// and never carries the workflow's arguments.
func (s *Server) logStartFailed(ctx context.Context, name, id string, err error) {
	s.log.WarnContext(ctx, "workflow start failed", "workflow", name, "workflow_id", id, "cause", err.Error())
}

// definiteRefusal reports whether a start error means the workflow was certainly not
// started: no engine configured, or the server refused the request itself (invalid
// argument, unknown namespace, permission denied, failed precondition, rate limited). Any
// other error (a deadline, unavailable or canceled after the request was sent, a broken
// connection) is ambiguous: the server may have accepted the start (issue 12 §1).
func definiteRefusal(err error) bool {
	if errors.Is(err, errNoEngine) {
		return true
	}
	var (
		invalid    *serviceerror.InvalidArgument
		namespace  *serviceerror.NamespaceNotFound
		denied     *serviceerror.PermissionDenied
		failed     *serviceerror.FailedPrecondition
		exhausted  *serviceerror.ResourceExhausted
		notActive  *serviceerror.NamespaceNotActive
		nsInactive *serviceerror.NamespaceInvalidState
	)
	return errors.As(err, &invalid) || errors.As(err, &namespace) || errors.As(err, &denied) ||
		errors.As(err, &failed) || errors.As(err, &exhausted) || errors.As(err, &notActive) || errors.As(err, &nsInactive)
}
