package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/config"
)

func lookup(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := config.Load(lookup(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", cfg.Addr)
	require.Equal(t, 20, cfg.DBMaxOpenConns)
	require.Equal(t, 20, cfg.DBMaxIdleConns, "the default -1 is resolved to the max open value")
	require.Equal(t, 30*time.Second, cfg.DBStatementTimeout)
	require.Equal(t, 30*time.Minute, cfg.DBConnMaxLifetime)
	require.Equal(t, 15*time.Second, cfg.ShutdownTimeout)
	require.Equal(t, 20*time.Second, cfg.ReconcileInterval)
	require.Equal(t, "json", cfg.LogFormat)
	require.Equal(t, "info", cfg.LogLevel)
	require.Empty(t, cfg.MetricsAddr)
	require.Empty(t, cfg.KafkaBrokers)
	require.Equal(t, "http://127.0.0.1:11434", cfg.OllamaHost)
	require.Equal(t, 14*24*time.Hour, cfg.ApprovalDeadline)
	require.Equal(t, 5*time.Second, cfg.DecisionWait)
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

// TestIdleConnsMinusOneMeansMax: -1 (explicit or the default) is resolved by Load to
// AGENTMEMORY_DB_MAX_OPEN_CONNS; 0 keeps none and a count is kept as given (issue 11 §2).
func TestIdleConnsMinusOneMeansMax(t *testing.T) {
	for _, tc := range []struct {
		open, idle string
		want       int
	}{
		{"", "", 20},
		{"", "-1", 20},
		{"7", "", 7},
		{"7", "-1", 7},
		{"7", "0", 0},
		{"7", "3", 3},
	} {
		cfg, err := config.Load(lookup(map[string]string{
			"AGENTMEMORY_DB_MAX_OPEN_CONNS": tc.open, "AGENTMEMORY_DB_MAX_IDLE_CONNS": tc.idle,
		}))
		require.NoError(t, err)
		require.Equal(t, tc.want, cfg.DBMaxIdleConns, "open=%q idle=%q", tc.open, tc.idle)
	}
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
		{"AGENTMEMORY_DB_MAX_IDLE_CONNS", "-2"},
		{"AGENTMEMORY_RECONCILE_INTERVAL", "500ms"},
		{"AGENTMEMORY_RECONCILE_INTERVAL", "often"},
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
		{"AGENTMEMORY_APPROVAL_DEADLINE", "30s"},
		{"AGENTMEMORY_APPROVAL_DEADLINE", "two weeks"},
		{"AGENTMEMORY_DECISION_WAIT", "0s"},
		{"AGENTMEMORY_DECISION_WAIT", "2m"},
		{"AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT", "0s"},
		{"AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT", "1m"},
		{"AGENTMEMORY_EXPORT_FEED_RETENTION", "-1h"},
		{"AGENTMEMORY_RECEIPT_CHECKPOINT_RETENTION", "-1s"},
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
	require.Len(t, vars, 38)
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
	for _, v := range append(config.Variables(), config.ClientVariables()...) {
		def, ok := rows[v.Name]
		require.True(t, ok, "docs/production.md has no row for %s", v.Name)
		want := v.Default
		if want == "" {
			want = "(none)"
		}
		require.Equal(t, want, def, "docs/production.md: default of %s: got %q, want %q", v.Name, def, want)
	}
}

// The shared key store block (issue 12 §5): the URL needs a valid KEK, every KEK needs the
// URL, and no error message repeats a KEK.
func TestKeystoreConfiguration(t *testing.T) {
	kek := "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=" // base64 of 32 bytes
	old := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	cfg, err := config.Load(lookup(map[string]string{
		"AGENTMEMORY_KEYSTORE_URL": "postgres://keys@keydb:5432/keys",
		"AGENTMEMORY_KEK":          kek,
		"AGENTMEMORY_KEK_PREVIOUS": old,
	}))
	require.NoError(t, err)
	cur, prev, err := cfg.KEKs()
	require.NoError(t, err)
	require.Len(t, cur, 32)
	require.Len(t, prev, 1)
	require.Equal(t, byte(31), prev[0][31])

	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"url without kek", map[string]string{"AGENTMEMORY_KEYSTORE_URL": "postgres://keys@keydb/keys"}, "AGENTMEMORY_KEK is required"},
		{"kek without url", map[string]string{"AGENTMEMORY_KEK": kek}, "AGENTMEMORY_KEYSTORE_URL"},
		{"short kek", map[string]string{"AGENTMEMORY_KEYSTORE_URL": "postgres://keys@keydb/keys", "AGENTMEMORY_KEK": "c2hvcnQ="}, "AGENTMEMORY_KEK must be base64 of 32 bytes"},
		{"kek not base64", map[string]string{"AGENTMEMORY_KEYSTORE_URL": "postgres://keys@keydb/keys", "AGENTMEMORY_KEK": "not base64 at all!"}, "AGENTMEMORY_KEK must be base64"},
		{"bad previous", map[string]string{"AGENTMEMORY_KEYSTORE_URL": "postgres://keys@keydb/keys", "AGENTMEMORY_KEK": kek, "AGENTMEMORY_KEK_PREVIOUS": old + ",c2VjcmV0LXZhbHVl"}, "AGENTMEMORY_KEK_PREVIOUS (entry 2)"},
		{"not postgres", map[string]string{"AGENTMEMORY_KEYSTORE_URL": "sqlite://keys.db", "AGENTMEMORY_KEK": kek}, "AGENTMEMORY_KEYSTORE_URL must start with postgres://"},
		{"same as main db", map[string]string{"DATABASE_URL": "postgres://u@db/app", "AGENTMEMORY_KEYSTORE_URL": "postgres://u@db/app", "AGENTMEMORY_KEK": kek}, "apart from DATABASE_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(lookup(tc.vars))
			require.ErrorContains(t, err, tc.want)
			for _, v := range []string{kek, "c2hvcnQ=", "c2VjcmV0LXZhbHVl", "not base64 at all!"} {
				require.NotContains(t, err.Error(), v, "the error repeats a KEK")
			}
		})
	}
}

// TestIsSet tells a variable given by the environment from its default.
func TestIsSet(t *testing.T) {
	cfg, err := config.Load(lookup(map[string]string{"AGENTMEMORY_LOG_FORMAT": "json"}))
	require.NoError(t, err)
	require.True(t, cfg.IsSet("AGENTMEMORY_LOG_FORMAT"))
	require.False(t, cfg.IsSet("AGENTMEMORY_LOG_LEVEL"), "a default is not set")
}

// TestLoadClient reads the commands' variables, and ClientVariables names exactly those.
func TestLoadClient(t *testing.T) {
	cl := config.LoadClient(lookup(map[string]string{"AGENTMEMORY_URL": "http://x:1", "AGENTMEMORY_KEY": "am_k", "AGENTMEMORY_SIGNING_KEY": "s"}))
	require.Equal(t, config.Client{URL: "http://x:1", Key: "am_k", SigningKey: "s"}, cl)
	var names []string
	for _, v := range config.ClientVariables() {
		names = append(names, v.Name)
	}
	require.Equal(t, []string{"AGENTMEMORY_URL", "AGENTMEMORY_KEY", "AGENTMEMORY_SIGNING_KEY"}, names)
}
