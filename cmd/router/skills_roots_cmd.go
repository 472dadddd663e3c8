package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/skills"
)

// rootReport is one searched folder in `router skills roots`.
type rootReport struct {
	Path    string `json:"path"`
	Source  string `json:"source"`
	Status  string `json:"status"` // scanned, missing, not a folder, same folder as ..., not read: why
	Skills  int    `json:"skills"`
	Skipped int    `json:"skipped"`
}

func newSkillsRootsCmd(cf *configFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "roots",
		Short: "Show which folders are searched for skills, which exist, and how many skills each gives",
		Long: "List the folders a command would scan, in order, with where each comes from, whether it\n" +
			"exists and how many skills it holds (skipped: broken ones). With --skills or a config file's\n" +
			"skills these are the folders given; otherwise the default folders: " + defaultRootsHelp + ",\n" +
			"of which one that a user other than you and root can change is not read (status \"not read:\"\n" +
			"and why; docs/security.md). When two roots hold the same skill id, the earlier wins.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd.Flags(), cf, os.LookupEnv)
			if err != nil {
				return err
			}
			rows, total, err := searchedRoots(cmd.Context(), &cfg)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(rows)
			}
			return writeRootsTable(cmd.OutOrStdout(), rows, total)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {path, source, status, skills, skipped}")
	return cmd
}

// searchedRoots describes every root the configuration makes a command
// search: the configured ones, else every default candidate; and how many
// skills the library of all of them holds.
func searchedRoots(ctx context.Context, cfg *config) ([]rootReport, int, error) {
	var cands []skills.CheckedRoot
	if len(cfg.Skills) > 0 {
		resolved, err := resolveRoots(cfg.Skills)
		if err != nil {
			return nil, 0, err
		}
		src := cfg.src.where("skills")
		given := make([]skills.Root, len(resolved))
		for i, r := range resolved {
			s := src
			if cfg.Skills[i] != r { // builtin:examples
				s += " (" + cfg.Skills[i] + ")"
			}
			given[i] = skills.Root{Path: r, Source: s}
		}
		// Read whoever owns them: the user asked for them.
		cands = skills.CheckRoots(given, false)
	} else {
		// What DefaultRoots reads, decided the same way.
		cands = skills.CheckDefaultRoots()
	}
	opts := libraryOptions(cfg)
	var scanned []string
	rows := make([]rootReport, 0, len(cands))
	for _, c := range cands {
		row := rootReport{Path: c.Path, Source: c.Source}
		switch {
		case errors.Is(c.Err, fs.ErrNotExist):
			row.Status = "missing"
		case c.Err != nil:
			row.Status = "not a folder"
		case c.Refused != nil:
			row.Status = "not read: " + c.Refused.Error()
		case c.SameAs != "":
			row.Status = "same folder as " + c.SameAs
		default:
			row.Status = "scanned"
			scanned = append(scanned, c.Path)
			snap := skills.Load(ctx, []string{c.Path}, opts)
			row.Skills = snap.Len()
			row.Skipped = len(snap.All()) - snap.Len()
		}
		rows = append(rows, row)
	}
	total := 0
	if len(scanned) > 0 {
		total = skills.Load(ctx, scanned, opts).Len()
	}
	return rows, total, nil
}

func writeRootsTable(w io.Writer, rows []rootReport, total int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROOT\tSTATUS\tSKILLS\tSOURCE")
	used := 0
	for _, r := range rows {
		n := "-"
		if r.Status == "scanned" {
			used++
			n = fmt.Sprint(r.Skills)
			if r.Skipped > 0 {
				n += fmt.Sprintf(" (+%d skipped)", r.Skipped)
			}
		}
		src := r.Source
		if src == "" {
			src = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Path, r.Status, n, src)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nlibrary: %s from %s (an id in two roots counts once: the earlier root wins)\n",
		plural(total, "skill"), plural(used, "scanned root"))
	return nil
}
