package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

const metricsNamespace = "skillrouter"

// metrics are the proxy's Prometheus series. Every chat series carries the
// A/B arm ("default" without a split) so arms compare side by side.
type metrics struct {
	reg                 *prometheus.Registry
	requests            *prometheus.CounterVec   // path, status, arm, outcome
	duration            *prometheus.HistogramVec // path
	routing             *prometheus.HistogramVec // arm, strategy
	upstreamLatency     *prometheus.HistogramVec // path
	selected            *prometheus.HistogramVec // arm
	fallbacks           *prometheus.CounterVec   // arm, reason
	cacheHits           *prometheus.CounterVec   // arm
	addedTokens         *prometheus.HistogramVec // arm
	rewriteErrors       *prometheus.CounterVec   // arm
	beforeReady         *prometheus.CounterVec   // arm, api
	toolCalls           *prometheus.CounterVec   // tool, arm
	toolRounds          *prometheus.HistogramVec // arm
	exhausted           *prometheus.CounterVec   // arm
	storedRepairs       *prometheus.CounterVec   // outcome (state.go)
	stateUnknown        prometheus.Counter       // presence.go
	usageAskResent      *prometheus.CounterVec   // outcome (usage.go)
	envelopeOrderResent *prometheus.CounterVec   // outcome (envelopes.go)
	hiddenDeletes       *prometheus.CounterVec   // outcome (hidden.go)
	conversationDeletes *prometheus.CounterVec   // outcome (takeback.go)
	droppedCalls        *prometheus.CounterVec   // arm
	upstreamErrors      *prometheus.CounterVec   // kind
	strayLines          *prometheus.CounterVec   // api
}

func newDefaultRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// latencyBuckets span sub-millisecond routing to multi-minute generations.
var latencyBuckets = []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// routingBuckets span a routing: tens of microseconds from the ranking
// cache, a millisecond for a new query, up to a remote embedder's timeout.
var routingBuckets = []float64{.00005, .0001, .0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics(reg *prometheus.Registry, lib Library, bodies *atomic.Int64) (*metrics, error) {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "requests_total",
			Help: "HTTP requests served, by path, method, status code, A/B arm and outcome: complete (delivered whole, whatever the status), " +
				"stream_error (a started stream ended by an upstream error, timeout or malformed event), client_closed (status 499), " +
				"shutdown (ended by the server's shutdown) or passthrough_refused (not relayed: upstream.passthrough does not allow it; status 404).",
		}, []string{"path", "method", "status", "arm", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "request_duration_seconds",
			Help: "Time from request to the end of the response, by path, method and A/B arm.", Buckets: latencyBuckets,
		}, []string{"path", "method", "arm"}),
		routing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "routing_duration_seconds",
			Help: "Time spent routing and rewriting a request, by A/B arm, strategy and client API (chat, responses, messages).", Buckets: routingBuckets,
		}, []string{"arm", "strategy", "api"}),
		upstreamLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "upstream_duration_seconds",
			Help: "Time until the upstream's response headers, per upstream exchange (tool rounds count each), by path and A/B arm.", Buckets: latencyBuckets,
		}, []string{"path", "arm"}),
		selected: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "selected_skills",
			Help: "Skills auto-loaded into a request, by A/B arm and client API.", Buckets: []float64{0, 1, 2, 3, 4, 5, 8},
		}, []string{"arm", "api"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "routing_fallbacks_total",
			Help: "Requests ranked by the bm25 fallback because the embedder failed or was slow, by reason: " + fallbackReasons() + ".",
		}, []string{"arm", "reason"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "routing_cache_hits_total",
			Help: "Requests whose ranking came from the router's cache of recent rankings (the conversation's user turns were ranked before).",
		}, []string{"arm"}),
		addedTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "prompt_tokens_added",
			Help:    "Prompt tokens (o200k_base) the rewrite added to a request: catalog, skill bodies, tools; by A/B arm and client API.",
			Buckets: []float64{0, 100, 250, 500, 1000, 1500, 2500, 4000, 6000, 8000, 12000, 20000},
		}, []string{"arm", "api"}),
		rewriteErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "rewrite_errors_total",
			Help: "Requests forwarded unmodified because the rewrite failed, by A/B arm and client API.",
		}, []string{"arm", "api"}),
		beforeReady: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "requests_before_ready_total",
			Help: "Requests forwarded unmodified because the arm's index was still being built (start-up), by A/B arm and client API.",
		}, []string{"arm", "api"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "tool_calls_total",
			Help: "Tool calls answered server-side, by tool, A/B arm and client API (load_skill calls mean auto-load missed a skill the model wanted).",
		}, []string{"tool", "arm", "api"}),
		toolRounds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "tool_rounds",
			Help: "Server-side tool rounds per request, by A/B arm and client API.", Buckets: []float64{0, 1, 2, 3, 4, 6, 8},
		}, []string{"arm", "api"}),
		exhausted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "tool_rounds_exhausted_total",
			Help: "Requests that hit the tool-round limit.",
		}, []string{"arm"}),
		storedRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "stored_state_repairs_total",
			Help: "Upstream refusals (400) of requests continuing Responses state stored upstream, by outcome: repaired (the proxy's dropped calls answered, the retry accepted), " +
				"nothing_to_answer, read_failed (the state could not be read), retry_failed, retry_refused.",
		}, []string{"outcome"}),
		stateUnknown: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "stored_state_unknown_total",
			Help: "Responses requests continuing a stored response or conversation this process did not serve (another replica, a restart, " +
				"or state made without the proxy): the skills its earlier turns loaded are loaded again. With several replicas, " +
				"a rate that follows the request rate says conversations are not kept on one replica (docs/deploy.md).",
		}),
		usageAskResent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "usage_ask_resent_total",
			Help: "Upstream refusals (400, 422) naming stream_options of streamed Chat requests the proxy had added stream_options.include_usage to, sent again without it, by outcome: " +
				"accepted (the upstream takes no stream_options: output-token caps are not enforced across its hidden rounds), refused (answered otherwise, relayed as it came), failed (not sent: the first refusal is relayed).",
		}, []string{"outcome"}),
		envelopeOrderResent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "envelope_order_resent_total",
			Help: "Upstream refusals (400, 422) naming a role-order rule (mistral-common's \"Unexpected role\", a chat template's \"roles must alternate\") of Chat requests the proxy had added skill envelopes to as messages of their own, " +
				"sent again with the envelopes inside the last user message, by outcome: accepted (later Chat requests are rendered so from the start), refused (answered otherwise, relayed as it came), failed (not sent: the first refusal is relayed).",
		}, []string{"outcome"}),
		hiddenDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "hidden_responses_deleted_total",
			Help: "Responses (and Chat Completions with store: true) stored upstream by the proxy's hidden tool rounds that the client never got an id for, deleted after the request, " +
				"by outcome: deleted, not_found, failed, skipped (the server was shutting down).",
		}, []string{"outcome"}),
		conversationDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "conversation_items_deleted_total",
			Help: "Items that the proxy's completed tool rounds added to a Responses conversation, taken back once a later round was refused or ended failed (response.failed, an error event), " +
				"by outcome: deleted, not_found, failed (a deletion failed; older items are not tried), " +
				"unmatched (the conversation could not be read, or its newest items were not the turn's: left as they are), skipped (the server was shutting down).",
		}, []string{"outcome"}),
		droppedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "tool_calls_dropped_total",
			Help: "Server-side tool calls not answered (round limit, or a stream whose client tool calls were already relayed).",
		}, []string{"arm"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "upstream_errors_total",
			Help: "Upstream exchanges that failed: upstream_unreachable, upstream_connection_closed, upstream_timeout, upstream_stream_error, " +
				"upstream_malformed_event, upstream_stream_incomplete, upstream_error_event (an error event in the upstream's stream, relayed), upstream_bad_response (a 200 that is not the API's answer, or a body that does not decode), " +
				"upstream_redirect, client_closed, upstream_response_rejected, upstream_response_too_large, invalid_path.",
		}, []string{"kind"}),
		strayLines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "upstream_sse_lines_dropped_total",
			Help: "Lines of upstream event streams that were not server-sent-event fields or comments, dropped, by client API.",
		}, []string{"api"}),
	}
	cs := []prometheus.Collector{m.requests, m.duration, m.routing, m.upstreamLatency, m.selected,
		m.fallbacks, m.cacheHits, m.addedTokens, m.rewriteErrors, m.beforeReady, m.toolCalls, m.toolRounds, m.exhausted,
		m.droppedCalls, m.storedRepairs, m.stateUnknown, m.usageAskResent, m.envelopeOrderResent, m.hiddenDeletes, m.conversationDeletes, m.upstreamErrors, m.strayLines}
	cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "request_bodies_held_bytes",
		Help: "Bytes of routed request bodies held, bounded by server.body_memory (requests that find no room wait, then get 503 server_busy).",
	}, func() float64 { return float64(bodies.Load()) }))
	if lib != nil {
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: metricsNamespace, Name: "library_skills",
				Help: "Skills loaded in the current library snapshot.",
			}, func() float64 { return float64(len(lib.Snapshot().Skills())) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: metricsNamespace, Name: "library_problems",
				Help: "Problems (errors and warnings) found in the current library snapshot.",
			}, func() float64 { return float64(len(lib.Snapshot().Problems())) }),
		)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// fallbackUnknown labels a fallback whose decision carries no code (a
// Rewriter other than the router's).
const fallbackUnknown = "unknown"

func fallbackReasons() string {
	s := make([]string, len(router.FallbackCodes))
	for i, c := range router.FallbackCodes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// preset creates the per-arm counters at 0 for every arm and fallback
// reason, so /metrics shows 0 rather than nothing (dashboards: "no data")
// until the first event.
func (m *metrics) preset(arms []string) {
	for _, arm := range arms {
		for _, code := range router.FallbackCodes {
			m.fallbacks.WithLabelValues(arm, string(code))
		}
		m.cacheHits.WithLabelValues(arm)
		for _, a := range []wire.API{wire.APIChat, wire.APIResponses, wire.APIMessages} {
			m.rewriteErrors.WithLabelValues(arm, string(a))
			m.beforeReady.WithLabelValues(arm, string(a))
		}
		m.exhausted.WithLabelValues(arm)
		m.droppedCalls.WithLabelValues(arm)
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *metrics) observeRequest(info *reqInfo, elapsed time.Duration) {
	arm := armLabel(info.arm)
	m.requests.WithLabelValues(info.path, info.method, strconv.Itoa(info.status), arm, info.outcome).Inc()
	m.duration.WithLabelValues(info.path, info.method, arm).Observe(elapsed.Seconds())
	if !info.routed {
		return
	}
	m.toolRounds.WithLabelValues(arm, info.api).Observe(float64(info.rounds))
	if info.exhausted {
		m.exhausted.WithLabelValues(arm).Inc()
	}
}

// observeUpstream records one upstream exchange's time to its headers.
func (m *metrics) observeUpstream(info *reqInfo, elapsed time.Duration) {
	m.upstreamLatency.WithLabelValues(info.path, armLabel(info.arm)).Observe(elapsed.Seconds())
}

// observeDecision records a routing decision as soon as it is made.
func (m *metrics) observeDecision(info *reqInfo) {
	arm := armLabel(info.arm)
	m.routing.WithLabelValues(arm, info.strategy, info.api).Observe(info.routing.Seconds())
	m.selected.WithLabelValues(arm, info.api).Observe(float64(len(info.selected)))
	m.addedTokens.WithLabelValues(arm, info.api).Observe(float64(info.addedTokens))
	if info.fallback {
		reason := string(info.fallbackCode)
		if reason == "" {
			reason = fallbackUnknown
		}
		m.fallbacks.WithLabelValues(arm, reason).Inc()
	}
	if info.cached {
		m.cacheHits.WithLabelValues(arm).Inc()
	}
}
