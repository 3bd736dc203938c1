// Package config reads the service's configuration from the environment. It is the only
// package that knows the environment variable names; everything else receives a Config.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/agentmemory/agentmemory/internal/signing"
)

// Config is the whole configuration of the service. Each field names its environment variable
// and default; docs/production.md's configuration table lists the same (a test keeps the two
// in step).
type Config struct {
	// DatabaseURL selects the store: "postgres://..." for PostgreSQL, "sqlite://PATH" or
	// "file:PATH" for SQLite. Empty means the SQLite file in DataDir.
	DatabaseURL string `env:"DATABASE_URL"`
	// DataDir holds the embedded default's durable files: database, Temporal's database,
	// the subject key store and the generated server secret.
	DataDir string `env:"AGENTMEMORY_DATA_DIR" envDefault:"./data"`
	// Addr is the API's listen address (host:port).
	Addr string `env:"AGENTMEMORY_ADDR" envDefault:"127.0.0.1:8080"`
	// MetricsAddr, when set, serves GET /metrics (and /healthz) on this host:port instead of
	// on the API's port; the worker serves its metrics only there.
	MetricsAddr string `env:"AGENTMEMORY_METRICS_ADDR"`
	// Secret keys every keyed hash (scope ids, handles) and wraps subject keys. Required by
	// serve and worker (at least 32 characters); dev generates one in DataDir.
	Secret string `env:"AGENTMEMORY_SECRET"`
	// KeystorePath is the subject key store file; empty means keys.json in DataDir. Back it up
	// apart from the database, with short-lived backups (erasure destroys keys here).
	KeystorePath string `env:"AGENTMEMORY_KEYSTORE"`
	// TemporalAddress is host:port of a Temporal frontend. Empty in dev starts a dev server.
	TemporalAddress string `env:"TEMPORAL_ADDRESS"`
	// TemporalCLI is the path of the Temporal CLI that dev starts; empty means ./bin/temporal,
	// then temporal on PATH.
	TemporalCLI string `env:"AGENTMEMORY_TEMPORAL_CLI"`
	// TemporalNamespace is the Temporal namespace the worker and API use.
	TemporalNamespace string `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	// TaskQueue is the Temporal task queue of the worker.
	TaskQueue string `env:"AGENTMEMORY_TASK_QUEUE" envDefault:"agentmemory"`
	// KafkaBrokers lists host:port of Kafka brokers, comma-separated; empty leaves the outbox
	// relay off (events stay in the outbox table).
	KafkaBrokers []string `env:"KAFKA_BROKERS" envSeparator:","`
	// ExportDir is the root of the export feed's directory sinks (issue 33): a sink named N
	// of space S writes under ExportDir/S/N/. Empty means export/ in DataDir.
	ExportDir string `env:"AGENTMEMORY_EXPORT_DIR"`
	// ExportPoll is how long a sink's workflow waits when the feed had nothing new.
	ExportPoll time.Duration `env:"AGENTMEMORY_EXPORT_POLL" envDefault:"5s"`
	// ExportFeedRetention is how long the export feed keeps a change record once every
	// configured sink of its space acknowledged it (with no sinks: from its change); the
	// retention sweep prunes older ones and a reader below the pruned range gets 410
	// cursor_expired. 0 keeps every record.
	ExportFeedRetention time.Duration `env:"AGENTMEMORY_EXPORT_FEED_RETENTION" envDefault:"0s"`
	// ReceiptCheckpointRetention is how long the receipt log keeps a signed checkpoint
	// (issue 32): older ones are pruned, at most once a minute, except the latest, which is
	// always kept. Inclusion proofs are given in the latest checkpoint and consistency
	// proofs need no stored checkpoint, so pruning loses only the stored copies of old tree
	// heads. 0 keeps every checkpoint.
	ReceiptCheckpointRetention time.Duration `env:"AGENTMEMORY_RECEIPT_CHECKPOINT_RETENTION" envDefault:"0s"`
	// KafkaTopic receives the events.
	KafkaTopic string `env:"KAFKA_TOPIC" envDefault:"agentmemory.events"`
	// OllamaHost is the base URL of the Ollama-API server that distils notes (and, with
	// DetectorModel, runs the gate's model layer). While nothing answers there,
	// distillations wait durably (drafting, last_error model_unreachable).
	OllamaHost string `env:"OLLAMA_HOST" envDefault:"http://127.0.0.1:11434"`
	// OllamaModel is the model asked to distil notes.
	OllamaModel string `env:"OLLAMA_MODEL" envDefault:"llama3.2"`
	// DetectorModel, when set, turns on the model layer of the personal-data gate: this model
	// at OllamaHost.
	DetectorModel string `env:"AGENTMEMORY_DETECTOR_MODEL"`
	// ApprovalDeadline is how long a distilled proposal waits for a person's decision before
	// it expires; the API and the worker's reconciler start DistillWorkflow with it. At least
	// 1m.
	ApprovalDeadline time.Duration `env:"AGENTMEMORY_APPROVAL_DEADLINE" envDefault:"336h"`
	// DecisionWait is how long approve and reject of a distilled proposal wait for its
	// workflow to apply the decision before answering 202: more than 0, at most 50s (under
	// the HTTP server's 60 s write timeout).
	DecisionWait time.Duration `env:"AGENTMEMORY_DECISION_WAIT" envDefault:"5s"`
	// KnowledgeQueryTimeout is how long a knowledge retrieval waits for its query's embedding
	// before the model counts as down for that call (each base's embedder_down then applies):
	// more than 0, at most 50s (under the HTTP server's 60 s write timeout).
	KnowledgeQueryTimeout time.Duration `env:"AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT" envDefault:"10s"`
	// MaxBodyBytes caps every request body (413 past it); at least 1024.
	MaxBodyBytes int64 `env:"AGENTMEMORY_MAX_BODY_BYTES" envDefault:"1048576"`
	// LogFormat is "json" (production) or "text".
	LogFormat string `env:"AGENTMEMORY_LOG_FORMAT" envDefault:"json"`
	// LogLevel is "debug", "info", "warn" or "error".
	LogLevel string `env:"AGENTMEMORY_LOG_LEVEL" envDefault:"info"`
	// DBMaxOpenConns caps the PostgreSQL pool of one process (at least 1). Size it so that
	// replicas x DBMaxOpenConns stays under the server's max_connections.
	DBMaxOpenConns int `env:"AGENTMEMORY_DB_MAX_OPEN_CONNS" envDefault:"20"`
	// SweepEvery is how often the retention schedule sweeps expired data (WM-12, MS-3).
	SweepEvery time.Duration `env:"AGENTMEMORY_SWEEP_EVERY" envDefault:"1h"`
	// DBMaxIdleConns is how many PostgreSQL connections stay open while idle: 0 to
	// DBMaxOpenConns (0 keeps none: every statement opens a new session). The variable's
	// -1 (the default) means "same as AGENTMEMORY_DB_MAX_OPEN_CONNS"; Load resolves it, so a
	// loaded Config always holds the count itself (never -1).
	DBMaxIdleConns int `env:"AGENTMEMORY_DB_MAX_IDLE_CONNS" envDefault:"-1"`
	// DBConnMaxLifetime recycles a PostgreSQL connection after this long (0: never), so a
	// failover or a pooler's rebalancing reaches every replica.
	DBConnMaxLifetime time.Duration `env:"AGENTMEMORY_DB_CONN_MAX_LIFETIME" envDefault:"30m"`
	// DBStatementTimeout is PostgreSQL's statement_timeout for every connection of the pool
	// (0: no limit): a statement running longer is cancelled by the server.
	DBStatementTimeout time.Duration `env:"AGENTMEMORY_DB_STATEMENT_TIMEOUT" envDefault:"30s"`
	// WebhookAllowPrivate lets webhook URLs and deliveries reach loopback, private and
	// link-local addresses. Only for tests and local development with a receiver on this
	// host; off, such URLs are refused (SSRF).
	WebhookAllowPrivate bool `env:"AGENTMEMORY_WEBHOOK_ALLOW_PRIVATE" envDefault:"false"`
	// ShutdownTimeout bounds the drain of HTTP requests and of running activities on SIGTERM.
	ShutdownTimeout time.Duration `env:"AGENTMEMORY_SHUTDOWN_TIMEOUT" envDefault:"15s"`

	// Periodic reconciler (issue 11 §3).
	// ReconcileInterval is how often the worker looks for erasures, exports and distillations
	// whose workflow was never started (the request died, or Temporal did not answer) and
	// starts them; with the reconciler's 30 s minimum age an orphan starts within a minute.
	// At least 1s.
	ReconcileInterval time.Duration `env:"AGENTMEMORY_RECONCILE_INTERVAL" envDefault:"20s"`

	// Shared key store (issue 12 §5, GOV-2, MS-4): subject keys in a PostgreSQL database of
	// their own, shared by every serve and worker replica. dev always keeps the file store.

	// KeystoreURL, when set, is the key database (postgres://...): a database apart from
	// DATABASE_URL, whose backups are short-lived and kept apart from the main database's.
	// serve and worker then keep subject keys there instead of in AGENTMEMORY_KEYSTORE's file.
	KeystoreURL string `env:"AGENTMEMORY_KEYSTORE_URL"`
	// KEK is the key-encryption key wrapping every subject key in the key database: standard
	// base64 of 32 random bytes (e.g. `openssl rand -base64 32`). Required with KeystoreURL;
	// never logged.
	KEK string `env:"AGENTMEMORY_KEK"`
	// KEKPrevious lists older KEKs (comma-separated, same shape) still accepted to open keys
	// they wrapped while `agentmemory keys rewrap` moves those keys to KEK.
	KEKPrevious []string `env:"AGENTMEMORY_KEK_PREVIOUS" envSeparator:","`

	// Signed proofs (PR-3, issue 12 §4): the key that signs erasure certificates and
	// receipt-chain heads, and the public keys of rotated ones.

	// SigningKey is the Ed25519 signing key in base64: a 32-byte seed or a 64-byte private
	// key. Kept like AGENTMEMORY_SECRET and never logged. serve without it answers 503
	// signing_unavailable on the signed routes; dev generates one (signing-key in DataDir).
	SigningKey string `env:"AGENTMEMORY_SIGNING_KEY"`
	// SigningKeysPrevious lists the public keys of rotated signing keys, comma-separated, each
	// base64 (32 bytes) optionally followed by "@" and the RFC 3339 time it stopped signing.
	// They stay published on GET /v1/signing-keys, so older signatures keep verifying.
	SigningKeysPrevious string `env:"AGENTMEMORY_SIGNING_KEYS_PREVIOUS"`

	// set holds the variables the environment gave a non-empty value (IsSet).
	set map[string]bool
}

// IsSet reports whether the environment Load read gave the variable name a non-empty value,
// so that a command can tell a default from an explicit choice (dev logs text unless
// AGENTMEMORY_LOG_FORMAT is set) without reading the environment itself.
func (c Config) IsSet(name string) bool { return c.set[name] }

// Client is the configuration of the commands that call a running service or check its
// proofs (replay, notes import, receipts verify, verify-certificate, signing-key public),
// apart from Config so that they need none of the server's settings. Each field names its
// environment variable; docs/production.md's table lists them too.
type Client struct {
	// URL is the service's base URL (e.g. http://127.0.0.1:8080) when --url is not given;
	// verify-certificate and receipts verify also take the public keys from it.
	URL string `env:"AGENTMEMORY_URL"`
	// Key is the API key the commands send as Bearer when --key is not given; never logged.
	Key string `env:"AGENTMEMORY_KEY"`
	// SigningKey is the Ed25519 signing key `signing-key public` prints the public key of
	// (Config.SigningKey's variable, read here without the server's validation).
	SigningKey string `env:"AGENTMEMORY_SIGNING_KEY"`
}

// LoadClient reads the commands' configuration through getenv (os.Getenv in main). Every
// value is taken as given; the commands check them where they use them.
func LoadClient(getenv func(string) string) Client {
	var cl Client
	environ := map[string]string{}
	for _, v := range ClientVariables() {
		if s := getenv(v.Name); s != "" {
			environ[v.Name] = s
		}
	}
	if err := env.ParseWithOptions(&cl, env.Options{Environment: environ}); err != nil {
		panic(err) // string fields without options cannot fail to parse
	}
	return cl
}

// ClientVariables lists every environment variable LoadClient reads, in Client's field order.
func ClientVariables() []Variable {
	params, err := env.GetFieldParams(&Client{})
	if err != nil {
		panic(err) // Client's tags are static: a failure here is a programming error.
	}
	out := make([]Variable, 0, len(params))
	for _, p := range params {
		out = append(out, Variable{Name: p.Key, Default: p.DefaultValue})
	}
	return out
}

// Variable is one environment variable the service reads.
type Variable struct {
	// Name is the environment variable, e.g. "DATABASE_URL".
	Name string
	// Default is the value used when the variable is unset or empty ("" for none).
	Default string
}

// Variables lists every environment variable Load reads, in Config's field order.
func Variables() []Variable {
	params, err := env.GetFieldParams(&Config{})
	if err != nil {
		panic(err) // Config's tags are static: a failure here is a programming error.
	}
	out := make([]Variable, 0, len(params))
	for _, p := range params {
		out = append(out, Variable{Name: p.Key, Default: p.DefaultValue})
	}
	return out
}

// Load reads the configuration through getenv (os.Getenv in main, a map in tests). A value
// that does not parse or is out of range is an error that starts with the variable's name.
func Load(getenv func(string) string) (Config, error) {
	var cfg Config
	environ := map[string]string{}
	for _, v := range Variables() {
		if s := getenv(v.Name); s != "" {
			environ[v.Name] = s
		}
	}
	if err := env.ParseWithOptions(&cfg, env.Options{Environment: environ}); err != nil {
		return cfg, explain(err, environ)
	}
	if err := cfg.validate(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	cfg.resolve()
	cfg.set = make(map[string]bool, len(environ))
	for name := range environ {
		cfg.set[name] = true
	}
	return cfg, nil
}

// explain rewrites caarlos0/env's parse errors, which name struct fields, into errors naming
// the environment variable and its value's expected shape.
func explain(err error, environ map[string]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("config: %w", err)
	}
	keys := fieldKeys()
	var msgs []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			key := keys[pe.Name]
			msgs = append(msgs, fmt.Sprintf("%s: %q is not a valid %s", key, environ[key], shape(pe.Type)))
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("config: %s", strings.Join(msgs, "; "))
}

// fieldKeys maps Config's field names to their environment variables.
func fieldKeys() map[string]string {
	t := reflect.TypeOf(Config{})
	m := make(map[string]string, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		m[f.Name], _, _ = strings.Cut(f.Tag.Get("env"), ",")
	}
	return m
}

func shape(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return `duration (e.g. "15s", "2m")`
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "integer"
	default:
		return t.String()
	}
}

// validate checks ranges and shapes; each error starts with the variable's name. The
// checks go by area (validateServing, validateAddresses, validateWaits, validatePool,
// validateRunning, validateKeystore) and every failing one is reported, joined.
func (c Config) validate() error {
	var p problems
	c.validateServing(&p)
	c.validateAddresses(&p)
	c.validateWaits(&p)
	c.validatePool(&p)
	c.validateRunning(&p)
	p = append(p, c.validateKeystore()...)
	return errors.Join(p...)
}

// problems are the validation errors found so far, in the order checked.
type problems []error

// bad adds an error formatted as fmt.Errorf does.
func (p *problems) bad(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }

// validateServing checks the log's shape and the request limits.
func (c Config) validateServing(p *problems) {
	if c.LogFormat != "json" && c.LogFormat != "text" {
		p.bad("AGENTMEMORY_LOG_FORMAT must be json or text, got %q", c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p.bad("AGENTMEMORY_LOG_LEVEL must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.MaxBodyBytes < 1024 {
		p.bad("AGENTMEMORY_MAX_BODY_BYTES must be at least 1024, got %d", c.MaxBodyBytes)
	}
	if c.Secret != "" && len(c.Secret) < 32 {
		p.bad("AGENTMEMORY_SECRET must be at least 32 characters")
	}
}

// validateAddresses checks the addresses this process listens on or dials: the database, the
// API and metrics listeners, Temporal, Kafka and Ollama.
func (c Config) validateAddresses(p *problems) {
	if c.DatabaseURL != "" && !IsPostgres(c.DatabaseURL) && !strings.HasPrefix(c.DatabaseURL, "sqlite://") && !strings.HasPrefix(c.DatabaseURL, "file:") {
		p.bad("DATABASE_URL must start with postgres://, postgresql://, sqlite:// or file:")
	}
	if !hostPort(c.Addr) {
		p.bad("AGENTMEMORY_ADDR must be host:port, got %q", c.Addr)
	}
	if c.MetricsAddr != "" && !hostPort(c.MetricsAddr) {
		p.bad("AGENTMEMORY_METRICS_ADDR must be host:port, got %q", c.MetricsAddr)
	}
	if c.MetricsAddr != "" && c.MetricsAddr == c.Addr {
		p.bad("AGENTMEMORY_METRICS_ADDR must differ from AGENTMEMORY_ADDR (leave it empty to serve /metrics on the API port)")
	}
	if c.TemporalAddress != "" && !hostPort(c.TemporalAddress) {
		p.bad("TEMPORAL_ADDRESS must be host:port, got %q", c.TemporalAddress)
	}
	for _, b := range c.KafkaBrokers {
		if !hostPort(strings.TrimSpace(b)) {
			p.bad("KAFKA_BROKERS must be a comma-separated list of host:port, got %q", b)
			break
		}
	}
	if c.OllamaHost != "" {
		if u, err := url.Parse(c.OllamaHost); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.bad("OLLAMA_HOST must be an http(s) URL such as http://127.0.0.1:11434, got %q", c.OllamaHost)
		}
	}
}

// validateWaits checks the deadlines and waits of decisions and queries, and the Temporal
// namespace they run in.
func (c Config) validateWaits(p *problems) {
	if c.ApprovalDeadline < time.Minute {
		p.bad("AGENTMEMORY_APPROVAL_DEADLINE must be at least 1m, got %s", c.ApprovalDeadline)
	}
	if c.DecisionWait <= 0 || c.DecisionWait > 50*time.Second {
		p.bad("AGENTMEMORY_DECISION_WAIT must be more than 0 and at most 50s, got %s", c.DecisionWait)
	}
	if c.KnowledgeQueryTimeout <= 0 || c.KnowledgeQueryTimeout > 50*time.Second {
		p.bad("AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT must be more than 0 and at most 50s, got %s", c.KnowledgeQueryTimeout)
	}
	if c.TemporalNamespace == "" {
		p.bad("TEMPORAL_NAMESPACE must not be empty")
	}
	if c.ExportFeedRetention < 0 {
		p.bad("AGENTMEMORY_EXPORT_FEED_RETENTION must not be negative (0 keeps every record), got %s", c.ExportFeedRetention)
	}
	if c.ReceiptCheckpointRetention < 0 {
		p.bad("AGENTMEMORY_RECEIPT_CHECKPOINT_RETENTION must not be negative (0 keeps every checkpoint), got %s", c.ReceiptCheckpointRetention)
	}
}

// validatePool checks the database pool's sizes and lifetimes.
func (c Config) validatePool(p *problems) {
	if c.DBMaxOpenConns < 1 {
		p.bad("AGENTMEMORY_DB_MAX_OPEN_CONNS must be at least 1, got %d", c.DBMaxOpenConns)
	}
	if c.DBMaxIdleConns < -1 || c.DBMaxIdleConns > c.DBMaxOpenConns {
		p.bad("AGENTMEMORY_DB_MAX_IDLE_CONNS must be -1 (same as AGENTMEMORY_DB_MAX_OPEN_CONNS) or 0 to %d, got %d", c.DBMaxOpenConns, c.DBMaxIdleConns)
	}
	if c.DBConnMaxLifetime < 0 {
		p.bad("AGENTMEMORY_DB_CONN_MAX_LIFETIME must not be negative, got %s", c.DBConnMaxLifetime)
	}
	if c.DBStatementTimeout < 0 || (c.DBStatementTimeout > 0 && c.DBStatementTimeout < time.Millisecond) {
		p.bad("AGENTMEMORY_DB_STATEMENT_TIMEOUT must be 0 (no limit) or at least 1ms, got %s", c.DBStatementTimeout)
	}
}

// validateRunning checks what the running process uses: the reconcile interval, the signing
// keys and the shutdown timeout.
func (c Config) validateRunning(p *problems) {
	if c.ReconcileInterval < time.Second {
		p.bad("AGENTMEMORY_RECONCILE_INTERVAL must be at least 1s, got %s", c.ReconcileInterval)
	}
	if c.SigningKey != "" {
		if _, err := signing.ParsePrivateKey(c.SigningKey); err != nil {
			// The error never holds the key.
			p.bad("AGENTMEMORY_SIGNING_KEY must be a base64 Ed25519 seed (32 bytes) or private key (64 bytes): %v", err)
		}
	}
	if _, err := signing.ParsePrevious(c.SigningKeysPrevious); err != nil {
		p.bad("AGENTMEMORY_SIGNING_KEYS_PREVIOUS must be comma-separated base64 public keys, each optionally @RFC3339: %v", err)
	}
	if c.ShutdownTimeout <= 0 {
		p.bad("AGENTMEMORY_SHUTDOWN_TIMEOUT must be positive, got %s", c.ShutdownTimeout)
	}
}

// resolve replaces the sentinel values of a validated Config by what they stand for, so that
// no other package interprets them: AGENTMEMORY_DB_MAX_IDLE_CONNS=-1 becomes
// DBMaxOpenConns (issue 11 §2: a negative value once turned into "keep none").
func (c *Config) resolve() {
	if c.DBMaxIdleConns < 0 {
		c.DBMaxIdleConns = c.DBMaxOpenConns
	}
}

// validateKeystore checks the shared key store block. Messages never include a KEK.
func (c Config) validateKeystore() []error {
	var errs []error
	if c.KeystoreURL == "" {
		if c.KEK != "" || len(c.KEKPrevious) > 0 {
			errs = append(errs, errors.New("AGENTMEMORY_KEK and AGENTMEMORY_KEK_PREVIOUS need AGENTMEMORY_KEYSTORE_URL (the file store is wrapped by a key derived from AGENTMEMORY_SECRET)"))
		}
		return errs
	}
	if !IsPostgres(c.KeystoreURL) {
		errs = append(errs, errors.New("AGENTMEMORY_KEYSTORE_URL must start with postgres:// or postgresql://"))
	} else if c.KeystoreURL == c.DatabaseURL {
		errs = append(errs, errors.New("AGENTMEMORY_KEYSTORE_URL must name a database apart from DATABASE_URL (its backups must be kept apart)"))
	}
	if c.KEK == "" {
		errs = append(errs, errors.New("AGENTMEMORY_KEK is required when AGENTMEMORY_KEYSTORE_URL is set (base64 of 32 random bytes)"))
	}
	if _, _, err := c.KEKs(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// KEKs decodes KEK and KEKPrevious into 32-byte keys (previous in the order given). An empty
// KEK gives nil, nil; a value that is not base64 of 32 bytes is an error naming its variable
// (never the value).
func (c Config) KEKs() (current []byte, previous [][]byte, err error) {
	if c.KEK == "" {
		return nil, nil, nil
	}
	if current, err = DecodeKEK(c.KEK); err != nil {
		return nil, nil, fmt.Errorf("AGENTMEMORY_KEK %w", err)
	}
	for i, p := range c.KEKPrevious {
		k, err := DecodeKEK(strings.TrimSpace(p))
		if err != nil {
			return nil, nil, fmt.Errorf("AGENTMEMORY_KEK_PREVIOUS (entry %d) %w", i+1, err)
		}
		previous = append(previous, k)
	}
	return current, previous, nil
}

// DecodeKEK decodes a key-encryption key: base64 (standard or URL alphabet, padded or not)
// of exactly 32 bytes.
func DecodeKEK(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != 32 {
				return nil, fmt.Errorf("must be base64 of 32 bytes, got %d bytes", len(k))
			}
			return k, nil
		}
	}
	return nil, errors.New("must be base64 of 32 bytes")
}

func hostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	return err == nil && port != ""
}

// IsPostgres reports whether a database URL names PostgreSQL.
func IsPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}
