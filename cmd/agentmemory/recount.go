package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/quotas"
)

// recountCmd is `agentmemory recount` (issue 34 §1): every storage counter (quota_usage, and
// note_source_counts of the notes cap) recomputed from the rows in one locked transaction; it
// prints one JSON object, quotas.Report (checked, and each counter fixed with its stored and
// counted value). Running it again fixes nothing. Safe while serve and worker run: writers
// of the counted tables wait for it.
func recountCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "recount",
		Short: "Recompute every storage counter (quotas, notes per agent) from the rows; prints what it fixed as JSON",
		Long: `Recount recomputes every counter the storage quotas (features.quotas) and the notes cap
keep, from the rows themselves, in one transaction that holds writers of the counted tables
off meanwhile, and writes back only the counters that differ. It prints one JSON object:
"checked" (how many counters it compared) and "fixed" (each corrected counter: table,
space_id, counter, key, was, now). A conversation's counter shows its key as
"(a conversation)". Nothing changes when every counter is right.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, _, err := openMigrated(cmd, load, dataDir)
			if err != nil {
				return err
			}
			defer func() { _ = d.Close() }() // the recount is committed by then: a failed close loses nothing
			rep, err := quotas.Recount(cmd.Context(), d)
			if err != nil {
				return err
			}
			out, err := json.Marshal(rep)
			if err != nil {
				return fmt.Errorf("recount: %w", err)
			}
			_, err = fmt.Fprintln(stdout, string(out))
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "./data", "data directory (when DATABASE_URL is not set)")
	return cmd
}
