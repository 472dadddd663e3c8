package router

// Rewriting an OpenAI chat.completions request: route, then splice the
// catalog, the auto-loaded envelopes and the server-side tools into the
// original bytes. Everything not touched stays byte-identical.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
)

// Overrides are per-request settings (X-Skillrouter-* headers).
type Overrides struct {
	Strategy    Strategy
	TopK        *int // 0 = auto-load nothing (mentions still load)
	Disable     bool
	CatalogMode CatalogMode
	// Session names the conversation (X-Skillrouter-Session, else the
	// request's "user"). When set, the conversation id given to tier-3 tools
	// (and so the output directory) is derived from it together with the
	// conversation's opening, so two conversations that open alike but are
	// named differently do not share files. "" keeps the opening alone.
	Session string
}

// Rewrite is a rewritten chat request plus the state the tool loop needs.
type Rewrite struct {
	Body        []byte // the request to send upstream
	Decision    *Decision
	Session     *Session
	AddedTokens int // prompt tokens the rewrite added (o200k_base; see PromptParts)

	Prompt   *PromptParts // what was added; nil when disabled
	Disabled bool         // X-Skillrouter-Disable: the body is the client's, unchanged
}

// RewriteChat rewrites an OpenAI chat.completions request body. An error means
// the body could not be rewritten; the proxy then forwards it unmodified.
//
// The catalog is appended to the first system or developer message (a text
// part for array content) or becomes a new first system message; each
// auto-loaded envelope is a message after the last one; load_skill,
// search_skills (when the catalog leaves skills out) and tier-3 tools are
// appended to the client's tools. When opts.Tools is a ToolGate, gated client
// tools no active skill enables are left out (see ToolGate and
// docs/sandbox.md). With ov.Disable the body is returned as is.
func (r *Router) RewriteChat(ctx context.Context, body []byte, opts RewriteOptions, ov Overrides) (*Rewrite, error) {
	if r == nil {
		return nil, errors.New("router: nil Router")
	}
	if ov.Disable { // checked first: a disabled request is never inspected
		return &Rewrite{Body: body, Decision: &Decision{}, Session: &Session{}, Disabled: true}, nil
	}
	req, err := parseRequest(body)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	if ov.CatalogMode != "" {
		opts.CatalogMode = ov.CatalogMode
	}
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	snap := r.Snapshot()
	if snap == nil {
		return nil, errors.New("router: no skill library loaded")
	}
	msgs := routerMessages(req.msgs)
	q := Query{Messages: msgs, Strategy: ov.Strategy}
	if ov.TopK != nil {
		q.TopK = *ov.TopK
		if q.TopK == 0 {
			q.TopK = -1 // an explicit 0 means none, not the default
		}
	}
	dec := r.Route(ctx, q)
	lib := libraryOf(snap)
	in := planInput{snap: snap, lib: lib, dec: dec, msgs: msgs, clientNames: req.clientNames, noTools: req.noTools()}
	in.ranking = r.catalogRanking(ctx, lib, msgs, ov.Strategy, dec, &o)
	return finishRewrite(ctx, r, req, in, o, ov.Session)
}

// RewriteWith is RewriteChat with a given decision instead of routing: the
// pure core, for tests, benchmarks and callers that routed already. A nil
// dec means nothing selected; the catalog follows dec.Ranked. search answers
// search_skills (a *Router does; nil answers "unavailable").
func RewriteWith(ctx context.Context, body []byte, snap *skills.Snapshot, dec *Decision, opts RewriteOptions, search Searcher) (*Rewrite, error) {
	req, err := parseRequest(body)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if dec == nil {
		dec = &Decision{}
	}
	in := planInput{snap: snap, lib: libraryOf(snap), dec: dec, msgs: routerMessages(req.msgs),
		clientNames: req.clientNames, noTools: req.noTools()}
	in.ranking = func() []string { return capRanking(rankedIDs(dec.Ranked)) }
	return finishRewrite(ctx, search, req, in, o, "")
}

// finishRewrite plans the additions, applies them and builds the session;
// search answers search_skills (nil: "unavailable"); session is
// Overrides.Session.
func finishRewrite(ctx context.Context, search Searcher, req *chatRequest, in planInput, o RewriteOptions, session string) (*Rewrite, error) {
	p, ts := planPrompt(ctx, in, &o)
	if session = strings.TrimSpace(session); session != "" {
		p.Conversation = namedConversationID(session, p.Conversation)
	}
	gate := newToolGate(&o, req, in.lib, p.Active)
	gate.record(p.Decision)
	body, err := applyPrompt(req, p, o.AutoLoadRole, in.lib, gate)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	toolsOK := !o.NoTools && !req.noTools()
	sess := newSession(search, in.snap, in.lib, o, p, ts, toolsOK, req.clientTools, req.clientNames)
	sess.gate = gate
	return &Rewrite{Body: body, Decision: p.Decision, Session: sess, AddedTokens: p.AddedTokens, Prompt: p}, nil
}

// applyPrompt splices p into the request body in one pass over the spans
// parseRequest found: every byte outside the edits is copied as is and
// nothing is scanned twice. gate (nil: none) leaves withheld client tools out.
func applyPrompt(req *chatRequest, p *PromptParts, role string, lib *skillLib, gate *toolGate) ([]byte, error) {
	body := req.body
	first, last := req.msgs[0].at, req.msgs[len(req.msgs)-1].at

	// The catalog's message: the first system/developer message, else new.
	target, edited := -1, []byte(nil)
	var newSystem []byte
	if p.Catalog != "" {
		quotedCatalog := lib.quote(p.Catalog)
		for i, m := range req.msgs {
			if m.role == "system" || m.role == "developer" {
				target = i
				break
			}
		}
		if target >= 0 {
			var err error
			if edited, err = withCatalog(req.msgs[target], quotedCatalog); err != nil {
				return nil, err
			}
		}
		if edited == nil { // no system message, or one whose content cannot take text
			newSystem = slices.Concat([]byte(`{"role":"system","content":`), quotedCatalog, []byte{'}'})
		}
	}
	roleJSON := marshalString(role)

	// Size the output exactly enough (JSON escaping makes the quoted texts
	// longer than the texts): growing a ~15 KB body mid-way copied it and
	// doubled what a rewrite allocates.
	envs := make([][]byte, len(p.Envelopes))
	n := len(body) + len(newSystem) + len(edited) + 64
	for i, e := range p.Envelopes {
		envs[i] = lib.envelopeJSON(e.ID, e.Text)
		n += len(envs[i]) + len(roleJSON) + 32
	}
	for _, d := range p.Tools {
		n += len(d) + 1
	}
	n += len(`,"tools":[]`) + len(req.clientTools)*2
	for _, c := range req.clientTools {
		n += len(c)
	}
	out := make([]byte, 0, n)

	// Up to the first message, [the new system message,] the messages with
	// the catalog's message edited, the envelopes, the rest of the array.
	out = append(out, body[:first.start]...)
	if newSystem != nil {
		out = append(append(out, newSystem...), ',')
	}
	if edited != nil {
		at := req.msgs[target].at
		out = append(out, body[first.start:at.start]...)
		out = append(out, edited...)
		out = append(out, body[at.end:last.end]...)
	} else {
		out = append(out, body[first.start:last.end]...)
	}
	for _, env := range envs {
		out = append(out, `,{"role":`...)
		out = append(out, roleJSON...)
		out = append(out, `,"content":`...)
		out = append(out, env...)
		out = append(out, '}')
	}
	rest := body[last.end:]
	client := req.clientTools
	gated := gate.withholds()
	if gated {
		client = gate.kept()
		if len(client)+len(p.Tools) == 0 {
			return withoutTools(append(out, rest...))
		}
	} else if len(p.Tools) == 0 {
		return append(out, rest...), nil
	}

	// Tools: the client's (those not withheld), then ours, replacing the
	// client's array (or null) or added as the last member.
	tools := joinArray(slices.Concat(client, rawList(p.Tools)))
	var at byteSpan
	if req.hasTools {
		at = req.tools
	} else {
		end := req.members[len(req.members)-1].value.end
		at = byteSpan{end, end}
		tools = append([]byte(`,"tools":`), tools...)
	}
	if at.start < last.end {
		// tools come before messages: out still has the body's bytes there.
		return spliceBytes(append(out, rest...), at, tools), nil
	}
	out = append(out, body[last.end:at.start]...)
	out = append(out, tools...)
	return append(out, body[at.end:]...), nil
}

// withCatalog returns message m with the catalog (given JSON-encoded)
// appended to its content: "\n\n"+catalog for string content, a text part
// for array content, the catalog itself for null or missing content. nil
// means the content has another shape and m is left alone.
func withCatalog(m chatMessage, quoted []byte) ([]byte, error) {
	ms, err := objectMembers(m.raw)
	if err != nil {
		return nil, err
	}
	cs, ok := memberValue(ms, "content")
	if !ok || isJSONNull(m.raw[cs.start:cs.end]) {
		return setMember(m.raw, "content", quoted)
	}
	content := m.raw[cs.start:cs.end]
	var edited []byte
	switch content[0] {
	case '"':
		sep := ""
		if m.text != "" {
			sep = `\n\n`
		}
		edited, err = appendQuoted(content, sep, quoted)
	case '[':
		part := slices.Concat([]byte(`{"type":"text","text":`), quoted, []byte{'}'})
		edited, err = appendElements(content, part)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return spliceBytes(m.raw, cs, edited), nil
}
