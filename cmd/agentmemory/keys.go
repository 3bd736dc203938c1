package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/keystore"
)

// keysCmd groups the shared key store's maintenance commands (issue 12 §5).
func keysCmd(load func() (config.Config, error), stdout io.Writer) *cobra.Command {
	keys := &cobra.Command{Use: "keys", Short: "Maintain the shared subject key store (AGENTMEMORY_KEYSTORE_URL)"}
	var batch int
	rewrap := &cobra.Command{
		Use:   "rewrap",
		Short: "Rewrap every subject key under AGENTMEMORY_KEK (online, in batches, idempotent); prints the counts",
		Long: `Rewrap moves every subject key wrapped by a previous KEK (AGENTMEMORY_KEK_PREVIOUS) to the
current one (AGENTMEMORY_KEK), a batch per transaction, while serve and worker keep running.
Run it after every replica runs with the new KEK current and the old one previous; when it
reports 0 unknown, remove the old KEK from AGENTMEMORY_KEK_PREVIOUS. Running it again
rewraps nothing. It exits non-zero when keys wrapped by a KEK it does not hold remain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if cfg.KeystoreURL == "" {
				return errors.New("keys rewrap: AGENTMEMORY_KEYSTORE_URL is not set (only the shared PostgreSQL key store is rewrapped)")
			}
			cur, prev, err := cfg.KEKs()
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			ks, err := keystore.OpenPostgres(cmd.Context(), cfg.KeystoreURL, keystore.PostgresOptions{KEK: cur, Previous: prev, MaxOpenConns: 1})
			if err != nil {
				return err
			}
			defer func() { _ = ks.Close() }() // each rewrap is committed on its own: a failed close loses nothing
			res, err := ks.Rewrap(cmd.Context(), batch)
			fmt.Fprintf(stdout, "rewrapped %d keys under KEK %s (%d already current, %d under an unknown KEK)\n",
				res.Rewrapped, keystore.KEKID(cur), res.Current, res.Unknown)
			return err
		},
	}
	rewrap.Flags().IntVar(&batch, "batch", 500, "keys rewrapped per transaction")
	keys.AddCommand(rewrap)
	return keys
}
