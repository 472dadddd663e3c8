package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// libraryMetrics count the library's reloads and the routing indexes'
// builds, so an alert can say that the library stopped following its
// source (no reload since a deploy) or that builds or their kept copies
// fail, where skillrouter_library_skills only shows the count.
type libraryMetrics struct {
	reloads    prometheus.Counter
	lastReload prometheus.Gauge
	builds     *prometheus.HistogramVec
	keepFailed prometheus.Counter
}

func newLibraryMetrics() *libraryMetrics {
	m := &libraryMetrics{
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "skillrouter", Name: "library_reloads_total",
			Help: "Library snapshots installed after the first: a watched change, POST /v1/skills/reload or SIGHUP.",
		}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "skillrouter", Name: "library_last_reload_timestamp_seconds",
			Help: "When the library snapshot in use was installed (the start's, until a reload), Unix seconds.",
		}),
		builds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "skillrouter", Name: "index_build_seconds",
			Help:    "Routing index builds, by kind: built (the first, or a library change's), settled (the rebuild that makes prompts a fresh start's).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
		keepFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "skillrouter", Name: "index_keep_failures_total",
			Help: "Routing indexes that could not be kept in the index folder for the next start (that start is cold; the log says why).",
		}),
	}
	m.lastReload.SetToCurrentTime()
	for _, k := range []router.IndexEvent{router.IndexBuilt, router.IndexSettled} {
		m.builds.WithLabelValues(string(k))
	}
	return m
}

func (m *libraryMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.reloads, m.lastReload, m.builds, m.keepFailed}
}

// follow counts reg's reloads.
func (m *libraryMetrics) follow(reg *skills.Registry) {
	reg.OnReload(func(*skills.Snapshot) {
		m.reloads.Inc()
		m.lastReload.SetToCurrentTime()
	})
}

// onIndex is router.Options.OnIndex.
func (m *libraryMetrics) onIndex(ev router.IndexEvent, took time.Duration) {
	switch ev {
	case router.IndexKeepFailed:
		m.keepFailed.Inc()
	default:
		m.builds.WithLabelValues(string(ev)).Observe(took.Seconds())
	}
}
