package main

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
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/metrics"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/subjects"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// The gate's model layer is internal/llm's detector.
var _ notes.Detector = (*llm.Client)(nil)

// app holds the wired domain services shared by serve, worker and dev.
type app struct {
	cfg      config.Config
	log      *slog.Logger
	db       *bun.DB
	hasher   keyed.Hasher
	keys     keystore.Store
	docs     spaces.Documents
	subjects *subjects.Service
	state    *state.Service
	// compliance runs erasures, exports and retention sweeps.
	compliance *compliance.Service
	turns      *turns.Service
	// eventMetrics counts the relay's deliveries (registered in metrics).
	eventMetrics *events.Metrics
	notes        *notes.Service
	proposals    *proposals.Service
	metrics      *metrics.Metrics
	ready        []api.ReadyCheck // GET /readyz's checks besides the database; set by serveHTTP
	// signer signs certificates and receipt heads (PR-3); nil: those routes answer 503.
	signer *signing.Signer
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	return logs.New(cfg.LogFormat, cfg.LogLevel, w)
}

// databaseURL is DATABASE_URL, or the SQLite file in the data dir.
func databaseURL(cfg config.Config) string {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL
	}
	return "sqlite://" + filepath.Join(cfg.DataDir, "agentmemory.db")
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

// openApp opens the database (migrating it), the key store and the domain services.
func openApp(ctx context.Context, cfg config.Config, log *slog.Logger, generateSecret bool) (*app, error) {
	secret, err := ensureSecret(cfg, generateSecret)
	if err != nil {
		return nil, err
	}
	if !config.IsPostgres(databaseURL(cfg)) {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, err
		}
	}
	d, err := db.Open(ctx, databaseURL(cfg), db.PoolOptions(cfg))
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx, d); err != nil {
		d.Close()
		return nil, err
	}
	signer, err := openSigner(cfg, generateSecret)
	if err != nil {
		d.Close()
		return nil, err
	}
	hasher := keyed.New([]byte(secret))
	ksPath := cfg.KeystorePath
	if ksPath == "" {
		ksPath = filepath.Join(cfg.DataDir, "keys.json")
	}
	ks, err := openKeystore(ctx, cfg, ksPath, hasher)
	if err != nil {
		d.Close()
		return nil, err
	}
	if pg, ok := ks.(*keystore.Postgres); ok {
		if err := keystoreApart(ctx, d); err != nil {
			pg.Close()
			d.Close()
			return nil, err
		}
	}
	a := &app{cfg: cfg, log: log, db: d, hasher: hasher, keys: ks, signer: signer, docs: spaces.Documents{DB: d, AllowPrivateWebhooks: cfg.WebhookAllowPrivate}, metrics: metrics.New()}
	if pg, ok := ks.(*keystore.Postgres); ok {
		a.ready = append(a.ready, api.ReadyCheck{Name: "keystore", Check: pg.Ping})
	}
	a.metrics.WatchOutbox(metrics.OutboxBacklog(d))
	a.subjects = &subjects.Service{DB: d, Docs: a.docs, Hasher: hasher, Keys: ks, Now: time.Now}
	a.turns = &turns.Service{DB: d, Subjects: a.subjects, Hasher: hasher, Keys: ks, Now: time.Now}
	a.state = &state.Service{DB: d, Docs: a.docs, Hasher: hasher, Masker: a.subjects, Now: time.Now, Keys: ks}
	a.compliance = &compliance.Service{DB: d, Docs: a.docs, Hasher: hasher, Keys: ks, Subjects: a.subjects, State: a.state, Now: time.Now,
		Turns: a.turns, TurnExports: a.turns, TurnSweeps: a.turns}
	if signer != nil {
		a.compliance.Signer = signer // certificates are signed when issued (PR-3)
	}
	a.eventMetrics = events.NewMetrics()
	a.metrics.Registry().MustRegister(a.eventMetrics)
	a.notes = &notes.Service{DB: d, Docs: a.docs, Subjects: a.subjects, Hasher: hasher, Now: time.Now}
	// The proposal lifecycle beside notes (AM-8, AM-9); it also erases an agent's notes and
	// proposals (AM-12).
	a.proposals = &proposals.Service{DB: d, Notes: a.notes}
	a.notes.Proposals = a.proposals
	a.compliance.Notes = a.proposals // AM-12: agent-note erasure
	// The reconciler fails a drafting proposal whose distillation workflow ended (issue 12 fix).
	a.compliance.Proposals = func(ctx context.Context, id, reason string) error {
		return a.proposals.MarkFailed(ctx, id, reason, nil)
	}
	if cfg.OllamaHost != "" && cfg.DetectorModel != "" {
		// The gate's model layer (AM-6): the detector model at OLLAMA_HOST, bounded by
		// notes.DefaultDetectorTimeout per call.
		det, err := llm.New(llm.Config{Host: cfg.OllamaHost, Model: cfg.OllamaModel, DetectorModel: cfg.DetectorModel})
		if err != nil {
			d.Close()
			return nil, err
		}
		a.notes.Detector = det
	}
	return a, nil
}

func (a *app) close() {
	a.db.Close()
	if pg, ok := a.keys.(*keystore.Postgres); ok {
		pg.Close()
	}
}

// openKeystore opens the subject key store: the shared PostgreSQL store when
// AGENTMEMORY_KEYSTORE_URL is set (keys wrapped by AGENTMEMORY_KEK), else the file at path
// (keys wrapped by a key derived from the server secret).
func openKeystore(ctx context.Context, cfg config.Config, path string, hasher keyed.Hasher) (keystore.Store, error) {
	if cfg.KeystoreURL == "" {
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

// apiServer builds the API; wf starts and signals workflows (nil: those calls answer 503).
func (a *app) apiServer(wf api.Workflows) *api.Server {
	if a.signer == nil {
		a.log.Warn("no signing key (AGENTMEMORY_SIGNING_KEY): certificates are issued unsigned, and signing keys and receipt heads answer 503 signing_unavailable")
	}
	return api.NewServer(api.Deps{
		DB: a.db, Logger: a.log, State: a.state, Subjects: a.subjects, Docs: a.docs, Turns: a.turns, Notes: a.notes,
		Workflows: wf, TaskQueue: a.cfg.TaskQueue, Compliance: a.compliance, Proposals: a.proposals,
		MaxBodyBytes: a.cfg.MaxBodyBytes, Now: time.Now,
		EventSigner: events.Signer{Hasher: &a.hasher},
		Metrics:     a.metrics, MetricsOnOwnPort: a.cfg.MetricsAddr != "", Ready: a.ready,
		Signer: a.signer,
	})
}
