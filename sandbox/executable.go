package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// executeEntries are the entry points of an executable skill, in preference
// order, at the top of its folder.
var executeEntries = []string{"execute.py", "execute.sh", "execute.js", "execute.mjs", "execute.ts", "execute"}

const (
	maxEntrySize    = 16 << 20 // bytes hashed for the schema cache key
	maxRunJSONBytes = 120 << 10
	maxCachedSchema = 4096
)

// OpenAI function names.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// toolSchema is what an executable skill declares with --help-json.
type toolSchema struct {
	Name        string
	Description string
	Parameters  json.RawMessage // compact JSON Schema object
}

// schemaEntry is one cache slot; ready closes when schema/err are set, so
// concurrent requests share one --help-json run.
type schemaEntry struct {
	ready  chan struct{}
	schema toolSchema
	err    error
	until  time.Time // a failure kept for a while only (zero: for good)
}

// hungHelpRetry is how long a --help-json that ran out of time is not run
// again: every request that activated the skill waited the whole
// exec.timeout for it (a minute by default) while a hang lasts.
const hungHelpRetry = 10 * time.Minute

// entryPoint finds an executable skill's execute file.
func entryPoint(s *skills.Skill, lookPath lookPathFunc) (resolved, command, error) {
	for _, name := range executeEntries {
		r, e := resolveSkillPath(s, name)
		if e != nil {
			if e.Code == CodeNotFound {
				continue
			}
			return r, command{}, e
		}
		info, err := os.Stat(r.abs)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		cmd, e := commandFor(r.abs, info, lookPath)
		if e != nil {
			return r, command{}, e
		}
		return r, cmd, nil
	}
	return resolved{}, command{}, fmt.Errorf("no entry point: none of %v in the skill folder", executeEntries)
}

// executableTool returns the tool of an executable skill, running
// --help-json only when the entry file's content is new.
func (p *Provider) executableTool(ctx context.Context, s *skills.Skill) (router.Tool, error) {
	r, cmd, err := entryPoint(s, p.lookPath)
	if err != nil {
		p.log.Warn("sandbox: executable skill has no usable entry point", "skill", s.ID, "err", err)
		return nil, err
	}
	key, err := entryHash(r)
	if err != nil {
		p.log.Warn("sandbox: executable skill entry point unreadable", "skill", s.ID, "path", r.rel, "err", err)
		return nil, err
	}
	schema, err := p.schemaFor(ctx, key, func(e *schemaEntry) bool {
		return p.helpJSON(ctx, s, r, cmd, e)
	})
	if err != nil {
		return nil, err
	}
	return newExecTool(p, s, schema), nil
}

// entryHash keys the schema cache: file name and content.
func entryHash(r resolved) (string, error) {
	root, err := openRoot(r)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(r.rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	h.Write([]byte(filepath.Base(r.rel) + "\x00"))
	n, err := io.Copy(h, io.LimitReader(f, maxEntrySize+1))
	if err != nil {
		return "", err
	}
	if n > maxEntrySize {
		return "", fmt.Errorf("%s is larger than %d bytes", r.rel, maxEntrySize)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// schemaFor returns the cached schema for key, computing it once.
// compute fills the entry and reports whether its outcome may be cached: a
// finished run is, and a run that timed out for a while (entry.until); a
// run that was refused or cancelled is retried next time.
func (p *Provider) schemaFor(ctx context.Context, key string, compute func(e *schemaEntry) bool) (toolSchema, error) {
	p.schemaMu.Lock()
	if e, ok := p.schemas[key]; ok && !e.expired() {
		p.schemaMu.Unlock()
		select {
		case <-e.ready:
			return e.schema, e.err
		case <-ctx.Done():
			return toolSchema{}, ctx.Err()
		}
	}
	if len(p.schemas) >= maxCachedSchema {
		p.schemas = map[string]*schemaEntry{} // edits only ever add keys; start over rather than track age
	}
	e := &schemaEntry{ready: make(chan struct{})}
	p.schemas[key] = e
	p.schemaMu.Unlock()

	if keep := compute(e); !keep {
		p.schemaMu.Lock()
		if p.schemas[key] == e {
			delete(p.schemas, key)
		}
		p.schemaMu.Unlock()
	}
	close(e.ready)
	return e.schema, e.err
}

// expired reports whether a failure kept for a while is due for a retry.
func (e *schemaEntry) expired() bool {
	select {
	case <-e.ready:
		return !e.until.IsZero() && time.Now().After(e.until)
	default:
		return false // under way: wait for it
	}
}

// helpJSON runs `<entry> --help-json` in a scratch directory, filling e;
// it reports whether the outcome may be cached (see schemaFor).
func (p *Provider) helpJSON(ctx context.Context, s *skills.Skill, r resolved, cmd command, e *schemaEntry) bool {
	dirs, cleanup, err := p.scratchDirs()
	if err != nil {
		e.err = err
		return false
	}
	defer cleanup()
	out, terr := p.execute(ctx, execRequest{
		tool: "--help-json", skill: s, root: r.root, display: r.rel, args: []string{"--help-json"}, cmd: cmd, dirs: dirs,
	})
	if terr != nil {
		e.err = terr
		return false
	}
	fail := func(keep bool, format string, a ...any) bool {
		e.err = fmt.Errorf(format, a...)
		p.log.Warn("sandbox: executable skill not registered", "skill", s.ID, "entry", r.rel, "err", e.err,
			"stderr", tail(out.stderr, 500))
		return keep
	}
	switch {
	case out.proc.startErr != nil:
		return fail(false, "--help-json could not start: %v", out.proc.startErr)
	case out.proc.killed == KilledTimeout:
		e.until = time.Now().Add(hungHelpRetry)
		return fail(true, "--help-json ran out of time (exec.timeout); not run again for %v", hungHelpRetry)
	case out.proc.killed != "":
		return fail(false, "--help-json was stopped (%s)", out.proc.killed)
	case out.proc.exitCode != 0:
		return fail(true, "--help-json exited with %d", out.proc.exitCode)
	}
	schema, err := parseHelpJSON(out.stdout)
	if err != nil {
		return fail(true, "--help-json: %v", err)
	}
	e.schema = schema
	p.log.Info("sandbox: executable skill registered", "skill", s.ID, "tool", schema.Name, "entry", r.rel)
	return true
}

// helpPrefix starts the names of --help-json scratch folders in the output
// root (maybeSweep removes those a stopped process left).
const helpPrefix = ".help-"

// scratchDirs is a throw-away directory set for --help-json runs.
func (p *Provider) scratchDirs() (*convDirs, func(), error) {
	if err := checkPrivate(p.cfg.OutputRoot); err != nil {
		return nil, nil, err
	}
	root, err := os.MkdirTemp(p.cfg.OutputRoot, helpPrefix)
	if err != nil {
		return nil, nil, err
	}
	d := &convDirs{root: root, out: filepath.Join(root, "out"), home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp")}
	for _, dir := range []string{d.out, d.home, d.tmp} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			os.RemoveAll(root)
			return nil, nil, err
		}
	}
	return d, func() { os.RemoveAll(root) }, nil
}

// parseHelpJSON accepts {name, description, parameters}, the OpenAI wrapper
// {"type":"function","function":{...}}, and input_schema / inputSchema
// (Anthropic / MCP spelling) for parameters.
func parseHelpJSON(b []byte) (toolSchema, error) {
	type fn struct {
		Name             string          `json:"name"`
		Description      string          `json:"description"`
		Parameters       json.RawMessage `json:"parameters"`
		InputSchema      json.RawMessage `json:"input_schema"`
		InputSchemaCamel json.RawMessage `json:"inputSchema"`
	}
	var doc struct {
		fn
		Function *fn `json:"function"`
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return toolSchema{}, errors.New("printed nothing; expected a JSON tool schema")
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return toolSchema{}, fmt.Errorf("not a JSON object: %w", err)
	}
	f := doc.fn
	if doc.Function != nil {
		f = *doc.Function
	}
	if !toolNameRE.MatchString(f.Name) {
		return toolSchema{}, fmt.Errorf("tool name %q must match %s", f.Name, toolNameRE)
	}
	params := f.Parameters
	for _, alt := range []json.RawMessage{f.InputSchema, f.InputSchemaCamel} {
		if len(params) == 0 || string(params) == "null" {
			params = alt
		}
	}
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return toolSchema{}, errors.New("parameters must be a JSON Schema object")
	}
	if t, ok := obj["type"]; ok && string(t) != `"object"` {
		return toolSchema{}, fmt.Errorf("parameters must have type object, not %s", t)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil {
		return toolSchema{}, fmt.Errorf("parameters: %w", err)
	}
	return toolSchema{Name: f.Name, Description: f.Description, Parameters: compact.Bytes()}, nil
}

// execTool is an executable skill registered under its schema's name.
type execTool struct {
	p      *Provider
	skill  *skills.Skill
	schema toolSchema
}

func newExecTool(p *Provider, s *skills.Skill, schema toolSchema) *execTool {
	return &execTool{p: p, skill: s, schema: schema}
}

func (t *execTool) Name() string { return t.schema.Name }
func (t *execTool) Spec() wire.ToolSpec {
	return wire.ToolSpec{Name: t.schema.Name, Description: t.schema.Description, Parameters: t.schema.Parameters}
}

// SkillID names the skill the tool runs (for logs and the session).
func (t *execTool) SkillID() string { return t.skill.ID }

// Call runs `<entry> --run-json '<arguments>'`; the script's JSON stdout is
// the result. Failures are structured results, never errors.
func (t *execTool) Call(ctx context.Context, call router.ToolCall) (string, error) {
	p, name := t.p, t.schema.Name
	args := bytes.TrimSpace(orEmptyObject(call.Arguments))
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return p.refuse(name, newError(CodeInvalidArguments, "arguments must be a JSON object")), nil
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, args) // valid: just decoded
	if compact.Len() > maxRunJSONBytes {
		return p.refuse(name, newError(CodeInvalidArguments, "arguments exceed %d bytes", maxRunJSONBytes)), nil
	}
	// Resolve again: the folder may have changed since the tool was offered.
	r, cmd, err := entryPoint(t.skill, p.lookPath)
	if err != nil {
		e, ok := err.(*toolError)
		if !ok {
			e = newError(CodeNotFound, "%v", err)
		}
		e.SkillID = t.skill.ID
		return p.refuse(name, e), nil
	}
	out, e := p.execute(ctx, execRequest{
		tool: name, skill: t.skill, root: r.root, display: r.rel,
		args: []string{"--run-json", compact.String()}, cmd: cmd, conv: call.Conversation,
	})
	fail := func(code, format string, a ...any) string {
		e := newError(code, format, a...)
		e.SkillID = t.skill.ID
		if out.proc.startErr == nil && e.Code != CodeBusy {
			ec := out.proc.exitCode
			e.ExitCode = &ec
			e.Stdout, e.Stderr = tail(out.stdout, 1000), tail(out.stderr, 2000)
		}
		return e.result()
	}
	switch {
	case e != nil:
		e.SkillID = t.skill.ID
		return e.result(), nil
	case out.proc.startErr != nil:
		return fail(CodeStartFailed, "%s could not be started: %v", r.rel, out.proc.startErr), nil
	case out.proc.killed == KilledTimeout:
		return fail(CodeTimeout, "%s", p.killNote(out)), nil
	case out.proc.killed == KilledOutput:
		return fail(CodeOutputLimit, "%s", p.killNote(out)), nil
	case out.proc.killed != "":
		return fail(CodeCancelled, "%s", p.killNote(out)), nil
	case out.proc.exitCode != 0 || out.proc.signal != "":
		return fail(CodeExecutionFailed, "%s --run-json failed (exit code %d%s)", r.rel, out.proc.exitCode, sigSuffix(out.proc.signal)), nil
	}
	result := bytes.TrimSpace(out.stdout)
	if out.truncated || !json.Valid(result) {
		return fail(CodeInvalidOutput, "%s --run-json did not print a JSON result on stdout", r.rel), nil
	}
	return string(result), nil
}

func sigSuffix(sig string) string {
	if sig == "" {
		return ""
	}
	return ", signal: " + sig
}
