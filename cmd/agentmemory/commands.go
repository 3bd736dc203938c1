package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"agentmemory/api"
	"agentmemory/internal/config"
	"agentmemory/internal/db"
	"agentmemory/internal/spaces"
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
	root.AddCommand(devCmd(load, stdout, stderr), serveCmd(load, stderr), workerCmd(load, stderr),
		migrateCmd(load, stdout), spaceCmd(load, stdout), replayCmd(getenv, stdout),
		notesCmd(getenv, stdout))
	return root
}

func devCmd(load func() (config.Config, error), stdout, stderr io.Writer) *cobra.Command {
	var addr, dataDir string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process on the embedded default (SQLite, a Temporal dev server)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("addr") || cfg.Addr == "" {
				cfg.Addr = addr
			}
			if cmd.Flags().Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if cfg.LogFormat == "json" && os.Getenv("AGENTMEMORY_LOG_FORMAT") == "" {
				cfg.LogFormat = "text"
			}
			ctx := cmd.Context()
			a, err := openApp(ctx, cfg, newLogger(cfg, stderr), true)
			if err != nil {
				return err
			}
			defer a.close()
			tc, stopTemporal, err := startTemporal(ctx, cfg, stdout)
			if err != nil {
				return err
			}
			defer stopTemporal()
			w, err := a.startWorker(tc)
			if err != nil {
				return err
			}
			defer w.Stop()
			defer a.startRelay(ctx)()
			exe, _ := os.Executable()
			fmt.Fprintf(stdout, "agentmemory dev: API on http://%s (data in %s)\n", cfg.Addr, cfg.DataDir)
			fmt.Fprintf(stdout, "create a space and its admin key with:\n  %s space create my-space --data-dir %s\n", exe, cfg.DataDir)
			return a.serveHTTP(ctx, cfg.Addr, tc)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen address of the API")
	cmd.Flags().StringVar(&dataDir, "data-dir", "./data", "directory of the durable files (database, Temporal, keys, secret)")
	return cmd
}

func serveCmd(load func() (config.Config, error), stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the API (configured from the environment)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := openApp(ctx, cfg, newLogger(cfg, stderr), false)
			if err != nil {
				return err
			}
			defer a.close()
			tc, err := dialTemporal(cfg)
			if err != nil {
				return err
			}
			defer tc.Close()
			return a.serveHTTP(ctx, cfg.Addr, tc)
		},
	}
}

func workerCmd(load func() (config.Config, error), stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (configured from the environment)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := openApp(ctx, cfg, newLogger(cfg, stderr), false)
			if err != nil {
				return err
			}
			defer a.close()
			tc, err := dialTemporal(cfg)
			if err != nil {
				return err
			}
			defer tc.Close()
			w, err := a.startWorker(tc)
			if err != nil {
				return err
			}
			defer w.Stop()
			defer a.startRelay(ctx)()
			<-ctx.Done()
			return nil
		},
	}
}

func migrateCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if !config.IsPostgres(databaseURL(cfg)) {
				if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
					return err
				}
			}
			d, err := db.Open(cmd.Context(), databaseURL(cfg), db.Options{MaxOpenConns: cfg.DBMaxOpenConns})
			if err != nil {
				return err
			}
			defer d.Close()
			names, err := db.Migrate(cmd.Context(), d)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "applied %d migrations\n", len(names))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "./data", "data directory (when DATABASE_URL is not set)")
	return cmd
}

func spaceCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir string
	space := &cobra.Command{Use: "space", Short: "Manage spaces"}
	create := &cobra.Command{
		Use:   "create NAME",
		Short: `Create a space; prints {"space_id", "admin_key"} (the key holds every person role and is shown once)`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if !config.IsPostgres(databaseURL(cfg)) {
				if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
					return err
				}
			}
			d, err := db.Open(cmd.Context(), databaseURL(cfg), db.Options{MaxOpenConns: 2})
			if err != nil {
				return err
			}
			defer d.Close()
			if _, err := db.Migrate(cmd.Context(), d); err != nil {
				return err
			}
			id, key, err := spaces.Create(cmd.Context(), d, args[0], time.Now())
			if err != nil {
				return err
			}
			return json.NewEncoder(stdout).Encode(map[string]string{"space_id": id, "admin_key": key})
		},
	}
	create.Flags().StringVar(&dataDir, "data-dir", "./data", "data directory (when DATABASE_URL is not set)")
	space.AddCommand(create)
	return space
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serveHTTP serves the API on addr until ctx ends, then drains requests.
func (a *app) serveHTTP(ctx context.Context, addr string, tc client.Client) error {
	var wf api.Workflows
	if tc != nil {
		wf = tc
	}
	srv := a.apiServer(wf).HTTPServer(addr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
