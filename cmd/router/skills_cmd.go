package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/skills"
)

func newSkillsCmd() *cobra.Command {
	cf := &configFlags{}
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List, validate, show and render a skill library",
		Long: "Inspect a library of Agent Skills (folders holding a SKILL.md) exactly as the proxy sees it:\n" +
			"list the skills, validate them against the Agent Skills spec, show the load_skill result\n" +
			"for one skill, print the catalog put in the system prompt, or show which folders are searched.",
		Args: noArgs,
	}
	cf.register(cmd.PersistentFlags(), "skills")
	cmd.AddCommand(
		newSkillsListCmd(cf),
		newSkillsValidateCmd(cf),
		newSkillsShowCmd(cf),
		newSkillsCatalogCmd(cf),
		newSkillsRootsCmd(cf),
	)
	return cmd
}

// loadLibrary scans the roots the configuration chooses (--skills, the
// config file's skills, else the defaults).
func loadLibrary(cmd *cobra.Command, cf *configFlags, args []string) (*skills.Snapshot, error) {
	cfg, roots, err := configAndRoots(cmd, cf, args)
	if err != nil {
		return nil, err
	}
	snap := skills.Load(cmd.Context(), roots, libraryOptions(&cfg))
	if err := snap.Err(); err != nil {
		return nil, fmt.Errorf("scanning skills: %w", err)
	}
	return snap, nil
}

// validateCommand is the `router skills validate` command line that checks
// the library cmd read: its --config and --skills as given (the
// environment's SKILLROUTER_CONFIG and SKILLROUTER_SKILLS apply to both).
// Without them a bare `router skills validate` would read the default
// folders, not the library the hint is about.
func validateCommand(cmd *cobra.Command) string {
	parts := []string{cmd.Root().Name(), "skills", "validate"}
	fs := cmd.Flags()
	if f := fs.Lookup("config"); f != nil && f.Changed {
		parts = append(parts, "--config", shellQuote(f.Value.String()))
	}
	if fs.Changed("skills") {
		dirs, _ := fs.GetStringArray("skills")
		for _, d := range dirs {
			parts = append(parts, "--skills", shellQuote(d))
		}
	}
	return strings.Join(parts, " ")
}

// printLibraryProblems reports on stderr, where they do not spoil table or
// JSON output, what serve logs at warn: problems not tied to a skill (a
// missing root, a symlink loop) and the errors that keep skills out of the
// library, each with its path and line; warnings (the skill still loads)
// only as a count, since large public libraries carry many, with validate
// (validateCommand), the command that lists them.
func printLibraryProblems(w io.Writer, snap *skills.Snapshot, validate string) {
	lib := snap.LibraryProblems()
	warnings := 0
	for _, p := range snap.Problems() {
		if p.Severity == skills.SeverityError || slices.Contains(lib, p) {
			fmt.Fprintln(w, p.String())
			continue
		}
		warnings++
	}
	if warnings > 0 {
		fmt.Fprintf(w, "%s (the skills still load): `%s` lists them\n", plural(warnings, "warning"), validate)
	}
}

func newSkillsListCmd(cf *configFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every skill found, including skipped ones",
		Long: "List every skill found under the roots, including skipped ones, as a table or (--json) as\n" +
			`an array of {"id","name","description","path","type","resources":[...],"problems":[...]}.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			snap, err := loadLibrary(cmd, cf, nil)
			if err != nil {
				return err
			}
			printLibraryProblems(cmd.ErrOrStderr(), snap, validateCommand(cmd))
			all := snap.All()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				if all == nil {
					all = []*skills.Skill{}
				}
				return enc.Encode(all)
			}
			return writeTable(cmd.OutOrStdout(), all)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array instead of a table")
	return cmd
}

func writeTable(w io.Writer, list []*skills.Skill) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tFILES\tSTATUS\tDESCRIPTION")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.Type, len(s.Resources)+s.ResourcesOmitted, status(s), shorten(s.Description, 60))
	}
	return tw.Flush()
}

// status summarises a skill's problems for the table.
func status(s *skills.Skill) string {
	var errs, warns int
	for _, p := range s.Problems {
		if p.Severity == skills.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	if s.Skipped {
		return "skipped: " + plural(errs, "error")
	}
	// What frontmatter turns off is said: "ok" alone read as routable.
	st := "ok"
	switch {
	case s.Disabled():
		st = "disabled (enabled: false)"
	case s.AutoLoad != nil && !*s.AutoLoad:
		st = "ok, never auto-loaded"
	}
	if warns > 0 {
		st += ", " + plural(warns, "warning")
	}
	return st
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// shorten folds text onto one line and cuts it to n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

func newSkillsValidateCmd(cf *configFlags) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check every SKILL.md against the Agent Skills spec",
		Long: "Print every problem as path:line: severity: message. Exit status 1 when there is an error\n" +
			"(with --strict, also when there is a warning) or no skill at all, 0 otherwise.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			snap, err := loadLibrary(cmd, cf, nil)
			if err != nil {
				return err
			}
			var errs, warns int
			for _, p := range snap.Problems() {
				fmt.Fprintln(cmd.OutOrStdout(), p.String())
				if p.Severity == skills.SeverityError {
					errs++
				} else {
					warns++
				}
			}
			all := snap.All()
			fmt.Fprintf(cmd.ErrOrStderr(), "%s checked (%d loaded, %d skipped): %s, %s\n",
				plural(len(all), "skill"), snap.Len(), len(all)-snap.Len(), plural(errs, "error"), plural(warns, "warning"))
			if len(all) == 0 {
				// Most likely a wrong folder: nothing was checked.
				fmt.Fprintf(cmd.ErrOrStderr(), "no skill found under %s: a library is a folder with one sub-folder per skill, each holding a SKILL.md\n",
					strings.Join(snap.Roots(), ", "))
				return exitCode(1)
			}
			if errs > 0 || (strict && warns > 0) {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as failures (exit 1)")
	return cmd
}

func newSkillsShowCmd(cf *configFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print the load_skill result for a skill, as the model receives it",
		Long: "Print the load_skill result for the skill with this id (its folder path relative to the\n" +
			"root, e.g. anthropics/mcp-builder), or with this frontmatter name or last path element when\n" +
			"one skill has it, as load_skill accepts them. An unknown id prints the not-found result and\n" +
			"exits 1.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return nil
			}
			msg := fmt.Sprintf("want one skill ID (router skills list prints them), got %d arguments; e.g. router skills show --skills examples/skills sql-query-tuning", len(args))
			if len(args) > 1 {
				if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
					msg += "; a skill library folder is given as --skills " + shellQuote(args[0])
				}
			}
			return errors.New(msg)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			snap, err := loadLibrary(cmd, cf, args)
			if err != nil {
				return err
			}
			id := args[0]
			if s, ok := snap.Resolve(id); ok {
				fmt.Fprintln(cmd.OutOrStdout(), skills.Envelope(s))
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), skills.NotFound(id, snap, true)) // as a proxy whose catalog is cut, with search_skills, answers it
			if s, ok := snap.Lookup(id); ok && s.Skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s was skipped because of these problems:\n", id)
				for _, p := range s.Problems {
					fmt.Fprintln(cmd.ErrOrStderr(), "  "+p.String())
				}
			} else if shared, byName := snap.Sharing(id); len(shared) > 0 {
				what := "the name of"
				if !byName {
					what = "the end of the ids of"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%q is %s %d skills: %s; give one of their ids\n", id, what, len(shared), strings.Join(shared, ", "))
			} else {
				// Above is what the model would read; this is for the person.
				msg := fmt.Sprintf("no skill %q in the library (router skills list shows the ids)", id)
				if near := skills.Suggest(id, snap.Skills(), 3); len(near) > 0 {
					msg += "; did you mean " + strings.Join(near, ", ") + "?"
				}
				fmt.Fprintln(cmd.ErrOrStderr(), msg)
			}
			return exitCode(1)
		},
	}
}

func newSkillsCatalogCmd(cf *configFlags) *cobra.Command {
	var (
		format   string
		priority []string
		maxDesc  int
		tool     bool
	)
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Print the skill catalog as it goes into the system prompt",
		Long: "Print the catalog of loaded skills (skills with enabled: false are left out).\n" +
			"Formats: agent-skills (default, for load_skill), anthropic (name, description, location of\n" +
			"SKILL.md, for agents that read files themselves) and qark.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := skills.ParseFormat(format)
			if err != nil {
				return usageError{fmt.Errorf("--format: %w", err)}
			}
			if maxDesc < 0 {
				return usageError{fmt.Errorf("--max-description %d: want 0 (no limit) or more", maxDesc)}
			}
			snap, err := loadLibrary(cmd, cf, nil)
			if err != nil {
				return err
			}
			printLibraryProblems(cmd.ErrOrStderr(), snap, validateCommand(cmd))
			for _, id := range priority {
				if _, ok := snap.Resolve(id); !ok {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: --priority %s: no skill has this id (it is listed as given)\n", id)
				}
			}
			var list []*skills.Skill
			for _, s := range snap.Skills() {
				if !s.Disabled() {
					list = append(list, s)
				}
			}
			out := cmd.OutOrStdout()
			if tool {
				fmt.Fprintf(out, "%s\n", skills.LoadSkillTool(list))
				return nil
			}
			fmt.Fprintln(out, skills.RenderCatalog(list, skills.CatalogOptions{Format: f, Priority: priority, MaxDescription: maxDesc}))
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", string(skills.FormatAgentSkills), "catalog format: agent-skills, anthropic or qark")
	cmd.Flags().StringSliceVar(&priority, "priority", nil, "ids for a <prioritized_skills> line after the list (comma-separated or repeated)")
	cmd.Flags().IntVar(&maxDesc, "max-description", 0, "truncate descriptions to this many characters at a word boundary (0: no limit)")
	cmd.Flags().BoolVar(&tool, "tool", false, "print the load_skill tool definition (OpenAI JSON) instead of the catalog")
	return cmd
}
