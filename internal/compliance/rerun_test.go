package compliance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
)

// activeWriter is a test eraser ordered first in the registry: each time the probe asks it
// for residue (the first `times` times), it writes the subject's working state through the
// API, as an agent still in conversation would during the erasure. It stores nothing itself.
type activeWriter struct {
	e      *apptest.Env
	key    string
	handle string
	times  int

	mu       sync.Mutex
	calls    int
	statuses []int
}

func (*activeWriter) Name() string             { return "writer" }
func (*activeWriter) Covers() []erasure.Column { return nil }
func (*activeWriter) EraseSubject(context.Context, bun.Tx, erasure.Target) (erasure.Reach, error) {
	return erasure.Reach{}, nil
}

func (*activeWriter) Export(context.Context, bun.IDB, erasure.Target) (erasure.Export, error) {
	return erasure.Export{}, nil
}

func (*activeWriter) Backups(erasure.Target) string { return erasure.HoldsNone }
func (*activeWriter) Searched() string              { return "nothing" }
func (*activeWriter) ProbeContent(context.Context, bun.IDB, erasure.Target) ([]erasure.Finding, error) {
	return nil, nil
}
func (*activeWriter) EraseFound(context.Context, bun.Tx, string, []erasure.Finding) (erasure.Reach, error) {
	return erasure.Reach{}, nil
}

func (w *activeWriter) Residue(_ context.Context, _ bun.IDB, t erasure.Target) (erasure.Reach, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if t.Kind == erasure.Subject && w.calls <= w.times {
		r := w.e.Do("PUT", "/v1/agent-state", w.key, map[string]any{
			"scope": map[string]any{"kind": "subject", "id": w.handle}, "body": map[string]any{"tier": "silver"},
		})
		w.statuses = append(w.statuses, r.Status)
	}
	return erasure.Reach{}, nil
}

// rerunEnv is newEnv with a subject (a profile and a subject-scoped state) and w registered
// first; it returns the compliance key.
func rerunEnv(t *testing.T, engine string, times int) (*apptest.Env, *activeWriter, string) {
	e := newEnv(t, engine)
	seedSpace(e)
	crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
	integ := e.PersonKey("integrator", auth.RoleIntegration)
	comp := e.PersonKey("dpo", auth.RoleCompliance)
	handle := "email:ana.souza@example.com"
	e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{handle}})
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
		"scope": map[string]any{"kind": "subject", "id": handle}, "body": map[string]any{"tier": "gold", "note": "prefers e-mail"},
	})
	w := &activeWriter{e: e, key: crm, handle: handle, times: times}
	r := &erasure.Registry{}
	r.Register(w)
	for _, x := range e.Deps.Compliance.Registry().Erasers() {
		r.Register(x)
	}
	e.Deps.Compliance.Erasers = r
	return e, w, comp
}

func erase(t *testing.T, e *apptest.Env, comp, handle string) (compliance.ErasureView, models.Erasure) {
	t.Helper()
	id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"subject": handle}).JSON(t)["erasure_id"].(string)
	_ = temporalClient.GetWorkflow(context.Background(), workflows.ErasureWorkflowID(id), "").Get(context.Background(), nil) // the workflow may fail; the row says how
	if name := os.Getenv("AGENTMEMORY_RECORD_ERASURE"); name != "" && strings.HasPrefix(t.Name(), os.Getenv("AGENTMEMORY_RECORD_ERASURE_TEST")+"/sqlite") {
		// Re-record a replay fixture: AGENTMEMORY_RECORD_ERASURE=erasure_registry_rerun.json
		// AGENTMEMORY_RECORD_ERASURE_TEST=TestErasureRerunsWhenWrittenDuringTheFirstRound
		recordHistory(t, workflows.ErasureWorkflowID(id), filepath.Join("..", "..", "workflows", "testdata", name))
	}
	var view compliance.ErasureView
	require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+id, comp, nil).Body, &view))
	var row models.Erasure
	require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(context.Background()))
	return view, row
}

// An agent writes the subject's state once during the first round (a new sealed row and a
// new subject key after the key step): the probe finds it, the steps run again, and the
// erasure completes in 2 rounds with every probe 0 and the removed counts of both rounds.
func TestErasureRerunsWhenWrittenDuringTheFirstRound(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, w, comp := rerunEnv(t, engine, 1)
			view, row := erase(t, e, comp, w.handle)
			require.Equal(t, []int{http.StatusOK}, w.statuses, "the writer wrote once during the erasure")
			require.Equal(t, compliance.StatusCompleted, view.Status, "reason: %s", view.Reason)
			require.Equal(t, 2, row.Round)
			cert := view.Certificate
			require.NotNil(t, cert)
			require.Equal(t, 2, cert.Rounds)
			stores := map[string][2]int{}
			for _, st := range cert.Stores {
				stores[st.Store] = [2]int{st.Removed, st.Probe}
			}
			counts := map[string]int{}
			for _, it := range cert.Items {
				counts[it.Kind] = it.Count
				require.Len(t, it.HashedIDs, it.Count)
			}
			// Round 1: the state, the profile and its handle, the profile's and the handle's
			// keys; round 2: the state written meanwhile and the handle's key it recreated.
			require.Equal(t, map[string]int{"agent_state": 2, "profile": 1, "profile_handle": 1, "subject_key": 3}, counts)
			require.Equal(t, [2]int{2, 0}, stores["state"])
			require.Equal(t, [2]int{3, 0}, stores["keys"])
			for _, st := range cert.Stores {
				require.Zero(t, st.Probe, "store %s", st.Store)
			}
			r := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", w.key, map[string]any{"scope": map[string]any{"kind": "subject", "id": w.handle}})
			require.JSONEq(t, `{"body":{},"version":0,"updated_at":null}`, string(r.Body))
		})
	}
}

// An agent writes the subject's state during every round: after 3 rounds the erasure fails
// with the stores where the last probe found residue, and no certificate is issued.
func TestErasureFailsWhenWrittenDuringEveryRound(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, w, comp := rerunEnv(t, engine, 1000)
			view, row := erase(t, e, comp, w.handle)
			require.Equal(t, compliance.StatusFailed, view.Status)
			require.Equal(t, "residue:state,keys", view.Reason)
			require.Nil(t, view.Certificate)
			require.Equal(t, compliance.MaxErasureRounds, row.Round)
			require.Equal(t, []int{http.StatusOK, http.StatusOK, http.StatusOK}, w.statuses, "one write per round's probe")
		})
	}
}
