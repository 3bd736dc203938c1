package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// operatorKeyCmd is `agentmemory operator-key create LABEL | revoke KEY_ID` (issue 34 §3): a
// deployment operator's key, run next to the database like `space create`. The key belongs to
// no space and may only create spaces (POST /v1/spaces), as `agentmemory conformance` does.
func operatorKeyCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	var dataDir string
	root := &cobra.Command{Use: "operator-key", Short: "Manage the deployment operator's keys (they create spaces over the API, and read none)"}
	root.PersistentFlags().StringVar(&dataDir, "data-dir", "./data", "data directory (when DATABASE_URL is not set)")
	withDB := func(cmd *cobra.Command, fn func(d *bun.DB) error) error {
		d, _, err := openMigrated(cmd, load, dataDir)
		if err != nil {
			return err
		}
		defer func() { _ = d.Close() }() // fn's work is committed or not by then: a failed close loses nothing
		return fn(d)
	}
	create := &cobra.Command{
		Use:   "create LABEL",
		Short: `Mint an operator key; prints {"key_id", "operator_key"} (amop_..., shown once)`,
		Long: `Mint an operator key; prints {"key_id", "operator_key"} (amop_..., shown once).

An operator key belongs to no space: it may only create spaces (POST /v1/spaces, which answers
the new space's id and first admin key), and every other route refuses it (401). A space's
keys, its admins' too, never create spaces. agentmemory conformance --admin-key takes one to
create its two throwaway spaces (docs/conformance.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDB(cmd, func(d *bun.DB) error {
				id, key, err := spaces.MintOperatorKey(cmd.Context(), d, args[0], time.Now())
				if err != nil {
					return err
				}
				return json.NewEncoder(stdout).Encode(map[string]string{"key_id": id, "operator_key": key})
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke an operator key (effective on its next request)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDB(cmd, func(d *bun.DB) error { return spaces.RevokeOperatorKey(cmd.Context(), d, args[0], time.Now()) })
		},
	}
	root.AddCommand(create, revoke)
	return root
}
