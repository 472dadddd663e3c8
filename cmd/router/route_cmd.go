package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// rankingKeys are the configuration keys route and bench offer as flags:
// the library, the strategy and the embedder.
var rankingKeys = []string{"skills", "routing.strategy", "routing.max_auto_load", "routing.embed_timeout",
	"embedder.provider", "embedder.model", "embedder.base_url", "embedder.api_key"}

// routeRanked is how many ranked skills --json lists by default: a library
// of thousands would otherwise print every skill, most with a zero score
// (--ranked 0 lists them all).
const routeRanked = 50

func newRouteCmd() *cobra.Command {
	var (
		cf      configFlags
		asJSON  bool
		rows    int
		ranked  int
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "route [flags] MESSAGE",
		Short: "Explain which skills a message would be routed to",
		Long: "Rank the skill library against MESSAGE exactly as the proxy does for a chat request whose\n" +
			"latest user message is MESSAGE, and print the ranked skills with their scores and what\n" +
			"would be auto-loaded (within the auto-load token budget, as the rewrite does) and why the\n" +
			"others would not. A #skill-id or /skill-id mention pins that skill. The configuration\n" +
			"(--config, SKILLROUTER_* variables, flags) is read as `router serve` reads it.\n\n" +
			"--json prints {\"query\",\"strategy\",\"embedder\",\"fallback\",\"ranked\":[{\"id\",\"score\",\"components\"}],\n" +
			"\"selected\":[ids]} (plus fallback_reason, fallback_code, pinned and reasons when set); ranked holds the\n" +
			fmt.Sprintf("top %d skills (--ranked N: N of them, 0: the whole library).", routeRanked),
		Example: "  router route --skills examples/skills \"my postgres query is slow\"\n" +
			"  router route --skills builtin:examples --strategy bm25 --json \"use /regex-builder for ISO dates\"",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want one MESSAGE to route (quote it), got %d arguments; e.g. router route \"my postgres query is slow\"", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if rows < 0 || ranked < 0 {
				return usageError{fmt.Errorf("--rows %d --ranked %d: each must be 0 or more", rows, ranked)}
			}
			if strings.TrimSpace(args[0]) == "" {
				return usageError{fmt.Errorf("MESSAGE is empty")}
			}
			cfg, roots, err := configAndRoots(cmd, &cf, args)
			if err != nil {
				return err
			}
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelDebug
			}
			opts := cfg.routerOptions(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})))
			// An index kept by a server stopped before it settled an edit
			// ranks as that edit's build did: settled at once here, so a
			// one-off route ranks as a fresh start does.
			opts.SettleAfter = time.Nanosecond
			reg, r, err := buildRouter(cmd.Context(), roots, libraryOptions(&cfg), cfg.Embedder, opts)
			if err != nil {
				return err
			}
			defer r.Close()
			if err := r.Settled(cmd.Context()); err != nil {
				return err
			}
			printLibraryProblems(cmd.ErrOrStderr(), reg.Snapshot(), validateCommand(cmd))
			// Rank only what is printed, as the proxy ranks only what it
			// uses: the whole library with --ranked 0.
			depth := ranked
			if !asJSON {
				depth = max(rows, 1)
			}
			msgs := []router.Message{{Role: "user", Text: args[0]}}
			d := r.Route(cmd.Context(), router.Query{Messages: msgs, Ranked: depth})
			// What is auto-loaded is what the rewrite injects: a body over
			// the auto-load budget is left for the model to load.
			p, err := router.BuildPrompt(cmd.Context(), r.Snapshot(), d, msgs, cfg.rewriteOptions(nil))
			if err != nil {
				return err
			}
			d = p.Decision
			if asJSON {
				return writeDecisionJSON(cmd.OutOrStdout(), d, ranked)
			}
			if err := writeDecisionTable(cmd.OutOrStdout(), d, rows, r.Snapshot().Len() == 0); err != nil {
				return err
			}
			writeUnresolvedMentions(cmd.OutOrStdout(), args[0], d, r.Snapshot())
			return nil
		},
	}
	cf.register(cmd.Flags(), append(rankingKeys, "rewrite.auto_load_budget_tokens")...)
	cf.alias(cmd.Flags(), "top-k", "max-auto-load")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision as JSON")
	cmd.Flags().IntVar(&rows, "rows", 10, "ranked skills shown in the table")
	cmd.Flags().IntVar(&ranked, "ranked", routeRanked, "ranked skills listed by --json (0 = the whole library)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log index building and calibration to stderr")
	return cmd
}

func writeDecisionJSON(w io.Writer, d *router.Decision, ranked int) error {
	out := *d
	if ranked > 0 && len(out.Ranked) > ranked {
		out.Ranked = out.Ranked[:ranked]
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func writeDecisionTable(w io.Writer, d *router.Decision, rows int, empty bool) error {
	fmt.Fprintf(w, "query:    %s\n", oneLine(d.Query, 100))
	emb := d.Embedder
	if emb == "" {
		emb = "none"
	}
	fmt.Fprintf(w, "strategy: %s   embedder: %s\n", d.Strategy, emb)
	if d.Fallback {
		fmt.Fprintf(w, "fallback: %s\n", d.FallbackReason)
	}
	fmt.Fprintln(w)
	// Component columns in a fixed order, only those present.
	var cols []string
	if len(d.Ranked) > 0 {
		for _, c := range []string{"keyword", "bm25", "bm25_norm", "cosine", "confidence"} {
			if _, ok := d.Ranked[0].Components.Get(c); ok {
				cols = append(cols, c)
			}
		}
	}
	selected := map[string]bool{}
	for _, id := range d.Selected {
		selected[id] = true
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "RANK\tSCORE\t")
	for _, c := range cols {
		fmt.Fprint(tw, strings.ToUpper(c)+"\t")
	}
	fmt.Fprintln(tw, "SKILL\t")
	for i, s := range d.Ranked {
		if i >= rows {
			break
		}
		mark := ""
		if selected[s.ID] {
			mark = "  *"
		}
		fmt.Fprintf(tw, "%d\t%.4f\t", i+1, s.Score)
		for _, c := range cols {
			v, _ := s.Components.Get(c)
			fmt.Fprintf(tw, "%.4f\t", v)
		}
		fmt.Fprintf(tw, "%s%s\t\n", s.ID, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch {
	case empty:
		fmt.Fprintln(w, "auto-load: nothing (the library has no skill: `router skills validate` shows why)")
	case len(d.Selected) == 0 && len(d.Reasons) == 0:
		fmt.Fprintln(w, "auto-load: nothing (no skill is a confident match)")
	case len(d.Selected) == 0:
		fmt.Fprintln(w, "auto-load: nothing") // the reasons below say why
	default:
		fmt.Fprintf(w, "auto-load: %s\n", strings.Join(d.Selected, ", "))
	}
	if len(d.Pinned) > 0 {
		fmt.Fprintf(w, "pinned:    %s\n", strings.Join(d.Pinned, ", "))
	}
	if len(d.Reasons) > 0 {
		// In rank order, as the table lists them; others (a mention's)
		// after, by id.
		rank := map[string]int{}
		for i, s := range d.Ranked {
			rank[s.ID] = i + 1
		}
		ids := make([]string, 0, len(d.Reasons))
		for id := range d.Reasons {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool {
			ri, rj := rank[ids[i]], rank[ids[j]]
			if (ri == 0) != (rj == 0) {
				return ri != 0
			}
			if ri != rj {
				return ri < rj
			}
			return ids[i] < ids[j]
		})
		fmt.Fprintln(w, "not loaded:")
		for _, id := range ids {
			fmt.Fprintf(w, "  %s: %s\n", id, d.Reasons[id])
		}
	}
	return nil
}

// writeUnresolvedMentions says which #mentions of the query pinned no
// skill, and why: a skill author checks mentions with route, and a
// mention of a skill skipped for errors, or misspelled, was silently
// nothing.
func writeUnresolvedMentions(w io.Writer, query string, d *router.Decision, snap *skills.Snapshot) {
	var lines []string
	for _, m := range router.Mentions(query) {
		name, id := m.Raw, m.Key
		if s, ok := snap.Resolve(id); ok && slices.Contains(d.Pinned, s.ID) {
			continue
		}
		if slices.ContainsFunc(d.Pinned, func(p string) bool { return strings.HasPrefix(id, strings.ToLower(p)) }) {
			continue // pinned, in a script written without spaces and followed by more of it
		}
		switch s, ok := snap.Lookup(id); {
		case ok && s.Skipped:
			lines = append(lines, fmt.Sprintf("  #%s: skipped for errors (router skills validate shows them)", name))
		case ok && d.Reasons[s.ID] != "":
			lines = append(lines, fmt.Sprintf("  #%s: not pinned (%s)", name, d.Reasons[s.ID]))
		case ok:
			lines = append(lines, fmt.Sprintf("  #%s: not pinned", name))
		default:
			if same := router.MentionShared(snap.Skills(), id); len(same) > 1 {
				lines = append(lines, fmt.Sprintf("  #%s: names more than one skill (%s): mention one by its id", name, strings.Join(same, ", ")))
				continue
			}
			hint := ""
			if sugg := skills.Suggest(id, snap.Skills(), 1); len(sugg) > 0 {
				hint = "; did you mean #" + sugg[0] + "?"
			}
			lines = append(lines, fmt.Sprintf("  #%s: no skill has this id or name%s", name, hint))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "mentions not pinned:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
