package compliance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"agentmemory/activities"
	"agentmemory/api"
	"agentmemory/api/apitest"
	"agentmemory/internal/auth"
	"agentmemory/internal/compliance"
	"agentmemory/worker"
	"agentmemory/workflows"
)

// One Temporal dev server for the package (Stop takes about a second).
var temporalClient client.Client

func TestMain(m *testing.M) {
	code := func() int {
		flag.Parse()
		if !testing.Short() {
			root, err := filepath.Abs("../..")
			if err != nil {
				panic(err)
			}
			srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
				ExistingPath:  filepath.Join(root, "bin", "temporal"),
				LogLevel:      "error",
				ClientOptions: &client.Options{Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
				Stdout:        io.Discard, Stderr: io.Discard,
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "compliance tests need the Temporal CLI at bin/temporal (make temporal):", err)
				return 1
			}
			defer srv.Stop()
			temporalClient = srv.Client()
		}
		return m.Run()
	}()
	os.Exit(code)
}

// flakyTurns stands in for the turns store: it fails its first call (after the states were
// already erased) so that the erasure completes only through Temporal's retry.
type flakyTurns struct {
	mu    sync.Mutex
	calls int
}

func (f *flakyTurns) call() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == 1 {
		return errors.New("turns store unavailable")
	}
	return nil
}

func (f *flakyTurns) EraseSubject(context.Context, bun.IDB, string, compliance.SubjectRef) ([]compliance.Erased, error) {
	return nil, f.call()
}

func (f *flakyTurns) EraseConversation(context.Context, bun.IDB, string, string) ([]compliance.Erased, error) {
	return nil, f.call()
}

// env is the real API over a fresh database with a worker running the compliance workflows
// on its own task queue.
func newEnv(t *testing.T, engine string) *apitest.Env {
	t.Helper()
	if temporalClient == nil {
		t.Skip("integration test: needs the Temporal dev server (not in -short)")
	}
	tq := "compliance-" + auth.NewID("tq")
	e := apitest.New(t, engine, func(d *api.Deps) { d.Workflows = temporalClient; d.TaskQueue = tq })
	w := sdkworker.New(temporalClient, tq, sdkworker.Options{})
	worker.RegisterCompliance(w, &activities.ComplianceActivities{Compliance: e.Deps.Compliance})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

func seedSpace(e *apitest.Env) {
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	types := apitest.ShopBotTypes()
	types["types"] = append(types["types"].([]any), map[string]any{
		"type": "crm-bot", "ownership": "agent",
		"fields": map[string]any{
			"tier": map[string]any{"type": "string", "sensitivity": "medium"},
			"note": map[string]any{"type": "text", "pii": true, "sensitivity": "high"},
		},
		"agent_state": map[string]any{"scope": "subject"},
	})
	e.PutDocument("object-types", types)
}

type subject struct {
	email, profileID, conv string
}

func seedSubject(e *apitest.Env, shop, crm, integ, name, email, phone, conv string) subject {
	r := e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": name, "handles": []string{"email:" + email, "phone:" + phone}})
	id := r.JSON(e.T)["profile_id"].(string)
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{
		"scope": map[string]any{"kind": "subject", "id": "email:" + email}, "body": map[string]any{"tier": "gold", "note": "prefers e-mail"},
	})
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
		"scope": map[string]any{"kind": "conversation", "id": conv}, "subject": "email:" + email,
		"body": map[string]any{"step": "cart", "offer": "promo sent to " + email},
	})
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
		"scope": map[string]any{"kind": "conversation", "id": conv}, "body": map[string]any{"step": "pay"},
	})
	return subject{email: email, profileID: id, conv: conv}
}

// reads returns the raw answers of reading both states of s.
func reads(e *apitest.Env, shop, crm string, s subject) []string {
	a := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", crm, map[string]any{"scope": map[string]any{"kind": "subject", "id": "email:" + s.email}})
	b := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": s.conv}})
	return []string{string(a.Body), string(b.Body)}
}

func waitWorkflow(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, temporalClient.GetWorkflow(ctx, id, "").Get(ctx, nil), "workflow %s", id)
}

func export(t *testing.T, e *apitest.Env, key, handle string) (string, map[string]any) {
	t.Helper()
	id := e.MustDo(http.StatusAccepted, "POST", "/v1/exports", key, map[string]any{"subject": handle}).JSON(t)["export_id"].(string)
	waitWorkflow(t, workflows.ExportWorkflowID(id))
	require.Equal(t, "completed", e.MustDo(http.StatusOK, "GET", "/v1/exports/"+id, key, nil).JSON(t)["status"])
	pkg := e.MustDo(http.StatusOK, "GET", "/v1/exports/"+id+"/package", key, nil).JSON(t)
	return id, pkg
}

// comparable drops what differs between two packages of the same data.
func comparable(pkg map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range pkg {
		switch k {
		case "export_id", "generated_at", "expires_at":
		default:
			out[k] = v
		}
	}
	return out
}

func sqliteFiles(t *testing.T, e *apitest.Env) []byte {
	t.Helper()
	var seq int
	var name, file string
	require.NoError(t, e.DB.QueryRowContext(context.Background(), "PRAGMA database_list").Scan(&seq, &name, &file))
	var all []byte
	for _, p := range []string{file, file + "-wal"} {
		b, err := os.ReadFile(p)
		if err == nil {
			all = append(all, b...)
		}
	}
	require.NotEmpty(t, all)
	return all
}

func TestSubjectErasureEndToEnd(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := newEnv(t, engine)
			turns := &flakyTurns{}
			e.Deps.Compliance.Turns = turns
			seedSpace(e)
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			ana := seedSubject(e, shop, crm, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321", "c-ana")
			bruno := seedSubject(e, shop, crm, integ, "Bruno Lima", "bruno.lima@example.com", "+55 21 99876-5432", "c-bruno")

			anaBefore := reads(e, shop, crm, ana)
			require.Contains(t, anaBefore[1], `"version":2`)
			brunoBefore := reads(e, shop, crm, bruno)
			_, brunoPkg := export(t, e, comp, "email:"+bruno.email)
			anaExport, anaPkg := export(t, e, comp, "email:"+ana.email)
			require.Len(t, anaPkg["states"], 2, "ana's package: %v", anaPkg)
			require.Len(t, anaPkg["profiles"], 1)

			// Only compliance may erase; bad bodies change nothing.
			e.MustDo(http.StatusForbidden, "POST", "/v1/erasures", integ, map[string]any{"subject": "email:" + ana.email})
			e.MustDo(http.StatusBadRequest, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + ana.email, "conversation_id": "c-1"})
			e.MustDo(http.StatusBadRequest, "POST", "/v1/erasures", comp, map[string]any{"subjcet": "email:" + ana.email})

			r := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + ana.email}).JSON(t)
			require.Equal(t, "running", r["status"])
			erasureID := r["erasure_id"].(string)
			waitWorkflow(t, workflows.ErasureWorkflowID(erasureID))
			require.Equal(t, 2, turns.calls, "the turns step failed once and was retried")

			var view compliance.ErasureView
			require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+erasureID, comp, nil).Body, &view))
			require.Equal(t, "completed", view.Status)
			cert := view.Certificate
			require.NotNil(t, cert)
			counts := map[string]int{}
			for _, it := range cert.Items {
				counts[it.Kind] = it.Count
				require.Len(t, it.HashedIDs, it.Count)
			}
			require.Equal(t, map[string]int{"agent_state": 2, "profile": 1, "profile_handle": 2, "export_package": 1, "subject_key": 2}, counts)
			require.Contains(t, cert.Items[len(cert.Items)-1].HashedIDs[0], "sha256:")
			require.False(t, cert.NothingFound)
			require.Empty(t, cert.NotCovered)
			require.NotNil(t, cert.Receipt)
			require.NotContains(t, string(mustMarshal(cert)), ana.email)
			require.NotContains(t, string(mustMarshal(cert)), ana.profileID, "ids appear only hashed")

			// Reads answer as never written; the profile and ana's package are gone.
			for _, body := range reads(e, shop, crm, ana) {
				require.JSONEq(t, `{"body":{},"version":0,"updated_at":null}`, body)
			}
			e.MustDo(http.StatusNotFound, "GET", "/v1/profiles/"+ana.profileID, integ, nil)
			e.MustDo(http.StatusNotFound, "GET", "/v1/exports/"+anaExport, comp, nil)
			e.MustDo(http.StatusNotFound, "GET", "/v1/exports/"+anaExport+"/package", comp, nil)

			// The other subject is untouched: same reads, same versions, same package.
			require.Equal(t, brunoBefore, reads(e, shop, crm, bruno))
			_, brunoAfter := export(t, e, comp, "email:"+bruno.email)
			require.Equal(t, comparable(brunoPkg), comparable(brunoAfter))
			e.MustDo(http.StatusOK, "GET", "/v1/profiles/"+bruno.profileID, integ, nil)

			// The certificate is a compliance receipt at its chain position; the chain verifies.
			rc := e.MustDo(http.StatusOK, "GET", fmt.Sprintf("/v1/receipts?after=%d&limit=1", cert.Receipt.Seq-1), e.AdminKey, nil).Body
			require.Contains(t, string(rc), `"action":"erasure.certificate"`)
			require.Contains(t, string(rc), cert.Receipt.Hash)
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)

			// A second erasure of the same subject finds nothing and says so.
			again := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + ana.email}).JSON(t)["erasure_id"].(string)
			waitWorkflow(t, workflows.ErasureWorkflowID(again))
			var second compliance.ErasureView
			require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+again, comp, nil).Body, &second))
			require.True(t, second.Certificate.NothingFound, "second certificate: %+v", second.Certificate)
			require.Equal(t, 0, second.Certificate.Total)

			if engine == "sqlite" {
				require.False(t, bytes.Contains(sqliteFiles(t, e), []byte(ana.email)), "the erased e-mail is in the SQLite files")
			}
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)
		})
	}
}

// A conversation erasure deletes the states of that conversation's scope: a clear-text
// address written in a non-pii field leaves the SQLite files after completion.
func TestConversationErasureLeavesNoCleartext(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := newEnv(t, engine)
			seedSpace(e)
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			const addr = "carla.dias@example.com"
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "body": map[string]any{"step": "cart", "offer": "sent to " + addr},
			})
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-2"}, "body": map[string]any{"step": "cart"},
			})
			if engine == "sqlite" {
				require.True(t, bytes.Contains(sqliteFiles(t, e), []byte(addr)), "the address should be stored in clear before (no subject named)")
			}
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"conversation_id": "c-1"}).JSON(t)["erasure_id"].(string)
			waitWorkflow(t, workflows.ErasureWorkflowID(id))
			v := e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+id, comp, nil).JSON(t)
			require.Equal(t, "completed", v["status"])
			require.Equal(t, json.Number("1"), v["certificate"].(map[string]any)["total"])
			read := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-1"}})
			require.JSONEq(t, `{"body":{},"version":0,"updated_at":null}`, string(read.Body))
			read = e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-2"}})
			require.Contains(t, string(read.Body), `"version":1`)
			if engine == "sqlite" {
				require.False(t, bytes.Contains(sqliteFiles(t, e), []byte(addr)), "the erased address is still in the SQLite files")
			}
		})
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
