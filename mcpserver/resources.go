package mcpserver

// skill:// resources and prompts: publishing a view's changes (the SDK sends
// the list_changed notifications) and answering resources/read and
// prompts/get from the current view.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// applyResources removes the resources of old that nv lacks and adds those
// that are new or changed.
func (s *Server) applyResources(old, nv *view) {
	var gone []string
	for uri := range old.files {
		if _, ok := nv.files[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveResources(gone...)
	}
	for uri, f := range nv.files {
		if o, ok := old.files[uri]; ok && o.sameAs(f) {
			continue
		}
		s.srv.AddResource(f.res, s.readResource)
	}
}

// applyPrompts does the same for prompts.
func (s *Server) applyPrompts(old, nv *view) {
	var gone []string
	for name := range old.prompts {
		if _, ok := nv.prompts[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemovePrompts(gone...)
	}
	for name, p := range nv.prompts {
		if o, ok := old.prompts[name]; ok && samePrompt(o.prompt, p.prompt) && skills.SameContent(o.skill, p.skill) {
			continue
		}
		s.srv.AddPrompt(p.prompt, s.getPrompt)
	}
}

// sameAs reports whether f publishes what o did: the same resource and,
// as far as the view can tell, the same content.
func (f *fileRef) sameAs(o *fileRef) bool {
	if f.rel == skills.SkillFile && !skills.SameContent(f.skill.sk, o.skill.sk) {
		return false
	}
	return o.sig == f.sig && sameResource(o.res, f.res)
}

func sameResource(a, b *mcp.Resource) bool {
	return a.URI == b.URI && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		a.MIMEType == b.MIMEType && a.Size == b.Size
}

func samePrompt(a, b *mcp.Prompt) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description
}

// plainerErrors says what is wrong with the params of the SDK's own
// methods where the SDK's answer does not: a list's bad cursor was a bare
// "invalid params" (skills/list says what to pass back), resources/read
// without a uri "Resource not found", and an unknown URI came back whole
// in the error's data (quoted cut here, wire.Clip). Params the SDK cannot
// decode (a number for a string) it refuses before any middleware runs.
func (s *Server) plainerErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
			switch uri := r.Params.URI; {
			case uri == "":
				return nil, invalidParams("uri is required: the URI of a resource resources/list lists, e.g. skill://<skill-path>/SKILL.md")
			case s.current().files[uri] == nil:
				return nil, mcp.ResourceNotFoundError(wire.Clip(uri))
			}
		}
		res, err := next(ctx, method, req)
		var je *jsonrpc.Error
		if err != nil && errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams && je.Message == "invalid params" {
			if c := listCursor(req); c != "" {
				return nil, badCursor(c)
			}
		}
		return res, err
	}
}

// listCursor is the cursor of a list request of the SDK's ("": none).
func listCursor(req mcp.Request) string {
	switch p := req.GetParams().(type) {
	case *mcp.ListResourcesParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListPromptsParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListToolsParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			return p.Cursor
		}
	}
	return ""
}

// readResource answers resources/read for a skill file with its raw bytes:
// text when they are UTF-8 (and not empty), else base64 blob.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	f, ok := s.current().files[uri]
	if !ok {
		return nil, mcp.ResourceNotFoundError(wire.Clip(uri))
	}
	b, err := sandbox.ReadFile(f.skill.sk, f.rel, maxSkillBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || sandbox.Refused(err) {
			// Published, then gone or swapped for a link out of the
			// skill before the watcher's reload: no longer a resource.
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("reading %s: %v", uri, err)}
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: f.res.MIMEType}
	if len(b) > 0 && utf8.Valid(b) && !strings.ContainsRune(string(b), 0) {
		c.Text = string(b)
	} else {
		c.Blob = b
		if c.Blob == nil {
			c.Blob = []byte{} // "blob":"" for an empty file: contents need text or blob
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// promptArgument is the one (optional) argument of every skill prompt.
const promptArgument = "request"

func skillPrompt(sk *skills.Skill, descLimit int) *mcp.Prompt {
	return &mcp.Prompt{
		Name:        sk.ID,
		Title:       sk.Name,
		Description: skills.ShortDescription(sk.Description, descLimit),
		Arguments: []*mcp.PromptArgument{{
			Name:        promptArgument,
			Description: "What to do with this skill (optional); it follows the skill's instructions in the message.",
		}},
	}
}

// getPrompt answers prompts/get: one user message holding the skill's
// load_skill envelope, then the request when one is given.
func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p, ok := s.current().prompts[req.Params.Name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no prompt named %q; prompts/list names every skill", wire.Clip(req.Params.Name))}
	}
	text := skills.Envelope(p.skill)
	if r := strings.TrimSpace(req.Params.Arguments[promptArgument]); r != "" {
		text += "\n\n" + r
	}
	return &mcp.GetPromptResult{
		Description: p.prompt.Description,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}
