// Command router is the skillrouter CLI: inspect a skill library, explain
// routing decisions, serve the OpenAI-compatible proxy and benchmark strategies.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	// The first SIGINT or SIGTERM ends ctx (serve's shutdown grace); a
	// second ends the process at once. One channel for both: restoring the
	// signals' handling after the first would restore "ignore" in a
	// process started with SIGINT ignored (a shell's background job).
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		<-sig
		stop()
		if <-sig == syscall.SIGTERM {
			os.Exit(143)
		}
		os.Exit(130)
	}()
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		var ec exitCode
		if asExit(err, &ec) {
			os.Exit(int(ec))
		}
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "router",
		Short:         "skillrouter: a proxy that selects Agent Skills before inference (OpenAI Chat Completions and Responses, Anthropic Messages, MCP)",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A misspelled variable is silently not read; serve and mcp log
		// it, the other commands say it here.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if n := cmd.Name(); n == "serve" || n == "mcp" {
				return
			}
			for _, m := range misspelledEnv(os.Environ()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "router: %s is not read by skillrouter; did you mean %s?\n", m[0], m[1])
			}
		},
	}
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newSkillsCmd(), newRouteCmd(), newServeCmd(), newBenchCmd(), newDemoCmd(), newMCPCmd(), newIndexCmd(), newDoctorCmd(), newVersionCmd())
	return root
}

// exitCode is returned by commands that must exit non-zero without printing
// an error (e.g. `skills validate` found problems it already printed).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExit(err error, target *exitCode) bool {
	ec, ok := err.(exitCode)
	if ok {
		*target = ec
	}
	return ok
}
