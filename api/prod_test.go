package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
	"github.com/agentmemory/agentmemory/internal/metrics"
)

// fakeTemporal answers CheckHealth with err.
type fakeTemporal struct{ err error }

func (f fakeTemporal) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, f.err
}

// listener is a TCP port that accepts (a reachable "broker").
func listener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// closedPort is a TCP address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestHealthAndReadiness(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			broker := listener(t)
			temporal := &fakeTemporal{}
			e := apptest.New(t, engine, func(d *api.Deps) {
				d.Ready = []api.ReadyCheck{api.TemporalCheck(temporal), api.KafkaCheck([]string{closedPort(t), broker})}
			})
			r := e.MustDo(http.StatusOK, "GET", "/healthz", "", nil)
			require.Equal(t, "ok", r.JSON(t)["status"])

			r = e.MustDo(http.StatusOK, "GET", "/readyz", "", nil)
			body := r.JSON(t)
			require.Equal(t, "ready", body["status"])
			require.Equal(t, map[string]any{"database": "ok", "temporal": "ok", "kafka": "ok"}, body["checks"])

			temporal.err = errors.New("connection refused")
			r = e.MustDo(http.StatusServiceUnavailable, "GET", "/readyz", "", nil)
			require.Equal(t, "not_ready", r.ErrorCode(t))
			require.Equal(t, map[string]any{"database": "ok", "temporal": "unavailable", "kafka": "ok"}, r.JSON(t)["error"].(map[string]any)["checks"])
			require.NotContains(t, string(r.Body), "refused", "causes are logged, not answered")

			// Kafka unreachable; the database closed.
			temporal.err = nil
			e2 := apptest.New(t, engine, func(d *api.Deps) {
				d.Ready = []api.ReadyCheck{api.KafkaCheck([]string{closedPort(t)})}
			})
			require.NoError(t, e2.DB.Close())
			r = e2.MustDo(http.StatusServiceUnavailable, "GET", "/readyz", "", nil)
			require.Equal(t, map[string]any{"database": "unavailable", "kafka": "unavailable"}, r.JSON(t)["error"].(map[string]any)["checks"])
			e2.MustDo(http.StatusOK, "GET", "/healthz", "", nil)
		})
	}
}

// stateSetup turns agent_state on with the shop-bot schema and returns an agent key.
func stateSetup(e *apptest.Env) string {
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", apptest.ShopBotTypes())
	return e.AgentKey("shop-bot", "acme", "agent_state")
}

func stateWriteBody(scope string, ifVersion *int64, body map[string]any) map[string]any {
	w := map[string]any{"scope": map[string]any{"kind": "conversation", "id": scope}, "agent": "shop-bot", "body": body}
	if ifVersion != nil {
		w["mode"] = "cas"
		w["if_version"] = *ifVersion
	}
	return w
}

func TestMetricsEndpoint(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := stateSetup(e)
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody("conv-1", nil, map[string]any{"step": "cart"}))
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody("conv-1", nil, map[string]any{"step": "pay"}))
		zero := int64(0)
		r := e.MustDo(http.StatusPreconditionFailed, "PUT", "/v1/agent-state", key, stateWriteBody("conv-1", &zero, map[string]any{"step": "x"}))
		require.Equal(t, "agent_state_conflict", r.ErrorCode(t))
		r = e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody("conv-1", nil, map[string]any{"nope": 1}))
		require.Equal(t, "not_declared_field", r.JSON(t)["reason"])
		r = e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody("conv-1", nil, map[string]any{"offer": strings.Repeat("o", 17000)}))
		require.Equal(t, "over_cap", r.JSON(t)["reason"])
		e.MustDo(http.StatusNotFound, "GET", "/v1/profiles/prof_secret123", e.AdminKey, nil)
		e.MustDo(http.StatusNotFound, "GET", "/no/such/route/conv-1", "", nil)

		// A note refused for personal data, and a workflow that cannot start (this Env has no
		// Temporal client), both through the API.
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		writer := e.AgentKey("note-bot", "acme", "agent_memory", "agent_memory:write")
		r = e.MustDo(http.StatusUnprocessableEntity, "POST", "/v1/agent-memory/notes", writer,
			map[string]any{"kind": "pitfall", "title": "Contact", "body": "write to ana@example.com"})
		require.Equal(t, "personal_data_in_agent_memory", r.ErrorCode(t))
		e.MustDo(http.StatusServiceUnavailable, "POST", "/v1/retention/sweep", e.AdminKey, map[string]any{})
		r = e.MustDo(http.StatusOK, "GET", "/metrics", "", nil)
		text := string(r.Body)
		for _, want := range []string{
			`agentmemory_state_writes_total{result="stored"} 2`,
			`agentmemory_state_writes_total{result="conflict"} 1`,
			`agentmemory_state_writes_total{result="not_declared_field"} 1`,
			`agentmemory_state_writes_total{result="over_cap"} 1`,
			`agentmemory_http_requests_total{method="PUT",route="/v1/agent-state",status="200"} 4`,
			`agentmemory_http_requests_total{method="PUT",route="/v1/agent-state",status="412"} 1`,
			`agentmemory_http_requests_total{method="GET",route="/v1/profiles/:profile_id",status="404"} 1`,
			`agentmemory_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
			`agentmemory_http_request_duration_seconds_bucket{method="PUT",route="/v1/agent-state",status="200",le="+Inf"} 4`,
			`agentmemory_notes_refused_total{kind="email"} 1`,
			`agentmemory_notes_refused_total{kind="cpf"} 0`,
			`agentmemory_workflow_failures_total{workflow="RetentionSweep"} 1`,
			`go_goroutines`,
		} {
			require.True(t, strings.Contains(text, want), "/metrics lacks %s", want)
		}
		for _, leak := range []string{"prof_secret123", "conv-1", e.SpaceID} {
			require.False(t, strings.Contains(text, leak), "/metrics carries the id %q", leak)
		}
	})
}

func TestMetricsOnOwnPort(t *testing.T) {
	e := apptest.New(t, "sqlite", func(d *api.Deps) { d.MetricsOnOwnPort = true })
	e.MustDo(http.StatusNotFound, "GET", "/metrics", "", nil)
	// The same Metrics still records; cmd serves its Handler elsewhere.
	e.MustDo(http.StatusOK, "GET", "/healthz", "", nil)
	rec := &bytes.Buffer{}
	srvReq, _ := http.NewRequest("GET", "/metrics", nil)
	w := &recorder{header: http.Header{}, body: rec}
	e.Server.Metrics.Handler().ServeHTTP(w, srvReq)
	require.True(t, strings.Contains(rec.String(), `agentmemory_http_requests_total{method="GET",route="/healthz",status="200"} 1`), "the handler lacks the /healthz request")
}

type recorder struct {
	header http.Header
	body   io.Writer
	status int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

// TestLogsCarryNoPersonalData writes a state with an e-mail in a pii field under a
// phone-shaped conversation id, then sends refused requests (and a refused note) carrying the
// same values, and scans every log line (debug level, JSON) for the scope id, the e-mail and
// the keys; the space id, not a secret, is on every authenticated access line (QT-2).
func TestLogsCarryNoPersonalData(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sink := &logstest.Buffer{}
		log := logs.New("json", "debug", sink)
		e = apptest.New(t, e.Engine, func(d *api.Deps) { d.Logger = log; d.Metrics = metrics.New() })
		key := stateSetup(e)
		const scope = "+55 11 98765-4321"
		const email = "ana.souza@example.com"

		r := e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody(scope, nil, map[string]any{"step": "cart", "cart_note": "send the invoice to " + email}))
		require.Equal(t, true, r.JSON(t)["stored"])
		e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", key, map[string]any{"scope": map[string]any{"kind": "conversation", "id": scope}, "agent": "shop-bot"})
		// Refused: undeclared field holding the e-mail, stale CAS, unknown member, bad key,
		// the scope in a URL.
		r = e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody(scope, nil, map[string]any{"customer_email": email}))
		require.Equal(t, "not_declared_field", r.JSON(t)["reason"])
		zero := int64(0)
		e.MustDo(http.StatusPreconditionFailed, "PUT", "/v1/agent-state", key, stateWriteBody(scope, &zero, map[string]any{"cart_note": email}))
		bad := stateWriteBody(scope, nil, map[string]any{"step": "cart"})
		bad["emial"] = email
		e.MustDo(http.StatusBadRequest, "PUT", "/v1/agent-state", key, bad)
		e.MustDo(http.StatusUnauthorized, "PUT", "/v1/agent-state", key+"x", stateWriteBody(scope, nil, map[string]any{"cart_note": email}))
		e.MustDo(http.StatusNotFound, "GET", "/v1/profiles/"+strings.ReplaceAll(scope, " ", ""), e.AdminKey, nil)
		e.MustDo(http.StatusOK, "GET", "/readyz", "", nil)
		// A note refused for the e-mail and the phone (AM-6): the refusal names kinds only.
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		writer := e.AgentKey("note-bot", "acme", "agent_memory", "agent_memory:write")
		r = e.MustDo(http.StatusUnprocessableEntity, "POST", "/v1/agent-memory/notes", writer,
			map[string]any{"kind": "pitfall", "title": "Call back", "body": "call " + scope + " or write to " + email})
		require.NotContains(t, string(r.Body), email)

		out := sink.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.GreaterOrEqual(t, len(lines), 8, "every request logs a line: got %d lines", len(lines))
		require.Contains(t, out, `"route":"/v1/agent-state"`)
		require.Regexp(t, regexp.MustCompile(`"request_id":"[0-9a-f]{16}"`), out)
		for _, secret := range []string{scope, "98765-4321", "987654321", "5511987654321", email, "ana.souza", key, writer, e.AdminKey, Secret()} {
			require.NotContains(t, out, secret, "the logs carry %q:\n%s", secret, out)
		}
		// The space id is not a secret: every authenticated access line names it (QT-2).
		require.Contains(t, out, `"route":"/v1/agent-state","status":200,`)
		for _, line := range lines {
			if strings.Contains(line, `"msg":"request"`) && !strings.Contains(line, `"status":401`) && !strings.Contains(line, `"route":"/readyz"`) {
				require.Contains(t, line, `"space_id":"`+e.SpaceID+`"`)
			}
		}
		slog.Default() // the default logger is untouched: nothing in api logs through it
	})
}

// Secret is the server secret of apptest environments.
func Secret() string { return apptest.Secret }
