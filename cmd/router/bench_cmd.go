package main

import "github.com/spf13/cobra"

// STUB — replaced by its owner.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "(not yet built)"}
}
