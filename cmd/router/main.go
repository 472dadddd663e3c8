// Command router is the skillrouter CLI: inspect a skill library, explain
// routing decisions, serve the OpenAI-compatible proxy and benchmark strategies.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillrouter/skillrouter/internal/editdistance"
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
		first := time.Now()
		stop()
		second := nextSignal(sig, first, repeatWindow)
		if f := beforeForcedExit.Load(); f != nil {
			(*f)()
		}
		if second == syscall.SIGTERM {
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
		if isUsage(err) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// repeatWindow is how soon after the first signal another is taken as the
// same one: timeout(1), and a kill of a process group, deliver one signal
// to the process twice within a millisecond (to it and to its group), and
// the second cut every stream the graceful shutdown was finishing. A person
// pressing Ctrl-C again to stop at once does so later than this.
const repeatWindow = 200 * time.Millisecond

// nextSignal returns the first signal from sig that arrives window or more
// after first.
func nextSignal(sig <-chan os.Signal, first time.Time, window time.Duration) os.Signal {
	for {
		s := <-sig
		if time.Since(first) >= window {
			return s
		}
	}
}

// usageError is a command line that could not be parsed: an unknown flag
// or command, a bad flag value, the wrong number of arguments. It exits 2,
// as Go's flag package and most Unix tools do, so that a script can tell
// "called wrongly" from "the library is broken" (1).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// isUsage reports whether err is a command line that could not be parsed.
// cobra finds the root's unknown commands before any Args check, so their
// error is known by its text.
func isUsage(err error) bool {
	return errors.As(err, new(usageError)) || err != nil && strings.HasPrefix(err.Error(), "unknown command ")
}

// asUsage marks the command-line errors of cmd and its subcommands as
// usageError: flag parsing, argument checks, and (root) unknown commands.
func asUsage(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if near := nearestFlag(c, name); near != "" {
				err = fmt.Errorf("%w (did you mean --%s?)", err, near)
			}
		}
		return usageError{err}
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return usageError{err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
}

// flagAliases are names other tools give the flags they mean.
var flagAliases = map[string]string{"port": "listen", "host": "listen", "addr": "listen", "address": "listen",
	"upstream-url": "upstream", "base-url": "upstream", "url": "upstream", "key": "upstream-api-key", "api-key": "upstream-api-key",
	"library": "skills", "skills-dir": "skills", "dir": "skills"}

// nearestFlag names the flag of c a mistyped name most likely meant: an
// alias of it, one within two edits, or one holding every word of it
// (upstream-key: upstream-api-key); "" when none, or a tie.
func nearestFlag(c *cobra.Command, name string) string {
	fs := c.Flags()
	if a := flagAliases[name]; a != "" && fs.Lookup(a) != nil {
		return a
	}
	words := strings.Split(name, "-")
	best, bestD, tie := "", 3, false
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editdistance.Of(name, f.Name)
		if d > 2 {
			have := strings.Split(f.Name, "-")
			if !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(have, w) }) {
				d = 2 // every word typed is in it
			}
		}
		switch {
		case d < bestD:
			best, bestD, tie = f.Name, d, false
		case d == bestD:
			tie = true
		}
	})
	if tie {
		return ""
	}
	return best
}

// noArgs is cobra.NoArgs for a command that runs rather than holds
// subcommands: cobra's "unknown command "lib" for "router skills validate""
// reads as a misspelt subcommand, when the usual slip is a library folder
// given without --skills.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s takes no arguments, got %q", strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), args[0])
	if cmd.Flags().Lookup("skills") != nil {
		if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
			msg += "; a skill library folder is given as --skills " + shellQuote(args[0])
		}
	}
	return errors.New(msg)
}

// groupCommand makes a command that only holds subcommands refuse an
// unknown one ("router skills vaildate") instead of printing its help and
// exiting 0, as cobra does for a command that cannot run.
func groupCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}

// beforeForcedExit, when set (serve, once it drains), says what a second
// signal cuts before the process exits: the log otherwise ended with
// "shutting down: waiting ..." as if the requests had drained.
var beforeForcedExit atomic.Pointer[func()]

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
			printMisspelledEnv(cmd.ErrOrStderr())
		},
	}
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(groupCommand(newSkillsCmd()), newRouteCmd(), newServeCmd(), newBenchCmd(), newDemoCmd(), newMCPCmd(), groupCommand(newIndexCmd()), newDoctorCmd(), newVersionCmd())
	asUsage(root)
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
