package app

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/agentmemory/agentmemory/internal/logs"
)

// ClientOptions are the options of every Temporal client of a (the binary's and the rigs'):
// hostPort and TEMPORAL_NAMESPACE, the SDK's log lines at warn and error routed
// into a's logger (TemporalLogger), and the SDK's metrics on a's Prometheus registry
// (TemporalMetrics). A worker built on the client inherits both.
func (a *App) ClientOptions(hostPort string) client.Options {
	return client.Options{
		HostPort: hostPort, Namespace: a.Config.TemporalNamespace,
		Logger: TemporalLogger(a.Log), MetricsHandler: a.temporalMetrics(),
	}
}

// temporalMetrics is a's one metrics handler for Temporal (a registry takes each metric once).
func (a *App) temporalMetrics() client.MetricsHandler {
	a.temporalOnce.Do(func() { a.temporalHandler = TemporalMetrics(a.Metrics.Registry()) })
	return a.temporalHandler
}

// temporalKeys are the SDK's log attributes kept by TemporalLogger: names and opaque ids.
// Anything else (payloads, search attributes, a panic's value or stack, an activity's
// arguments) is dropped; an error is reduced to logs.Scrub's code and cause.
var temporalKeys = map[string]bool{
	"Namespace": true, "TaskQueue": true, "WorkerID": true, "WorkerType": true,
	"WorkflowType": true, "WorkflowID": true, "RunID": true, "Attempt": true,
	"ActivityType": true, "ActivityID": true, "EventID": true, "EventType": true,
	"PreviousStartedEventID": true, "WorkflowTaskStartedEventID": true, "TaskFirstEventID": true,
}

// TemporalLogger adapts l to the Temporal SDK's log.Logger: Debug and Info lines are dropped,
// Warn and Error lines (workflow task failures, non-determinism, panics, activity errors)
// are logged at the same level with the message, a "component":"temporal" attribute and only
// the attributes of temporalKeys; an "Error" attribute becomes "code" and "cause"
// (logs.Scrub), a panic is marked "panic":true without its value or stack.
func TemporalLogger(l *slog.Logger) log.Logger {
	return &temporalLogger{l: l.With("component", "temporal")}
}

type temporalLogger struct {
	l    *slog.Logger
	with []any
}

var (
	_ log.Logger     = (*temporalLogger)(nil)
	_ log.WithLogger = (*temporalLogger)(nil)
)

func (t *temporalLogger) Debug(string, ...any) {}
func (t *temporalLogger) Info(string, ...any)  {}

func (t *temporalLogger) Warn(msg string, keyvals ...any) {
	t.l.Log(context.Background(), slog.LevelWarn, msg, t.attrs(keyvals)...)
}

func (t *temporalLogger) Error(msg string, keyvals ...any) {
	t.l.Log(context.Background(), slog.LevelError, msg, t.attrs(keyvals)...)
}

// With returns a logger whose lines carry keyvals too (filtered the same way).
func (t *temporalLogger) With(keyvals ...any) log.Logger {
	return &temporalLogger{l: t.l, with: append(slices.Clip(t.with), keyvals...)}
}

// attrs filters the SDK's key/value pairs (t.with first, then keyvals).
func (t *temporalLogger) attrs(keyvals []any) []any {
	all := append(slices.Clip(t.with), keyvals...)
	out := make([]any, 0, len(all))
	for i := 0; i+1 < len(all); i += 2 {
		key, _ := all[i].(string)
		val := all[i+1]
		switch {
		case key == "Error":
			err, ok := val.(error)
			if !ok {
				err = errors.New("non-error value")
			}
			code, cause := logs.Scrub(err)
			out = append(out, "code", code, "cause", cause)
		case key == "PanicError" || key == "PanicStack":
			out = append(out, "panic", true)
		case temporalKeys[key]:
			out = append(out, key, val)
		}
	}
	return out
}

// temporalLabels are the SDK's metric tags kept as Prometheus labels, on every Temporal
// metric (a tag the SDK did not set is ""): names of types, queues and outcomes, never ids.
var temporalLabels = []string{
	"namespace", "task_queue", "workflow_type", "activity_type", "operation",
	"worker_type", "poller_type", "failure_reason", "status_code",
}

// TemporalMetrics is a client.MetricsHandler recording the SDK's metrics on reg under the
// SDK's own names (temporal_*): counters as counters, gauges as gauges, timers as histograms
// in seconds, each labelled with temporalLabels. A name reg already holds as another kind of
// metric is not recorded.
func TemporalMetrics(reg prometheus.Registerer) client.MetricsHandler {
	return &promHandler{vecs: &promVecs{reg: reg, m: map[string]any{}}, tags: map[string]string{}}
}

type promVecs struct {
	reg prometheus.Registerer
	mu  sync.Mutex
	m   map[string]any
}

// get returns the vector registered under name, creating it with mk on first use; nil when
// reg holds name as another kind of metric.
func (p *promVecs) get(name string, mk func() prometheus.Collector) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[name]; ok {
		return v
	}
	c := mk()
	if err := p.reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			p.m[name] = nil
			return nil
		}
		c = already.ExistingCollector
	}
	p.m[name] = c
	return c
}

type promHandler struct {
	vecs *promVecs
	tags map[string]string
}

func (h *promHandler) labels() prometheus.Labels {
	l := make(prometheus.Labels, len(temporalLabels))
	for _, k := range temporalLabels {
		l[k] = h.tags[k]
	}
	return l
}

// WithTags returns a handler with tags added (a later value of a key wins).
func (h *promHandler) WithTags(tags map[string]string) client.MetricsHandler {
	next := maps.Clone(h.tags)
	maps.Copy(next, tags)
	return &promHandler{vecs: h.vecs, tags: next}
}

// Counter returns the counter name with the handler's tags.
func (h *promHandler) Counter(name string) client.MetricsCounter {
	v, _ := h.vecs.get(name, func() prometheus.Collector {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "Temporal SDK counter " + name + "."}, temporalLabels)
	}).(*prometheus.CounterVec)
	if v == nil {
		return client.MetricsNopHandler.Counter(name)
	}
	c := v.With(h.labels())
	return counterFunc(func(d int64) {
		if d > 0 {
			c.Add(float64(d))
		}
	})
}

// Gauge returns the gauge name with the handler's tags.
func (h *promHandler) Gauge(name string) client.MetricsGauge {
	v, _ := h.vecs.get(name, func() prometheus.Collector {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Temporal SDK gauge " + name + "."}, temporalLabels)
	}).(*prometheus.GaugeVec)
	if v == nil {
		return client.MetricsNopHandler.Gauge(name)
	}
	g := v.With(h.labels())
	return gaugeFunc(g.Set)
}

// Timer returns the timer name, recorded as a histogram in seconds, with the handler's tags.
func (h *promHandler) Timer(name string) client.MetricsTimer {
	v, _ := h.vecs.get(name, func() prometheus.Collector {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: "Temporal SDK timer " + name + ", in seconds."}, temporalLabels)
	}).(*prometheus.HistogramVec)
	if v == nil {
		return client.MetricsNopHandler.Timer(name)
	}
	o := v.With(h.labels())
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

type (
	counterFunc func(int64)
	gaugeFunc   func(float64)
	timerFunc   func(time.Duration)
)

func (f counterFunc) Inc(d int64)          { f(d) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }

// ShareClient returns a Temporal client on existing's connection with a's ClientOptions (the
// SDK's logs into a's logger, its metrics on a's registry), so that test rigs sharing one dev
// server's connection still log and count like the binary. Close it when done: the
// connection stays open while other clients use it.
func (a *App) ShareClient(existing client.Client) (client.Client, error) {
	return client.NewClientFromExisting(existing, a.ClientOptions(""))
}
