package events

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is a prometheus.Collector of the relay's deliveries; the caller registers it where
// /metrics is served and gives it to Relay.Metrics. Series (no labels carry ids):
//
//	agentmemory_events_published_total      counter: events acknowledged by Kafka
//	agentmemory_events_publish_errors_total counter: publish passes that failed (wholly or partly)
//	agentmemory_webhook_attempts_total{result="delivered|retry|failed"} counter
//
// The outbox backlog itself is read at scrape time by internal/metrics (WatchOutbox with
// Backlog). A nil *Metrics counts nothing.
type Metrics struct {
	publishedN    prometheus.Counter
	publishErrors prometheus.Counter
	webhooks      *prometheus.CounterVec
}

// NewMetrics returns the relay's collector.
func NewMetrics() *Metrics {
	return &Metrics{
		publishedN: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmemory_events_published_total", Help: "Events acknowledged by Kafka.",
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmemory_events_publish_errors_total", Help: "Publish passes to Kafka that failed wholly or partly.",
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmemory_webhook_attempts_total", Help: "Webhook delivery attempts by result (delivered, retry, failed).",
		}, []string{"result"}),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.publishedN.Describe(ch)
	m.publishErrors.Describe(ch)
	m.webhooks.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.publishedN.Collect(ch)
	m.publishErrors.Collect(ch)
	m.webhooks.Collect(ch)
}

func (m *Metrics) published(n int, failed bool) {
	if m == nil {
		return
	}
	m.publishedN.Add(float64(n))
	if failed {
		m.publishErrors.Inc()
	}
}

func (m *Metrics) webhook(result string) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(result).Inc()
}
