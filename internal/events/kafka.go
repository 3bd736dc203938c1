package events

import (
	"context"
	"errors"
	"time"

	"github.com/segmentio/kafka-go"
)

// Kafka message headers.
const (
	// HeaderEventID carries the stable event id (consumers drop duplicates by it).
	HeaderEventID = "event_id"
	// HeaderEventType carries the event type, e.g. agent_memory.note_created.
	HeaderEventType = "event_type"
)

// Kafka publishes to a Kafka topic with kafka-go: acks from all in-sync replicas, the space id
// as message key (the murmur2 partitioner, as Java producers use, so a space's events share
// one partition and keep their order), the event id and type as headers, and batches flushed
// after 5 ms. It is the production Publisher.
type Kafka struct {
	w *kafka.Writer
}

// NewKafka returns a Kafka publisher for brokers (host:port) and topic. The topic must exist
// (or the cluster must create topics on demand). No connection is made until the first
// publish, so a broker that is down now is fine; one that comes back is used within about 2 s.
func NewKafka(brokers []string, topic string) *Kafka {
	return &Kafka{w: &kafka.Writer{
		Addr:            kafka.TCP(brokers...),
		Topic:           topic,
		Balancer:        kafka.Murmur2Balancer{},
		RequiredAcks:    kafka.RequireAll,
		BatchTimeout:    5 * time.Millisecond,
		BatchSize:       1000, // one produce batch per partition per relay pass
		MaxAttempts:     3,    // the relay retries with its own backoff
		WriteBackoffMin: 50 * time.Millisecond,
		WriteBackoffMax: 500 * time.Millisecond,
		WriteTimeout:    10 * time.Second,
		// The transport caches metadata, and a failed fetch, until the TTL: a broker that
		// comes back is seen within 2 s.
		Transport: &kafka.Transport{MetadataTTL: 2 * time.Second, MetadataTopics: []string{topic}, DialTimeout: 5 * time.Second},
	}}
}

// Publish writes msgs and waits for the brokers' acknowledgement. Partly failed writes come
// back as *PartialError.
func (k *Kafka) Publish(ctx context.Context, msgs []Message) error {
	km := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		km[i] = kafka.Message{
			Key:   []byte(m.Key),
			Value: m.Value,
			Time:  m.Time,
			Headers: []kafka.Header{
				{Key: HeaderEventID, Value: []byte(m.EventID)},
				{Key: HeaderEventType, Value: []byte(m.Type)},
			},
		}
	}
	err := k.w.WriteMessages(ctx, km...)
	var we kafka.WriteErrors
	if errors.As(err, &we) && len(we) == len(msgs) {
		return &PartialError{Errs: we}
	}
	return err
}

// Close flushes and closes the writer.
func (k *Kafka) Close() error { return k.w.Close() }
