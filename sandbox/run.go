package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/skills"
)

// execRequest is one execution of a file in a skill.
type execRequest struct {
	tool    string // the tool that asked: skill_execute, an executable skill's name, or "--help-json"
	skill   *skills.Skill
	root    string   // the skill folder, symlinks evaluated
	display string   // the command as the model named it
	args    []string // arguments after the command (logged, returned)
	cmd     command  // runtime argv, without args
	conv    string   // conversation id (names the output directory)
	dirs    *convDirs
}

// execOutcome is what came of it.
type execOutcome struct {
	proc           procResult
	stdout, stderr []byte
	truncated      bool
	cut            string // stream that hit the cap: stdout | stderr
	duration       time.Duration
	files          []FileChange
	filesTruncated bool
	outDir         string
}

// execute runs req under the sandbox rules. A *toolError means it did not
// run at all (busy, cancelled while queued, output directory unusable).
func (p *Provider) execute(ctx context.Context, req execRequest) (execOutcome, *toolError) {
	var out execOutcome
	release, err := p.lim.acquire(ctx)
	if err != nil {
		if errors.Is(err, errBusy) {
			p.log.Warn("sandbox: execution refused, too busy", "tool", req.tool, "skill", req.skill.ID,
				"command", req.display, "running", p.lim.stats().Running, "queued", p.lim.stats().Queued)
			return out, newError(CodeBusy, "all %d execution slots are busy and %d executions are already waiting; try again later",
				p.cfg.Concurrency, p.cfg.Queue)
		}
		return out, newError(CodeCancelled, "cancelled while waiting for an execution slot")
	}
	defer release()

	dirs := req.dirs
	if dirs == nil {
		if dirs, err = p.conversationDirs(req.conv); err != nil {
			p.log.Error("sandbox: conversation directory", "err", err)
			return out, newError(CodeOutputUnavailable, "the output directory could not be prepared")
		}
	}
	if e := checkSeparate(req.root, dirs); e != nil {
		p.log.Error("sandbox: refusing to run", "skill", req.skill.ID, "err", e)
		return out, e
	}
	out.outDir = dirs.out

	// An incomplete "before" makes files it missed look created after.
	before, beforeComplete := snapshot(dirs.out)
	capt := newCapture(p.cfg.OutputLimit)
	stdout, stderr := capt.streams()
	argv := append(append([]string(nil), req.cmd.argv...), req.args...)
	start := time.Now()
	out.proc = p.runner.run(ctx, procSpec{
		argv:     argv,
		env:      p.scriptEnv(dirs, req.root, req.cmd.python),
		dir:      dirs.out,
		writable: []string{dirs.out, dirs.home, dirs.tmp},
		limits:   p.cfg.Limits,
		timeout:  p.cfg.Timeout,
		stdout:   stdout,
		stderr:   stderr,
		over:     capt.over,
	})
	out.duration = time.Since(start)
	out.stdout, out.stderr, out.truncated, out.cut = capt.result()
	after, complete := snapshot(dirs.out)
	out.files, out.filesTruncated = diffFiles(before, after)
	out.filesTruncated = out.filesTruncated || !complete || !beforeComplete

	attrs := []any{
		"tool", req.tool, "skill", req.skill.ID, "command", req.display, "args", logArgs(req.args),
		"runtime", req.cmd.runtime, "conversation", req.conv,
		"exit_code", out.proc.exitCode, "duration_ms", out.duration.Milliseconds(),
		"files", len(out.files), "confinement", p.runner.confinement(),
	}
	if out.proc.signal != "" {
		attrs = append(attrs, "signal", out.proc.signal)
	}
	if out.proc.killed != "" {
		attrs = append(attrs, "killed", out.proc.killed)
	}
	if out.truncated {
		attrs = append(attrs, "truncated", true)
	}
	if out.proc.reaped > 0 {
		attrs = append(attrs, "reaped", out.proc.reaped)
	}
	if out.proc.startErr != nil {
		attrs = append(attrs, "err", out.proc.startErr)
	}
	p.log.Info("sandbox: executed", attrs...)
	return out, nil
}

// checkSeparate refuses to run when a writable directory and the skill
// folder overlap: the script could then write into the skill.
func checkSeparate(root string, d *convDirs) *toolError {
	for _, w := range []string{d.out, d.home, d.tmp} {
		real, err := filepath.EvalSymlinks(w)
		if err != nil {
			return newError(CodeOutputUnavailable, "the output directory is unusable")
		}
		if _, in := within(root, real); in {
			return newError(CodeOutputUnavailable, "%v", errOutputInsideSkill)
		}
		if _, in := within(real, root); in {
			return newError(CodeOutputUnavailable, "the skill folder lies inside the output directory")
		}
	}
	return nil
}

// scriptEnv builds a script's whole environment; nothing of the proxy's own
// environment passes except PATH, LANG and the configured names.
func (p *Provider) scriptEnv(d *convDirs, skillDir string, python bool) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + d.home,
		"LANG=" + lang,
		"TMPDIR=" + d.tmp,
		EnvOutputDir + "=" + d.out,
		EnvSkillDir + "=" + skillDir,
	}
	if python {
		// Importing a module beside the script would otherwise write
		// __pycache__ into the skill folder.
		env = append(env, "PYTHONDONTWRITEBYTECODE=1")
	}
	for _, e := range p.cfg.Env {
		if strings.Contains(e, "=") {
			env = append(env, e)
		} else if v, ok := os.LookupEnv(e); ok {
			env = append(env, e+"="+v)
		}
	}
	return env
}

// logArgs shortens long arguments (e.g. --run-json payloads) for the log.
func logArgs(args []string) []string {
	const max = 200
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > max {
			a = string(cutRunes([]byte(a[:max]))) + fmt.Sprintf("…(%d bytes)", len(a))
		}
		out[i] = a
	}
	return out
}
