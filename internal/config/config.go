// Package config reads the service's configuration from the environment. It is the only
// package that knows the environment variable names; everything else receives a Config.
package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is the whole configuration of the service. Each field names its environment variable
// and default; the README's configuration table lists the same.
type Config struct {
	// DatabaseURL selects the store: "postgres://..." for PostgreSQL, "sqlite://PATH" or
	// "file:PATH" for SQLite. Empty means the SQLite file in DataDir.
	DatabaseURL string `env:"DATABASE_URL"`
	// DataDir holds the embedded default's durable files: database, Temporal's database,
	// the subject key store and the generated server secret.
	DataDir string `env:"AGENTMEMORY_DATA_DIR" envDefault:"./data"`
	// Addr is the API's listen address.
	Addr string `env:"AGENTMEMORY_ADDR" envDefault:"127.0.0.1:8080"`
	// Secret keys every keyed hash (scope ids, handles) and wraps subject keys. Required by
	// serve and worker; dev generates one in DataDir.
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
	// KafkaBrokers lists host:port of Kafka brokers; empty leaves the outbox relay off.
	KafkaBrokers []string `env:"KAFKA_BROKERS" envSeparator:","`
	// KafkaTopic receives the events.
	KafkaTopic string `env:"KAFKA_TOPIC" envDefault:"agentmemory.events"`
	// OllamaHost is the base URL of an Ollama-API server, e.g. http://127.0.0.1:11434.
	OllamaHost string `env:"OLLAMA_HOST"`
	// OllamaModel is the model asked to distil notes.
	OllamaModel string `env:"OLLAMA_MODEL" envDefault:"llama3.2"`
	// DetectorModel, when set with OllamaHost, turns on the model layer of the personal-data gate.
	DetectorModel string `env:"AGENTMEMORY_DETECTOR_MODEL"`
	// MaxBodyBytes caps every request body (413 past it).
	MaxBodyBytes int64 `env:"AGENTMEMORY_MAX_BODY_BYTES" envDefault:"1048576"`
	// LogFormat is "json" (production) or "text".
	LogFormat string `env:"AGENTMEMORY_LOG_FORMAT" envDefault:"json"`
	// DBMaxOpenConns caps the PostgreSQL pool.
	DBMaxOpenConns int `env:"AGENTMEMORY_DB_MAX_OPEN_CONNS" envDefault:"20"`
	// SweepEvery is how often the retention schedule sweeps expired data (WM-12, MS-3).
	SweepEvery time.Duration `env:"AGENTMEMORY_SWEEP_EVERY" envDefault:"1h"`
	// ShutdownTimeout bounds the drain of HTTP requests on SIGTERM.
	ShutdownTimeout time.Duration `env:"AGENTMEMORY_SHUTDOWN_TIMEOUT" envDefault:"15s"`
}

// Load reads the configuration through getenv (os.Getenv in main, a map in tests). A value
// that does not parse is an error naming its variable.
func Load(getenv func(string) string) (Config, error) {
	var cfg Config
	params, err := env.GetFieldParams(&cfg)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	environ := make(map[string]string, len(params))
	for _, p := range params {
		if v := getenv(p.Key); v != "" {
			environ[p.Key] = v
		}
	}
	if err := env.ParseWithOptions(&cfg, env.Options{Environment: environ}); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if cfg.LogFormat != "json" && cfg.LogFormat != "text" {
		return cfg, fmt.Errorf("config: AGENTMEMORY_LOG_FORMAT must be json or text, got %q", cfg.LogFormat)
	}
	if cfg.MaxBodyBytes < 1024 {
		return cfg, fmt.Errorf("config: AGENTMEMORY_MAX_BODY_BYTES must be at least 1024")
	}
	if cfg.Secret != "" && len(cfg.Secret) < 32 {
		return cfg, fmt.Errorf("config: AGENTMEMORY_SECRET must be at least 32 characters")
	}
	if cfg.DatabaseURL != "" && !IsPostgres(cfg.DatabaseURL) && !strings.HasPrefix(cfg.DatabaseURL, "sqlite://") && !strings.HasPrefix(cfg.DatabaseURL, "file:") {
		return cfg, fmt.Errorf("config: DATABASE_URL must start with postgres://, sqlite:// or file:")
	}
	return cfg, nil
}

// IsPostgres reports whether a database URL names PostgreSQL.
func IsPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}
