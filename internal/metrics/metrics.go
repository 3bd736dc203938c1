// Package metrics holds the service's Prometheus metrics on a private registry (no global
// state): HTTP requests by route template and status, working-memory writes by result, notes
// refused by kind, the outbox backlog, and workflow starts and failures. Label values are
// bounded sets (route templates, statuses, results, kinds, workflow names): never ids, keys
// or content.
//
// Every method is safe on a nil *Metrics (it records nothing), so code paths and tests that
// do not care about metrics need not wire any.
package metrics

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names, as served at /metrics.
const (
	NameHTTPRequests      = "agentmemory_http_requests_total"
	NameHTTPDuration      = "agentmemory_http_request_duration_seconds"
	NameStateWrites       = "agentmemory_state_writes_total"
	NameNotesRefused      = "agentmemory_notes_refused_total"
	NameOutboxPending     = "agentmemory_outbox_pending_events"
	NameOutboxOldestAge   = "agentmemory_outbox_oldest_pending_age_seconds"
	NameOutboxScrapeError = "agentmemory_outbox_scrape_errors_total"
	NameWorkflowStarts    = "agentmemory_workflow_starts_total"
	NameWorkflowFailures  = "agentmemory_workflow_failures_total"
)

// State write results (label "result" of agentmemory_state_writes_total).
const (
	StateStored      = "stored"
	StateConflict    = "conflict"
	StateNotDeclared = "not_declared_field"
	StateOverCap     = "over_cap"
)

// maxKinds bounds the distinct "kind" label values of refused notes; later new kinds count
// as "other".
const maxKinds = 32

var kindShape = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Metrics is one process's set of metrics and the registry that serves them.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	// httpSeries holds, per httpLabels, the two series HTTPRequest updates, so a request
	// looks its labels up once instead of hashing them into each vector (issue 16). The
	// label values are bounded sets, so it stays small.
	httpSeries   sync.Map // httpLabels -> httpPair
	stateWrites  *prometheus.CounterVec
	notesRefused *prometheus.CounterVec
	wfStarts     *prometheus.CounterVec
	wfFailures   *prometheus.CounterVec
	outboxErrors prometheus.Counter

	mu    sync.Mutex
	kinds map[string]bool
}

// New builds the metrics on a fresh registry, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		kinds: map[string]bool{},
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameHTTPRequests, Help: "HTTP requests answered, by method, route template and status.",
		}, []string{"method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameHTTPDuration, Help: "HTTP request latency in seconds, by method, route template and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "status"}),
		stateWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameStateWrites, Help: "Working-memory writes by result: stored, conflict (412), not_declared_field, over_cap.",
		}, []string{"result"}),
		notesRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameNotesRefused, Help: "Notes refused for personal data, by kind of data found (one count per kind per note).",
		}, []string{"kind"}),
		wfStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkflowStarts, Help: "Workflows started, by workflow type.",
		}, []string{"workflow"}),
		wfFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkflowFailures, Help: "Workflows that failed (or could not be started), by workflow type.",
		}, []string{"workflow"}),
		outboxErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameOutboxScrapeError, Help: "Scrapes whose outbox backlog query failed.",
		}),
	}
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.stateWrites, m.notesRefused, m.wfStarts, m.wfFailures, m.outboxErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{StateStored, StateConflict, StateNotDeclared, StateOverCap} {
		m.stateWrites.WithLabelValues(r)
	}
	for _, k := range []string{"email", "phone", "cpf", "cnpj"} { // the local layer's kinds (AM-6)
		m.notesRefused.WithLabelValues(m.kindLabel(k))
	}
	return m
}

// Registry is the private registry, for tests and for registering more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// HTTPRequest records one answered request. route is the route template (e.g.
// "/v1/keys/:key_id"), never the raw path; "" (no route matched) is recorded as "unmatched".
func (m *Metrics) HTTPRequest(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other"
	}
	key := httpLabels{method, route, status}
	v, ok := m.httpSeries.Load(key)
	if !ok {
		s := strconv.Itoa(status)
		v, _ = m.httpSeries.LoadOrStore(key, httpPair{
			count: m.httpRequests.WithLabelValues(method, route, s),
			dur:   m.httpDuration.WithLabelValues(method, route, s)})
	}
	pair := v.(httpPair)
	pair.count.Inc()
	pair.dur.Observe(d.Seconds())
}

// httpLabels are one HTTP series' label values; httpPair its request counter and duration
// histogram.
type httpLabels struct {
	method, route string
	status        int
}

type httpPair struct {
	count prometheus.Counter
	dur   prometheus.Observer
}

// StateWrite records one working-memory write by result: StateStored, StateConflict,
// StateNotDeclared or StateOverCap. Other values are ignored.
func (m *Metrics) StateWrite(result string) {
	if m == nil {
		return
	}
	switch result {
	case StateStored, StateConflict, StateNotDeclared, StateOverCap:
		m.stateWrites.WithLabelValues(result).Inc()
	}
}

// NoteRefused records one note refused for personal data (AM-6), counting each kind found
// once ("email", "phone", "cpf", "cnpj", or a model layer's kind). Kinds that are not short
// lower-case words, and new kinds past the 32nd, count as "other".
func (m *Metrics) NoteRefused(kinds []string) {
	if m == nil {
		return
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		k = m.kindLabel(k)
		if !seen[k] {
			seen[k] = true
			m.notesRefused.WithLabelValues(k).Inc()
		}
	}
}

func (m *Metrics) kindLabel(k string) string {
	if !kindShape.MatchString(k) {
		return "other"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.kinds[k] {
		if len(m.kinds) >= maxKinds {
			return "other"
		}
		m.kinds[k] = true
	}
	return k
}

// WorkflowStarted records a started workflow of type name (e.g. "Distill").
func (m *Metrics) WorkflowStarted(name string) {
	if m == nil {
		return
	}
	m.wfStarts.WithLabelValues(name).Inc()
}

// WorkflowFailed records a workflow of type name that failed or could not be started.
func (m *Metrics) WorkflowFailed(name string) {
	if m == nil {
		return
	}
	m.wfFailures.WithLabelValues(name).Inc()
}

// Backlog reports the outbox backlog: events not yet delivered, and the enqueue time of the
// oldest (zero when none).
type Backlog func(ctx context.Context) (pending int64, oldest time.Time, err error)

// WatchOutbox registers the outbox gauges (call it once), computed by backlog at each scrape (bounded to
// 5 seconds). A failed query counts in agentmemory_outbox_scrape_errors_total and leaves the
// gauges out of that scrape.
func (m *Metrics) WatchOutbox(backlog Backlog) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&outboxCollector{backlog: backlog, errors: m.outboxErrors,
		pending: prometheus.NewDesc(NameOutboxPending, "Events in the outbox not yet delivered to Kafka.", nil, nil),
		age:     prometheus.NewDesc(NameOutboxOldestAge, "Age in seconds of the oldest undelivered outbox event (0 when none).", nil, nil),
	})
}

type outboxCollector struct {
	backlog      Backlog
	errors       prometheus.Counter
	pending, age *prometheus.Desc
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.pending; ch <- c.age }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, oldest, err := c.backlog(ctx)
	if err != nil {
		c.errors.Inc()
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = max(0, time.Since(oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age)
}

// HTTPCounter is the request counter of one label set, for tests.
func (m *Metrics) HTTPCounter(method, route, status string) prometheus.Counter {
	return m.httpRequests.WithLabelValues(method, route, status)
}

// StateWriteCounter is the state write counter of one result, for tests.
func (m *Metrics) StateWriteCounter(result string) prometheus.Counter {
	return m.stateWrites.WithLabelValues(result)
}

// NoteRefusedCounter is the refused-note counter of one kind, for tests.
func (m *Metrics) NoteRefusedCounter(kind string) prometheus.Counter {
	return m.notesRefused.WithLabelValues(kind)
}
