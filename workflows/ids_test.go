package workflows

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/proposals"
)

// fakeTemporal answers signals and results for the workflow ids in running, NotFound for
// every other id, and records the ids asked for.
type fakeTemporal struct {
	running map[string]Status
	asked   []string
}

func (f *fakeTemporal) SignalWorkflow(_ context.Context, id, _, _ string, _ any) error {
	f.asked = append(f.asked, id)
	if _, ok := f.running[id]; !ok {
		return serviceerror.NewNotFound("workflow not found")
	}
	return nil
}

func (f *fakeTemporal) GetWorkflow(_ context.Context, id, _ string) client.WorkflowRun {
	f.asked = append(f.asked, id)
	return fakeRun{id: id, st: f.running}
}

type fakeRun struct {
	id string
	st map[string]Status
}

func (r fakeRun) GetID() string                  { return r.id }
func (r fakeRun) GetRunID() string               { return "run" }
func (r fakeRun) GetFirstExecutionRunID() string { return "run" }
func (r fakeRun) Get(_ context.Context, ptr any) error {
	st, ok := r.st[r.id]
	if !ok {
		return serviceerror.NewNotFound("workflow not found")
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}
func (r fakeRun) GetWithOptions(ctx context.Context, ptr any, _ client.WorkflowRunGetOptions) error {
	return r.Get(ctx, ptr)
}

// TestDistillIDsFindLegacyWorkflows (issue 30): one id format, "distill-" + id, for new
// distillations; an approval and an outcome reach a distillation an earlier release started
// under "distill/" + id, and a proposal with neither answers NotFound after asking both.
func TestDistillIDsFindLegacyWorkflows(t *testing.T) {
	approve := Approval{Decision: proposals.DecisionApprove, ByKeyID: "key_1"}
	done := Status{Status: proposals.StatusApproved, NoteID: "note_1"}
	cases := []struct {
		name      string
		running   map[string]Status
		wantAsked []string
		wantFound bool
		wantSt    Status
	}{
		{"new format", map[string]Status{"distill-p1": done}, []string{"distill-p1"}, true, done},
		{"legacy format", map[string]Status{"distill/p1": done}, []string{"distill-p1", "distill/p1"}, true, done},
		{"neither", map[string]Status{}, []string{"distill-p1", "distill/p1"}, false, Status{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeTemporal{running: c.running}
			err := SendApproval(context.Background(), f, "p1", approve)
			require.Equal(t, c.wantAsked, f.asked, "signal: the ids asked")
			require.Equal(t, !c.wantFound, isNotFound(err), "signal: %v", err)

			f.asked = nil
			st, ended, err := AwaitOutcome(context.Background(), f, "p1", time.Second)
			require.Equal(t, c.wantAsked, f.asked, "outcome: the ids asked")
			require.Equal(t, !c.wantFound, isNotFound(err), "outcome: %v", err)
			require.Equal(t, c.wantFound, ended)
			require.Equal(t, c.wantSt, st)
		})
	}
	require.Equal(t, "distill-p1", DistillID("p1"), "new distillations start under the one format")
}
