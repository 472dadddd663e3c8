// Package bench measures skill selection: ranking quality, the auto-load
// decision, routing latency and the prompt tokens the skill machinery adds,
// per strategy, on a fixed library and on synthetic libraries of growing size.
package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Query is one labelled benchmark query. Expected holds skill ids; an empty
// Expected means nothing may be auto-loaded for the query.
type Query struct {
	ID       string   `json:"id,omitempty"`
	Text     string   `json:"query"`
	Expected []string `json:"expected"`
	Split    string   `json:"split,omitempty"`
}

// maxQueryLine bounds one JSON line; MetaTool lines are ~200 bytes, upstream
// prompts a few KiB.
const maxQueryLine = 4 << 20

// LoadQueries reads a JSON Lines query file.
func LoadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: queries: %w", err)
	}
	defer f.Close()
	return ParseQueries(f, path)
}

// rawQuery distinguishes a missing key from an empty value.
type rawQuery struct {
	ID       json.RawMessage  `json:"id"`
	Query    *string          `json:"query"`
	Expected *json.RawMessage `json:"expected"`
	Split    json.RawMessage  `json:"split"`
}

// ParseQueries parses JSON Lines {"query": "...", "expected": [ids]}. Extra
// keys are ignored and blank lines skipped; any other malformed line is an
// error naming name:line, because a silently dropped query skews every metric.
func ParseQueries(r io.Reader, name string) ([]Query, error) {
	var out []Query
	err := readJSONLines(r, name, func(line int, b []byte) error {
		q, err := parseQueryLine(b)
		if err != nil {
			return err
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("line-%d", line)
		}
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readJSONLines calls fn with each non-blank line of r, trimmed, and its
// 1-based number; a UTF-8 BOM (editors add one) before the first line is
// dropped. It stops at the first error, naming name:line.
func readJSONLines(r io.Reader, name string, fn func(line int, b []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxQueryLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(b) == 0 {
			continue
		}
		if err := fn(line, b); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxQueryLine)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func parseQueryLine(b []byte) (Query, error) {
	if b[0] != '{' {
		return Query{}, errors.New("not a JSON object")
	}
	var raw rawQuery
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return Query{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return Query{}, errors.New("more than one JSON value on the line")
	}
	if raw.Query == nil {
		return Query{}, errors.New(`missing "query"`)
	}
	if strings.TrimSpace(*raw.Query) == "" {
		return Query{}, errors.New(`empty "query"`)
	}
	if raw.Expected == nil || string(*raw.Expected) == "null" {
		return Query{}, errors.New(`missing "expected" (use [] for "must not auto-load")`)
	}
	var expected []string
	if err := json.Unmarshal(*raw.Expected, &expected); err != nil {
		return Query{}, fmt.Errorf(`"expected" must be an array of skill ids: %w`, err)
	}
	q := Query{Text: *raw.Query, Expected: dedupe(expected)}
	for _, id := range q.Expected {
		if strings.TrimSpace(id) == "" {
			return Query{}, errors.New(`"expected" holds an empty id`)
		}
	}
	// id and split are optional labels; a non-string value is ignored like any extra key.
	_ = json.Unmarshal(raw.ID, &q.ID)
	_ = json.Unmarshal(raw.Split, &q.Split)
	return q, nil
}

// dedupe drops repeated ids, keeping the first occurrence, and never returns nil
// (so JSON renders [] rather than null).
func dedupe(ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}
