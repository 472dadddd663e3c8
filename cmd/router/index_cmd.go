package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/router"
)

func newIndexCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Build a routing index once, for replicas to load instead of each embedding the library",
	}
	cmd.AddCommand(newIndexBuildCmd())
	return cmd
}

func newIndexBuildCmd() *cobra.Command {
	var cf configFlags
	var out string
	cmd := &cobra.Command{
		Use:   "build --out DIR [--config FILE] [--skills DIR]... [--embedder NAME]",
		Short: "Embed a library and write its routing index to a folder (for serve --index)",
		Long: "Build the routing index of a library with the configured embedder and write it to --out:\n" +
			"the vectors, the builtin embedder's fitted state, the score calibration and, for remote\n" +
			"embedders, the embedding cache (--out/embeddings, unless embedder.cache_dir is set), so\n" +
			"rebuilding after a library change embeds only what changed.\n\n" +
			"`router serve --index DIR` (routing.prebuilt_index) then loads it read-only and makes no\n" +
			"embedding call at start when it matches the library and the embedder; otherwise serve logs\n" +
			"why and builds the index itself. The library and embedder settings are read like serve's:\n" +
			"--config, SKILLROUTER_* environment, then flags, so pass the same configuration as the replicas.",
		Example: "  router index build --skills examples/skills --out build/index\n" +
			"  router index build --config deploy/config.yaml --out /index\n" +
			"  router serve --skills examples/skills --index build/index",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{fmt.Errorf("--out DIR is required: the folder to write the index to")}
			}
			cfg, roots, err := configAndRoots(cmd, &cf, args)
			if err != nil {
				return err
			}
			return runIndexBuild(cmd, cfg, roots, out)
		},
	}
	fs := cmd.Flags()
	var keys []string
	for _, k := range configKeys {
		if strings.HasPrefix(k.path, "embedder.") || k.path == "log.level" || k.path == "skills" {
			keys = append(keys, k.path)
		}
	}
	cf.register(fs, keys...) // the library and embedder settings of serve
	fs.StringVarP(&out, "out", "o", "", "folder to write the index to (created; files in it are replaced)")
	fs.SortFlags = false
	return cmd
}

func runIndexBuild(cmd *cobra.Command, cfg config, roots []string, out string) error {
	ctx := cmd.Context()
	log := newLogger(cfg.Log, cmd.ErrOrStderr())
	reg, err := loadRegistry(ctx, roots, libraryOptions(&cfg))
	if err != nil {
		return err
	}
	snap := reg.Snapshot()
	snap.LogProblems(log, nil)
	if len(snap.Skills()) == 0 {
		// A build job pointed at an empty mount would otherwise succeed,
		// and every replica would serve an empty catalog.
		return fmt.Errorf("index build: no skill loaded from %s (%d problems; `router skills validate` lists them): nothing to index", strings.Join(roots, ", "), len(snap.Problems()))
	}
	ec := cfg.Embedder
	if ec.CacheDir == "" {
		ec.CacheDir = out // the embedding cache travels with the index
	}
	// The folder is read too: an index already there gives back the
	// vectors of skills whose text did not change.
	opts := router.Options{Logger: log, MaxAutoLoad: -1}
	if router.HasPrebuilt(out) {
		opts.Prebuilt = out
	}
	opts, err = withEmbedder(ec, opts)
	if err != nil {
		return err
	}
	opts.IndexDir = "" // SavePrebuilt writes; nothing else should
	r, err := router.New(ctx, snap, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.SavePrebuilt(out); err != nil {
		return fmt.Errorf("index build: %w", err)
	}
	return printIndexSummary(cmd.OutOrStdout(), out, len(snap.Skills()), providerName(ec))
}

// printIndexSummary lists what the folder holds, sorted, with sizes.
func printIndexSummary(w io.Writer, dir string, n int, provider string) error {
	fmt.Fprintf(w, "routing index of %d skills (embedder %s) written to %s\n", n, provider, dir)
	var files []string
	sizes := map[string]int64{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name()[0] == '.' {
			continue
		}
		if e.IsDir() {
			var total int64
			filepath.WalkDir(filepath.Join(dir, e.Name()), func(_ string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if info, err := d.Info(); err == nil {
						total += info.Size()
					}
				}
				return nil
			})
			files, sizes[e.Name()+"/"] = append(files, e.Name()+"/"), total
			continue
		}
		if info, err := e.Info(); err == nil {
			files, sizes[e.Name()] = append(files, e.Name()), info.Size()
		}
	}
	sort.Strings(files)
	width := 0
	for _, f := range files {
		width = max(width, len(f))
	}
	for _, f := range files {
		fmt.Fprintf(w, "  %-*s %s\n", width, f, formatSize(sizes[f]))
	}
	return nil
}
