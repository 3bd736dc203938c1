package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
)

// fakeWorkflows records starts and answers with err.
type fakeWorkflows struct {
	err    error
	starts []client.StartWorkflowOptions
	inputs []workflows.DistillInput
}

func (f *fakeWorkflows) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	f.starts = append(f.starts, o)
	f.inputs = append(f.inputs, args[0].(workflows.DistillInput))
	return nil, f.err
}

func (f *fakeWorkflows) SignalWorkflow(context.Context, string, string, string, any) error {
	return errors.New("not used")
}

func (f *fakeWorkflows) GetWorkflow(context.Context, string, string) client.WorkflowRun { return nil }

// distillEnv is an Env on the real proposal store with fake workflows: agent memory on and
// an agent support-bot to distil for.
func distillEnv(t *testing.T, wf *fakeWorkflows, taskQueue string) *apptest.Env {
	t.Helper()
	e := apptest.New(t, "sqlite", func(d *api.Deps) { d.Workflows, d.TaskQueue = wf, taskQueue })
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
	e.AgentKey("support-bot", "acme", "agent_memory")
	return e
}

// storedProposals reads every proposal row of e's database.
func storedProposals(t *testing.T, e *apptest.Env) []models.NoteProposal {
	t.Helper()
	var rows []models.NoteProposal
	require.NoError(t, e.DB.NewSelect().Model(&rows).Order("created_at", "id").Scan(context.Background()))
	return rows
}

func TestDistillStartsTheWorkflow(t *testing.T) {
	wf := &fakeWorkflows{}
	e := distillEnv(t, wf, "q1")
	body := map[string]any{"task_id": "t-7", "source_id": "support-bot"}
	r := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", e.AdminKey, body)
	id := r.JSON(t)["proposal_id"].(string)
	require.Equal(t, map[string]any{"proposal_id": id, "status": "drafting"}, r.JSON(t))
	rows := storedProposals(t, e)
	require.Len(t, rows, 1)
	require.Equal(t, "task", rows[0].EvidenceKind)
	require.Equal(t, "t-7", rows[0].EvidenceID)
	require.Len(t, wf.starts, 1)
	require.Equal(t, workflows.DistillID(id), wf.starts[0].ID)
	require.Equal(t, "q1", wf.starts[0].TaskQueue)
	require.True(t, wf.starts[0].WorkflowExecutionErrorWhenAlreadyStarted)
	require.Equal(t, workflows.DistillStart(id, workflows.DefaultApprovalDeadline), wf.inputs[0], "the workflow input carries ids only (and the configured deadline)")

	// A workflow already started under the proposal's id (the reconciler got there first)
	// counts as started, as for every workflow start (api/starts.go, rule 1).
	wf.err = serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")
	r = e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, body)
	require.Equal(t, http.StatusAccepted, r.Status, "got %d: %s", r.Status, r.Body)
	require.Equal(t, "drafting", r.JSON(t)["status"])

	wf.err = errors.New("connection refused")
	r = e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, body)
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	require.Equal(t, "workflows_unavailable", r.ErrorCode(t))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.NotContains(t, string(r.Body), "connection refused")
	rows = storedProposals(t, e)
	require.Len(t, rows, 3)
	require.Equal(t, []string{"drafting", "drafting", "failed"}, []string{rows[0].Status, rows[1].Status, rows[2].Status})
	require.Equal(t, proposals.ReasonWorkflowUnavailable, rows[2].Reason, "a 503 without Idempotency-Key ends its proposal")
}

func TestDistillRefused(t *testing.T) {
	wf := &fakeWorkflows{}
	e := distillEnv(t, wf, "")
	cases := []struct {
		name   string
		key    string
		body   any
		status int
		code   string
	}{
		{"no id", e.AdminKey, map[string]any{}, 400, "invalid_member"},
		{"both ids", e.AdminKey, map[string]any{"conversation_id": "c", "task_id": "t"}, 400, "invalid_member"},
		{"unknown member", e.AdminKey, map[string]any{"conversation_id": "c", "text": "hi"}, 400, "unknown_member"},
		{"reviewer", e.PersonKey("rev", "reviewer"), map[string]any{"conversation_id": "c"}, 403, "role_required"},
		{"agent without write", e.AgentKey("bot", "acme", "agent_memory"), map[string]any{"conversation_id": "c"}, 403, "scope_required"},
	}
	for _, tc := range cases {
		r := e.Do("POST", "/v1/agent-memory/distill", tc.key, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: got %d, want %d: %s", tc.name, r.Status, tc.status, r.Body)
		require.Equal(t, tc.code, r.ErrorCode(t), tc.name)
	}
	require.Empty(t, storedProposals(t, e), "a refused request creates no proposal")
	require.Empty(t, wf.starts, "a refused request starts no workflow")

	bare := apptest.New(t, "sqlite")
	r := bare.Do("POST", "/v1/agent-memory/distill", bare.AdminKey, map[string]any{"conversation_id": "c"})
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	require.Equal(t, "distillation_unavailable", r.ErrorCode(t))
}

// At most notes.RateLimit (20) distillations per hour per source agent, counted from the
// stored proposals: the next one is 429 rate_limited with Retry-After and creates nothing;
// another agent is not limited by it.
func TestDistillRateLimited(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wf := &fakeWorkflows{}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = wf })
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			e.AgentKey("support-bot", "acme", "agent_memory")
			e.AgentKey("other-bot", "acme", "agent_memory")
			for i := range 20 {
				e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", e.AdminKey,
					map[string]any{"conversation_id": fmt.Sprintf("c-%d", i), "source_id": "support-bot"})
			}
			r := e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, map[string]any{"conversation_id": "c-20", "source_id": "support-bot"})
			require.Equal(t, http.StatusTooManyRequests, r.Status, "got %d: %s", r.Status, r.Body)
			require.Equal(t, notes.CodeRateLimited, r.ErrorCode(t))
			secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
			require.NoError(t, err, "Retry-After %q", r.Header.Get("Retry-After"))
			require.True(t, secs >= 1 && secs <= 3600, "Retry-After %d s", secs)
			require.Len(t, wf.starts, 20, "a refused distillation starts no workflow")
			n, err := e.DB.NewSelect().Model((*models.NoteProposal)(nil)).Where("space_id = ? AND source_id = ?", e.SpaceID, "support-bot").Count(context.Background())
			require.NoError(t, err)
			require.EqualValues(t, 20, n, "a refused distillation stores no proposal")
			e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", e.AdminKey, map[string]any{"conversation_id": "c-20", "source_id": "other-bot"})
		})
	}
}

// orphanRecorder is a compliance.WorkflowStarter that records what a reconciler would start.
type orphanRecorder struct{ ids []string }

func (o *orphanRecorder) StartMissing(_ context.Context, orphan compliance.Orphan) (compliance.StartResult, error) {
	o.ids = append(o.ids, orphan.ID)
	return compliance.StartResult{}, nil
}

// Issue 11 §3: a distillation that answered 503 "try again" leaves nothing that runs later
// on its own unless the retry returns it. With an Idempotency-Key the retries return the same
// proposal (never a second one) and start its workflow; without one the proposal is ended
// failed (workflow_unavailable) and no reconciler picks it up.
func TestDistillRetryAfter503(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			wf := &fakeWorkflows{err: errors.New("connection refused")}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = wf })
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			e.AgentKey("support-bot", "acme", "agent_memory")
			body := map[string]any{"conversation_id": "c-retry", "source_id": "support-bot"}
			stored := func() []models.NoteProposal {
				var rows []models.NoteProposal
				require.NoError(t, e.DB.NewSelect().Model(&rows).Where("space_id = ?", e.SpaceID).Order("created_at ASC").Scan(ctx))
				return rows
			}
			orphans := func() []string {
				rec := &orphanRecorder{}
				_, err := e.Deps.Compliance.Reconcile(ctx, rec, e.SpaceID, 0)
				require.NoError(t, err)
				return rec.ids
			}

			// With a key: 503, the proposal stays drafting (the reconciler or the retry starts it).
			r := e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, body, "Idempotency-Key", "retry-1")
			require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
			rows := stored()
			require.Len(t, rows, 1)
			require.Equal(t, "drafting", rows[0].Status)
			first := rows[0].ID

			wf.err = nil
			r = e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", e.AdminKey, body, "Idempotency-Key", "retry-1")
			require.Equal(t, first, r.JSON(t)["proposal_id"], "the retry returns the proposal of the 503")
			require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
			require.Len(t, stored(), 1, "never a second proposal")
			require.Equal(t, workflows.DistillID(first), wf.starts[len(wf.starts)-1].ID)

			// Another retry after the workflow started: the same answer, nothing new.
			wf.err = serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")
			r = e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", e.AdminKey, body, "Idempotency-Key", "retry-1")
			require.Equal(t, first, r.JSON(t)["proposal_id"])
			require.Len(t, stored(), 1)

			// The key with another request is refused and stores nothing.
			r = e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, map[string]any{"conversation_id": "c-other", "source_id": "support-bot"}, "Idempotency-Key", "retry-1")
			require.Equal(t, http.StatusConflict, r.Status, "%s", r.Body)
			require.Equal(t, notes.CodeIdempotencyReuse, r.ErrorCode(t))
			r = e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, body, "Idempotency-Key", "bad key")
			require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
			require.Len(t, stored(), 1)

			// Without a key: 503, and the proposal is ended so that nothing starts it later.
			wf.err = errors.New("connection refused")
			r = e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, map[string]any{"conversation_id": "c-nokey", "source_id": "support-bot"})
			require.Equal(t, http.StatusServiceUnavailable, r.Status)
			rows = stored()
			require.Len(t, rows, 2)
			require.Equal(t, "failed", rows[1].Status)
			require.Equal(t, proposals.ReasonWorkflowUnavailable, rows[1].Reason)
			require.Equal(t, []string{first}, orphans(), "only the keyed proposal (returned by its retry) is left to a reconciler")
		})
	}
}
