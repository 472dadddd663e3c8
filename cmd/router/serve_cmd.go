package main

import "github.com/spf13/cobra"

// STUB — replaced by its owner.
func newServeCmd() *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "(not yet built)"}
}
