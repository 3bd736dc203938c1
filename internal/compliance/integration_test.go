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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
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

// flakyTurns wraps the turns store's registered eraser: it fails its first erasure (after
// the states were already erased) so that the erasure completes only through Temporal's
// retry.
type flakyTurns struct {
	erasure.Eraser
	mu    sync.Mutex
	calls int
}

func (f *flakyTurns) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	f.mu.Unlock()
	if first {
		return nil, errors.New("turns store unavailable")
	}
	return f.Eraser.EraseSubject(ctx, tx, t)
}

// env is the real API over a fresh database with a worker running the compliance workflows
// on its own task queue.
func newEnv(t *testing.T, engine string) *apptest.Env {
	t.Helper()
	if temporalClient == nil {
		t.Skip("integration test: needs the Temporal dev server (not in -short)")
	}
	tq := "compliance-" + auth.NewID("tq")
	e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = temporalClient; d.TaskQueue = tq })
	w := newWorker(t, e, app.WorkerOptions{TaskQueue: tq, NoReconcile: true})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

// newWorker is e's worker (app.NewWorker, every workflow and activity) with o, on a client
// sharing the dev server's connection with e's logger and metrics; it is not started.
func newWorker(t *testing.T, e *apptest.Env, o app.WorkerOptions) sdkworker.Worker {
	t.Helper()
	tc, err := e.App.ShareClient(temporalClient)
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	w, err := e.App.NewWorker(tc, o)
	require.NoError(t, err)
	return w
}

func seedSpace(e *apptest.Env) {
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", spaceTypes())
}

// spaceTypes is the object-types of seedSpace: shop-bot's and crm-bot's (scope subject).
func spaceTypes() map[string]any {
	types := apptest.ShopBotTypes()
	types["types"] = append(types["types"].([]any), map[string]any{
		"type": "crm-bot", "ownership": "agent",
		"fields": map[string]any{
			"tier": map[string]any{"type": "string", "sensitivity": "medium"},
			"note": map[string]any{"type": "text", "pii": true, "sensitivity": "high"},
		},
		"agent_state": map[string]any{"scope": "subject"},
	})
	return types
}

type subject struct {
	email, profileID, conv, task string
	abcd                         turnstest.Conversation
	turns                        int // turns ingested for the subject
}

// seedSubject makes a profile, working states of the subject's scope and of the ABCD
// conversation abcd (one naming the subject), ingests abcd's turns through POST /v1/turns
// with a confirmed link by e-mail, and two turns of a task linked unconfirmed by phone.
func seedSubject(e *apptest.Env, shop, crm, integ, name, email, phone string, abcd turnstest.Conversation) subject {
	r := e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": name, "handles": []string{"email:" + email, "phone:" + phone}})
	id := r.JSON(e.T)["profile_id"].(string)
	conv, task := abcd.ID, "t-"+abcd.ID
	e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": abcd.Turns})
	e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{"conversation_id": conv, "subject": "email:" + email, "status": "confirmed"})
	e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{"task_id": task, "subject": "phone:" + phone, "status": "unconfirmed"})
	e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": []map[string]any{
		{"task_id": task, "speaker": "customer", "text": "please call me at " + phone},
		{"task_id": task, "speaker": "agent", "text": "sure, tomorrow morning"},
	}})
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
	return subject{email: email, profileID: id, conv: conv, task: task, abcd: abcd, turns: len(abcd.Turns) + 2}
}

// stored returns s's turn rows (id, sealed text, time) and identity links as stored, and
// their masked turns as the distillation reads them.
func stored(t *testing.T, e *apptest.Env, s subject) ([]models.Turn, []models.IdentityLink, []turns.Stored) {
	t.Helper()
	ctx := context.Background()
	scopes := []string{e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", s.conv), e.Deps.Turns.ScopeHash(e.SpaceID, "task", s.task)}
	var rows []models.Turn
	require.NoError(t, e.DB.NewSelect().Model(&rows).Where("space_id = ? AND scope_hash IN (?)", e.SpaceID, bun.In(scopes)).Order("id ASC").Scan(ctx))
	var links []models.IdentityLink
	require.NoError(t, e.DB.NewSelect().Model(&links).Where("space_id = ? AND scope_hash IN (?)", e.SpaceID, bun.In(scopes)).Order("id ASC").Scan(ctx))
	var masked []turns.Stored
	for _, sc := range []struct{ kind, id string }{{"conversation", s.conv}, {"task", s.task}} {
		got, err := e.Deps.Turns.Recent(ctx, e.SpaceID, sc.kind, sc.id, time.Now().Add(-turns.Window))
		require.NoError(t, err)
		masked = append(masked, got...)
	}
	return rows, links, masked
}

// reads returns the raw answers of reading both states of s.
func reads(e *apptest.Env, shop, crm string, s subject) []string {
	a := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", crm, map[string]any{"scope": map[string]any{"kind": "subject", "id": "email:" + s.email}})
	b := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": s.conv}})
	return []string{string(a.Body), string(b.Body)}
}

func waitWorkflow(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, temporalClient.GetWorkflow(ctx, id, "").Get(ctx, nil), "workflow %s", id)
	if name := os.Getenv("AGENTMEMORY_RECORD_ERASURE"); name != "" && t.Name() == os.Getenv("AGENTMEMORY_RECORD_ERASURE_TEST") && strings.HasPrefix(id, "erasure-") {
		// Re-record a replay fixture of the current code, e.g. AGENTMEMORY_RECORD_ERASURE=erasure_registry.json
		// AGENTMEMORY_RECORD_ERASURE_TEST=TestSubjectErasureReachesKnowledge (never the older fixtures)
		recordHistory(t, id, filepath.Join("..", "..", "workflows", "testdata", name))
	}
}

func export(t *testing.T, e *apptest.Env, key, handle string) (string, map[string]any) {
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

func sqliteFiles(t *testing.T, e *apptest.Env) []byte {
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
			flaky := &flakyTurns{Eraser: e.Deps.Compliance.Registry().Get(compliance.StoreTurns)}
			e.Deps.Compliance.Registry().Register(flaky) // replaces the store of the same name
			abcd := turnstest.Load(t)
			seedSpace(e)
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			ana := seedSubject(e, shop, crm, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321", abcd[0])
			bruno := seedSubject(e, shop, crm, integ, "Bruno Lima", "bruno.lima@example.com", "+55 21 99876-5432", abcd[1])
			anaRows, anaLinks, anaMasked := stored(t, e, ana)
			require.Len(t, anaRows, ana.turns)
			require.Len(t, anaLinks, 2)
			require.Len(t, anaMasked, ana.turns)
			brunoRows, brunoLinks, brunoMasked := stored(t, e, bruno)
			require.Len(t, brunoRows, bruno.turns)

			anaBefore := reads(e, shop, crm, ana)
			require.Contains(t, anaBefore[1], `"version":2`)
			brunoBefore := reads(e, shop, crm, bruno)
			_, brunoPkg := export(t, e, comp, "email:"+bruno.email)
			anaExport, anaPkg := export(t, e, comp, "email:"+ana.email)
			require.Len(t, anaPkg["states"], 2, "ana's package: %v", anaPkg)
			require.Len(t, anaPkg["profiles"], 1)
			// The package holds ana's links and her masked turns, unsealed, in time order.
			pkgLinks, pkgTurns := anaPkg["identity_links"].([]any), anaPkg["turns"].([]any)
			require.Len(t, pkgLinks, 2)
			statuses := []string{}
			for _, l := range pkgLinks {
				statuses = append(statuses, l.(map[string]any)["status"].(string))
			}
			require.ElementsMatch(t, []string{"confirmed", "unconfirmed"}, statuses)
			require.Len(t, pkgTurns, ana.turns)
			var texts []string
			for _, tr := range pkgTurns {
				texts = append(texts, tr.(map[string]any)["text"].(string))
			}
			for _, m := range anaMasked {
				require.Contains(t, texts, m.Text)
			}
			pkgText := strings.Join(texts, "\n")
			require.Contains(t, pkgText, "<email>")
			require.Contains(t, pkgText, "<phone>")
			for _, raw := range []string{ana.abcd.Email, ana.abcd.Phone, "+55 11 98765-4321"} {
				require.NotContains(t, pkgText, raw, "the package carries masked turns only")
			}
			require.NotContains(t, anaPkg["not_covered"], "turn")

			// Only compliance may erase; bad bodies change nothing.
			e.MustDo(http.StatusForbidden, "POST", "/v1/erasures", integ, map[string]any{"subject": "email:" + ana.email})
			e.MustDo(http.StatusBadRequest, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + ana.email, "conversation_id": "c-1"})
			e.MustDo(http.StatusBadRequest, "POST", "/v1/erasures", comp, map[string]any{"subjcet": "email:" + ana.email})

			r := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + ana.email}).JSON(t)
			require.Equal(t, "pending", r["status"])
			erasureID := r["erasure_id"].(string)
			waitWorkflow(t, workflows.ErasureWorkflowID(erasureID))
			require.Equal(t, 2, flaky.calls, "the turns step failed once and was retried")

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
			require.Equal(t, map[string]int{"agent_state": 2, "profile": 1, "profile_handle": 2, "export_package": 1, "subject_key": 2,
				"turn": ana.turns, "identity_link": 2, "conversation_key": 1}, counts)
			require.Empty(t, cert.NotCovered, "turns and identity links are covered")
			// Every store is listed with what it removed and a probe of 0 (issue 12 §3).
			stores := map[string][2]int{}
			for _, st := range cert.Stores {
				stores[st.Store] = [2]int{st.Removed, st.Probe}
			}
			require.Equal(t, map[string][2]int{
				"state": {2, 0}, "turns": {ana.turns + 3, 0}, "exports": {1, 0}, "knowledge": {0, 0}, "subjects": {3, 0}, "notes": {0, 0}, "outbox": {0, 0}, "keys": {2, 0},
				"boards": {0, 0}, // issue 31: her erasure reaches boards too; she is on none here
			}, stores)
			// Each store says how the entries are gone from backups (issue 29 §1).
			reach := map[string]string{}
			for _, st := range cert.Stores {
				reach[st.Store] = st.Backups
			}
			require.Equal(t, map[string]string{
				"state": "shredded", "turns": "shredded", "exports": "shredded", "knowledge": "shredded", "subjects": "shredded", "notes": "shredded", "outbox": "holds_none", "keys": "shredded",
				"boards": "shredded", // boards are sealed under their own and their customers' keys (issue 29 §1)
			}, reach)
			require.NotEmpty(t, cert.WorkflowHistory)
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
			rows, links, masked := stored(t, e, ana)
			require.Empty(t, rows, "ana's turns are gone")
			require.Empty(t, links, "ana's identity links are gone")
			require.Empty(t, masked)

			// The other subject is untouched: same reads, same versions, same package.
			require.Equal(t, brunoBefore, reads(e, shop, crm, bruno))
			rows, links, masked = stored(t, e, bruno)
			require.Equal(t, brunoRows, rows, "bruno's stored turns are unchanged")
			require.Equal(t, brunoLinks, links, "bruno's identity links are unchanged")
			require.Equal(t, brunoMasked, masked)
			require.Len(t, brunoPkg["turns"], bruno.turns)
			require.Len(t, brunoPkg["identity_links"], 2)
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
				files := sqliteFiles(t, e)
				require.False(t, bytes.Contains(files, []byte(ana.email)), "the erased e-mail is in the SQLite files")
				require.False(t, bytes.Contains(files, []byte(ana.abcd.Email)), "a turn's raw e-mail is in the SQLite files")
			}
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)
		})
	}
}

// A conversation erasure deletes the states of that conversation's scope, its turns and its
// identity links: an address written in a non-pii field (sealed under the conversation's key), and the masked turns of an
// ABCD conversation linked to no known profile (sealed under the same key), leave the SQLite files after
// completion; another conversation keeps its turns.
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
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			conv := turnstest.Load(t)[2]
			const phrase = "put hats on cats" // said in the conversation; not personal data, so not masked
			in := append([]turns.Input(nil), conv.Turns...)
			for i := range in {
				in[i].ConversationID = "c-1"
			}
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": in})
			e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{"conversation_id": "c-1", "subject": "email:" + addr, "status": "unconfirmed"})
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"conversation_id": "c-2", "speaker": "agent", "text": "hello"})
			if engine == "sqlite" {
				files := sqliteFiles(t, e)
				require.False(t, bytes.Contains(files, []byte(addr)), "a conversation's state naming no subject is sealed under the conversation's key (issue 29 §1)")
				require.False(t, bytes.Contains(files, []byte(phrase)), "unlinked turns are sealed under the conversation's key (issue 29 §1)")
			}
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"conversation_id": "c-1"}).JSON(t)["erasure_id"].(string)
			waitWorkflow(t, workflows.ErasureWorkflowID(id))
			v := e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+id, comp, nil).JSON(t)
			require.Equal(t, "completed", v["status"])
			cert := v["certificate"].(map[string]any)
			require.Equal(t, json.Number(fmt.Sprint(1+len(in)+1+1)), cert["total"], "one state, the turns, one link, the conversation's key")
			require.Empty(t, cert["not_covered"])
			left, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", "c-1", time.Now().Add(-turns.Window))
			require.NoError(t, err)
			require.Empty(t, left, "the conversation's turns are gone")
			n, err := e.DB.NewSelect().Model((*models.IdentityLink)(nil)).Count(context.Background())
			require.NoError(t, err)
			require.Zero(t, n, "the conversation's link is gone")
			kept, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", "c-2", time.Now().Add(-turns.Window))
			require.NoError(t, err)
			require.Len(t, kept, 1, "another conversation keeps its turns")
			read := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-1"}})
			require.JSONEq(t, `{"body":{},"version":0,"updated_at":null}`, string(read.Body))
			read = e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-2"}})
			require.Contains(t, string(read.Body), `"version":1`)
			if engine == "sqlite" {
				files := sqliteFiles(t, e)
				require.False(t, bytes.Contains(files, []byte(addr)), "the erased address is still in the SQLite files")
				require.False(t, bytes.Contains(files, []byte(phrase)), "the erased turns are still in the SQLite files")
			}
		})
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
