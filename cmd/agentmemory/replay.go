package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/replay"
	"github.com/agentmemory/agentmemory/sdk"
)

// replayCmd: agentmemory replay --dataset FILE --url URL --key AGENT_KEY. It plays each ABCD
// conversation through the REST API as the key's agent, reads each state back and prints a
// report; it fails when a write is refused or a state does not read back as written.
// --types AGENT prints the object-types document the replay needs and exits.
func replayCmd(cl config.Client, stdout io.Writer) *cobra.Command {
	var dataset, url, key, types, agentVersion string
	var limit int
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Play the ABCD conversations through the working-memory API and report",
		Long: "Play each ABCD conversation through the REST API as the key's agent: one working state per\n" +
			"conversation (flow, subflow, step reached, turn, order id, the customer's e-mail in a pii\n" +
			"field), written turn by turn, then read back. The space needs the agent_state feature on and\n" +
			"the document printed by `agentmemory replay --types AGENT` as its object-types.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if types != "" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(replay.ObjectTypes(types))
			}
			if url == "" {
				url = cl.URL
			}
			if url == "" {
				url = "http://127.0.0.1:8080"
			}
			if key == "" {
				key = cl.Key
			}
			if key == "" {
				return errors.New("replay: an agent key is needed: --key or AGENTMEMORY_KEY")
			}
			convs, err := replay.Load(dataset)
			if err != nil {
				return err
			}
			if limit > 0 && limit < len(convs) {
				convs = convs[:limit]
			}
			c, err := sdk.New(sdk.Options{BaseURL: url, Key: key, AgentVersion: agentVersion})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "replaying %d conversations from %s against %s\n", len(convs), dataset, url)
			rep, err := replay.Play(cmd.Context(), c, convs)
			rep.Print(stdout)
			if err != nil {
				return err
			}
			if _, _, refused, _, _, ok := rep.Totals(); refused > 0 || !ok {
				return errors.New("replay: some writes were refused or some states did not read back as written")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dataset, "dataset", "testdata/abcd/abcd_sample.json", "ABCD dataset file")
	cmd.Flags().StringVar(&url, "url", "", "API base URL (default $AGENTMEMORY_URL, else http://127.0.0.1:8080)")
	cmd.Flags().StringVar(&key, "key", "", "agent key with scope agent_state (default $AGENTMEMORY_KEY)")
	cmd.Flags().IntVar(&limit, "limit", 0, "play only the first N conversations (0: all)")
	cmd.Flags().StringVar(&agentVersion, "agent-version", "agentmemory-replay/1", "Agent-Version header sent with each write")
	cmd.Flags().StringVar(&types, "types", "", "print the object-types document for agent AGENT and exit")
	return cmd
}
