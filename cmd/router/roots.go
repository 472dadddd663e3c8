package main

// Which folders a command scans: the skills entries of the configuration
// (folders, or builtin:examples, the example library inside the binary),
// else the ecosystem's default folders that exist.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/examples"
	"github.com/skillrouter/skillrouter/internal/private"
	"github.com/skillrouter/skillrouter/skills"
)

const (
	builtinPrefix = "builtin:"
	// builtinExamples names the example library compiled into the binary.
	builtinExamples = builtinPrefix + "examples"
)

// defaultRootsHelp names the default roots the way users write them.
const defaultRootsHelp = "./.claude/skills, .agents/skills from here up to the repository root, ~/.claude/skills, " +
	"~/.agents/skills, ~/.codex/skills, Claude Code plugins' skills, $XDG_CONFIG_HOME/skillrouter/skills"

// addSkillsFlag registers the repeatable --skills flag shared by every
// command that reads a library. StringArray, not StringSlice: a folder name
// may contain a comma.
func addSkillsFlag(fs *pflag.FlagSet, dst *[]string) {
	fs.StringArrayVar(dst, "skills", nil,
		"skill library folder, or "+builtinExamples+" (the example library built into this binary); "+
			"repeat for several (on duplicate ids the earlier one wins). Replaces the defaults: those of "+
			defaultRootsHelp+" that exist (router skills roots lists them)")
}

// builtinRoot unpacks a builtin: library and returns its folder. The copy
// goes to the cache folder, else (read-only home, say) the temp folder.
func builtinRoot(spec string) (string, error) {
	if spec != builtinExamples {
		return "", fmt.Errorf("--skills %q: no such built-in library; the only one is %s", spec, builtinExamples)
	}
	var errs []error
	if dir, err := embed.CacheDir(""); err == nil {
		root, err := examples.Unpack(dir)
		if err == nil {
			return root, nil
		}
		errs = append(errs, err)
	}
	// The temp folder is shared and this name is predictable: the parent
	// must be this user's alone, or another user could have unpacked a
	// library of their own there first.
	parent := filepath.Join(os.TempDir(), "skillrouter-"+strconv.Itoa(os.Getuid()))
	err := os.MkdirAll(parent, 0o700)
	if err == nil {
		err = private.Check(parent)
	}
	if err == nil {
		var root string
		if root, err = examples.Unpack(parent); err == nil {
			return root, nil
		}
	}
	return "", errors.Join(append(errs, fmt.Errorf("unpacking the example library: %w", err))...)
}

// resolveRoots returns the folders to scan: the configured entries, with
// builtin: libraries unpacked, else the default roots that exist and may be
// read (defaultRoots).
func resolveRoots(entries []string) ([]string, error) {
	if len(entries) == 0 {
		roots, _ := defaultRoots(os.Stderr)
		return roots, nil
	}
	roots := make([]string, len(entries))
	for i, e := range entries {
		roots[i] = e
		if strings.HasPrefix(e, builtinPrefix) {
			r, err := builtinRoot(e)
			if err != nil {
				return nil, err
			}
			roots[i] = r
		}
	}
	return roots, nil
}

// defaultRoots returns the default roots that exist and may be read, and
// those that exist but may not (skills.CheckDefaultRoots), each of which it
// notes on note (when not nil) with why.
func defaultRoots(note io.Writer) (roots []string, refused []skills.CheckedRoot) {
	roots, refused = skills.DefaultRoots()
	if note != nil {
		for _, c := range refused {
			noteRefused(note, c)
		}
	}
	return roots, refused
}

// noteRefused says on w that a default root is not read, and why.
func noteRefused(w io.Writer, c skills.CheckedRoot) {
	fmt.Fprintf(w, "router: not reading %s: %v; %s\n", c.Path, c.Refused, refusedHint)
}

// refusedHint follows the reason a conventional root is not read.
const refusedHint = "a skills folder found by convention is read only when no user but you and root can change it (give it with --skills to read it anyway)"

// libraryOptions are the scan options of the library cfg chooses: roots
// found by convention (no skills configured) are scanned as such, each
// checked from where its convention starts (skills.Options.Conventional:
// the candidates DefaultRoots chose from), on every reload too.
func libraryOptions(cfg *config) skills.Options {
	if len(cfg.Skills) > 0 {
		return skills.Options{}
	}
	return skills.Options{Conventional: skills.DefaultRootCandidates()}
}

// requireRoots is resolveRoots for commands that need a library: when there
// is nothing to scan it fails with a message saying where it looked, and
// the command to try (try, with the built-in library).
func requireRoots(cfg *config, try string) ([]string, error) {
	if len(cfg.Skills) == 0 {
		roots, refused := defaultRoots(nil)
		if len(roots) > 0 {
			for _, c := range refused {
				noteRefused(os.Stderr, c)
			}
			return roots, nil
		}
		why := "none of the default folders exists (" + defaultRootsHelp + ")"
		if len(refused) > 0 {
			var b strings.Builder
			b.WriteString("of the default folders (" + defaultRootsHelp + "), those that exist are not read:")
			for _, c := range refused {
				fmt.Fprintf(&b, "\n  %s: %v", c.Path, c.Refused)
			}
			b.WriteString("\n" + refusedHint)
			why = b.String()
		}
		return nil, fmt.Errorf("no skill library found: %s.\n"+
			"Try the example library built into this binary:\n  %s\n"+
			"or give your own: --skills DIR (a folder with one sub-folder per skill, each holding a SKILL.md)",
			why, try)
	}
	roots, err := resolveRoots(cfg.Skills)
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		if info, err := os.Stat(r); err == nil && info.IsDir() {
			return roots, nil
		}
	}
	return nil, fmt.Errorf("no skill library found: %s", describeRoots(cfg, roots))
}

// describeRoots says, for each configured root, what was written, where,
// what it resolved to and what is wrong with it.
func describeRoots(cfg *config, roots []string) string {
	var parts []string
	for i, r := range roots {
		written := r
		if cfg.src != nil && i < len(cfg.src.skillsWritten) {
			written = cfg.src.skillsWritten[i]
		}
		var notes []string
		if w := cfg.src.where("skills"); w != "" {
			if l, ok := cfg.src.lines[fmt.Sprintf("skills[%d]", i)]; ok && cfg.src.fromFile("skills") {
				w = fmt.Sprintf("config %s:%d", cfg.src.file, l)
			}
			notes = append(notes, w)
		}
		abs, _ := filepath.Abs(r)
		switch {
		case cfg.src.fromFile("skills") && !filepath.IsAbs(written) && !strings.HasPrefix(written, "~"):
			notes = append(notes, "relative to the config file's folder: "+abs)
		case abs != written:
			notes = append(notes, "resolved: "+abs)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "skills %q", written)
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
		}
		b.WriteString(": ")
		switch info, err := os.Stat(r); {
		case err != nil && errors.Is(err, os.ErrNotExist):
			b.WriteString("no such folder")
		case err != nil:
			b.WriteString(err.Error())
		case !info.IsDir():
			b.WriteString("a file, not a folder")
		default:
			b.WriteString("ok")
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

// tryCommand is the command line the user ran, with --skills builtin:examples
// in place of any --skills: the exact command to try when no library exists.
// API keys are shown as their environment variable, never in clear.
func tryCommand(cmd *cobra.Command, args []string) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "skills" {
			return
		}
		if f.Value.Type() == "bool" && f.Value.String() == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
		if strings.HasSuffix(f.Name, "-key") {
			// A key is never echoed: its variable stands in for it.
			for _, k := range configKeys {
				if k.flag == f.Name {
					parts = append(parts, "--"+f.Name, `"$`+k.env()+`"`)
					return
				}
			}
		}
		parts = append(parts, "--"+f.Name, shellQuote(f.Value.String()))
	})
	parts = append(parts, "--skills", builtinExamples)
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
