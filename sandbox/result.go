package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/wire"
)

// Error codes of structured failure results. The model reads them; keep them
// stable.
const (
	CodeDisabled          = "execution_disabled"
	CodeInvalidArguments  = "invalid_arguments"
	CodeUnknownSkill      = "unknown_skill"
	CodeSkillNotActive    = "skill_not_active"
	CodePathOutsideSkill  = "path_outside_skill"
	CodeInvalidPath       = "invalid_path"
	CodeNotFound          = "not_found"
	CodeNotAFile          = "not_a_file"
	CodeBinaryFile        = "binary_file"
	CodeReadFailed        = "read_failed"
	CodeUnsupported       = "unsupported_runtime"
	CodeRuntimeMissing    = "runtime_unavailable"
	CodeBusy              = "too_busy"
	CodeStartFailed       = "start_failed"
	CodeTimeout           = "timeout"
	CodeOutputLimit       = "output_limit"
	CodeCancelled         = "cancelled"
	CodeExecutionFailed   = "execution_failed"
	CodeInvalidOutput     = "invalid_output"
	CodeOutputUnavailable = "output_dir_unavailable"
)

// toolError is a refusal or failure explained to the model.
type toolError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	SkillID  string `json:"skill_id,omitempty"`
	Path     string `json:"path,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Stdout   string `json:"stdout_tail,omitempty"`
	Stderr   string `json:"stderr_tail,omitempty"`
}

// Its string arguments are values quoted from the call (paths, ids; fixed
// texts are in format) and are cut to 200 bytes (wire.Clip): a model sent
// a 100 KB path and had it back twice.
func newError(code, format string, a ...any) *toolError {
	a = slices.Clone(a)
	for i, v := range a {
		if s, ok := v.(string); ok {
			a[i] = wire.Clip(s)
		}
	}
	return &toolError{Code: code, Message: fmt.Sprintf(format, a...)}
}

// clip cuts the skill id and path, the model's own values, as newError
// cuts the ones it quotes.
func (e *toolError) clip() {
	e.SkillID, e.Path = wire.Clip(e.SkillID), wire.Clip(e.Path)
}

func (e *toolError) Error() string { return e.Code + ": " + e.Message }

// Refused reports whether err is the sandbox refusing a path: gone
// (not_found), leading out of the skill folder (path_outside_skill) or
// not a regular file (not_a_file), as opposed to a failure to read one.
func Refused(err error) bool {
	var te *toolError
	if !errors.As(err, &te) {
		return false
	}
	switch te.Code {
	case CodeNotFound, CodePathOutsideSkill, CodeNotAFile:
		return true
	}
	return false
}

// failure is the JSON shape of every refusal: {"ok":false,"error":{...}}.
type failure struct {
	OK    bool       `json:"ok"`
	Error *toolError `json:"error"`
}

func (e *toolError) result() string {
	e.clip()
	return mustJSON(failure{Error: e})
}

// DisabledResult is the answer to a call of a tier-3 tool while execution is
// off, so the session can answer it instead of passing it to the client.
func DisabledResult(name string) string {
	return newError(CodeDisabled,
		"%s is not available: skill resources and script execution are disabled on this proxy (exec.enabled is false). Continue without them.",
		name).result()
}

// InvalidArgumentsResult is the refusal of a call whose arguments do not
// decode, for callers that decode them before reaching a Provider.
func InvalidArgumentsResult(format string, a ...any) string {
	return newError(CodeInvalidArguments, format, a...).result()
}

// mustJSON marshals values built from plain structs, strings and raw JSON
// that was validated before, which cannot fail.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sandbox: marshal %T: %v", v, err))
	}
	return string(b)
}

// tail returns at most n bytes from the end of b, starting at a rune boundary.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return "…" + string(b)
}

// cutRunes trims an incomplete UTF-8 sequence left at the end of b by a byte cap.
func cutRunes(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
