package feed_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/uptrace/bun"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
)

func newSigner(t *testing.T) *signing.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := signing.NewSigner(priv, time.Time{})
	require.NoError(t, err)
	return s
}

func openDir(t *testing.T) *blob.Bucket {
	t.Helper()
	b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{CreateDir: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() }) // a test's bucket: nothing buffered to lose
	return b
}

// drainFile delivers until nothing is left, in batches of limit.
func drainFile(t *testing.T, d *bun.DB, f feed.FileSink, limit int) {
	t.Helper()
	for {
		n, _, err := feed.RunFile(context.Background(), d, nil, "spc_a", f, limit, time.Now())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
}

var errCrash = errors.New("crash")

// TestFileSinkResumesAfterACrashWithoutHalfOrDuplicateParts: a delivery that dies after
// writing its parts but before its manifest lists nothing; a half-written object left under
// the next part's key (as a store without atomic uploads could leave) is not listed either;
// the next deliveries replace them, and the manifest's parts hold every record once, in
// cursor order, with matching hashes, counts and ranges, under a verifying signature.
func TestFileSinkResumesAfterACrashWithoutHalfOrDuplicateParts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		seedRows(t, d, "spc_a")
		b, signer := openDir(t), newSigner(t)
		crashing := feed.FileSink{Bucket: b, Signer: signer, BeforeManifest: func() error { return errCrash }}
		_, _, err := feed.RunFile(ctx, d, nil, "spc_a", crashing, 4, time.Now())
		require.ErrorIs(t, err, errCrash)
		m, err := feed.ReadManifest(ctx, b, signer.Keys())
		require.NoError(t, err)
		require.Empty(t, m.Parts, "a crashed delivery lists no part")
		strays, err := feed.Strays(ctx, b, m)
		require.NoError(t, err)
		require.NotEmpty(t, strays, "its parts were written, unlisted")
		require.NoError(t, b.WriteAll(ctx, feed.PartKey("keys", "2026-12-03", 1), []byte("\x1f\x8b half"), nil))

		f := feed.FileSink{Bucket: b, Signer: signer}
		drainFile(t, d, f, 4)
		_, err = d.NewDelete().Model((*models.Note)(nil)).Where("id = 'note_1'").Exec(ctx)
		require.NoError(t, err)
		drainFile(t, d, f, 4)

		m, err = feed.ReadManifest(ctx, b, signer.Keys())
		require.NoError(t, err)
		got, err := feed.VerifyParts(ctx, b, m)
		require.NoError(t, err)
		want := readAll(t, d, "spc_a", 0, 100)
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, [3]any{want[i].Cursor, want[i].Table, want[i].Key}, [3]any{got[i].Cursor, got[i].Table, got[i].Key})
		}
		require.Equal(t, feed.Record{Cursor: want[len(want)-1].Cursor, Table: "notes", Key: "note_1", Op: feed.OpDelete,
			ChangedAt: got[len(got)-1].ChangedAt}, got[len(got)-1], "the delete reached the files as a tombstone")
		strays, err = feed.Strays(ctx, b, m)
		require.NoError(t, err)
		require.Empty(t, strays, "the bucket's parts are the manifest's")
		require.Equal(t, int64(len(m.Parts)+1), m.NextPart)

		other := newSigner(t)
		_, err = feed.ReadManifest(ctx, b, other.Keys())
		require.ErrorIs(t, err, signing.ErrUnknownKey, "the manifest is signed")
	})
}

// topics the Kafka test seeds: one per feed table.
func feedTopics() []string {
	var out []string
	for _, n := range feed.TableNames() {
		out = append(out, "agentmemory.export."+n)
	}
	return out
}

// consume reads every message of topic (all partitions, from the start).
func consume(t *testing.T, addr, topic string, partitions int) []kafka.Message {
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
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MaxWait: 50 * time.Millisecond})
		for i := int64(0); i < last; i++ {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			out = append(out, m)
		}
		require.NoError(t, r.Close())
	}
	return out
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestKafkaSinkDeliversEveryRecordOncePerKeyInOrder: over TCP to kfake, a topic per table,
// keyed by space and primary key: every record of the feed arrives once, a key's records in
// cursor order, a delete as a null-valued tombstone.
func TestKafkaSinkDeliversEveryRecordOncePerKeyInOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		c, err := kfake.NewCluster(kfake.SeedTopics(3, feedTopics()...))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		addr := c.ListenAddrs()[0]
		k := feed.NewKafkaSink([]string{addr}, "agentmemory.export")
		t.Cleanup(func() { _ = k.Close() })

		seedRows(t, d, "spc_a")
		for i := range 3 {
			_, err := d.NewUpdate().Model((*models.AgentState)(nil)).Set("version = ?", i+2).Where("id = 'st_1'").Exec(ctx)
			require.NoError(t, err)
		}
		_, err = d.NewDelete().Model((*models.Note)(nil)).Where("id = 'note_1'").Exec(ctx)
		require.NoError(t, err)
		for {
			n, _, err := feed.RunKafka(ctx, d, nil, "spc_a", "stream", k, 3, time.Now())
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
		want := readAll(t, d, "spc_a", 0, 100)
		cursor, err := feed.SinkCursor(ctx, d, "spc_a", "stream")
		require.NoError(t, err)
		require.Equal(t, want[len(want)-1].Cursor, cursor)

		got := map[int64]kafka.Message{}
		perKey := map[string][]int64{}
		for _, topic := range feedTopics() {
			for _, m := range consume(t, addr, topic, 3) {
				cur, err := strconv.ParseInt(header(m, feed.HeaderCursor), 10, 64)
				require.NoError(t, err)
				_, dup := got[cur]
				require.False(t, dup, "cursor %d delivered twice", cur)
				got[cur] = m
				perKey[string(m.Key)] = append(perKey[string(m.Key)], cur)
			}
		}
		require.Len(t, got, len(want))
		for _, r := range want {
			m := got[r.Cursor]
			require.Equal(t, "agentmemory.export."+r.Table, m.Topic)
			require.Equal(t, "spc_a/"+r.Key, string(m.Key))
			require.Equal(t, r.Op, header(m, feed.HeaderOp))
			if r.Op == feed.OpDelete {
				require.Nil(t, m.Value, "a tombstone has a null value")
			}
		}
		for key, curs := range perKey {
			require.IsIncreasing(t, curs, "key %s in order", key)
		}
		require.Len(t, perKey["spc_a/st_1"], 4, "every version of the state")
	})
}

// TestLagCollector: the lag gauge is the largest unacknowledged count over the sinks, without
// a space label; sinks are counted ok or failing.
func TestLagCollector(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		seedRows(t, d, "spc_a")
		require.NoError(t, feed.RecordDelivery(ctx, d, "spc_a", "lake", feed.KindDirectory, 3, true, "", time.Now()))
		require.NoError(t, feed.RecordDelivery(ctx, d, "spc_a", "stream", feed.KindKafka, 10, false, "delivery failed", time.Now()))
		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(feed.LagCollector{DB: d}))
		got, err := testutil.GatherAndCount(reg)
		require.NoError(t, err)
		require.Equal(t, 3, got)
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP agentmemory_export_sink_lag_records Largest number of committed export feed records a sink has not acknowledged.
# TYPE agentmemory_export_sink_lag_records gauge
agentmemory_export_sink_lag_records 10
# HELP agentmemory_export_sinks Export sinks by the outcome of their last delivery.
# TYPE agentmemory_export_sinks gauge
agentmemory_export_sinks{state="failing"} 1
agentmemory_export_sinks{state="ok"} 1
`)))
	})
}
