package main

import (
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/agentmemory/agentmemory/internal/config"
)

// composeFile is the part of docker-compose.yml the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string                                `yaml:"image"`
	Build       *struct{ Context, Dockerfile string } `yaml:"build"`
	Command     []string                              `yaml:"command"`
	Entrypoint  []string                              `yaml:"entrypoint"`
	Environment map[string]string                     `yaml:"environment"`
	Ports       []string                              `yaml:"ports"`
	Volumes     []string                              `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
	require.NoError(t, err)
	var f composeFile
	require.NoError(t, yaml.Unmarshal(data, &f))
	return f
}

var interpolation = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)(?:(:-|:\?)([^}]*))?\}`)

// interpolate resolves compose's ${NAME}, ${NAME:-default} and ${NAME:?error} from set,
// falling back to the default; a required variable missing from set fails the test.
func interpolate(t *testing.T, s string, set map[string]string) string {
	t.Helper()
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		g := interpolation.FindStringSubmatch(m)
		if v, ok := set[g[1]]; ok {
			return v
		}
		require.NotEqual(t, ":?", g[2], "%s is required by the compose file", g[1])
		return g[3]
	})
}

// TestComposeServices checks the stack's services, images, ports and commands.
func TestComposeServices(t *testing.T) {
	f := loadCompose(t)
	var names []string
	for n := range f.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	require.Equal(t, []string{"api", "kafka", "keystore", "ollama", "ollama-pull", "postgres", "temporal", "temporal-ui", "worker"}, names)

	images := map[string]string{
		"postgres": "pgvector/pgvector:", "keystore": "postgres:", "temporal": "temporalio/auto-setup:", "temporal-ui": "temporalio/ui:",
		"kafka": "apache/kafka:", "ollama": "ollama/ollama:", "ollama-pull": "ollama/ollama:",
	}
	for name, prefix := range images {
		img := f.Services[name].Image
		require.True(t, strings.HasPrefix(img, prefix), "%s: image %q, want %s<version>", name, img, prefix)
		tag := strings.TrimPrefix(img, prefix)
		require.Regexp(t, `^[0-9]`, tag, "%s: pin a version, got tag %q", name, tag)
	}

	// api and worker: built from the Dockerfile, running real subcommands of the binary.
	root := newRootCmd(func(string) string { return "" }, io.Discard, io.Discard)
	for name, sub := range map[string]string{"api": "serve", "worker": "worker"} {
		s := f.Services[name]
		require.NotNil(t, s.Build, "%s: no build", name)
		require.Equal(t, ".", s.Build.Context)
		require.Equal(t, "Dockerfile", s.Build.Dockerfile)
		require.Equal(t, []string{sub}, s.Command)
		cmd, _, err := root.Find(s.Command)
		require.NoError(t, err)
		require.Equal(t, sub, cmd.Name())
		require.NotEmpty(t, s.StopGracePeriod, "%s: give SIGTERM's drain time before SIGKILL", name)
		require.Empty(t, s.Volumes, "%s: replicas keep no local state (keys live in the keystore service)", name)
	}

	// Published ports: the API and Temporal's UI; nothing else (metrics stay internal).
	published := map[string][]string{}
	for name, s := range f.Services {
		if len(s.Ports) > 0 {
			published[name] = s.Ports
		}
	}
	require.Equal(t, map[string][]string{"api": {"8080:8080"}, "temporal-ui": {"8233:8080"}}, published)

	// Temporal runs on the stack's PostgreSQL; Kafka runs in KRaft mode.
	tenv := f.Services["temporal"].Environment
	require.Equal(t, "postgres12", tenv["DB"])
	require.Equal(t, "postgres", tenv["POSTGRES_SEEDS"])
	require.Equal(t, f.Services["postgres"].Environment["POSTGRES_USER"], tenv["POSTGRES_USER"])
	require.Equal(t, f.Services["postgres"].Environment["POSTGRES_PASSWORD"], tenv["POSTGRES_PWD"])
	require.Equal(t, "temporal:7233", f.Services["temporal-ui"].Environment["TEMPORAL_ADDRESS"])
	kenv := f.Services["kafka"].Environment
	require.Equal(t, "broker,controller", kenv["KAFKA_PROCESS_ROLES"])
	require.Equal(t, "1@kafka:9093", kenv["KAFKA_CONTROLLER_QUORUM_VOTERS"])
	require.Equal(t, "PLAINTEXT://kafka:9092", kenv["KAFKA_ADVERTISED_LISTENERS"])
	for k := range kenv {
		require.NotContains(t, k, "ZOOKEEPER", "KRaft needs no ZooKeeper")
	}
	for _, v := range []string{"postgres-data", "keystore-data", "kafka-data", "ollama-models"} {
		require.Contains(t, f.Volumes, v)
	}
}

// TestComposeHealthAndOrder: every long-running service has a health check, and depends_on
// waits for health (or for a one-shot to be started) so `docker compose up` starts in order.
func TestComposeHealthAndOrder(t *testing.T) {
	f := loadCompose(t)
	for name, s := range f.Services {
		if name == "ollama-pull" {
			continue
		}
		require.NotNil(t, s.Healthcheck, "%s: no healthcheck", name)
		require.NotEmpty(t, s.Healthcheck.Test, "%s: empty healthcheck", name)
	}
	for name, s := range f.Services {
		for dep, cond := range s.DependsOn {
			target, ok := f.Services[dep]
			require.True(t, ok, "%s depends on unknown service %s", name, dep)
			require.Equal(t, "service_healthy", cond.Condition, "%s -> %s", name, dep)
			require.NotNil(t, target.Healthcheck, "%s waits for %s to be healthy, which has no healthcheck", name, dep)
		}
	}
	deps := func(name string) []string {
		var out []string
		for d := range f.Services[name].DependsOn {
			out = append(out, d)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"postgres"}, deps("temporal"))
	require.Equal(t, []string{"temporal"}, deps("temporal-ui"))
	require.Equal(t, []string{"kafka", "keystore", "postgres", "temporal"}, deps("api"))
	require.Equal(t, []string{"kafka", "keystore", "ollama", "postgres", "temporal"}, deps("worker"))

	// The binary's own health check (the image has no shell or curl) on the ports it listens on.
	env := f.Services["api"].Environment
	require.Equal(t, []string{"CMD", "/usr/local/bin/agentmemory", "healthcheck", "http://127.0.0.1:" + port(t, env["AGENTMEMORY_ADDR"]) + "/readyz"}, f.Services["api"].Healthcheck.Test)
	require.Equal(t, []string{"CMD", "/usr/local/bin/agentmemory", "healthcheck", "http://127.0.0.1:" + port(t, env["AGENTMEMORY_METRICS_ADDR"]) + "/healthz"}, f.Services["worker"].Healthcheck.Test)
	require.Contains(t, f.Services["temporal"].Healthcheck.Test[1], "temporal:7233")
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}

// TestComposeEnvironmentIsWhatTheBinaryReads: every variable api and worker get is one
// internal/config reads, the values load, and they point at the stack's services.
func TestComposeEnvironmentIsWhatTheBinaryReads(t *testing.T) {
	f := loadCompose(t)
	known := map[string]bool{}
	for _, v := range config.Variables() {
		known[v.Name] = true
	}
	for _, name := range []string{"api", "worker"} {
		env := f.Services[name].Environment
		require.NotEmpty(t, env, "%s: no environment", name)
		resolved := map[string]string{}
		for k, v := range env {
			require.True(t, known[k], "%s: %s is not read by internal/config", name, k)
			resolved[k] = interpolate(t, v, map[string]string{"AGENTMEMORY_SECRET": strings.Repeat("s", 40), "AGENTMEMORY_KEK": "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=", "AGENTMEMORY_SIGNING_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="})
		}
		cfg, err := config.Load(func(k string) string { return resolved[k] })
		require.NoError(t, err, "%s: the compose environment does not load", name)

		require.True(t, config.IsPostgres(cfg.DatabaseURL), "%s: DATABASE_URL must be PostgreSQL", name)
		u, err := url.Parse(cfg.DatabaseURL)
		require.NoError(t, err)
		require.Equal(t, "postgres:5432", u.Host)
		pg := f.Services["postgres"].Environment
		require.Equal(t, pg["POSTGRES_USER"], u.User.Username())
		pw, _ := u.User.Password()
		require.Equal(t, interpolate(t, pg["POSTGRES_PASSWORD"], nil), pw)
		require.Equal(t, "/"+pg["POSTGRES_DB"], u.Path)
		require.Equal(t, "temporal:7233", cfg.TemporalAddress)
		require.Equal(t, []string{"kafka:9092"}, cfg.KafkaBrokers)
		require.Equal(t, "http://ollama:11434", cfg.OllamaHost)
		require.NotEmpty(t, cfg.MetricsAddr, "%s: metrics on their own, unpublished port", name)
		// The shared key store (issue 12 §5): its own database service, apart from postgres.
		k, err := url.Parse(cfg.KeystoreURL)
		require.NoError(t, err)
		require.Equal(t, "keystore:5432", k.Host)
		ks := f.Services["keystore"].Environment
		require.Equal(t, ks["POSTGRES_USER"], k.User.Username())
		kpw, _ := k.User.Password()
		require.Equal(t, interpolate(t, ks["POSTGRES_PASSWORD"], nil), kpw)
		require.Equal(t, "/"+ks["POSTGRES_DB"], k.Path)
		require.NotEqual(t, f.Services["postgres"].Volumes, f.Services["keystore"].Volumes)
	}
	// AGENTMEMORY_SECRET, AGENTMEMORY_KEK and AGENTMEMORY_SIGNING_KEY have no default: compose refuses
	// to start without them.
	require.Regexp(t, `^\$\{AGENTMEMORY_SECRET:\?`, f.Services["api"].Environment["AGENTMEMORY_SECRET"])
	require.Regexp(t, `^\$\{AGENTMEMORY_KEK:\?`, f.Services["api"].Environment["AGENTMEMORY_KEK"])
	require.Regexp(t, `^\$\{AGENTMEMORY_SIGNING_KEY:\?`, f.Services["api"].Environment["AGENTMEMORY_SIGNING_KEY"])
}

// TestDockerfile: multi-stage, a static (CGO_ENABLED=0) build, a non-root user, the binary as
// entrypoint.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	require.NoError(t, err)
	text := string(data)
	var froms, users []string
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			froms = append(froms, fields[1])
		case "USER":
			users = append(users, fields[1])
		}
	}
	require.GreaterOrEqual(t, len(froms), 2, "multi-stage: got %d FROM lines", len(froms))
	require.True(t, strings.HasPrefix(froms[0], "golang:1.26"), "build stage: got %s", froms[0])
	require.Contains(t, text, "CGO_ENABLED=0")
	require.Contains(t, text, "./cmd/agentmemory")
	require.NotEmpty(t, users, "no USER line")
	last := users[len(users)-1]
	require.NotContains(t, []string{"root", "0", "0:0", "root:root"}, last)
	require.Contains(t, text, `ENTRYPOINT ["/usr/local/bin/agentmemory"]`)

	// Every module the root go.mod replaces with a local directory (the Go SDK, ./sdk) has its
	// go.mod copied before `go mod download`, or the download fails on a missing directory.
	mod, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	require.NoError(t, err)
	download := strings.Index(text, "go mod download")
	require.Positive(t, download, "no go mod download step")
	var local []string
	for _, line := range strings.Split(string(mod), "\n") {
		if _, target, ok := strings.Cut(line, "=>"); ok && strings.HasPrefix(strings.TrimSpace(target), "./") {
			local = append(local, strings.TrimPrefix(strings.TrimSpace(target), "./"))
		}
	}
	require.Contains(t, local, "sdk", "the root module replaces the SDK with ./sdk")
	for _, dir := range local {
		at := strings.Index(text, "COPY "+dir+"/go.mod ")
		require.True(t, at >= 0 && at < download, "the Dockerfile must COPY %s/go.mod before go mod download", dir)
	}
}
