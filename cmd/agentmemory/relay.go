package main

import (
	"context"
	"sync"
	"time"

	"github.com/agentmemory/agentmemory/internal/events"
)

// startRelay runs the outbox relay until ctx ends (AM-13, GOV-4): webhooks always, Kafka
// when KAFKA_BROKERS is set (otherwise the outbox only fills and GET /v1/events reads it).
// Several workers may run it at once. The returned stop cancels it and waits.
func (a *app) startRelay(ctx context.Context) (stop func()) {
	r := &events.Relay{
		DB: a.db, Logger: a.log, Metrics: a.eventMetrics, Now: time.Now,
		Webhooks: &events.Webhooks{Docs: a.docs, Signer: events.Signer{Hasher: &a.hasher}, AllowPrivate: a.cfg.WebhookAllowPrivate},
	}
	var kafka *events.Kafka
	if len(a.cfg.KafkaBrokers) > 0 {
		kafka = events.NewKafka(a.cfg.KafkaBrokers, a.cfg.KafkaTopic)
		r.Publisher = kafka
		a.log.Info("events relay to Kafka on", "topic", a.cfg.KafkaTopic, "brokers", len(a.cfg.KafkaBrokers))
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
		if kafka != nil {
			_ = kafka.Close()
		}
	}
}
