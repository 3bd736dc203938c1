package main

import (
	"context"
	"fmt"
	"io"

	"github.com/uptrace/bun"
)

// printSpaceHint prints how to create a space and its admin key, only when the database holds
// no space yet (issue 27: the hint was printed on every start). exe is the binary's path and
// dataDir the --data-dir the command must be given. Errors are the database's.
func printSpaceHint(ctx context.Context, d bun.IDB, w io.Writer, exe, dataDir string) error {
	n, err := d.NewSelect().Table("spaces").Count(ctx)
	if err != nil {
		return fmt.Errorf("count spaces: %w", err)
	}
	if n > 0 {
		return nil
	}
	fmt.Fprintf(w, "create a space and its admin key with:\n  %s space create my-space --data-dir %s\n", exe, dataDir)
	return nil
}
