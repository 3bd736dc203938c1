package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentmemory/agentmemory/internal/config"
)

// restoreCmd: `agentmemory restore [--data-dir D | --database-url U]` (issue 29 §1, ER-1).
func restoreCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir, databaseURL string
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Make a database restored from a backup forget what was erased since (run before serve)",
		Long: `Run once on a database restored from a backup, with the CURRENT key store (never a copy
of the key store as old as the backup), before serve or worker use it:

  - turns still stored in clear (written before conversation keys existed) are sealed;
  - rows sealed under keys destroyed since the backup (erased subjects and conversations)
    are deleted: turns, working states, profiles;
  - derived data is dropped and rebuilt from the rows: notes' and knowledge chunks'
    full-text entries, the chunks' vector index; every space's cache revisions are bumped.

--data-dir D names the embedded SQLite database (D/agentmemory.db); --database-url U a
PostgreSQL (or sqlite://) database; without either, DATABASE_URL or ./data. The key store is
the configured one (AGENTMEMORY_KEYSTORE_URL, else the data dir's key file) and the server
secret is required (AGENTMEMORY_SECRET or the data dir's secret file). Pending migrations
are applied first. Every step is idempotent: running it again changes nothing more.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if cmd.Flags().Changed("database-url") {
				cfg.DatabaseURL = databaseURL
			}
			a, err := openApp(cmd.Context(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), false)
			if err != nil {
				return err
			}
			defer a.Close()
			steps, err := a.Restore(cmd.Context())
			for _, s := range steps {
				fmt.Fprintf(stdout, "%s: %d\n", s.Name, s.Count)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, "restore: done")
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "./data", "data directory of the embedded SQLite database")
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "database URL (postgres://... or sqlite://PATH), instead of DATABASE_URL")
	return cmd
}
