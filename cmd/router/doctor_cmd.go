package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/private"
	"github.com/skillrouter/skillrouter/internal/redact"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/upstreamcheck"
)

// doctorTimeout bounds each network check of `router doctor`.
const doctorTimeout = 10 * time.Second

// checkStatus is the outcome of one doctor check.
type checkStatus string

const (
	checkOK   checkStatus = "ok"
	checkWarn checkStatus = "warn"
	checkFail checkStatus = "FAIL"
	checkSkip checkStatus = "skipped"
)

// checkRow is one line of the doctor's table: what was checked, how it
// went, and for a warning or failure what to do about it.
type checkRow struct {
	name   string
	status checkStatus
	detail string
	fix    string
}

func newDoctorCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "doctor [serve flags]",
		Short: "Check the configuration, library, upstream, embedder, cache folder and sandbox in one run",
		Long: "doctor reads the configuration exactly as `router serve` does (same file, variables and\n" +
			"flags) and checks what serve needs: the configuration itself, the skill library (roots and\n" +
			"problems), the upstream (GET /models: reachable, key accepted, model list), the embedder\n" +
			"(reachable, dimension), the cache folder (writable), the listen address (free) and, with\n" +
			"--exec, the sandbox (Landlock). It prints one row per check with a fix for each problem,\n" +
			"and exits 1 when a check failed.",
		Example: "  router doctor\n" +
			"  router doctor --config examples/config.yaml\n" +
			"  router doctor --skills builtin:examples --upstream http://127.0.0.1:11434/v1",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows := runDoctor(cmd.Context(), cmd, &cf, args)
			failed := writeDoctorTable(cmd.OutOrStdout(), rows)
			if failed > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s failed\n", plural(failed, "check"))
				return exitCode(1)
			}
			return nil
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().SortFlags = false
	return cmd
}

// runDoctor runs every check; a configuration that does not load stops
// there, since every other check would test the wrong values.
func runDoctor(ctx context.Context, cmd *cobra.Command, cf *configFlags, args []string) []checkRow {
	cfg, err := loadConfig(cmd.Flags(), cf, os.LookupEnv)
	if err != nil {
		return []checkRow{{name: "config", status: checkFail, detail: err.Error(), fix: "correct the value named; `router serve --help` lists every key"}}
	}
	rows := []checkRow{configRow(&cfg), secretsRow(&cfg)}
	rows = append(rows, libraryRow(ctx, &cfg, tryCommand(cmd, args), validateCommand(cmd)))
	rows = append(rows, upstreamRows(ctx, &cfg)...)
	rows = append(rows, embedderRow(ctx, "embedder", cfg.Embedder))
	for _, a := range cfg.AB.Arms {
		if a.Embedder != nil { // an arm ranking with an embedder of its own
			rows = append(rows, embedderRow(ctx, "embedder (arm "+a.Name+")", *a.Embedder))
		}
	}
	rows = append(rows, cacheRow(&cfg))
	rows = append(rows, listenRow(&cfg))
	rows = append(rows, sandboxRow(&cfg))
	return rows
}

func configRow(cfg *config) checkRow {
	if cfg.src.file == "" {
		return checkRow{name: "config", status: checkOK, detail: "no config file: defaults, SKILLROUTER_* variables and flags"}
	}
	return checkRow{name: "config", status: checkOK, detail: cfg.src.file + " loads"}
}

// secretsRow warns of each file holding secrets that other users can read
// (exposedSecrets, as serve does at start).
func secretsRow(cfg *config) checkRow {
	exposed := exposedSecrets(cfg)
	if len(exposed) == 0 {
		return checkRow{name: "secrets", status: checkOK, detail: "no file holding a secret can be read by other users"}
	}
	var lines []string
	var paths []string
	for _, f := range exposed {
		lines = append(lines, fmt.Sprintf("%s holds %s, and %s", f.path, f.holds, f.exposed))
		paths = append(paths, shellQuote(f.path))
	}
	return checkRow{name: "secrets", status: checkWarn, detail: strings.Join(lines, "\n"),
		fix: "chmod 600 " + strings.Join(paths, " ") + " (or keep the secrets in the environment)"}
}

func libraryRow(ctx context.Context, cfg *config, try, validate string) checkRow {
	roots, err := requireRoots(cfg, try)
	if err != nil {
		return checkRow{name: "library", status: checkFail, detail: err.Error(), fix: "give --skills DIR (or skills: in the config file)"}
	}
	snap := skills.Load(ctx, roots, libraryOptions(cfg))
	shown := cfg.Skills
	if len(shown) == 0 {
		shown = roots
	}
	detail := fmt.Sprintf("%s from %s", plural(snap.Len(), "skill"), strings.Join(shown, ", "))
	var errs, warns int
	for _, p := range snap.Problems() {
		if p.Severity == skills.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	switch {
	case snap.Len() == 0:
		return checkRow{name: "library", status: checkFail, detail: detail, fix: "the roots hold no usable skill: `" + validate + "` shows why"}
	case errs+warns > 0:
		return checkRow{name: "library", status: checkWarn, detail: fmt.Sprintf("%s; %s, %s", detail, plural(errs, "error"), plural(warns, "warning")),
			fix: "`" + validate + "` lists them with path and line (skills with errors are skipped)"}
	}
	return checkRow{name: "library", status: checkOK, detail: detail}
}

func upstreamRows(ctx context.Context, cfg *config) []checkRow {
	checkers, err := cfg.upstreamCheckers(nil)
	if err != nil {
		return []checkRow{{name: "upstream", status: checkFail, detail: err.Error()}}
	}
	rows := make([]checkRow, len(checkers))
	for i, c := range checkers {
		rows[i] = upstreamRow(ctx, c, cfg)
	}
	return rows
}

func upstreamRow(ctx context.Context, c *upstreamcheck.Checker, cfg *config) checkRow {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	r := c.Check(ctx)
	name, where := "upstream", redact.URL(cfg.Upstream.URL)
	if r.Name == "upstream.anthropic_url" {
		name, where = "anthropic", redact.URL(cfg.Upstream.AnthropicURL)
	}
	if r.OK() {
		detail := fmt.Sprintf("%s: %s", where, r.Summary())
		if len(r.ModelIDs) > 0 {
			detail += " (" + strings.Join(r.ModelIDs[:min(len(r.ModelIDs), 5)], ", ")
			if r.Models > 5 {
				detail += ", …"
			}
			detail += ")"
		}
		return checkRow{name: name, status: checkOK, detail: detail}
	}
	status := checkFail
	if r.ClientKeys || (r.Status == upstreamcheck.StatusUnreachable && name == "upstream" && cfg.src.where("upstream.url") == "" && cfg.Upstream.AnthropicURL != "") {
		// It answers and wants the clients' keys, as a proxy without
		// upstream keys runs; or it is the default upstream, unused by a
		// setup that gave only Anthropic's.
		status = checkWarn
	}
	return checkRow{name: name, status: status, detail: where + ": " + r.Error, fix: r.Hint}
}

// embedderRow checks one embedder (the configuration's, or an A/B arm's:
// row names it) with a query.
func embedderRow(ctx context.Context, row string, ec embed.Config) checkRow {
	name := providerName(ec)
	e, err := embed.New(ec)
	if err != nil {
		return checkRow{name: row, status: checkFail, detail: name + ": " + err.Error(), fix: "check the embedder.* keys"}
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	start := time.Now()
	vecs, err := e.Embed(ctx, []string{"skillrouter doctor: is the embedder there?"})
	if err != nil || len(vecs) != 1 {
		// The fix follows what failed: a server that answered and refused
		// (no such model, a bad key) is not one that is down.
		fix := "is the embedding server running at embedder.base_url? routing falls back to bm25 while it is not"
		if errors.Is(err, embed.ErrMisconfigured) {
			fix = "the embedding server answered and refused: check embedder.model (Ollama: pull it) and the key (embedder.api_key or OPENAI_API_KEY)"
		}
		return checkRow{name: row, status: checkFail, detail: fmt.Sprintf("%s %s: %v", name, e.Model(), err), fix: fix}
	}
	return checkRow{name: row, status: checkOK,
		detail: fmt.Sprintf("%s %s: %d dimensions, %.0f ms", name, e.Model(), len(vecs[0]), float64(time.Since(start).Microseconds())/1000)}
}

// cacheRow checks the folder that keeps remote embeddings and the unpacked
// example library.
func cacheRow(cfg *config) checkRow {
	dir, err := embed.CacheDir(cfg.Embedder.CacheDir)
	if err != nil {
		return checkRow{name: "cache", status: checkFail, detail: err.Error(), fix: "set embedder.cache_dir, or XDG_CACHE_HOME"}
	}
	if dir == "" {
		return checkRow{name: "cache", status: checkSkip, detail: "disabled (embedder.cache_dir: -)"}
	}
	if err := writable(dir); err != nil {
		// serve runs without it (a warning): remote embeddings are asked for
		// again and the routing index is not kept, so every start is cold.
		return checkRow{name: "cache", status: checkWarn, detail: dir + ": " + err.Error() + " (serve runs, but every start embeds the library again)",
			fix: "make it writable, or set embedder.cache_dir (or XDG_CACHE_HOME) to a writable folder"}
	}
	if free, ok := freeBytes(dir); ok && free < minCacheFree {
		return checkRow{name: "cache", status: checkWarn, detail: fmt.Sprintf("%s is writable but has %s free: a kept routing index (about 11 MB at 1,267 skills, 90 MB at 10,000) may not fit", dir, formatSize(int64(free))),
			fix: "free space there, or set embedder.cache_dir (or XDG_CACHE_HOME) to a folder with room"}
	}
	return checkRow{name: "cache", status: checkOK, detail: dir + " is writable"}
}

// minCacheFree is the free space below which the cache folder is warned
// about.
const minCacheFree = 128 << 20

func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return unwrapPath(err)
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return unwrapPath(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// listenRow warns when the listen address is taken: serve would fail (or a
// proxy already runs there).
func listenRow(cfg *config) checkRow {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return checkRow{name: "listen", status: checkWarn, detail: cfg.Listen + ": " + unwrapNet(err), fix: listenFix(err)}
	}
	ln.Close()
	return checkRow{name: "listen", status: checkOK, detail: cfg.Listen + " is free"}
}

// listenFix says what to do about a listen error.
func listenFix(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return "another process (a running proxy?) holds it: stop it or choose --listen"
	}
	return "choose another address with --listen"
}

// listenError is a listen failure as serve and demo report it: the
// address, the cause, and what to do.
func listenError(addr string, err error) error { return &listenErr{addr: addr, err: err} }

type listenErr struct {
	addr string
	err  error
}

// Error names the cause without net's repetition of the address.
func (e *listenErr) Error() string {
	return fmt.Sprintf("cannot listen on %s: %s: %s", e.addr, unwrapNet(e.err), listenFix(e.err))
}

func (e *listenErr) Unwrap() error { return e.err }

func unwrapNet(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

func sandboxRow(cfg *config) checkRow {
	if !cfg.Exec.Enabled {
		return checkRow{name: "sandbox", status: checkSkip, detail: "exec.enabled is false (tier 3 off)"}
	}
	// The library row reports the roots' errors and notes the default
	// folders left out; asked again here, they would be noted twice.
	roots, _ := defaultRoots(nil)
	if len(cfg.Skills) > 0 {
		roots, _ = resolveRoots(cfg.Skills)
	}
	sc := cfg.sandboxConfig(roots, nil)
	p, err := sandbox.New(sc, slog.New(slog.DiscardHandler))
	if err != nil {
		row := checkRow{name: "sandbox", status: checkFail, detail: err.Error()}
		if strings.Contains(err.Error(), "confinement") {
			// The other failures (the output folder's) say their own fix.
			row.fix = "exec.confinement: auto runs scripts unconfined where Landlock is missing"
		}
		return row
	}
	conf := p.Confinement()
	switch {
	case sc.Confinement == sandbox.ConfineNone:
		return checkRow{name: "sandbox", status: checkWarn, detail: "scripts run without write confinement (exec.confinement: none)",
			fix: "exec.confinement: auto confines them where the kernel has Landlock; see docs/sandbox.md"}
	case conf == "none" || conf == "":
		return checkRow{name: "sandbox", status: checkWarn, detail: "scripts run without write confinement (no Landlock)",
			fix: "Linux ≥ 5.13 with landlock in the lsm= boot list confines them; see docs/sandbox.md"}
	}
	if d := private.SharedAncestor(p.OutputRoot()); d != "" {
		// serve warns of it at start too (sandbox.New).
		return checkRow{name: "sandbox", status: checkWarn,
			detail: fmt.Sprintf("scripts confined by %s, but the output folder %s lies in %s, which every user can write: another user could put node_modules, .npmrc or uv.toml above a script's folder", conf, p.OutputRoot(), d),
			fix:    "set exec.output_dir to a folder under one only this user can write"}
	}
	return checkRow{name: "sandbox", status: checkOK, detail: "scripts confined by " + conf}
}

// writeDoctorTable prints the rows and returns how many failed.
func writeDoctorTable(w io.Writer, rows []checkRow) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	failed := 0
	for _, r := range rows {
		if r.status == checkFail {
			failed++
		}
		lines := strings.Split(r.detail, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.status, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "\t\t%s\n", l)
		}
		if r.fix != "" && r.status != checkOK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", r.fix)
		}
	}
	tw.Flush()
	return failed
}
