// Command agentmemory is the service's one binary: dev (everything in one process on the
// embedded default), serve (API), worker (Temporal worker), migrate, space create, operator-key
// create (a key that only creates spaces over the API), and replay.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "agentmemory:", err)
		os.Exit(1)
	}
}

// run executes the command line args with the environment read through getenv.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	root := newRootCmd(getenv, stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
