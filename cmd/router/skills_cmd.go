package main

import "github.com/spf13/cobra"

// STUB — replaced by its owner.
func newSkillsCmd() *cobra.Command {
	return &cobra.Command{Use: "skills", Short: "(not yet built)"}
}
