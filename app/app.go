// Package app is the service's one composition root. Build wires the database, the subject
// key store, the signer, the domain services and the metrics from a config.Config; Server
// builds the Gin API over them, NewWorker and StartWorker the Temporal worker, StartRelay the
// outbox relay, and ClientOptions the Temporal client's logger and metrics. cmd/agentmemory
// and every test rig (apptest, the worker and compliance tests) build the graph here, so
// what the tests run is what ships; a rig changes it only through Overrides and
// WorkerOptions.
//
// It sits outside internal/ because it imports api, worker and activities (internal/*
// never imports gin, Temporal, api, workflows or activities).
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/metrics"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/subjects"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// The gate's model layer is internal/llm's detector.
var _ notes.Detector = (*llm.Client)(nil)

// Overrides are what a caller of Build may supply instead of what the configuration opens.
// The zero value is the binary's: everything from the configuration.
type Overrides struct {
	// DB is the database to use instead of opening (and migrating) DATABASE_URL or the data
	// dir's SQLite file; tests pass a dbtest database. Close leaves it open.
	DB *bun.DB
	// Keys is the subject key store to use instead of opening AGENTMEMORY_KEYSTORE_URL or the
	// file store. Close leaves it open.
	Keys keystore.Store
	// GenerateSecret lets Build create the server secret and the signing key in the data dir
	// when AGENTMEMORY_SECRET and AGENTMEMORY_SIGNING_KEY are unset (dev); without it the
	// secret is required and a missing signing key leaves Signer nil.
	GenerateSecret bool
	// Logger receives every log line; nil discards them.
	Logger *slog.Logger
	// Now is every service's clock; nil is time.Now.
	Now func() time.Time
	// Metrics is the registry every metric is recorded on; nil gets a fresh one.
	Metrics *metrics.Metrics
}

// App is the wired service graph. Its fields are shared: the API, the worker and the relay
// built from one App use the same services, clock, logger and metrics.
type App struct {
	Config config.Config
	Log    *slog.Logger
	// Now is the clock every service uses.
	Now    func() time.Time
	DB     *bun.DB
	Hasher keyed.Hasher
	// Keys is the data-key store, behind one keystore.Cache shared by every service (Build).
	Keys keystore.Store
	Docs spaces.Documents
	// Changes are the documents' change requests (issue 15): proposed, shown as a diff,
	// applied when a second person holding role security approves.
	Changes  *changes.Service
	Subjects *subjects.Service
	State    *state.Service
	// Boards is shared memory (issue 31): boards, their grants and leases.
	Boards *boards.Service
	Turns  *turns.Service
	Notes  *notes.Service
	// Runs keeps the budgets of runs (CTX-3), drawn on by every memory read of a run.
	Runs *runs.Store
	// Proposals owns the proposal lifecycle beside notes (AM-8, AM-9): agents' writes under
	// human_only, distillation, decisions, and agent-note erasure (AM-12).
	Proposals *proposals.Service
	// Compliance runs erasures, exports, retention sweeps and the orphan reconciler.
	Compliance *compliance.Service
	// Knowledge is the knowledge store (KN-1..KN-4): bases, documents, retrieval. Its
	// Embedder is the Ollama client at OLLAMA_HOST (nil when that does not build); rigs may
	// replace it.
	Knowledge *knowledge.Service
	// Metrics is the Prometheus registry of the process (/metrics), also Temporal's.
	Metrics *metrics.Metrics
	// EventMetrics counts the relay's deliveries (registered in Metrics).
	EventMetrics *events.Metrics
	// Signer signs certificates and receipt heads (PR-3); nil: issued unsigned, and those
	// routes answer 503.
	Signer *signing.Signer
	// Receipts is the process's receipt log (issue 16): the group committer of reads'
	// receipts, and the sealer of every space's chain (its hook seals after each commit that
	// appended receipts; StartSealer runs its safety-net timer).
	Receipts *receipts.Log
	// Ready are GET /readyz's checks besides the database (the key database when shared;
	// cmd adds Temporal and Kafka).
	Ready []api.ReadyCheck
	// KeyUsage notes the API keys' uses (GET /v1/keys' last_used_at); StartKeyUsage writes
	// them every auth.UsageResolution, and the key listing before it reads.
	KeyUsage *auth.Usage

	closers []func()
	// temporalOnce builds temporalHandler, the one Temporal metrics handler on Metrics.
	temporalOnce    sync.Once
	temporalHandler client.MetricsHandler
}

// Build opens (or takes from o) the database and the key store and wires every service of
// cfg. Errors: the secret missing (unless o.GenerateSecret), a database that does not open
// or migrate, a signing key that does not parse, a key store that does not open or shares
// the main database. Call Close when done.
func Build(ctx context.Context, cfg config.Config, o Overrides) (_ *App, err error) {
	a := newApp(cfg, o)
	defer func() {
		if err != nil {
			a.Close() // what Build opened before the error
		}
	}()
	secret, err := ensureSecret(cfg, o.GenerateSecret)
	if err != nil {
		return nil, err
	}
	if err := a.openStores(ctx, o, secret); err != nil {
		return nil, err
	}
	a.wire()
	if err := a.wireModels(ctx); err != nil {
		return nil, err
	}
	if err := warnAsyncCommit(ctx, a.DB, a.Log); err != nil {
		return nil, err
	}
	return a, nil
}

// newApp is Build's first phase: the App of cfg with o's logger, clock and metrics, or the
// defaults (a discarding logger, time.Now, a new registry).
func newApp(cfg config.Config, o Overrides) *App {
	a := &App{Config: cfg, Log: o.Logger, Now: o.Now, Metrics: o.Metrics}
	if a.Log == nil {
		a.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	if a.Metrics == nil {
		a.Metrics = metrics.New()
	}
	return a
}

// openStores is Build's second phase: the database (o.DB, or opened and migrated from cfg),
// the signer, the hasher of secret and the key store (o.Keys, or opened from cfg and kept
// apart from the main database), read through one bounded cache. What it opens is closed by
// Close.
func (a *App) openStores(ctx context.Context, o Overrides, secret string) (err error) {
	cfg := a.Config
	a.DB = o.DB
	if a.DB == nil {
		if a.DB, err = openDB(ctx, cfg); err != nil {
			return err
		}
		d := a.DB
		a.closers = append(a.closers, func() { _ = db.Close(d) }) // at shutdown: nothing is left to report a failed close to
	}
	if a.Signer, err = openSigner(cfg, o.GenerateSecret); err != nil {
		return err
	}
	a.Hasher = keyed.New([]byte(secret))
	a.Keys = o.Keys
	if a.Keys == nil {
		if a.Keys, err = openKeystore(ctx, cfg, a.Hasher); err != nil {
			return err
		}
		if pg, ok := a.Keys.(*keystore.Postgres); ok {
			a.closers = append(a.closers, func() { _ = pg.Close() }) // at shutdown: nothing is left to report a failed close to
			if err := keystoreApart(ctx, a.DB); err != nil {
				return err
			}
		}
	}
	if pg, ok := a.Keys.(*keystore.Postgres); ok {
		a.Ready = append(a.Ready, api.ReadyCheck{Name: "keystore", Check: pg.Ping})
	}
	if _, cached := a.Keys.(*keystore.Cache); !cached {
		// Every service of the process reads keys through one bounded cache (issue 29 §1:
		// blocks and search unseal every note), and destroys through it, which evicts at once.
		a.Keys = keystore.Cached(a.Keys, keystore.DefaultCacheSize, keystore.DefaultCacheTTL)
	}
	return nil
}

// wireModels is Build's phase after wire: the gate's model layer when configured, the
// knowledge embedder, and the knowledge vector index (its path logged).
func (a *App) wireModels(ctx context.Context) error {
	cfg := a.Config
	if cfg.DetectorModel != "" {
		// The gate's model layer (AM-6): the detector model at OLLAMA_HOST, bounded by
		// notes.DefaultDetectorTimeout per call.
		det, err := llm.New(llm.Config{Host: cfg.OllamaHost, Model: cfg.OllamaModel, DetectorModel: cfg.DetectorModel})
		if err != nil {
			return err
		}
		a.Notes.Detector = det
	}
	if emb, err := llm.New(llm.Config{Host: cfg.OllamaHost, Model: cfg.OllamaModel}); err == nil {
		a.Knowledge.Embedder = emb // /api/embed with each base's embedding model (KN-2)
	}
	// The knowledge vector index: sqlite-vec, pgvector (created and backfilled when the
	// server has it) or the exact scan; the line names the path and why, nothing else.
	vp, err := a.Knowledge.PrepareVectors(ctx)
	if err != nil {
		return err
	}
	a.Log.Info("knowledge vector index", "path", vp.Name, "pgvector_version", vp.Version, "reason", vp.Reason)
	return nil
}

// warnAsyncCommit logs a warning when d is PostgreSQL with synchronous_commit off for the
// service's sessions: every write is then answered before it is durable, and receipts.Flush,
// which makes the receipts of reads durable before they are answered, waits for nothing
// (docs/scaling.md). The service still runs; the operator chose the setting.
func warnAsyncCommit(ctx context.Context, d *bun.DB, log *slog.Logger) error {
	if db.IsSQLite(d) {
		return nil
	}
	var setting string
	if err := d.NewRaw("SHOW synchronous_commit").Scan(ctx, &setting); err != nil {
		return fmt.Errorf("read synchronous_commit: %w", err)
	}
	if setting == "off" {
		log.Warn("PostgreSQL synchronous_commit is off: acknowledged writes and receipts can be lost in a crash; set it to on (or remote_apply, remote_write, local)")
	}
	return nil
}

// wire builds the domain services over a's database, hasher, key store and clock.
func (a *App) wire() {
	d, h, ks, now := a.DB, a.Hasher, a.Keys, a.Now
	a.Receipts = receipts.NewLog(d, a.Log, 0)
	a.Receipts.SetCheckpointRetention(a.Config.ReceiptCheckpointRetention)
	a.KeyUsage = auth.NewUsage()
	a.Docs = spaces.Documents{DB: d, AllowPrivateWebhooks: a.Config.WebhookAllowPrivate}
	a.Changes = &changes.Service{DB: d, Docs: a.Docs}
	a.Metrics.WatchOutbox(metrics.OutboxBacklog(d))
	a.Subjects = &subjects.Service{DB: d, Docs: a.Docs, Hasher: h, Keys: ks, Now: now}
	a.Turns = &turns.Service{DB: d, Subjects: a.Subjects, Hasher: h, Keys: ks, Receipts: a.Receipts, Now: now}
	a.State = &state.Service{DB: d, Docs: a.Docs, Hasher: h, Masker: a.Subjects, Now: now, Keys: ks}
	a.Boards = &boards.Service{DB: d, Docs: a.Docs, Changes: a.Changes, Hasher: h, Masker: a.State, Receipts: a.Receipts, Now: now, Keys: ks}
	a.Compliance = &compliance.Service{DB: d, Docs: a.Docs, Hasher: h, Keys: ks, Subjects: a.Subjects, State: a.State, Now: now,
		TurnSweeps: a.Turns, FeedRetention: a.Config.ExportFeedRetention}
	if a.Signer != nil {
		a.Compliance.Signer = a.Signer // certificates are signed when issued (PR-3)
		// The receipt log's checkpoints too (issue 32). NoteSigner fails only on a key name
		// note refuses; CheckpointName is a valid one (TestCheckpointSigned).
		if ns, err := a.Signer.NoteSigner(receipts.CheckpointName); err == nil {
			a.Receipts.SetCheckpointSigner(ns)
		}
	}
	a.EventMetrics = events.NewMetrics()
	a.Metrics.Registry().MustRegister(a.EventMetrics)
	a.Metrics.Registry().MustRegister(feed.LagCollector{DB: d}) // export sinks' lag (issue 33)
	a.Runs = &runs.Store{DB: d, Docs: a.Docs, Now: now}         // the budgets of runs (CTX-3)
	a.Notes = &notes.Service{DB: d, Docs: a.Docs, Subjects: a.Subjects, Hasher: h, Now: now, Receipts: a.Receipts, Runs: a.Runs, Keys: ks}
	a.Proposals = &proposals.Service{DB: d, Docs: a.Docs, Hasher: h, Keys: ks, Notes: a.Notes, Now: now}
	a.Compliance.NoteSweeps = a.Notes // retention.notes (issue 34 §1)
	a.Compliance.Notes = a.Proposals  // AM-12: agent-note erasure erases notes and proposals
	// Knowledge documents pass the notes gate (refuse) or the space's masking (mask).
	a.Knowledge = &knowledge.Service{DB: d, Docs: a.Docs, Gate: notes.DocumentGate{S: a.Notes}, Masker: a.Subjects, Subjects: a.Subjects, Now: now, Receipts: a.Receipts,
		Keys: ks, Hasher: h, QueryEmbedTimeout: a.Config.KnowledgeQueryTimeout, Runs: a.Runs}
	a.Compliance.Erasers = a.erasers()
	// The reconciler fails a drafting proposal whose distillation workflow ended (issue 12 fix).
	a.Compliance.Proposals = func(ctx context.Context, id, reason string) error {
		return a.Proposals.MarkFailed(ctx, id, reason, nil)
	}
}

// erasers is the erasure registry (issue 29 §4): every store that holds personal data, in
// the order an erasure erases them; the erasure row records these names and ErasureWorkflow
// erases them one by one, and the preview, the data package, the probe, the coverage checks
// and the vacuum list all read it. Adding a store is one eraser (an erasure.Eraser in the
// store's package) and one line here (docs/compliance.md).
func (a *App) erasers() *erasure.Registry {
	r := &erasure.Registry{}
	for _, e := range []erasure.Eraser{
		state.Eraser{S: a.State},                // agent_states (WM-13)
		boards.Eraser{S: a.Boards},              // boards naming the subject (issue 31)
		turns.Eraser{S: a.Turns},                // turns and identity links
		compliance.ExportsEraser{},              // export_packages (GOV-3)
		knowledge.Eraser{S: a.Knowledge},        // knowledge documents naming the subject (KN-3)
		subjects.Eraser{S: a.Subjects},          // profiles and their handles
		proposals.ContentEraser{S: a.Proposals}, // agent notes: by content only (issue 29 §1b)
		events.Eraser{},                         // the outbox: removes nothing, probes payloads
	} {
		r.Register(e)
	}
	return r
}

// Close closes what Build opened (the database, a PostgreSQL key store), not what Overrides
// supplied. Closing twice does nothing.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// DatabaseURL is DATABASE_URL, or the SQLite file agentmemory.db in the data dir.
func DatabaseURL(cfg config.Config) string {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL
	}
	return "sqlite://" + filepath.Join(cfg.DataDir, "agentmemory.db")
}

// OpenMigrated opens DatabaseURL(cfg) with cfg's pool settings (creating the data dir for
// SQLite), applies the pending migrations and returns their names.
func OpenMigrated(ctx context.Context, cfg config.Config) (*bun.DB, []string, error) {
	u := DatabaseURL(cfg)
	if !config.IsPostgres(u) {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, nil, err
		}
	}
	d, err := db.Open(ctx, u, db.PoolOptions(cfg))
	if err != nil {
		return nil, nil, err
	}
	names, err := db.Migrate(ctx, d)
	if err != nil {
		_ = d.Close() // the migration error is the one to report
		return nil, nil, err
	}
	return d, names, nil
}

func openDB(ctx context.Context, cfg config.Config) (*bun.DB, error) {
	d, _, err := OpenMigrated(ctx, cfg)
	return d, err
}

// ensureSecret returns AGENTMEMORY_SECRET or, when generate is set, the secret kept in the
// data dir (created on first use, mode 0600).
func ensureSecret(cfg config.Config, generate bool) (string, error) {
	if cfg.Secret != "" {
		return cfg.Secret, nil
	}
	path := filepath.Join(cfg.DataDir, "secret")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if !generate {
		return "", errors.New("AGENTMEMORY_SECRET is not set (and no secret file in the data dir)")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return secret, nil
}

// SigningKeyFile is the signing key dev keeps in the data dir when AGENTMEMORY_SIGNING_KEY
// is unset (base64 seed, mode 0600).
const SigningKeyFile = "signing-key"

// openSigner returns the signer of AGENTMEMORY_SIGNING_KEY or, for dev (generate), of the
// signing-key file in the data dir, created on first use. serve and worker read only the
// variable, never a file dev left behind: without it they return nil, and the signed routes
// answer 503 signing_unavailable while certificates are issued unsigned (PR-3).
func openSigner(cfg config.Config, generate bool) (*signing.Signer, error) {
	key := cfg.SigningKey
	if key == "" && !generate {
		return nil, nil
	}
	if key == "" {
		path := filepath.Join(cfg.DataDir, SigningKeyFile)
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			key = strings.TrimSpace(string(b))
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("read %s: %w", path, err)
		default:
			seed, _, err := signing.GenerateKey()
			if err != nil {
				return nil, err
			}
			if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, []byte(seed+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
			key = seed
		}
	}
	priv, err := signing.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	previous, err := signing.ParsePrevious(cfg.SigningKeysPrevious)
	if err != nil {
		return nil, err
	}
	return signing.NewSigner(priv, time.Time{}, previous...)
}

// openKeystore opens the subject key store: the shared PostgreSQL store when
// AGENTMEMORY_KEYSTORE_URL is set (keys wrapped by AGENTMEMORY_KEK), else the file at
// AGENTMEMORY_KEYSTORE (keys.json in the data dir when unset; keys wrapped by a key derived
// from the server secret).
func openKeystore(ctx context.Context, cfg config.Config, hasher keyed.Hasher) (keystore.Store, error) {
	if cfg.KeystoreURL == "" {
		path := cfg.KeystorePath
		if path == "" {
			path = filepath.Join(cfg.DataDir, "keys.json")
		}
		return keystore.OpenFile(path, hasher.Key("subject-keys"))
	}
	cur, prev, err := cfg.KEKs()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return keystore.OpenPostgres(ctx, cfg.KeystoreURL, keystore.PostgresOptions{KEK: cur, Previous: prev})
}

// keystoreApart refuses a shared key store that lives in the main database: a check by
// content, not by URL (another spelling of the same database passes any comparison of
// strings), which holds for every URL naming it. The key store's table and canary visible
// from DATABASE_URL mean its keys would share the main database's backups, and erasure would
// no longer make those backups unreadable (issue 12 §5).
func keystoreApart(ctx context.Context, main *bun.DB) error {
	if main.Dialect().Name() != dialect.PG {
		return nil
	}
	var shared bool
	err := main.QueryRowContext(ctx, "SELECT to_regclass('subject_keys') IS NOT NULL").Scan(&shared)
	if err != nil {
		return fmt.Errorf("keystore: check that it is apart from DATABASE_URL: %w", err)
	}
	if shared {
		var canary int
		if err := main.QueryRowContext(ctx, "SELECT count(*) FROM subject_keys WHERE subject_id = ?", keystore.CanaryID).Scan(&canary); err != nil {
			return fmt.Errorf("keystore: check that it is apart from DATABASE_URL: %w", err)
		}
		shared = canary > 0
	}
	if shared {
		return errors.New("AGENTMEMORY_KEYSTORE_URL names the database of DATABASE_URL (its key store table is visible there): " +
			"the key store must be a database of its own, whose backups are kept apart")
	}
	return nil
}

// APIDeps are the API's dependencies over a's services; wf starts and signals workflows
// (nil: those calls answer 503). A rig may adjust them before api.NewServer.
func (a *App) APIDeps(wf api.Workflows) api.Deps {
	return api.Deps{
		DB: a.DB, Logger: a.Log, State: a.State, Subjects: a.Subjects, Docs: a.Docs, Changes: a.Changes, Turns: a.Turns, Notes: a.Notes,
		Workflows: wf, TaskQueue: a.Config.TaskQueue, Compliance: a.Compliance, Proposals: a.Proposals,
		ApprovalDeadline: a.Config.ApprovalDeadline, DecisionWait: a.Config.DecisionWait,
		MaxBodyBytes: a.Config.MaxBodyBytes, Now: a.Now,
		EventSigner: events.Signer{Hasher: &a.Hasher},
		Metrics:     a.Metrics, MetricsOnOwnPort: a.Config.MetricsAddr != "", Ready: a.Ready,
		Signer: a.Signer, Knowledge: a.Knowledge, KeyUsage: a.KeyUsage, Boards: a.Boards,
	}
}

// Server builds the API over a (APIDeps(wf)).
func (a *App) Server(wf api.Workflows) *api.Server {
	if a.Signer == nil {
		a.Log.Warn("no signing key (AGENTMEMORY_SIGNING_KEY): certificates are issued unsigned, and signing keys and receipt heads answer 503 signing_unavailable")
	}
	return api.NewServer(a.APIDeps(wf))
}

// The knowledge store's embedder is internal/llm's client.
var _ knowledge.Embedder = (*llm.Client)(nil)
