package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/metrics"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// ReadyCheck is one dependency GET /readyz checks. Check returns nil when the dependency
// answers; it gets a context bounded to readyTimeout.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// readyTimeout bounds each readiness check.
const readyTimeout = 2 * time.Second

// TemporalHealth is what readiness needs of Temporal; client.Client satisfies it.
type TemporalHealth interface {
	CheckHealth(ctx context.Context, req *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}

// TemporalCheck is the "temporal" readiness check: the frontend answers its health check.
func TemporalCheck(t TemporalHealth) ReadyCheck {
	return ReadyCheck{Name: "temporal", Check: func(ctx context.Context) error {
		_, err := t.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}}
}

// KafkaCheck is the "kafka" readiness check: at least one of brokers (host:port) accepts a
// TCP connection. It checks reachability only; the outbox relay reports delivery itself.
func KafkaCheck(brokers []string) ReadyCheck {
	return ReadyCheck{Name: "kafka", Check: func(ctx context.Context) error {
		var d net.Dialer
		var last error
		for _, b := range brokers {
			conn, err := d.DialContext(ctx, "tcp", b)
			if err == nil {
				return conn.Close()
			}
			last = err
		}
		if last == nil {
			return fmt.Errorf("no brokers configured")
		}
		return last
	}}
}

// healthz: GET /healthz -> 200 {"status":"ok"} while the process serves HTTP.
func (s *Server) healthz(c *gin.Context) {
	c.PureJSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz: GET /readyz -> 200 {"status":"ready","checks":{name:"ok"},"gate":{...}} when the
// database and every configured dependency (Deps.Ready: Temporal, Kafka when configured)
// answer within 2 s; otherwise 503 not_ready with "checks" naming each failing dependency as
// "unavailable". Causes are logged, never answered. "gate" (GateLayers) says which layers of
// the personal-data gate run (AM-6): the local layer always, the model layer only when a
// detector model is configured; it is information, not a check, and never makes the answer
// 503.
func (s *Server) readyz(c *gin.Context) {
	checks := append([]ReadyCheck{{Name: "database", Check: s.DB.PingContext}}, s.Ready...)
	results := make(map[string]string, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, chk := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx(c), readyTimeout)
			defer cancel()
			err := chk.Check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				results[chk.Name] = "unavailable"
				s.log.WarnContext(c.Request.Context(), "not ready", "check", chk.Name, "err", err.Error())
				return
			}
			results[chk.Name] = "ok"
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r != "ok" {
			s.writeError(c, fault.New(fault.Unavailable, "not_ready", "a dependency is unavailable").With("checks", results))
			return
		}
	}
	c.PureJSON(http.StatusOK, gin.H{"status": "ready", "checks": results, "gate": GateLayers(s.Notes)})
}

// GateLayers reports the layers of the personal-data gate of n (AM-6), as GET /readyz and
// the startup log show them: {"local_layer": "on", "model_layer": "on"|"off"}. The model
// layer is on when n has a Detector (AGENTMEMORY_DETECTOR_MODEL, at OLLAMA_HOST); without
// it, names of customers the space has never seen pass the gate.
func GateLayers(n *notes.Service) map[string]string {
	model := "off"
	if n != nil && n.Detector != nil {
		model = "on"
	}
	return map[string]string{"local_layer": "on", "model_layer": model}
}

// observe records each request's count and latency by method, route template and status.
func (s *Server) observe() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		s.Metrics.HTTPRequest(c.Request.Method, c.FullPath(), c.Writer.Status(), time.Since(start))
	}
}

// serveMetrics: GET /metrics -> the Prometheus text format of Deps.Metrics. Unauthenticated,
// like /healthz: labels hold route templates, statuses, results and kinds, never tenant
// data. Routed here only when Deps.MetricsOnOwnPort is false.
func (s *Server) serveMetrics(c *gin.Context) {
	s.Metrics.Handler().ServeHTTP(c.Writer, c.Request)
}

// stateWriteResult names a working-memory write's result for metrics: stored, conflict,
// not_declared_field or over_cap; "" for other refusals.
func stateWriteResult(stored bool, reason *string, err error) string {
	switch {
	case err != nil:
		if fe := fault.As(err); fe != nil && fe.Kind == fault.Stale {
			return metrics.StateConflict
		}
		return ""
	case stored:
		return metrics.StateStored
	case reason != nil:
		return *reason
	}
	return ""
}
