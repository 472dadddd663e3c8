package router

// Tests of the router's plans on Chat Completions bodies: the plan is
// rendered with package wire/chat, as the proxy does, so the tests (and the
// golden files) see the bytes the upstream gets.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
	chatwire "github.com/skillrouter/skillrouter/wire/chat"
)

// chatRewrite is a Rewrite rendered into a chat body.
type chatRewrite struct {
	*Rewrite
	Body []byte
	req  *chatwire.Request
}

func renderChat(req *chatwire.Request, rw *Rewrite, err error) (*chatRewrite, error) {
	if err != nil {
		return nil, err
	}
	out := &chatRewrite{Rewrite: rw, req: req, Body: req.Body()}
	if rw.Plan != nil {
		if out.Body, err = req.Render(rw.Plan); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rewriteWithChat is RewriteWith on a chat body.
func rewriteWithChat(ctx context.Context, body []byte, snap *skills.Snapshot, dec *Decision, opts RewriteOptions, search Searcher) (*chatRewrite, error) {
	req, err := chatwire.Parse(body)
	if err != nil {
		return nil, err
	}
	rw, err := RewriteWith(ctx, req.View(), snap, dec, opts, search)
	return renderChat(req, rw, err)
}

// rewriteChat is Router.Rewrite on a chat body.
func rewriteChat(ctx context.Context, r *Router, body []byte, opts RewriteOptions, ov Overrides) (*chatRewrite, error) {
	req, err := chatwire.Parse(body)
	if err != nil {
		return nil, err
	}
	rw, err := r.Rewrite(ctx, req.View(), opts, ov)
	return renderChat(req, rw, err)
}

// followUp builds the next round's chat body from an assistant message
// holding the calls the results answer, as the proxy's tool loop does.
func (rw *chatRewrite) followUp(body []byte, assistant json.RawMessage, results []ToolResult) ([]byte, error) {
	if !json.Valid(assistant) {
		return nil, errors.New("assistant message is not valid JSON")
	}
	want := map[string]bool{}
	for _, r := range results {
		want[r.CallID] = true
	}
	ans, _, ok := rw.req.ReadAnswer([]byte(`{"choices":[{"message":`+string(assistant)+`}]}`), 0, rw.Session.Handles)
	if !ok {
		return nil, errors.New("assistant message is not a message")
	}
	if ans == nil {
		return nil, errors.New("assistant message has no tool_calls")
	}
	// Only the answered calls go back, as the proxy sends only its own.
	kept := ans.Calls[:0]
	for _, c := range ans.Calls {
		if want[c.ID] {
			kept = append(kept, c)
		}
	}
	ans.Calls = kept
	for _, c := range ans.Calls {
		delete(want, c.ID)
	}
	for id := range want {
		return nil, fmt.Errorf("no tool call with id %s in the assistant message", id)
	}
	return rw.req.FollowUp(body, ans, results, rw.Session.Tools())
}

// parseRequest parses a chat body for inspection.
func parseRequest(body []byte) (*chatwire.Request, error) { return chatwire.Parse(body) }

// MessagesFromChat extracts the text view of a chat body's messages.
func MessagesFromChat(body []byte) ([]Message, error) {
	req, err := chatwire.Parse(body)
	if err != nil {
		return nil, err
	}
	return req.View().Turns, nil
}

// member is one top-level member of a JSON object body.
type member struct {
	key   string
	value []byte
}

// topMembers lists the top-level members of body, sorted by key (order is
// not what the tests compare).
func topMembers(t testing.TB, body []byte) []member {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v", err)
	}
	out := make([]member, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, member{k, m[k]})
	}
	return out
}
