package main

import (
	"io"

	"github.com/spf13/cobra"
)

func replayCmd(getenv func(string) string, stdout io.Writer) *cobra.Command {
	return &cobra.Command{Use: "replay", Short: "Play ABCD conversations through the API", Hidden: true}
}
