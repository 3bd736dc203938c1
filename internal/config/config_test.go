package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"agentmemory/internal/config"
)

func lookup(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := config.Load(lookup(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", cfg.Addr)
	require.Equal(t, 20, cfg.DBMaxOpenConns)
	require.Equal(t, -1, cfg.DBMaxIdleConns)
	require.Equal(t, 30*time.Second, cfg.DBStatementTimeout)
	require.Equal(t, 30*time.Minute, cfg.DBConnMaxLifetime)
	require.Equal(t, 15*time.Second, cfg.ShutdownTimeout)
	require.Equal(t, "json", cfg.LogFormat)
	require.Equal(t, "info", cfg.LogLevel)
	require.Empty(t, cfg.MetricsAddr)
	require.Empty(t, cfg.KafkaBrokers)
}

func TestLoadReadsEveryVariable(t *testing.T) {
	cfg, err := config.Load(lookup(map[string]string{
		"DATABASE_URL":                     "postgres://u@db:5432/agentmemory?sslmode=disable",
		"AGENTMEMORY_ADDR":                 "0.0.0.0:8080",
		"AGENTMEMORY_METRICS_ADDR":         "0.0.0.0:9090",
		"KAFKA_BROKERS":                    "k1:9092,k2:9092",
		"AGENTMEMORY_DB_MAX_OPEN_CONNS":    "7",
		"AGENTMEMORY_DB_MAX_IDLE_CONNS":    "3",
		"AGENTMEMORY_DB_STATEMENT_TIMEOUT": "2500ms",
		"AGENTMEMORY_SHUTDOWN_TIMEOUT":     "40s",
		"AGENTMEMORY_LOG_LEVEL":            "debug",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"k1:9092", "k2:9092"}, cfg.KafkaBrokers)
	require.Equal(t, 7, cfg.DBMaxOpenConns)
	require.Equal(t, 3, cfg.DBMaxIdleConns)
	require.Equal(t, 2500*time.Millisecond, cfg.DBStatementTimeout)
	require.Equal(t, 40*time.Second, cfg.ShutdownTimeout)
	require.Equal(t, "0.0.0.0:9090", cfg.MetricsAddr)
	require.Equal(t, "debug", cfg.LogLevel)
}

// TestBadConfigurationNamesTheVariable: every refused value fails Load with an error naming
// its variable.
func TestBadConfigurationNamesTheVariable(t *testing.T) {
	cases := []struct {
		name, value string
	}{
		{"AGENTMEMORY_DB_MAX_OPEN_CONNS", "many"},
		{"AGENTMEMORY_DB_MAX_OPEN_CONNS", "0"},
		{"AGENTMEMORY_DB_MAX_IDLE_CONNS", "99"},
		{"AGENTMEMORY_DB_STATEMENT_TIMEOUT", "30"},
		{"AGENTMEMORY_DB_STATEMENT_TIMEOUT", "-1s"},
		{"AGENTMEMORY_DB_CONN_MAX_LIFETIME", "soon"},
		{"AGENTMEMORY_SHUTDOWN_TIMEOUT", "forever"},
		{"AGENTMEMORY_MAX_BODY_BYTES", "12"},
		{"AGENTMEMORY_MAX_BODY_BYTES", "1MB"},
		{"AGENTMEMORY_LOG_FORMAT", "xml"},
		{"AGENTMEMORY_LOG_LEVEL", "loud"},
		{"AGENTMEMORY_SECRET", "short"},
		{"DATABASE_URL", "mysql://db/x"},
		{"AGENTMEMORY_ADDR", "8080"},
		{"AGENTMEMORY_METRICS_ADDR", "metrics"},
		{"AGENTMEMORY_METRICS_ADDR", "127.0.0.1:8080"},
		{"TEMPORAL_ADDRESS", "temporal"},
		{"KAFKA_BROKERS", "k1:9092,k2"},
		{"OLLAMA_HOST", "ollama:11434"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			_, err := config.Load(lookup(map[string]string{tc.name: tc.value}))
			require.Error(t, err, "%s=%q: got no error, want one naming the variable", tc.name, tc.value)
			require.Contains(t, err.Error(), tc.name, "got %q, want the variable's name", err.Error())
		})
	}
}

func TestVariablesListsEveryField(t *testing.T) {
	vars := config.Variables()
	require.Len(t, vars, 27)
	names := map[string]string{}
	for _, v := range vars {
		names[v.Name] = v.Default
	}
	require.Equal(t, "20", names["AGENTMEMORY_DB_MAX_OPEN_CONNS"])
	require.Contains(t, names, "DATABASE_URL")
}

// TestDocumentedConfigurationTable keeps docs/production.md's table in step with Config:
// every variable has a row whose default column shows its default.
func TestDocumentedConfigurationTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "production.md"))
	require.NoError(t, err)
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		rows[name] = strings.Trim(strings.TrimSpace(cells[2]), "`")
	}
	for _, v := range config.Variables() {
		def, ok := rows[v.Name]
		require.True(t, ok, "docs/production.md has no row for %s", v.Name)
		want := v.Default
		if want == "" {
			want = "(none)"
		}
		require.Equal(t, want, def, "docs/production.md: default of %s: got %q, want %q", v.Name, def, want)
	}
}
