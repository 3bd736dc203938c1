package events

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
)

// Metrics is a prometheus.Collector for the outbox and its relay; the caller registers it
// (prometheus.MustRegister(m)) and gives it to Relay.Metrics. Series (no labels carry ids):
//
//	agentmemory_outbox_backlog              gauge: rows waiting for Kafka (read at scrape)
//	agentmemory_outbox_oldest_age_seconds   gauge: age of the oldest waiting row, 0 when none
//	agentmemory_events_published_total      counter: events acknowledged by Kafka
//	agentmemory_events_publish_errors_total counter: publish passes that failed (wholly or partly)
//	agentmemory_webhook_attempts_total{result="delivered|retry|failed"} counter
//
// A nil *Metrics counts nothing.
type Metrics struct {
	db            bun.IDB
	now           func() time.Time
	backlog       *prometheus.Desc
	oldestAge     *prometheus.Desc
	publishedN    prometheus.Counter
	publishErrors prometheus.Counter
	webhooks      *prometheus.CounterVec
}

// NewMetrics returns the collector reading the outbox in db.
func NewMetrics(db bun.IDB) *Metrics {
	return &Metrics{
		db:        db,
		now:       time.Now,
		backlog:   prometheus.NewDesc("agentmemory_outbox_backlog", "Outbox events waiting for the relay to Kafka.", nil, nil),
		oldestAge: prometheus.NewDesc("agentmemory_outbox_oldest_age_seconds", "Age in seconds of the oldest outbox event waiting for Kafka (0 when none).", nil, nil),
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
	ch <- m.backlog
	ch <- m.oldestAge
	m.publishedN.Describe(ch)
	m.publishErrors.Describe(ch)
	m.webhooks.Describe(ch)
}

// Collect implements prometheus.Collector; it reads the backlog (bounded to 2 s).
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, oldest, err := Backlog(ctx, m.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.backlog, err)
	} else {
		age := 0.0
		if !oldest.IsZero() {
			age = max(m.now().Sub(oldest).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(m.backlog, prometheus.GaugeValue, float64(n))
		ch <- prometheus.MustNewConstMetric(m.oldestAge, prometheus.GaugeValue, age)
	}
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
