package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmemory/agentmemory/internal/conformance"
)

// conformanceCmd runs internal/conformance against a live deployment (issue 34 §3, QT-3): it
// prints a table of the checks, writes the JSON report to --json, and exits non-zero when a
// check fails.
func conformanceCmd(stdout io.Writer) *cobra.Command {
	var o conformance.Options
	var jsonPath string
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Check a live deployment: tenant isolation over every route, bad input, erasure certificate, receipts, Console headers",
		Long: `Conformance points at a running deployment (--url) with a deployment operator key as --admin-key
(agentmemory operator-key create NAME: the run creates two throwaway spaces with POST /v1/spaces),
or with the admin keys of two throwaway spaces created for it with --direct-put (agentmemory
space create conformance-a --direct-put, and -b) as --admin-key and --peer-admin-key. It turns agent memory on in both, mints agent keys of two vendors, writes one note, then calls
every route of the deployment's /openapi.json across spaces and vendors (each answer must be
the not-found/forbidden shape and the note unchanged), sends bad input to every route (no 5xx,
nothing stored), erases a made-up subject in space A (a profile and a working state naming
it, through person keys with roles compliance and integration that it mints) and verifies the
signed certificate offline with the deployment's public keys, every store's probe 0 and the
state gone (this needs a Temporal worker and a signing key: without them the check fails),
verifies both receipt chains and the Console's CSP and framing headers. It prints a table,
writes the JSON report to --json, retires its note, revokes its keys, and exits non-zero on
any failure. See docs/conformance.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := conformance.Run(cmd.Context(), o)
			if rep != nil {
				printReport(stdout, rep)
				if jsonPath != "" {
					if werr := writeReport(jsonPath, rep); werr != nil {
						return werr
					}
				}
			}
			if err != nil {
				return err
			}
			if rep.Failures > 0 {
				return fmt.Errorf("conformance: %d of %d checks failed", rep.Failures, len(rep.Checks))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.URL, "url", "http://127.0.0.1:8080", "base URL of the deployment")
	cmd.Flags().StringVar(&o.AdminKey, "admin-key", "", "an operator key (amop_...: the run creates both spaces), or the admin key of throwaway space A (created with --direct-put)")
	cmd.Flags().StringVar(&o.PeerAdminKey, "peer-admin-key", "", "admin key of throwaway space B (created with --direct-put); leave out with an operator key")
	cmd.Flags().StringVar(&jsonPath, "json", "", "write the JSON report to this file")
	cmd.Flags().DurationVar(&o.ErasureWait, "erasure-wait", 2*time.Minute, "how long the erasure check waits for its erasure to end")
	return cmd
}

// printReport writes rep as a table: failures first, then a summary line.
func printReport(w io.Writer, rep *conformance.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tGROUP\tCHECK\tDETAIL")
	for _, pass := range []bool{false, true} {
		for _, c := range rep.Checks {
			if c.OK != pass {
				continue
			}
			res, detail := "FAIL", c.Detail
			if c.OK {
				res, detail = "ok", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res, c.Group, c.Name, detail)
		}
	}
	_ = tw.Flush() // a failed write to stdout leaves nothing to report to
	fmt.Fprintf(w, "%d checks, %d failed\n", len(rep.Checks), rep.Failures)
}

// writeReport writes rep as indented JSON to path.
func writeReport(path string, rep *conformance.Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
