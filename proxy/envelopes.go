package proxy

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/skillrouter/skillrouter/wire"
)

// envelopePlacer is implemented by requests whose rewrite adds skill
// envelopes as messages of their own, which an upstream's role-order rule
// may refuse (Chat, see chat.Request.MergeEnvelopes).
type envelopePlacer interface {
	// MergeEnvelopes makes Render put the envelopes inside the last user
	// message; called before Render.
	MergeEnvelopes()
	// EnvelopeOrderRefused reports whether refusal, an upstream's error
	// body, plausibly refuses the envelopes' messages for their place.
	EnvelopeOrderRefused(refusal []byte) bool
	// WithEnvelopesMerged returns the first round's body with the
	// envelopes inside the last user message, and false when there is no
	// such placement to send (none was added apart, no user message).
	WithEnvelopesMerged() ([]byte, bool)
}

// mergeEnvelopes makes parsed, about to be rendered, put its envelopes
// inside the last user message when the configuration says so or the
// OpenAI-format upstream is known to refuse them as messages of their own
// for its model (resendMerged): the one place that decides the placement
// of a request's first rendering.
func (s *Server) mergeEnvelopes(parsed apiRequest) {
	if ep, ok := parsed.(envelopePlacer); ok && (s.cfg.MergeSkillBodies || s.mergedModels.has(parsed.View().Model)) {
		ep.MergeEnvelopes()
	}
}

// maxMergedModels bounds the models remembered one by one as refusing
// envelopes apart. Clients name the models, so made-up names could fill
// the set and leave every later model paying a resend on each request:
// past it, every model gets the merged placement (as one flag for the whole
// upstream did before models were told apart).
const maxMergedModels = 1024

// maxModelName bounds the length of a model name remembered: the name is
// the client's, up to the body limit long, and 1,024 such names would hold
// as many request bodies' worth of memory for the process's life. Model
// names are far shorter; a longer one pays one resend per request.
const maxModelName = 256

// modelSet is a set of model names read on every Chat request and written
// once per model: readers take the current map without a lock, a writer
// replaces it with a copy. Once full it holds every model.
type modelSet struct {
	mu  sync.Mutex
	m   atomic.Pointer[map[string]struct{}]
	all atomic.Bool
}

func (ms *modelSet) has(model string) bool {
	if ms.all.Load() {
		return true
	}
	m := ms.m.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[model]
	return ok
}

// What add changed.
const (
	addedNone  = iota // known already, or a name longer than maxModelName
	addedModel        // model, one more
	addedAll          // the set was full: every model from now on
)

func (ms *modelSet) add(model string) int {
	if len(model) > maxModelName || ms.all.Load() {
		return addedNone
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	old := ms.m.Load()
	if old != nil {
		if _, ok := (*old)[model]; ok {
			return addedNone
		}
		if len(*old) >= maxMergedModels {
			ms.all.Store(true)
			return addedAll
		}
	}
	var m map[string]struct{}
	if old != nil {
		m = maps.Clone(*old)
	} else {
		m = make(map[string]struct{}, 1)
	}
	m[model] = struct{}{}
	ms.m.Store(&m)
	return addedModel
}

// resendMerged handles the upstream's refusal (400, or 422) of the first
// round of a Chat request whose rewrite added skill envelopes as messages
// of their own after the last message: Mistral's API and servers that
// validate with mistral-common (vLLM serving Mistral models) refuse a user,
// system or developer message after a tool message, which every step of an
// agent's tool loop ends with ("Unexpected role 'user' after role 'tool'",
// invalid_request_message_order), and strict chat templates two user
// messages in a row ("Conversation roles must alternate ..."). Only a
// refusal that names such a rule, of a request whose client messages keep
// it, is taken for one (chat.Request.EnvelopeOrderRefused): any other is
// the client's request's and goes back at once. The request is sent once
// more with the envelopes inside the last user message, and its answer is
// the one to go on with, accepted or refused (see mergedAnswered). refusal
// is the refusal it answers, nil when nothing was sent again; when that
// send fails, resp's refusal goes back as it came.
func (s *Server) resendMerged(ctx context.Context, rt *routed, in *http.Request, resp *http.Response, body []byte, kind exchange, info *reqInfo) (_ *http.Response, _ []byte, refusal []byte) {
	ep, ok := rt.req.(envelopePlacer)
	if !ok || !isRefusal(resp) {
		return resp, body, nil
	}
	peeked := peekBody(resp, refusalPeek)
	if !ep.EnvelopeOrderRefused(peeked) {
		return resp, body, nil
	}
	next, ok := ep.WithEnvelopesMerged()
	if !ok {
		return resp, body, nil
	}
	refusal = bytes.Clone(peeked) // resp's body is closed once the resend is answered
	retry := s.sendInstead(ctx, rt, in, resp, next, "merged", kind, info)
	if retry == nil {
		s.metrics.envelopeOrderResent.WithLabelValues("failed").Inc()
		return resp, body, nil
	}
	return retry, next, refusal
}

// mergedAnswered counts the answer to a request for model sent again
// merged (resendMerged), once any refusal of the ask for usage it still
// made is handled too. When it is accepted, later Chat requests for model
// are rendered merged from the start (mergeEnvelopes), said once per model
// at warn with what the upstream refused.
func (s *Server) mergedAnswered(resp *http.Response, refusal []byte, model string) {
	if resp.StatusCode/100 != 2 {
		s.metrics.envelopeOrderResent.WithLabelValues("refused").Inc() // for another reason: relayed as it came
		return
	}
	s.metrics.envelopeOrderResent.WithLabelValues("accepted").Inc()
	switch s.mergedModels.add(model) {
	case addedModel:
		s.log.Warn("the upstream refused skill envelopes as messages of their own after the last message; "+
			"skill bodies now go inside the last user message of every Chat request for this model "+
			"(rewrite.skill_placement: user_message does so from the start)",
			"model", wire.Clip(model), "refusal", wire.Clip(strings.TrimSpace(string(refusal))))
	case addedAll:
		s.log.Warn("the upstream refused skill envelopes as messages of their own for more than "+strconv.Itoa(maxMergedModels)+" models; "+
			"skill bodies now go inside the last user message of every Chat request, whatever its model",
			"model", wire.Clip(model), "refusal", wire.Clip(strings.TrimSpace(string(refusal))))
	}
}

// resendRefused handles the upstream's refusal of a first round for what
// the rewrite added, one thing at a time (a refusal names one): the ask for
// usage (streams only), then the envelopes' place, then the ask again for a
// merged request refused for it (Mistral's API checks the order after the
// parameters; another server may check them the other way round). Each is
// sent again at most once.
func (s *Server) resendRefused(ctx context.Context, rt *routed, in *http.Request, resp *http.Response, body []byte, kind exchange, info *reqInfo) (*http.Response, []byte) {
	resp, body = s.resendWithoutUsageAsk(ctx, rt, in, resp, body, info)
	resp, body, refusal := s.resendMerged(ctx, rt, in, resp, body, kind, info)
	if refusal == nil {
		return resp, body
	}
	resp, body = s.resendWithoutUsageAsk(ctx, rt, in, resp, body, info)
	s.mergedAnswered(resp, refusal, rt.req.View().Model)
	return resp, body
}
