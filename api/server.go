// Package api is the Gin HTTP API: it parses requests, authenticates keys, calls the domain
// packages and maps their errors to HTTP. No SQL and no business rules live here.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/metrics"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/internal/subjects"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/workflows"
)

// Deps are what the API needs; app.Build wires them (App.APIDeps).
type Deps struct {
	DB       *bun.DB
	Logger   *slog.Logger
	State    *state.Service
	Subjects *subjects.Service
	Notes    *notes.Service
	Docs     spaces.Documents
	// Changes are the documents' change requests (api/changes.go).
	Changes *changes.Service
	Turns   *turns.Service
	// Workflows starts and signals Temporal workflows (nil: distillation answers 503).
	Workflows Workflows
	// Proposals is the proposal lifecycle (lists, decisions, distillation proposals, the
	// agent-memory export); nil: distillation answers 503. NewServer has it decide distilled
	// proposals through their workflows when Workflows is set.
	Proposals *proposals.Service
	// TaskQueue is the Temporal task queue of the worker (default workflows.DefaultTaskQueue).
	TaskQueue string
	// ApprovalDeadline is how long a distilled proposal waits for approval
	// (AGENTMEMORY_APPROVAL_DEADLINE; 0: workflows.DefaultApprovalDeadline, 14 days).
	ApprovalDeadline time.Duration
	// DecisionWait is how long approve/reject of a distilled proposal wait for its workflow
	// before answering 202 (AGENTMEMORY_DECISION_WAIT; 0: DefaultDecisionWait).
	DecisionWait time.Duration
	MaxBodyBytes int64
	Now          func() time.Time
	// Compliance runs erasures, exports and sweeps.
	Compliance *compliance.Service
	// Boards is shared memory (issue 31, api/boards.go); nil answers 503 on its routes.
	Boards *boards.Service
	// Knowledge is the knowledge store (KN-1..KN-4); its ingests run as IngestWorkflow
	// through Workflows.
	Knowledge *knowledge.Service
	// EventSigner derives the spaces' webhook secrets (GET /v1/events/webhook-secret).
	EventSigner events.Signer
	// Signer signs erasure certificates and receipt-chain heads (PR-3, api/signing.go); nil
	// answers 503 signing_unavailable on those routes.
	Signer *signing.Signer
	// Metrics records request, state-write and other metrics; nil gets a fresh set.
	Metrics *metrics.Metrics
	// MetricsOnOwnPort leaves GET /metrics off this server (cmd serves it on
	// AGENTMEMORY_METRICS_ADDR).
	MetricsOnOwnPort bool
	// Ready are GET /readyz's checks besides the database (Temporal, Kafka when configured).
	Ready []ReadyCheck
	// KeyUsage notes each authenticated key's use for GET /v1/keys' last_used_at (nil: not
	// recorded); app.StartKeyUsage writes what it notes.
	KeyUsage *auth.Usage
}

// Server is the HTTP API.
type Server struct {
	Deps
	log    *slog.Logger
	engine *gin.Engine
	// keys caches the working-memory routes' keys and space documents on this replica,
	// exact through the space's configuration revision (spaces.KeyCache).
	keys *spaces.KeyCache
}

const (
	principalKey = "principal"
	requestIDKey = "request_id"
	// snapshotKey holds the request's spaces.Snapshot on the routes that authenticate with
	// the space documents (cachedKeys, prefetchDocuments); withConfig passes it on.
	snapshotKey = "snapshot"
)

// NewServer builds the API with every route of routes.go.
func NewServer(d Deps) *Server {
	gin.SetMode(gin.ReleaseMode)
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.TaskQueue == "" {
		d.TaskQueue = workflows.DefaultTaskQueue
	}
	if d.MaxBodyBytes == 0 {
		d.MaxBodyBytes = 1 << 20
	}
	if d.Metrics == nil {
		d.Metrics = metrics.New()
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if d.Proposals != nil && d.Workflows != nil && d.Proposals.Workflow == nil {
		// A reviewer's decision on a distilled proposal reaches its DistillWorkflow.
		d.Proposals = d.Proposals.WithWorkflow(workflows.Decisions{Client: d.Workflows, Wait: d.DecisionWait, Log: d.Logger})
	}
	s := &Server{Deps: d, log: d.Logger, engine: gin.New(), keys: spaces.NewKeyCache(0)}
	s.engine.HandleMethodNotAllowed = true
	s.engine.Use(s.requestID(), s.accessLog(), s.observe(), s.recoverJSON(), s.cleanRequest(), s.limitBody(), s.checkBody())
	s.routes() // also sets NoRoute and NoMethod: the Console's pages first, then noRoute, noMethod
	return s
}

// noRoute answers a path no route matches: 404 not_found.
func (s *Server) noRoute(c *gin.Context) {
	s.writeError(c, fault.New(fault.NotFound, "not_found", "no such route"))
}

// noMethod answers a route's path with a method it does not take: 405 method_not_allowed.
func (s *Server) noMethod(c *gin.Context) {
	c.AbortWithStatusJSON(http.StatusMethodNotAllowed, errorBody{"error": gin.H{"code": "method_not_allowed", "message": "method not allowed on this route"}})
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// HTTPServer returns an http.Server for addr with read, write and idle timeouts set.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr: addr, Handler: s,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
	}
}

// isRequestID reports whether id has the shape of a caller's X-Request-Id the server adopts:
// ^[A-Za-z0-9._:-]{1,64}$ (a short token that cannot carry free text such as an e-mail or a
// name) in which no stretch of digits and separators (. _ : -) holds more than
// maxRequestIDDigits digits, so a phone number in any of its written forms (5551234567,
// 555-123-4567, 44.20.7946.0958) is not adopted either (issue 27). The ids the server issues
// always pass. Anything else is replaced. Checked byte by byte (no regular expression per
// request).
func isRequestID(id string) bool {
	if len(id) < 1 || len(id) > 64 {
		return false
	}
	digits := 0 // digits in the current stretch of digits and separators
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case '0' <= c && c <= '9':
			if digits++; digits > maxRequestIDDigits {
				return false
			}
		case strings.IndexByte("._:-", c) >= 0:
		case alnum(c):
			digits = 0
		default:
			return false
		}
	}
	return true
}

// maxRequestIDDigits is the most digits a caller's request id may hold in one stretch of
// digits and separators: the shortest subscriber numbers dialled in full have 7.
const maxRequestIDDigits = 6

// newRequestID returns a fresh request id: 16 lowercase hex digits, drawn again in the rare
// case the draw holds a long stretch of decimal digits, so that an id the server issued is
// always adopted when a caller sends it back (isRequestID).
func newRequestID() string {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
		if id := hex.EncodeToString(b[:]); isRequestID(id) {
			return id
		}
	}
}

// isAgentVersion reports whether v is what an Agent-Version header may hold (MS-5
// provenance), ^[A-Za-z0-9][A-Za-z0-9._/+:-]{0,127}$: a short product/version token, never
// free text. Checked byte by byte (no regular expression per request).
func isAgentVersion(v string) bool {
	if len(v) < 1 || len(v) > 128 || !alnum(v[0]) {
		return false
	}
	for i := 1; i < len(v); i++ {
		if !alnum(v[i]) && !strings.ContainsRune("._/+:-", rune(v[i])) {
			return false
		}
	}
	return true
}

// alnum reports whether c is an ASCII letter or digit.
func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// requestID adopts the caller's X-Request-Id when it has its shape (isRequestID), else generates
// one (newRequestID, 16 hex digits); the caller's value is never logged or echoed otherwise. The id is in the
// answer's X-Request-Id header and in every log line of the request.
func (s *Server) requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("X-Request-Id")
		if !isRequestID(id) {
			id = newRequestID()
		}
		c.Set(requestIDKey, id)
		// One request: the key cache compares the key store's destroy generation once in it
		// (keystore.ForRequest, issue 29 §2).
		c.Request = c.Request.WithContext(keystore.ForRequest(logs.WithRequestID(c.Request.Context(), id)))
		c.Header("X-Request-Id", id)
		c.Next()
	}
}

// accessLog logs one line per request: method, route template (never the raw path, which may
// hold ids), status, duration, request id and, once a key authenticated, the space id (QT-2:
// not a secret; never the key id, scope ids or personal data).
func (s *Server) accessLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		space := ""
		if v, ok := c.Get(principalKey); ok {
			space = v.(auth.Principal).SpaceID
		}
		// Typed attributes: the same line as key-value pairs, without boxing each value.
		s.log.LogAttrs(c.Request.Context(), slog.LevelInfo, "request",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Int("status", c.Writer.Status()),
			slog.Int64("duration_ms", time.Since(start).Milliseconds()), slog.String("request_id", c.GetString(requestIDKey)),
			slog.String("space_id", space))
	}
}

// cleanRequest refuses, before any handler runs, a path or query that is not valid UTF-8 or
// holds a NUL byte, and an Agent-Version header that is not a short version token (400).
func (s *Server) cleanRequest() gin.HandlerFunc {
	return func(c *gin.Context) {
		p, q := c.Request.URL.Path, c.Request.URL.RawQuery
		if uq, err := url.QueryUnescape(q); err == nil {
			q = uq
		}
		if !utf8.ValidString(p) || !utf8.ValidString(q) || strings.ContainsRune(p, 0) || strings.ContainsRune(q, 0) {
			s.writeError(c, fault.New(fault.Invalid, "invalid_request", "the path and query must be valid UTF-8 without NUL characters"))
			return
		}
		if v := c.GetHeader("Agent-Version"); v != "" && !isAgentVersion(v) {
			s.writeError(c, fault.New(fault.Invalid, "invalid_header", "Agent-Version is 1-128 characters of letters, digits and . _ / + : -"))
			return
		}
		c.Next()
	}
}

func (s *Server) limitBody() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.MaxBodyBytes)
		}
		c.Next()
	}
}

// authenticate resolves the Bearer key into a Principal; nothing in the request body, query
// or path can choose the space.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		scheme, key, ok := strings.Cut(strings.TrimSpace(c.GetHeader("Authorization")), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
			s.writeError(c, fault.New(fault.Unauthorized, "missing_key", "send Authorization: Bearer <key>"))
			return
		}
		var p auth.Principal
		var snap spaces.Snapshot
		var err error
		if cachedKeys[c.FullPath()] {
			// The key and the space documents from this replica's cache, checked against
			// the space's configuration revision by the route's statements (withConfig).
			p, snap, err = s.keys.Authenticate(c.Request.Context(), s.DB, strings.TrimSpace(key))
		} else if prefetchDocuments[c.FullPath()] {
			// The key and the space documents in one statement (spaces.Documents.Both
			// answers from them for the rest of this request).
			p, snap, err = spaces.AuthenticateWithDocuments(c.Request.Context(), s.DB, strings.TrimSpace(key))
		} else {
			p, err = auth.Authenticate(c.Request.Context(), s.DB, strings.TrimSpace(key))
		}
		if err == nil && (cachedKeys[c.FullPath()] || prefetchDocuments[c.FullPath()]) {
			// The rest of the request reads the documents from the snapshot.
			c.Request = c.Request.WithContext(snap.WithDocuments(c.Request.Context()))
			c.Set(snapshotKey, snap)
		}
		if err != nil {
			s.writeError(c, err)
			return
		}
		s.KeyUsage.Touch(p.KeyID, s.Now())            // in memory; written off the request's path
		p.AgentVersion = c.GetHeader("Agent-Version") // checked by cleanRequest (MS-5)
		c.Set(principalKey, p)
		c.Next()
	}
}

// prefetchDocuments are the routes whose key lookup also reads the space documents in the
// same statement (spaces.AuthenticateWithDocuments), for routes that read them on every
// request and never write them. The prompt block moved to cachedKeys (issue 16).
var prefetchDocuments = map[string]bool{}

// cachedKeys are the routes whose key and space documents come from the replica's KeyCache,
// run through withConfig: the working-memory write and read, whose every statement checks
// the configuration revision the cache assumed (internal/state), and the prompt block, whose
// receipt commits only while it is current (notes.Service.Block).
var cachedKeys = map[string]bool{"/v1/agent-state": true, "/v1/agent-state/read": true, "/v1/agent-memory/block": true}

// withConfig runs fn with the request's context, principal and snapshot (the key and space
// documents as authenticated, spaces.Snapshot) through the key cache's Run: when fn finds
// that the space's configuration changed since they were read (spaces.ErrStaleConfig), or
// refuses the request on a cached snapshot that is no longer current, they are read again (a
// revoked key is then refused) and fn runs again, at most three times in all; nothing was
// written by a run that ended so.
func (s *Server) withConfig(c *gin.Context, fn func(ctx context.Context, p auth.Principal, snap spaces.Snapshot) error) error {
	snap, _ := c.Get(snapshotKey)
	current, _ := snap.(spaces.Snapshot) // set by authenticate; the zero Snapshot assumes nothing
	return s.keys.Run(s.ctx(c), s.DB, principal(c), current, func(ctx context.Context, p auth.Principal, snap spaces.Snapshot) error {
		c.Set(principalKey, p)
		return fn(ctx, p, snap)
	})
}

func principal(c *gin.Context) auth.Principal {
	return c.MustGet(principalKey).(auth.Principal)
}

// bind reads the body (capped) and decodes it strictly into v: duplicate keys, unknown
// members and trailing data are 400.
func bind(c *gin.Context, v any) error {
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	return strictjson.Decode(data, v)
}

func (s *Server) ctx(c *gin.Context) context.Context { return c.Request.Context() }

// readBody reads the capped body.
func readBody(c *gin.Context) ([]byte, error) { return io.ReadAll(c.Request.Body) }
