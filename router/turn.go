package router

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
)

// An agent's turn is one user ask followed by the model's steps: each step
// a request that ends in the client's tool results. A client that keeps
// the transcript itself (Chat Completions, Messages, Responses with store
// false: Codex CLI, Claude Code) never holds the proxy's hidden tool
// rounds, so a skill the model loaded with load_skill is in one request
// only; the next step, which runs the tool the skill said to use, would
// not show it. Rewrite names the turn (Rewrite.Turn) so that the proxy can
// load such skills again on its later steps (Overrides.Carried).

// turnKey returns a stable name of the request's current turn: a digest of
// the conversation's opening (conv, its conversationID), the position of
// its latest user ask among the turns and that ask's text. continues
// reports whether the request is a later step of that turn: something (the
// model's answer, tool results) follows the ask. A request with no user
// ask, or that continues state stored upstream (presence covers that), has
// no key.
func turnKey(req *wire.Request, conv string) (key string, continues bool) {
	if req == nil || req.Stateful {
		return "", false
	}
	ask := -1
	for i := len(req.Turns) - 1; i >= 0; i-- {
		if t := req.Turns[i]; t.Role == "user" && strings.TrimSpace(t.Text) != "" {
			ask = i
			break
		}
	}
	if ask < 0 {
		return "", false
	}
	for _, t := range req.Turns[ask+1:] {
		if t.Role == "assistant" || t.Role == "tool" {
			continues = true
			break
		}
	}
	h := sha256.New()
	h.Write([]byte(conv))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(ask), 10))
	h.Write([]byte{0})
	h.Write([]byte(req.Turns[ask].Text))
	return hex.EncodeToString(h.Sum(nil)[:16]), continues
}
