// Package eventstest holds what tests of the event relay share: reading back what reached a
// Kafka-protocol broker (kfake in the tests).
package eventstest

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// Consume reads every message now on topic at the broker addr, partition by partition
// (0..partitions-1), each in offset order. The count is exact: it reads up to each partition's
// last offset. A 30 s deadline guards a hang only.
func Consume(t testing.TB, addr, topic string, partitions int) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []kafka.Message
	for p := range partitions {
		conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, p)
		require.NoError(t, err)
		last, err := conn.ReadLastOffset()
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 50 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			out = append(out, m)
			if m.Offset == last-1 {
				break
			}
		}
		require.NoError(t, r.Close())
	}
	return out
}
