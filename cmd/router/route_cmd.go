package main

import "github.com/spf13/cobra"

// STUB — replaced by its owner.
func newRouteCmd() *cobra.Command {
	return &cobra.Command{Use: "route", Short: "(not yet built)"}
}
