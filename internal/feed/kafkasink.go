package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// Kafka headers of an export record.
const (
	HeaderCursor  = "cursor"
	HeaderOp      = "op"
	HeaderSpaceID = "space_id"
)

// KafkaSink publishes feed records to one topic per table (TopicPrefix + "." + table, e.g.
// agentmemory.export.notes; log-compacted in production), keyed by the row's primary key
// within its space ("space id/key"), with kafka-go: acks from all in-sync replicas and the
// murmur2 partitioner, so a key's records share a partition and keep their order. An upsert's
// value is the Record's JSON; a delete's value is null (Kafka's tombstone: compaction then
// drops the key's earlier values). Headers carry the cursor, op and space id.
type KafkaSink struct {
	w      *kafka.Writer
	prefix string
}

// NewKafkaSink returns a sink writing to brokers (host:port) under topicPrefix. Topics must
// exist, or the cluster must create them. No connection is made before the first Deliver.
func NewKafkaSink(brokers []string, topicPrefix string) *KafkaSink {
	return &KafkaSink{prefix: topicPrefix, w: &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Balancer:     kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    1000,
		MaxAttempts:  3,
		WriteTimeout: 10 * time.Second,
		Transport:    &kafka.Transport{MetadataTTL: 2 * time.Second, DialTimeout: 5 * time.Second},
	}}
}

// Topic is the topic of table's records.
func (k *KafkaSink) Topic(table string) string { return k.prefix + "." + table }

// Deliver publishes recs of spaceID in order and returns once the brokers acknowledged all of
// them (the last cursor is then the sink's acknowledged cursor). A failure may leave some
// published: the next delivery starts again after the last acknowledged cursor, so a record
// can reach Kafka twice (at least once; consumers drop a repeat by its cursor header), never
// out of order for its key.
func (k *KafkaSink) Deliver(ctx context.Context, spaceID string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		m := kafka.Message{
			Topic: k.Topic(r.Table),
			Key:   []byte(spaceID + "/" + r.Key),
			Time:  r.ChangedAt,
			Headers: []kafka.Header{
				{Key: HeaderCursor, Value: []byte(strconv.FormatInt(r.Cursor, 10))},
				{Key: HeaderOp, Value: []byte(r.Op)},
				{Key: HeaderSpaceID, Value: []byte(spaceID)},
			},
		}
		if r.Op == OpUpsert {
			v, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("feed: kafka sink: encode: %w", err)
			}
			m.Value = v
		}
		msgs[i] = m
	}
	if err := k.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("feed: kafka sink: %w", err)
	}
	return nil
}

// Close flushes and closes the writer.
func (k *KafkaSink) Close() error { return k.w.Close() }
