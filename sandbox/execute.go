package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

const (
	maxArgs      = 256
	maxArgsBytes = 128 << 10 // one argv string may not exceed 128 KiB on Linux
)

var executeSpec = wire.ToolSpec{
	Name:        ToolExecute,
	Description: "Run a script that ships with a loaded skill and get its exit code, stdout, stderr and the files it wrote. The script's code does not need to be read first. command is a path relative to the skill folder (e.g. scripts/convert.py); .py runs with Python, .sh with bash, .js with node, .ts with tsx, other files only if executable with a #! line. The working directory is a per-conversation output directory (also in $SKILLROUTER_OUTPUT_DIR) that persists between calls; the skill folder is read-only. Runs are time- and output-limited.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"skill_id":{"type":"string","description":"id of a loaded skill"},"command":{"type":"string","description":"script path relative to the skill folder"},"args":{"type":"array","items":{"type":"string"},"description":"command-line arguments"}},"required":["skill_id","command"],"additionalProperties":false}`),
}

// executeTool is skill_execute, bound to one request's active skills.
type executeTool struct {
	p      *Provider
	active map[string]*skills.Skill
}

func (t *executeTool) Name() string        { return ToolExecute }
func (t *executeTool) Spec() wire.ToolSpec { return executeSpec }

// execResult is skill_execute's answer.
type execResult struct {
	OK             bool         `json:"ok"`
	SkillID        string       `json:"skill_id"`
	Command        string       `json:"command"`
	Args           []string     `json:"args"`
	ExitCode       int          `json:"exit_code"`
	Signal         string       `json:"signal,omitempty"`
	Killed         string       `json:"killed,omitempty"`
	Note           string       `json:"note,omitempty"`
	Stdout         string       `json:"stdout"`
	Stderr         string       `json:"stderr"`
	Truncated      bool         `json:"truncated"`
	DurationMS     int64        `json:"duration_ms"`
	OutputDir      string       `json:"output_dir"`
	Files          []FileChange `json:"files"`
	FilesTruncated bool         `json:"files_truncated,omitempty"`
}

// Call never returns an error: every failure is a structured result.
func (t *executeTool) Call(ctx context.Context, call router.ToolCall) (string, error) {
	p := t.p
	var a struct {
		SkillID string            `json:"skill_id"`
		Command string            `json:"command"`
		Args    []json.RawMessage `json:"args"`
	}
	if err := router.DecodeToolArgs(call.Arguments, &a); err != nil {
		return p.refuse(ToolExecute, newError(CodeInvalidArguments, "%v; call skill_execute with {skill_id, command, args}", err)), nil
	}
	args, e := stringArgs(a.Args)
	if e != nil {
		return p.refuse(ToolExecute, e), nil
	}
	s, e := p.activeSkill(t.active, a.SkillID)
	if e != nil {
		return p.refuse(ToolExecute, e), nil
	}
	if a.Command == "" {
		return p.refuse(ToolExecute, newError(CodeInvalidArguments, "command is required: a script path relative to the skill folder")), nil
	}
	r, e := resolveSkillPath(s, a.Command)
	if e != nil {
		e.SkillID = s.ID
		return p.refuse(ToolExecute, e), nil
	}
	info, err := os.Stat(r.abs)
	if err != nil || !info.Mode().IsRegular() {
		e := newError(CodeNotAFile, "%s is not a regular file", r.name)
		e.SkillID, e.Path = s.ID, r.name
		return p.refuse(ToolExecute, e), nil
	}
	cmd, e := commandFor(r.abs, info, p.lookPath)
	if e != nil {
		e.SkillID, e.Path = s.ID, r.name
		return p.refuse(ToolExecute, e), nil
	}
	out, e := p.execute(ctx, execRequest{
		tool: ToolExecute, skill: s, root: r.root, display: r.rel, args: args, cmd: cmd, conv: call.Conversation,
	})
	if e != nil {
		e.SkillID, e.Path = s.ID, r.rel
		return e.result(), nil
	}
	if out.proc.startErr != nil {
		e := newError(CodeStartFailed, "%s could not be started: %v", r.rel, out.proc.startErr)
		e.SkillID, e.Path = s.ID, r.rel
		return e.result(), nil
	}
	res := execResult{
		OK:      out.proc.exitCode == 0 && out.proc.killed == "",
		SkillID: s.ID, Command: r.rel, Args: args,
		ExitCode: out.proc.exitCode, Signal: out.proc.signal, Killed: out.proc.killed,
		Note:   p.killNote(out),
		Stdout: string(out.stdout), Stderr: string(out.stderr), Truncated: out.truncated,
		DurationMS: out.duration.Milliseconds(), OutputDir: out.outDir,
		Files: out.files, FilesTruncated: out.filesTruncated,
	}
	if res.Files == nil {
		res.Files = []FileChange{}
	}
	if out.truncated {
		marker := fmt.Sprintf("\n[output truncated: stdout and stderr together are limited to %d bytes]", p.cfg.OutputLimit)
		if out.cut == "stderr" {
			res.Stderr += marker
		} else {
			res.Stdout += marker
		}
	}
	return mustJSON(res), nil
}

// killNote explains to the model why a run was stopped.
func (p *Provider) killNote(out execOutcome) string {
	switch out.proc.killed {
	case KilledTimeout:
		return fmt.Sprintf("stopped after the %s time limit; the script and all processes it started were killed", p.cfg.Timeout)
	case KilledOutput:
		return fmt.Sprintf("stopped after writing more than %d bytes of output; write large results to a file in the output directory instead", p.cfg.OutputLimit)
	case KilledCancelled:
		return "stopped because the request was cancelled"
	}
	if out.proc.signal == signalFileSize && p.cfg.Limits.FileSize > 0 {
		return fmt.Sprintf("stopped when a file it wrote reached the %d-byte file size limit (exec.file_size_limit)", p.cfg.Limits.FileSize)
	}
	return ""
}

// signalFileSize is how SIGXFSZ, sent for a write past the file size limit,
// is named in results (Go's name for it).
const signalFileSize = "file size limit exceeded"

// refuse logs a refusal and renders it.
func (p *Provider) refuse(tool string, e *toolError) string {
	e.clip()
	p.log.Warn("sandbox: refused", "tool", tool, "code", e.Code, "skill", e.SkillID, "path", e.Path, "reason", e.Message)
	return e.result()
}

// stringArgs accepts strings, and numbers or booleans (models send them for
// numeric flags), as command-line arguments.
func stringArgs(raw []json.RawMessage) ([]string, *toolError) {
	if len(raw) > maxArgs {
		return nil, newError(CodeInvalidArguments, "at most %d args", maxArgs)
	}
	args := make([]string, 0, len(raw))
	total := 0
	for i, r := range raw {
		var s string
		r = bytes.TrimSpace(r)
		switch {
		case len(r) > 0 && r[0] == '"':
			if err := json.Unmarshal(r, &s); err != nil {
				return nil, newError(CodeInvalidArguments, "args[%d]: %v", i, err)
			}
		case len(r) > 0 && (r[0] == '-' || (r[0] >= '0' && r[0] <= '9')), string(r) == "true", string(r) == "false":
			s = string(r)
		default:
			return nil, newError(CodeInvalidArguments, "args[%d] must be a string", i)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return nil, newError(CodeInvalidArguments, "args[%d] contains a NUL byte", i)
		}
		total += len(s)
		if total > maxArgsBytes {
			return nil, newError(CodeInvalidArguments, "args exceed %d bytes; pass large input in a file in the output directory", maxArgsBytes)
		}
		args = append(args, s)
	}
	return args, nil
}

// orEmptyObject treats missing arguments as {}.
func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
