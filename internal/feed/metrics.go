package feed

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// LagCollector is a prometheus.Collector reading the export sinks' lag at scrape time
// (issue 33), with no per-tenant label:
//
//	agentmemory_export_sink_lag_records  gauge: the largest number of committed feed records
//	                                     any sink has not acknowledged yet
//	agentmemory_export_sinks{state="ok|failing"} gauge: sinks whose last delivery succeeded or failed
type LagCollector struct {
	DB      *bun.DB
	Timeout time.Duration // of the scrape's queries (0: 5 s)
}

var (
	lagDesc   = prometheus.NewDesc("agentmemory_export_sink_lag_records", "Largest number of committed export feed records a sink has not acknowledged.", nil, nil)
	sinksDesc = prometheus.NewDesc("agentmemory_export_sinks", "Export sinks by the outcome of their last delivery.", []string{"state"}, nil)
)

// Describe implements prometheus.Collector.
func (l LagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc; ch <- sinksDesc }

// Collect implements prometheus.Collector; a failed query is reported as an invalid metric.
func (l LagCollector) Collect(ch chan<- prometheus.Metric) {
	t := l.Timeout
	if t <= 0 {
		t = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), t)
	defer cancel()
	lag, ok, failing, err := l.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(lagDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(lag))
	ch <- prometheus.MustNewConstMetric(sinksDesc, prometheus.GaugeValue, float64(ok), "ok")
	ch <- prometheus.MustNewConstMetric(sinksDesc, prometheus.GaugeValue, float64(failing), "failing")
}

// read returns the largest lag over the sinks and how many are ok and failing.
func (l LagCollector) read(ctx context.Context) (lag int64, ok, failing int, err error) {
	var sinks []models.ExportSink
	if err := l.DB.NewSelect().Model(&sinks).Scan(ctx); err != nil {
		return 0, 0, 0, err
	}
	for _, s := range sinks {
		last, pending, err := Head(ctx, l.DB, s.SpaceID)
		if err != nil {
			return 0, 0, 0, err
		}
		lag = max(lag, last+pending-s.Cursor)
		if s.LastError == "" {
			ok++
		} else {
			failing++
		}
	}
	return lag, ok, failing, nil
}
