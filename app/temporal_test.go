package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
	"github.com/agentmemory/agentmemory/internal/skips"
)

// TestTemporalLoggerKeepsIdsOnly: Debug and Info are dropped; Warn and Error keep names and
// ids, reduce an error to its code and scrubbed cause, and drop payloads, panics' values and
// unknown attributes.
func TestTemporalLoggerKeepsIdsOnly(t *testing.T) {
	sink := &logstest.Buffer{}
	l := app.TemporalLogger(logs.New("json", "debug", sink))
	l.Debug("debug line", "WorkflowID", "wf-1")
	l.Info("info line", "WorkflowID", "wf-1")
	require.Empty(t, sink.String(), "debug and info are dropped")

	l.Error("Workflow panic", "Namespace", "default", "WorkflowType", "Distill", "WorkflowID", "distill/prop_1", "RunID", "r-1",
		"PanicError", "ana@example.com", "PanicStack", "main.go:1 ana@example.com",
		"Error", fmt.Errorf("activities: draft: %w", errors.New("ana@example.com")),
		"Payload", `{"body":"ana@example.com"}`, "SearchAttributes", "ana")
	out := sink.String()
	require.NotContains(t, out, "ana@example.com")
	require.NotContains(t, out, "SearchAttributes")
	for _, want := range []string{`"level":"ERROR"`, `"msg":"Workflow panic"`, `"component":"temporal"`, `"WorkflowType":"Distill"`,
		`"WorkflowID":"distill/prop_1"`, `"RunID":"r-1"`, `"panic":true`, `"cause":"activities: draft [*errors.errorString]"`} {
		require.Contains(t, out, want)
	}
}

// TestWorkflowTaskFailureReachesTheLog (issue 13 §4): a workflow that panics fails its
// workflow task; the SDK's line reaches the App's log at error level with the workflow's
// type and id and without the panic's value, and the SDK's metrics reach the App's registry.
func TestWorkflowTaskFailureReachesTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	cli, err := filepath.Abs(filepath.Join("..", "bin", "temporal"))
	require.NoError(t, err)
	if _, err := os.Stat(cli); err != nil {
		skips.Capability(t, "the Temporal CLI is missing at %s: run `make temporal`", cli)
	}
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath: cli, LogLevel: "error", Stdout: io.Discard, Stderr: io.Discard,
		ClientOptions: &client.Options{Logger: app.TemporalLogger(logs.New("json", "error", io.Discard))},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	sink := &logstest.Buffer{}
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.Secret, cfg.DataDir, cfg.TaskQueue = "temporal-log-test-secret-0123456789abcdef", t.TempDir(), "log-test"
	a, err := app.Build(context.Background(), cfg, app.Overrides{DB: dbtest.Open(t, "sqlite"), Logger: logs.New("json", "info", sink)})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	tc, err := client.Dial(a.ClientOptions(srv.FrontendHostPort()))
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	w, err := a.NewWorker(tc, app.WorkerOptions{NoReconcile: true})
	require.NoError(t, err)
	w.RegisterWorkflowWithOptions(func(workflow.Context) error { panic("customer ana@example.com") }, workflow.RegisterOptions{Name: "Panicky"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "panicky-1", TaskQueue: "log-test"}, "Panicky")
	require.NoError(t, err)

	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(sink.String(), `"WorkflowType":"Panicky"`) {
		require.True(t, time.Now().Before(deadline), "no SDK line about the failed workflow task in 30 s; log:\n%s", sink.String())
		time.Sleep(100 * time.Millisecond)
	}
	var line string
	for _, l := range strings.Split(sink.String(), "\n") {
		if strings.Contains(l, `"WorkflowType":"Panicky"`) {
			line = l
			break
		}
	}
	require.Contains(t, line, `"level":"ERROR"`, "got %s", line)
	require.Contains(t, line, `"component":"temporal"`)
	require.Contains(t, line, `"WorkflowID":"panicky-1"`)
	require.NotContains(t, sink.String(), "ana@example.com", "the panic's value reached the log")

	// The SDK counts the failure after it logs it: wait for the counter rather than race it.
	scrape := func() string {
		rec := httptest.NewRecorder()
		a.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	require.Eventually(t, func() bool { return strings.Contains(scrape(), `temporal_workflow_task_execution_failed{`) },
		30*time.Second, 100*time.Millisecond, "the SDK's metrics are on the App's registry")
	require.NotContains(t, scrape(), "panicky-1", "no workflow id in a metric label")
}
