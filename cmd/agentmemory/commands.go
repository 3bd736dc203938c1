package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/llm/fakemodel"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

func newRootCmd(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentmemory",
		Short:         "Governed memory for AI agents: working state and agent notes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	load := func() (config.Config, error) { return config.Load(getenv) }
	cl := config.LoadClient(getenv)
	root.AddCommand(devCmd(load, stdout, stderr), serveCmd(load, stderr), workerCmd(load, stderr),
		migrateCmd(load, stdout), spaceCmd(load, stdout), operatorKeyCmd(load, stdout), replayCmd(cl, stdout),
		notesCmd(cl, stdout), healthcheckCmd(), keysCmd(load, stdout), restoreCmd(load, stdout),
		// Signed proofs (PR-3): cmd/agentmemory/signing.go.
		verifyCertificateCmd(cl, stdout), receiptsCmd(load, cl, stdout), signingKeyCmd(cl, stdout),
		// Storage counters (issue 34 §1): cmd/agentmemory/recount.go.
		recountCmd(load, stdout),
		conformanceCmd(stdout)) // issue 34 §3: cmd/agentmemory/conformance.go
	return root
}

// devFlags are dev's flags.
type devFlags struct {
	addr, dataDir string
	fakeModel     bool
	uiPort        int
}

func devCmd(load func() (config.Config, error), stdout, stderr io.Writer) *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process on the embedded default (SQLite, a Temporal dev server)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := devConfig(cmd, load, f, stdout)
			if err != nil {
				return err
			}
			return runDev(cmd, cfg, f, stdout, stderr)
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address of the API")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "./data", "directory of the durable files (database, Temporal, keys, secret)")
	cmd.Flags().BoolVar(&f.fakeModel, "fake-model", false, "answer distillations with a built-in fake model (labelled as fake in every note it drafts) instead of OLLAMA_HOST, to try the flow without a model")
	cmd.Flags().IntVar(&f.uiPort, "temporal-ui-port", defaultTemporalUIPort, "port of the Temporal web UI on 127.0.0.1 (0: any free port; ignored with TEMPORAL_ADDRESS)")
	return cmd
}

// devConfig is the configuration dev runs with: the environment's, with the flags given (and
// --addr when the environment names none), text logs unless AGENTMEMORY_LOG_FORMAT is set,
// and the file key store in the data dir whatever AGENTMEMORY_KEYSTORE_URL says (it says so
// on stdout).
func devConfig(cmd *cobra.Command, load func() (config.Config, error), f devFlags, stdout io.Writer) (config.Config, error) {
	cfg, err := load()
	if err != nil {
		return config.Config{}, err
	}
	if cmd.Flags().Changed("addr") || cfg.Addr == "" {
		cfg.Addr = f.addr
	}
	if cmd.Flags().Changed("data-dir") {
		cfg.DataDir = f.dataDir
	}
	if cfg.LogFormat == "json" && !cfg.IsSet("AGENTMEMORY_LOG_FORMAT") {
		cfg.LogFormat = "text"
	}
	if cfg.KeystoreURL != "" {
		fmt.Fprintln(stdout, "agentmemory dev: subject keys stay in the data dir (AGENTMEMORY_KEYSTORE_URL is for serve and worker)")
	}
	cfg.KeystoreURL, cfg.KEK, cfg.KEKPrevious = "", "", nil
	return cfg, nil
}

// runDev runs dev with cfg until cmd's context ends: the API port bound first, then the fake
// model (with --fake-model), the app, the Temporal dev server, the worker, the outbox relay
// and the API; each stops in the reverse order.
func runDev(cmd *cobra.Command, cfg config.Config, f devFlags, stdout, stderr io.Writer) error {
	ctx := cmd.Context()
	// The API port is bound before anything else starts: a busy port fails at once, and
	// the Temporal dev server's own ports (chosen while it starts) can never take it.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("the API address %s: %w", cfg.Addr, err)
	}
	defer func() { _ = ln.Close() }() // Serve has closed it already on a clean stop
	log := newLogger(cfg, stderr)
	if f.fakeModel {
		stopFake, err := startFakeModel(&cfg, log, stdout)
		if err != nil {
			return err
		}
		defer stopFake()
	}
	a, err := openApp(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer a.Close()
	tc, stopTemporal, err := startTemporal(ctx, a, f.uiPort, cmd.Flags().Changed("temporal-ui-port"), stdout)
	if err != nil {
		return err
	}
	defer stopTemporal()
	w, err := a.StartWorker(tc)
	if err != nil {
		return err
	}
	defer func() {
		a.Log.Info("worker stopping: waiting for running activities", "timeout", a.Config.ShutdownTimeout.String())
		w.Stop()
		a.Log.Info("worker stopped")
	}()
	defer a.StartRelay(ctx)()
	exe, _ := os.Executable() // "" when unknown: the hint then names no path, nothing else depends on it
	fmt.Fprintf(stdout, "agentmemory dev: API on http://%s (data in %s)\n", cfg.Addr, cfg.DataDir)
	if !f.fakeModel {
		fmt.Fprintf(stdout, "distillations ask the model %s at %s; while none answers they stay drafting (last_error model_unreachable); --fake-model tries the flow without one\n", cfg.OllamaModel, cfg.OllamaHost)
	}
	if err := printSpaceHint(ctx, a.DB, stdout, exe, cfg.DataDir); err != nil {
		return err
	}
	return serveHTTP(ctx, a, ln, tc)
}

// startFakeModel starts the built-in fake model (internal/llm/fakemodel) on a free local port
// and points cfg's model host at it; the gate's model layer stays off (the fake detects
// nothing). It says so on stdout and in the log, and returns the server's stop.
func startFakeModel(cfg *config.Config, log *slog.Logger, stdout io.Writer) (func(), error) {
	s, err := fakemodel.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg.OllamaHost = s.URL
	if cfg.DetectorModel != "" {
		cfg.DetectorModel = ""
		fmt.Fprintln(stdout, "agentmemory dev: --fake-model turns the gate's model layer off (AGENTMEMORY_DETECTOR_MODEL is ignored)")
	}
	fmt.Fprintf(stdout, "agentmemory dev: FAKE MODEL at %s answers distillations with a fixed note labelled [fake model] (not a language model; never use it for real notes)\n", s.URL)
	fmt.Fprintln(stdout, "agentmemory dev: the fake model also answers /api/embed for knowledge bases with hashed word vectors (a stand-in, not an embedding model)")
	log.Warn("fake model on: distillations are answered by a built-in stand-in, not a language model", "url", s.URL)
	return func() { _ = s.Close() }, nil // the fake model's test server, closed at exit
}

func serveCmd(load func() (config.Config, error), stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the API (configured from the environment)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withProduction(cmd.Context(), load, stderr, func(ctx context.Context, a *app.App, tc client.Client) error {
				ln, err := net.Listen("tcp", a.Config.Addr)
				if err != nil {
					return err
				}
				return serveHTTP(ctx, a, ln, tc)
			})
		},
	}
}

// withProduction runs fn with the app and a Temporal client configured from the environment
// (serve and worker: no generated secret, TEMPORAL_ADDRESS required), closing both after.
func withProduction(ctx context.Context, load func() (config.Config, error), stderr io.Writer, fn func(ctx context.Context, a *app.App, tc client.Client) error) error {
	cfg, err := load()
	if err != nil {
		return err
	}
	a, err := openApp(ctx, cfg, newLogger(cfg, stderr), false)
	if err != nil {
		return err
	}
	defer a.Close()
	tc, err := dialTemporal(a)
	if err != nil {
		return err
	}
	defer tc.Close()
	return fn(ctx, a, tc)
}

func workerCmd(load func() (config.Config, error), stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (configured from the environment)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withProduction(cmd.Context(), load, stderr, func(ctx context.Context, a *app.App, tc client.Client) error {
				return runWorker(ctx, a, tc)
			})
		},
	}
}

func migrateCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, names, err := openMigrated(cmd, load, dataDir)
			if err != nil {
				return err
			}
			defer func() { _ = d.Close() }() // the migrations are committed: a failed close loses nothing
			fmt.Fprintf(stdout, "applied %d migrations\n", len(names))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "./data", "data directory (when DATABASE_URL is not set)")
	return cmd
}

// openMigrated opens the database of DATABASE_URL, or the SQLite file of the data dir (the
// --data-dir flag when given), applies the pending migrations and returns their names.
func openMigrated(cmd *cobra.Command, load func() (config.Config, error), dataDir string) (*bun.DB, []string, error) {
	cfg, err := load()
	if err != nil {
		return nil, nil, err
	}
	if cmd.Flags().Changed("data-dir") {
		cfg.DataDir = dataDir
	}
	return app.OpenMigrated(cmd.Context(), cfg)
}

func spaceCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir string
	space := &cobra.Command{Use: "space", Short: "Manage spaces"}
	space.PersistentFlags().StringVar(&dataDir, "data-dir", "./data", "data directory (when DATABASE_URL is not set)")
	// withDB runs fn on the migrated database of the data dir or DATABASE_URL.
	withDB := func(cmd *cobra.Command, fn func(d *bun.DB) error) error {
		d, _, err := openMigrated(cmd, load, dataDir)
		if err != nil {
			return err
		}
		defer func() { _ = d.Close() }() // fn's work is committed or not by then: a failed close loses nothing
		return fn(d)
	}
	var directPut bool
	create := &cobra.Command{
		Use:   "create NAME",
		Short: `Create a space; prints {"space_id", "admin_key"} (the key holds every person role and is shown once)`,
		Long: `Create a space; prints {"space_id", "admin_key"} (the key holds every person role and is shown once).

By default the space's documents (features, object-types) change only through change requests
(POST /v1/documents/{name}/changes) that a second person holding role security approves; a
direct PUT /v1/documents/{name} answers 409 direct_put_disabled. --direct-put allows direct PUT
(a single operator's or a demo space) until the features document turns it off
({"documents": {"direct_put": false}}).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDB(cmd, func(d *bun.DB) error {
				id, key, err := spaces.CreateWith(cmd.Context(), d, args[0], time.Now(), spaces.CreateOptions{DirectPut: directPut})
				if err != nil {
					return err
				}
				return json.NewEncoder(stdout).Encode(map[string]string{"space_id": id, "admin_key": key})
			})
		},
	}
	create.Flags().BoolVar(&directPut, "direct-put", false, "allow direct PUT of the space's documents (default: change requests only)")
	adminKey := &cobra.Command{
		Use:   "admin-key SPACE_ID",
		Short: `Mint a new admin key (every person role) for an existing space, e.g. after its last admin key was revoked; prints {"space_id", "admin_key"}`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDB(cmd, func(d *bun.DB) error {
				key, err := spaces.AdminKey(cmd.Context(), d, args[0], time.Now())
				if err != nil {
					return err
				}
				return json.NewEncoder(stdout).Encode(map[string]string{"space_id": args[0], "admin_key": key})
			})
		},
	}
	space.AddCommand(create, adminKey)
	return space
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago. Every
// listener stays open until all n are picked, so the kernel cannot hand out one port twice
// (two separate freePort calls can return the same port).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer func() { _ = l.Close() }() // a probe listener: only its port number is kept
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// serveHTTP serves the API on addr (and the metrics on AGENTMEMORY_METRICS_ADDR when set)
// until ctx ends, then stops accepting connections and drains the requests in flight for at
// most AGENTMEMORY_SHUTDOWN_TIMEOUT. /readyz checks the database, tc and, when configured,
// Kafka.
func serveHTTP(ctx context.Context, a *app.App, ln net.Listener, tc client.Client) error {
	defer a.StartSealer(ctx)()
	defer a.StartKeyUsage(ctx)()
	var checks sync.WaitGroup
	checks.Go(func() { a.WarnUnreachableEmbedders(ctx) }) // a log line; never delays serving
	defer checks.Wait()
	if tc != nil {
		a.Ready = append(a.Ready, api.TemporalCheck(tc))
	}
	if len(a.Config.KafkaBrokers) > 0 {
		a.Ready = append(a.Ready, api.KafkaCheck(a.Config.KafkaBrokers))
	}
	var wf api.Workflows
	if tc != nil {
		wf = tc
	}
	srv := a.Server(wf).HTTPServer(ln.Addr().String())
	stopMetrics, err := serveMetrics(a, a.Config.MetricsAddr)
	if err != nil {
		_ = ln.Close() // the metrics error is the one to report
		return err
	}
	defer stopMetrics()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.Log.Info("api listening", "addr", ln.Addr().String())
	gate := api.GateLayers(a.Notes)
	a.Log.Info("personal-data gate", "local_layer", gate["local_layer"], "model_layer", gate["model_layer"])
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.Log.Info("api stopping: draining requests", "timeout", a.Config.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), a.Config.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("drain HTTP requests: %w", err)
	}
	a.Log.Info("api stopped")
	return nil
}

// serveMetrics serves GET /metrics and GET /healthz on addr (AGENTMEMORY_METRICS_ADDR) and
// returns a function that stops it; with addr empty it serves nothing (the API port serves
// /metrics instead).
func serveMetrics(a *app.App, addr string) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("AGENTMEMORY_METRICS_ADDR %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`) // a health probe whose caller went away: nothing to tell it
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed after Shutdown; a listener error shows as failed scrapes
	a.Log.Info("metrics listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // at shutdown: a scrape cut short is harmless
	}, nil
}

// healthcheckCmd is the container health check (the image has no shell or curl): it GETs
// URL and exits 0 on a 2xx answer within 3 seconds, 1 otherwise.
func healthcheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "healthcheck URL",
		Short: "Exit 0 when URL answers 2xx within 3 s (for container health checks)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
			if err != nil {
				return err
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			res.Body.Close()
			if res.StatusCode/100 != 2 {
				return fmt.Errorf("%s answered %d", args[0], res.StatusCode)
			}
			return nil
		},
	}
}
