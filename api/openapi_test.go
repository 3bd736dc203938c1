package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// docOperations returns "METHOD /path/{param}" of every operation of the document.
func docOperations(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPIDocument, &doc))
	var out []string
	for p, item := range doc.Paths {
		for m := range item {
			if m == "parameters" {
				continue
			}
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

var ginParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// TestOpenAPICoversEveryRoute: every route of the Gin engine has its path and method in the
// document, and every documented operation is routed (but the pending ones), so the two
// cannot drift apart.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	e := apptest.New(t, "sqlite")
	ops := docOperations(t)
	routed := map[string]bool{}
	for _, r := range e.Server.Routes() {
		p := ginParam.ReplaceAllString(r.Path, "{$1}")
		if p == "/mcp" && r.Method != http.MethodPost {
			continue // r.Any: MCP's own transport; only POST is described (docs/mcp.md).
		}
		if p == "/console" || strings.HasPrefix(p, "/console/") || p == "/favicon.ico" {
			continue // the Console's HTML pages, forms and icon (api/console) are not the JSON API
		}
		key := r.Method + " " + p
		routed[key] = true
		require.Contains(t, ops, key, "route %s is not in api/openapi.json", key)
	}
	for _, op := range ops {
		require.True(t, routed[op], "api/openapi.json documents %s, which is not routed", op)
	}
}

func TestOpenAPIServed(t *testing.T) {
	e := apptest.New(t, "sqlite")
	r := e.MustDo(http.StatusOK, "GET", "/openapi.json", "", nil)
	require.Equal(t, api.OpenAPIDocument, r.Body)
	require.Equal(t, "3.1.0", r.JSON(t)["openapi"])
}

// checked wraps an Env: every request and answer goes through the OpenAPI validator, and the
// operations answered with a success and with an error are recorded.
type checked struct {
	t       *testing.T
	e       *apptest.Env
	v       validator.Validator
	ops     []string
	pattern map[string]*regexp.Regexp
	success map[string]bool
	failure map[string]bool
}

func newChecked(t *testing.T, e *apptest.Env) *checked {
	doc, err := libopenapi.NewDocument(api.OpenAPIDocument)
	require.NoError(t, err)
	v, errs := validator.NewValidator(doc, config.WithoutSecurityValidation())
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	require.True(t, ok, "the document is not valid OpenAPI: %v", verrs)
	c := &checked{t: t, e: e, v: v, ops: docOperations(t), pattern: map[string]*regexp.Regexp{}, success: map[string]bool{}, failure: map[string]bool{}}
	for _, op := range c.ops {
		method, p, _ := strings.Cut(op, " ")
		segs := strings.Split(p, "/")
		for i, sg := range segs {
			if strings.HasPrefix(sg, "{") {
				segs[i] = `[^/]+`
			} else {
				segs[i] = regexp.QuoteMeta(sg)
			}
		}
		c.pattern[op] = regexp.MustCompile("^" + method + " " + strings.Join(segs, "/") + "$")
	}
	return c
}

// operation names the documented operation of method and path.
func (c *checked) operation(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	var best string
	for _, op := range c.ops {
		// Literal segments win over parameters: prefer the operation with the fewest "{".
		if c.pattern[op].MatchString(method+" "+path) && (best == "" || strings.Count(op, "{") < strings.Count(best, "{")) {
			best = op
		}
	}
	require.NotEmpty(c.t, best, "%s %s is not in the document", method, path)
	return best
}

// do sends the request, requires status, and validates the request (unless the test sends a
// deliberately malformed one, answered 400) and the answer against the document.
func (c *checked) do(status int, method, path, key string, body any, headers ...string) apptest.Response {
	c.t.Helper()
	r := c.e.MustDo(status, method, path, key, body, headers...)
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	default:
		var err error
		data, err = json.Marshal(b)
		require.NoError(c.t, err)
	}
	req, err := http.NewRequest(method, "http://127.0.0.1:8080"+path, bytes.NewReader(data))
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if status != http.StatusBadRequest {
		ok, errs := c.v.ValidateHttpRequest(req)
		require.True(c.t, ok, "request %s %s does not match the document: %s", method, path, describe(errs))
	}
	resp := &http.Response{StatusCode: r.Status, Header: r.Header, Body: io.NopCloser(bytes.NewReader(r.Body)), Request: req}
	ok, errs := c.v.ValidateHttpResponse(req, resp)
	require.True(c.t, ok, "answer %d to %s %s does not match the document: %s\nbody: %s", r.Status, method, path, describe(errs), r.Body)
	op := c.operation(method, path)
	if status < 400 {
		c.success[op] = true
	} else {
		c.failure[op] = true
	}
	return r
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n- %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s at %s]", s.Reason, s.FieldPath)
		}
	}
	return b.String()
}

// TestOpenAPIMatchesTheServer runs every route with a success and an error through the
// validator, on SQLite and PostgreSQL.
func TestOpenAPIMatchesTheServer(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine, func(d *api.Deps) {
				d.Workflows = anyWorkflows{}
				d.Signer = newTestSigner(t) // signed routes (api/signing.go)
			})
			c := newChecked(t, e)
			admin := e.AdminKey
			id := func(r apptest.Response, member string) string { return r.JSON(t)[member].(string) }

			c.do(200, "GET", "/healthz", "", nil)
			c.do(200, "GET", "/openapi.json", "", nil)
			c.do(200, "GET", "/readyz", "", nil)
			c.do(200, "GET", "/metrics", "", nil)

			// Keys and documents.
			c.do(401, "POST", "/v1/keys", "", map[string]any{"kind": "agent", "agent": "x", "vendor": "v", "scopes": []string{"agent_state"}})
			c.do(400, "POST", "/v1/keys", admin, map[string]any{"kind": "agent", "agent": "x", "colour": "red"})
			tmp := c.do(201, "POST", "/v1/keys", admin, map[string]any{"kind": "agent", "agent": "tmp", "vendor": "v", "scopes": []string{"context"}})
			c.do(204, "DELETE", "/v1/keys/"+id(tmp, "key_id"), admin, nil)
			c.do(404, "DELETE", "/v1/keys/key_nope", admin, nil)
			c.do(200, "GET", "/v1/keys", admin, nil)
			c.do(200, "GET", "/v1/keys?limit=1", admin, nil)
			c.do(400, "GET", "/v1/keys?after=nope", admin, nil)
			c.do(400, "PUT", "/v1/documents/features", admin, map[string]any{"agent_memory": map[string]any{"enabled": "yes"}})
			c.do(200, "PUT", "/v1/documents/features", admin, map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
			c.do(200, "PUT", "/v1/documents/object-types", admin, apptest.ShopBotTypes())
			c.do(200, "GET", "/v1/documents/features", admin, nil)
			bot := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write", "context")
			c.do(403, "GET", "/v1/documents/features", bot, nil)
			c.do(200, "GET", "/v1/keys/self", bot, nil)
			c.do(200, "GET", "/v1/keys/self", admin, nil)
			c.do(401, "GET", "/v1/keys/self", "", nil)

			// Spaces (issue 34 §3): only an operator key creates one.
			_, op, mintErr := spaces.MintOperatorKey(context.Background(), e.DB, "openapi", time.Now())
			require.NoError(t, mintErr)
			c.do(201, "POST", "/v1/spaces", op, map[string]any{"name": "made-by-operator", "direct_put": true})
			c.do(400, "POST", "/v1/spaces", op, map[string]any{"name": "x", "space_id": "sp_1"})
			c.do(403, "POST", "/v1/spaces", admin, map[string]any{"name": "x"})
			c.do(401, "POST", "/v1/spaces", "", map[string]any{"name": "x"})

			// Change requests of the documents (issue 15): a person holding admin proposes,
			// another security person decides (not the space's first admin key: every key
			// descends from it, and a key the proposer minted never approves, issue 31).
			sec := e.PersonKey("Sol", "security")
			ada := e.PersonKey("Ada", "admin", "security")
			chg := "/v1/documents/features/changes"
			ch := id(c.do(201, "POST", chg, ada, map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}, "turns": map[string]any{"retention_days": 30}}), "id")
			c.do(400, "POST", chg, admin, map[string]any{"agent_memory": map[string]any{"writes": "everyone"}})
			c.do(200, "GET", chg+"?status=pending&limit=10", sec, nil)
			c.do(400, "GET", chg+"?status=maybe", sec, nil)
			c.do(200, "GET", chg+"/"+ch, sec, nil)
			c.do(404, "GET", chg+"/chg_nope", sec, nil)
			c.do(403, "POST", chg+"/"+ch+"/approve", ada, nil)
			c.do(200, "POST", chg+"/"+ch+"/approve", sec, nil)
			c.do(409, "POST", chg+"/"+ch+"/reject", sec, map[string]any{"reason": "late"})
			ch2 := id(c.do(201, "POST", "/v1/documents/object-types/changes", ada, map[string]any{"types": []any{}}), "id")
			c.do(200, "POST", "/v1/documents/object-types/changes/"+ch2+"/reject", sec, map[string]any{"reason": "keeps the types"})

			// Subjects.
			prof := c.do(201, "POST", "/v1/profiles", admin, map[string]any{"name": "Ana Souza", "handles": []string{"email:ana@example.com"}})
			pid := id(prof, "profile_id")
			c.do(400, "POST", "/v1/profiles", admin, map[string]any{"name": "X", "handles": []string{"fax:1"}})
			c.do(200, "GET", "/v1/profiles/"+pid, admin, nil)
			c.do(404, "GET", "/v1/profiles/prof_nope", admin, nil)

			// Working memory.
			scope := map[string]any{"kind": "conversation", "id": "c-1"}
			c.do(200, "PUT", "/v1/agent-state", bot, map[string]any{"scope": scope, "body": map[string]any{"step": "sizes"}, "subject": "email:ana@example.com"}, "Agent-Version", "bot/1")
			c.do(200, "PUT", "/v1/agent-state", bot, map[string]any{"scope": scope, "body": map[string]any{"colour": "red"}})
			c.do(412, "PUT", "/v1/agent-state", bot, map[string]any{"scope": scope, "mode": "cas", "if_version": 7, "body": map[string]any{"step": "x"}})
			c.do(200, "POST", "/v1/agent-state/read", bot, map[string]any{"scope": scope})
			c.do(400, "POST", "/v1/agent-state/read", bot, map[string]any{"scope": scope, "if_verison": 1})
			c.do(200, "GET", "/v1/profiles/"+pid+"/agent-state", admin, nil)
			c.do(200, "POST", "/v1/agent-state/delete", bot, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-gone"}})
			c.do(400, "POST", "/v1/agent-state/delete", bot, map[string]any{"scope": scope, "subject": "email:ana@example.com"})
			c.do(403, "POST", "/v1/agent-state/delete", bot, map[string]any{"subject": "email:ana@example.com"})
			c.do(403, "GET", "/v1/profiles/"+pid+"/agent-state", bot, nil)
			// Working-memory leases (issue 31).
			stateLease := c.do(200, "POST", "/v1/agent-state/lease", bot, map[string]any{"scope": scope, "ttl_seconds": 30}).JSON(t)
			c.do(409, "POST", "/v1/agent-state/lease", bot, map[string]any{"scope": scope, "ttl_seconds": 30})
			c.do(400, "POST", "/v1/agent-state/lease", bot, map[string]any{"scope": scope, "ttl_seconds": 0})
			c.do(409, "PUT", "/v1/agent-state", bot, map[string]any{"scope": scope, "body": map[string]any{"colour": "blue"}})
			stateProof := map[string]any{"lease_id": stateLease["lease_id"], "token": stateLease["token"]}
			c.do(200, "PUT", "/v1/agent-state", bot, map[string]any{"scope": scope, "body": map[string]any{"colour": "blue"}, "lease": stateProof})
			c.do(200, "POST", "/v1/agent-state/lease/renew", bot, map[string]any{"scope": scope, "ttl_seconds": 30, "lease_id": stateLease["lease_id"], "token": stateLease["token"]})
			c.do(200, "POST", "/v1/agent-state/lease/release", bot, map[string]any{"scope": scope, "lease_id": stateLease["lease_id"], "token": stateLease["token"]})
			c.do(409, "POST", "/v1/agent-state/lease/renew", bot, map[string]any{"scope": scope, "ttl_seconds": 30, "lease_id": stateLease["lease_id"], "token": stateLease["token"]})
			c.do(409, "POST", "/v1/agent-state/lease/release", bot, map[string]any{"scope": scope, "lease_id": stateLease["lease_id"], "token": stateLease["token"]})

			// Notes.
			n1 := c.do(201, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "tool_note", "title": "Stock API pagination", "body": "Follow next_cursor until empty.", "tags": []string{"stock"}}, "Idempotency-Key", "k-1")
			nid := id(n1, "id")
			c.do(201, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "tool_note", "title": "Stock API pagination", "body": "Follow next_cursor until empty.", "tags": []string{"stock"}}, "Idempotency-Key", "k-1")
			c.do(200, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "tool_note", "title": "Stock API pagination", "body": "Follow  next_cursor until empty.", "tags": []string{"stock"}}) // duplicate_of
			c.do(422, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "pitfall", "title": "Refund", "body": "Mail ana@example.com."})
			c.do(400, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "pitfall", "title": "x"})
			c.do(200, "GET", "/v1/agent-memory/notes?kind=tool_note&limit=10", bot, nil)
			c.do(400, "GET", "/v1/agent-memory/notes?limit=0", bot, nil)
			c.do(200, "GET", "/v1/agent-memory/notes/"+nid, bot, nil)
			c.do(404, "GET", "/v1/agent-memory/notes/note_nope", bot, nil)
			v2 := c.do(201, "POST", "/v1/agent-memory/notes/"+nid+"/versions", bot, map[string]any{"body": "Follow next_cursor until it is empty."})
			c.do(404, "POST", "/v1/agent-memory/notes/note_nope/versions", bot, map[string]any{"body": "x"})
			c.do(409, "POST", "/v1/agent-memory/notes/"+nid+"/retire", bot, nil)
			c.do(200, "POST", "/v1/agent-memory/notes/"+id(v2, "id")+"/retire", bot, nil)
			n3 := c.do(201, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "procedure", "title": "Size chart first", "body": "Offer the size chart before checkout.", "tags": []string{"order"}})
			_ = n3
			n4 := c.do(201, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "procedure", "title": "Deleted soon", "body": "A note deleted below.", "tags": []string{"gone"}})
			c.do(403, "DELETE", "/v1/agent-memory/notes/"+id(n4, "id"), bot, nil)
			c.do(200, "DELETE", "/v1/agent-memory/notes/"+id(n4, "id"), admin, nil)
			c.do(404, "DELETE", "/v1/agent-memory/notes/"+id(n4, "id"), admin, nil)
			b := c.do(200, "GET", "/v1/agent-memory/block?max_tokens=300&tags=order", bot, nil)
			c.do(304, "GET", "/v1/agent-memory/block?max_tokens=300&tags=order", bot, nil, "If-None-Match", b.Header.Get("ETag"))
			c.do(400, "GET", "/v1/agent-memory/block?max_tokens=10", bot, nil)
			c.do(200, "GET", "/v1/agent-memory/search?q=size+chart&limit=5", bot, nil)
			c.do(400, "GET", "/v1/agent-memory/search", bot, nil)

			// Proposals.
			c.do(200, "PUT", "/v1/documents/features", admin, map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
			p1 := id(c.do(202, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "pitfall", "title": "Kids sizes", "body": "Sizes run small in the kids line."}), "proposal_id")
			p2 := id(c.do(202, "POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "pitfall", "title": "Returns", "body": "Returns need the order number first."}), "proposal_id")
			c.do(200, "GET", "/v1/agent-memory/proposals?status=pending", admin, nil)
			c.do(400, "GET", "/v1/agent-memory/proposals?limit=0", admin, nil)
			c.do(200, "GET", "/v1/agent-memory/proposals/"+p1, admin, nil)
			c.do(404, "GET", "/v1/agent-memory/proposals/prop_nope", admin, nil)
			c.do(201, "POST", "/v1/agent-memory/proposals/"+p1+"/approve", admin, map[string]any{"edits": map[string]any{"title": "Kids sizes run small"}})
			c.do(409, "POST", "/v1/agent-memory/proposals/"+p1+"/reject", admin, nil)
			c.do(200, "POST", "/v1/agent-memory/proposals/"+p2+"/reject", admin, map[string]any{"reason": "too specific"})
			c.do(409, "POST", "/v1/agent-memory/proposals/"+p2+"/approve", admin, nil)
			c.do(202, "POST", "/v1/agent-memory/distill", admin, map[string]any{"conversation_id": "c-1", "source_id": "shop-bot"})
			c.do(400, "POST", "/v1/agent-memory/distill", admin, map[string]any{})

			// Turns and identity links.
			c.do(201, "POST", "/v1/turns", bot, map[string]any{"conversation_id": "c-1", "speaker": "customer", "text": "I am Ana, ana@example.com"})
			c.do(201, "POST", "/v1/turns", bot, map[string]any{"turns": []any{map[string]any{"conversation_id": "c-1", "speaker": "agent", "text": "Hello"}}})
			c.do(400, "POST", "/v1/turns", bot, map[string]any{"conversation_id": "c-1", "speaker": "robot", "text": "x"})
			c.do(200, "POST", "/v1/turns/read", bot, map[string]any{"conversation_id": "c-1", "limit": 1})
			c.do(400, "POST", "/v1/turns/read", bot, map[string]any{"conversation_id": "c-1", "after": "x"})
			c.do(201, "POST", "/v1/identity-links", bot, map[string]any{"conversation_id": "c-1", "subject": "email:ana@example.com", "status": "confirmed"})
			c.do(200, "POST", "/v1/identity-links", bot, map[string]any{"conversation_id": "c-1", "subject": "email:ana@example.com", "status": "unconfirmed"})
			c.do(400, "POST", "/v1/identity-links", bot, map[string]any{"conversation_id": "c-1", "subject": "email:ana@example.com", "status": "maybe"})

			// Compliance: workflows are started through the fake client; the export is then
			// built as its workflow would.
			ex := id(c.do(202, "POST", "/v1/exports", admin, map[string]any{"subject": "email:ana@example.com"}), "export_id")
			c.do(400, "POST", "/v1/exports", admin, map[string]any{})
			c.do(200, "GET", "/v1/exports/"+ex, admin, nil)
			c.do(404, "GET", "/v1/exports/exp_nope", admin, nil)
			c.do(409, "GET", "/v1/exports/"+ex+"/package", admin, nil)
			_, err := e.Deps.Compliance.BuildExport(context.Background(), e.SpaceID, ex)
			require.NoError(t, err)
			c.do(200, "GET", "/v1/exports/"+ex+"/package", admin, nil)
			c.do(200, "GET", "/v1/exports/"+ex, admin, nil)
			er := id(c.do(202, "POST", "/v1/erasures", admin, map[string]any{"conversation_id": "c-9"}), "erasure_id")
			c.do(400, "POST", "/v1/erasures", admin, map[string]any{})
			c.do(200, "GET", "/v1/erasures/"+er, admin, nil)
			c.do(404, "GET", "/v1/erasures/er_nope", admin, nil)
			c.do(409, "GET", "/v1/erasures/"+er+"/certificate", admin, nil)
			insertErasure(t, e, e.SpaceID, "er_done", "completed", e.Deps.Signer)
			c.do(200, "GET", "/v1/erasures/er_done/certificate", admin, nil)
			// A residue item of the content probe (issue 29 §1b), decided once.
			_, err = e.DB.NewInsert().Model(&models.ErasureFinding{ID: "ef_1", SpaceID: e.SpaceID, ErasureID: er, Store: "state",
				Kind: "agent_state", ItemID: "st_x", Location: "agent_states.body", MatchKind: "name", Status: "pending", CreatedAt: time.Now()}).Exec(context.Background())
			require.NoError(t, err)
			c.do(400, "POST", "/v1/erasures/"+er+"/residue/ef_1", admin, map[string]any{"decision": "maybe"})
			c.do(200, "POST", "/v1/erasures/"+er+"/residue/ef_1", admin, map[string]any{"decision": "not_subject"})
			c.do(409, "POST", "/v1/erasures/"+er+"/residue/ef_1", admin, map[string]any{"decision": "erase"})
			c.do(404, "POST", "/v1/erasures/"+er+"/residue/ef_nope", admin, map[string]any{"decision": "erase"})
			c.do(200, "GET", "/v1/signing-keys", "", nil)
			c.do(202, "POST", "/v1/retention/sweep", admin, nil)
			c.do(403, "POST", "/v1/retention/sweep", bot, nil)
			c.do(202, "DELETE", "/v1/agent-memory/notes?source_id=shop-bot", admin, nil)
			c.do(400, "DELETE", "/v1/agent-memory/notes", admin, nil)
			c.do(200, "GET", "/v1/agent-memory/export", admin, nil)
			c.do(403, "GET", "/v1/agent-memory/export", bot, nil)
			amx := id(c.do(202, "POST", "/v1/agent-memory/exports", admin, map[string]any{"source_id": "shop-bot"}), "export_id")
			c.do(400, "POST", "/v1/agent-memory/exports", admin, map[string]any{})
			c.do(403, "POST", "/v1/agent-memory/exports", bot, map[string]any{"source_id": "shop-bot"})
			c.do(200, "GET", "/v1/agent-memory/exports/"+amx, admin, nil)
			c.do(409, "GET", "/v1/agent-memory/exports/"+amx+"/file", admin, nil)
			_, err = e.Deps.Proposals.BuildExportFile(context.Background(), e.SpaceID, amx)
			require.NoError(t, err)
			c.do(200, "GET", "/v1/agent-memory/exports/"+amx+"/file", admin, nil)
			c.do(200, "GET", "/v1/agent-memory/exports/"+amx, admin, nil)
			c.do(404, "GET", "/v1/agent-memory/exports/amx_nope", admin, nil)

			// Knowledge (KN-1..KN-4): no embedder answers here, so the base is lexical_only.
			c.do(403, "POST", "/v1/knowledge", admin, map[string]any{"name": "handbook"}) // feature off
			c.do(200, "PUT", "/v1/documents/features", admin, map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true, "writes": "human_only"}, "knowledge": map[string]any{"enabled": true}})
			kb := id(c.do(201, "POST", "/v1/knowledge", admin, map[string]any{"name": "handbook", "settings": map[string]any{"embedder_down": "lexical_only", "max_age": "30d", "readers": map[string]any{"agents": []string{"kb-reader"}}}}), "id")
			c.do(400, "POST", "/v1/knowledge", admin, map[string]any{"name": "x", "settings": map[string]any{"chunk_tokens": 1}})
			c.do(409, "POST", "/v1/knowledge", admin, map[string]any{"name": "handbook"})
			reader := e.AgentKey("kb-reader", "acme-ai", "knowledge:read")
			c.do(200, "GET", "/v1/knowledge", reader, nil)
			c.do(403, "GET", "/v1/knowledge", bot, nil)
			doc := id(c.do(202, "POST", "/v1/knowledge/"+kb+"/documents", admin, map[string]any{"text": "# Refunds\n\nRefunds go to the original card.", "format": "markdown", "source_uri": "kb://refunds", "title": "Refunds", "version": "v1"}), "document_id")
			c.do(202, "POST", "/v1/knowledge/"+kb+"/documents", admin, map[string]any{"text": "# Refunds\n\nRefunds go to the original card.", "format": "markdown", "source_uri": "kb://refunds", "title": "Refunds", "version": "v1"})
			c.do(422, "POST", "/v1/knowledge/"+kb+"/documents", admin, map[string]any{"text": "Call (11) 91234-5678.", "source_uri": "kb://call"})
			c.do(403, "POST", "/v1/knowledge/"+kb+"/documents", reader, map[string]any{"text": "x", "source_uri": "kb://x"})
			c.do(404, "POST", "/v1/knowledge/kb_nope/documents", admin, map[string]any{"text": "x", "source_uri": "kb://x"})
			c.do(200, "GET", "/v1/knowledge/"+kb+"/documents?status=pending", reader, nil)
			c.do(400, "GET", "/v1/knowledge/"+kb+"/documents?status=lost", reader, nil)
			c.do(200, "GET", "/v1/knowledge/"+kb+"/documents/"+doc, reader, nil)
			c.do(404, "GET", "/v1/knowledge/"+kb+"/documents/kd_nope", reader, nil)
			c.do(200, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "refunds", "kbs": []string{kb}, "top_k": 3, "max_tokens": 500})
			c.do(400, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "", "kbs": []string{kb}})
			c.do(404, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "refunds", "kbs": []string{"kb_nope"}})
			c.do(200, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "refunds", "kbs": []string{kb}, "filters": map[string]any{"document_ids": []string{doc}, "source_uri_prefix": "kb://", "version": "v1", "title": "Refunds"}})
			c.do(400, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "refunds", "kbs": []string{kb}, "filters": map[string]any{"kb_id": kb}})
			ctxKey := e.AgentKey("kb-reader", "acme-ai", "context")
			c.do(200, "PUT", "/v1/documents/views", admin, map[string]any{"views": []any{map[string]any{"name": "voice", "tags": []string{"refund"}}}})
			c.do(200, "POST", "/v1/context", ctxKey, map[string]any{"view": "voice", "task": map[string]any{"id": "t-1", "object_types": []string{"order"}}, "max_tokens": 1000, "include_agent_memory": true, "knowledge": map[string]any{"kbs": []string{kb}, "query": "refunds"}})
			c.do(400, "POST", "/v1/context", ctxKey, map[string]any{"max_tokens": 1})
			c.do(200, "PUT", "/v1/knowledge/"+kb+"/readers", admin, map[string]any{"space": false, "agents": []string{"kb-reader"}, "vendors": []string{"acme-ai"}})
			c.do(400, "PUT", "/v1/knowledge/"+kb+"/readers", admin, map[string]any{"agents": []string{""}})
			c.do(403, "PUT", "/v1/knowledge/"+kb+"/readers", reader, map[string]any{"space": true})
			c.do(404, "PUT", "/v1/knowledge/kb_nope/readers", admin, map[string]any{"space": true})
			c.do(403, "DELETE", "/v1/knowledge/"+kb+"/documents/"+doc, reader, nil)
			c.do(200, "DELETE", "/v1/knowledge/"+kb+"/documents/"+doc, admin, nil)

			// Boards (issue 31).
			withBoards := apptest.ShopBotTypes()
			withBoards["types"] = append(withBoards["types"].([]any), findingsTypes()["types"].([]any)...)
			c.do(200, "PUT", "/v1/documents/object-types", admin, withBoards)
			scout := e.AgentKey("scout", "acme-ai")
			c.do(404, "POST", "/v1/boards/nope/grants", admin, map[string]any{"agent": "scout", "access": "read_write"})
			grant := c.do(201, "POST", "/v1/boards/findings/grants", admin, map[string]any{"agent": "scout", "access": "read_write", "boards": "inc-*"}).JSON(t)["grant"].(map[string]any)["id"].(string)
			c.do(200, "GET", "/v1/boards/findings/grants", admin, nil)
			c.do(403, "GET", "/v1/boards/findings/grants", scout, nil)
			c.do(404, "GET", "/v1/boards/nope/grants", admin, nil)
			board := map[string]any{"type": "findings", "id": "inc-1"}
			c.do(403, "PUT", "/v1/boards", bot, map[string]any{"type": "findings", "id": "inc-1", "if_version": 0, "body": map[string]any{"title": "a"}})
			c.do(200, "PUT", "/v1/boards", scout, map[string]any{"type": "findings", "id": "inc-1", "if_version": 0, "body": map[string]any{"title": "a", "hits": 1}})
			c.do(200, "PUT", "/v1/boards", scout, map[string]any{"type": "findings", "id": "inc-1", "if_version": 0, "body": map[string]any{"hits": 1}})
			c.do(412, "PUT", "/v1/boards", scout, map[string]any{"type": "findings", "id": "inc-1", "if_version": 0, "body": map[string]any{"title": "b"}})
			c.do(200, "POST", "/v1/boards/read", scout, board)
			c.do(403, "POST", "/v1/boards/read", bot, board)
			c.do(200, "GET", "/v1/boards?type=findings", admin, nil)
			c.do(403, "GET", "/v1/boards", scout, nil)
			lease := c.do(200, "POST", "/v1/boards/lease", scout, map[string]any{"type": "findings", "id": "inc-1", "ttl_seconds": 30}).JSON(t)
			c.do(409, "POST", "/v1/boards/lease", scout, map[string]any{"type": "findings", "id": "inc-1", "ttl_seconds": 30})
			c.do(409, "PUT", "/v1/boards", scout, map[string]any{"type": "findings", "id": "inc-1", "if_version": 2, "body": map[string]any{"title": "c"}})
			proof := map[string]any{"type": "findings", "id": "inc-1", "ttl_seconds": 30, "lease_id": lease["lease_id"], "token": lease["token"]}
			c.do(200, "POST", "/v1/boards/lease/renew", scout, proof)
			c.do(200, "POST", "/v1/boards/lease/release", scout, proof)
			c.do(409, "POST", "/v1/boards/lease/renew", scout, proof)
			c.do(409, "POST", "/v1/boards/lease/release", scout, proof)
			c.do(404, "DELETE", "/v1/boards/findings/grants/bg_nope", admin, nil)
			c.do(200, "DELETE", "/v1/boards/findings/grants/"+grant, admin, nil)

			// Bridges (issue 31, SH-3): this space's findings read by agent scout of space B.
			bID, bAdmin := e.NewSpace("beta", false)
			bSec := agentOrPerson(t, e, bAdmin, "person", "Rui")
			bScout := agentOrPerson(t, e, bAdmin, "agent", "scout")
			terms := map[string]any{"from": e.SpaceID, "to": bID, "agents": []string{"scout"}, "boards": []any{map[string]any{"type": "findings", "ids": "inc-*"}}}
			c.do(400, "POST", "/v1/bridges", admin, map[string]any{"from": e.SpaceID, "to": e.SpaceID, "agents": []string{"scout"}, "boards": []any{}})
			prop := c.do(202, "POST", "/v1/bridges", ada, terms).JSON(t)
			bridge := prop["bridge"].(map[string]any)["id"].(string)
			e.MustDo(200, "POST", "/v1/documents/bridges/changes/"+prop["change_id"].(string)+"/approve", sec, nil)
			terms["id"] = bridge
			peer := e.MustDo(202, "POST", "/v1/bridges", agentOrPerson(t, e, bAdmin, "person", "Bo"), terms).JSON(t)
			e.MustDo(200, "POST", "/v1/documents/bridges/changes/"+peer["change_id"].(string)+"/approve", bSec, nil)
			c.do(200, "GET", "/v1/bridges", admin, nil)
			c.do(403, "GET", "/v1/bridges", scout, nil)
			c.do(200, "POST", "/v1/boards/read", bScout, map[string]any{"type": "findings", "id": "inc-1", "space": e.SpaceID})
			c.do(404, "POST", "/v1/boards/read", bScout, map[string]any{"type": "findings", "id": "inc-2", "space": e.SpaceID})
			c.do(404, "DELETE", "/v1/bridges/br_nope", admin, nil)
			c.do(200, "DELETE", "/v1/bridges/"+bridge, admin, nil)

			// Receipts and events.
			page := c.do(200, "GET", "/v1/receipts?limit=5", admin, nil).JSON(t)
			first := page["receipts"].([]any)[0].(map[string]any)["id"].(string)
			c.do(404, "GET", "/v1/receipts/checkpoint", admin, nil)
			c.do(200, "GET", "/v1/receipts/"+first+"/proof", admin, nil) // no log part yet
			ns, err := e.Deps.Signer.NoteSigner(receipts.CheckpointName)
			require.NoError(t, err)
			_, err = receipts.CatchUpLog(t.Context(), e.DB, ns, time.Now()) // the log's pass (receipts.Log.Run)
			require.NoError(t, err)
			c.do(200, "GET", "/v1/receipts/"+first+"/proof", admin, nil) // with its log part
			c.do(200, "GET", "/v1/receipts/checkpoint", admin, nil)
			c.do(403, "GET", "/v1/receipts/checkpoint", bot, nil)
			c.do(200, "GET", "/v1/receipts/consistency?from=1", admin, nil)
			c.do(400, "GET", "/v1/receipts/consistency?from=0", admin, nil)
			c.do(403, "GET", "/v1/receipts/consistency?from=1", bot, nil)
			c.do(404, "GET", "/v1/receipts/rcpt_nope/proof", admin, nil)
			c.do(403, "GET", "/v1/receipts/"+first+"/proof", bot, nil)
			c.do(400, "GET", "/v1/receipts?limit=0", admin, nil)
			c.do(200, "GET", "/v1/receipts/verify", admin, nil)
			c.do(403, "GET", "/v1/receipts/verify", bot, nil)
			c.do(200, "GET", "/v1/receipts/head", admin, nil)
			c.do(403, "GET", "/v1/receipts/head", bot, nil)
			c.do(200, "GET", "/v1/events?after=0&limit=50", admin, nil)
			c.do(400, "GET", "/v1/events?limit=0", admin, nil)
			c.do(200, "GET", "/v1/events/webhook-secret", admin, nil)
			c.do(200, "GET", "/v1/export/feed?after=0&limit=50", admin, nil)
			c.do(200, "GET", "/v1/export/feed?tables=notes,agent_states&limit=5", admin, nil)
			c.do(400, "GET", "/v1/export/feed?tables=turns", admin, nil)
			c.do(403, "GET", "/v1/export/feed", bot, nil)
			c.do(403, "GET", "/v1/events/webhook-secret", bot, nil)

			// Every routed operation had a success and an error (the open ones: a success).
			for _, op := range c.ops {
				method, p, _ := strings.Cut(op, " ")
				if p == "/mcp" {
					continue // MCP is tested in mcp_test.go.
				}
				require.True(t, routed(e, method, p), "%s is documented but not routed", op)
				require.True(t, c.success[op], "no success answer checked for %s", op)
				if !slices.Contains([]string{"/healthz", "/openapi.json", "/readyz", "/metrics", "/v1/signing-keys"}, p) {
					require.True(t, c.failure[op], "no error answer checked for %s", op)
				}
			}
		})
	}
}

// anyWorkflows accepts every workflow start (the workflows themselves are tested elsewhere).
type anyWorkflows struct{}

func (anyWorkflows) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, nil
}

func (anyWorkflows) SignalWorkflow(context.Context, string, string, string, any) error { return nil }

func (anyWorkflows) GetWorkflow(context.Context, string, string) client.WorkflowRun { return nil }

// routed reports whether the engine has method and the document path p.
func routed(e *apptest.Env, method, p string) bool {
	for _, r := range e.Server.Routes() {
		if r.Method == method && ginParam.ReplaceAllString(r.Path, "{$1}") == p {
			return true
		}
	}
	return false
}

// agentOrPerson mints, with admin (a space's admin key), an agent key (kind "agent", no
// scopes) or a person key holding role security (kind "person") named name.
func agentOrPerson(t *testing.T, e *apptest.Env, admin, kind, name string) string {
	t.Helper()
	body := map[string]any{"kind": "person", "name": name, "roles": []string{"security"}}
	if kind == "agent" {
		body = map[string]any{"kind": "agent", "agent": name, "vendor": "acme", "scopes": []string{}}
	}
	return e.MustDo(http.StatusCreated, "POST", "/v1/keys", admin, body).JSON(t)["key"].(string)
}
