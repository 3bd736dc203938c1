package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/uptrace/bun"
	"go.temporal.io/sdk/temporal"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	// Object stores a bucket sink may name (s3://, gs://, azblob://), registered with blob.
	_ "gocloud.dev/blob/s3blob"

	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// FeedActivities are the steps of SinkWorkflow (issue 33): deliver a batch of a space's export
// feed to one of its configured sinks. Dir is the root of directory sinks, Brokers the Kafka
// brokers of kafka sinks (none: a kafka sink fails with "kafka not configured"), Signer signs
// file manifests (nil: file sinks fail with "signing not configured"), Batch the most records
// per delivery (0: 1000).
type FeedActivities struct {
	DB      *bun.DB
	Keys    keystore.Store // opens the sealed rows the feed exports (notes, proposals, knowledge)
	Docs    spaces.Documents
	Dir     string
	Brokers []string
	Signer  *signing.Signer
	Batch   int
	Now     func() time.Time
}

// SinkRef names a configured sink of a space.
type SinkRef struct {
	SpaceID string
	Sink    string
}

// SinkResult is one delivery: how many records went out and the cursor the sink acknowledged;
// Removed says the sink is no longer configured (its workflow ends).
type SinkResult struct {
	Delivered int
	Cursor    int64
	Removed   bool
}

// DeliverSink delivers the next batch of ref's space's feed to the sink and records the
// outcome (export_sinks: cursor, last error). A failure is recorded with a generic text and
// returned, for the activity's retries (an unreachable sink keeps its workflow retrying, its
// lag growing).
func (a *FeedActivities) DeliverSink(ctx context.Context, ref SinkRef) (SinkResult, error) {
	cfg, ok, err := a.sinkConfig(ctx, ref)
	if err != nil {
		return SinkResult{}, err
	}
	if !ok {
		return SinkResult{Removed: true}, nil
	}
	n, cursor, err := a.deliver(ctx, ref, cfg)
	if err != nil {
		msg := "delivery failed"
		if errors.Is(err, errNotConfigured) {
			msg = err.Error()
		}
		if rerr := feed.RecordDelivery(ctx, a.DB, ref.SpaceID, ref.Sink, cfg.Kind, cursor, false, msg, a.now()); rerr != nil {
			return SinkResult{}, errors.Join(err, rerr)
		}
		return SinkResult{}, fmt.Errorf("export sink %s: %w", ref.Sink, err)
	}
	if err := feed.RecordDelivery(ctx, a.DB, ref.SpaceID, ref.Sink, cfg.Kind, cursor, n > 0, "", a.now()); err != nil {
		return SinkResult{}, err
	}
	return SinkResult{Delivered: n, Cursor: cursor}, nil
}

var errNotConfigured = errors.New("not configured on this server")

// sinkConfig is the sink of ref in its space's features (false: no longer configured).
func (a *FeedActivities) sinkConfig(ctx context.Context, ref SinkRef) (spaces.ExportSink, bool, error) {
	f, err := a.Docs.Features(ctx, ref.SpaceID)
	if err != nil {
		return spaces.ExportSink{}, false, fmt.Errorf("export sink: features: %w", err)
	}
	for _, s := range f.Export.Sinks {
		if s.Name == ref.Sink {
			return s, true, nil
		}
	}
	return spaces.ExportSink{}, false, nil
}

// deliver runs one delivery of cfg, opening its bucket or Kafka writer for it.
func (a *FeedActivities) deliver(ctx context.Context, ref SinkRef, cfg spaces.ExportSink) (int, int64, error) {
	limit := a.Batch
	if limit <= 0 {
		limit = 1000
	}
	if cfg.Kind == feed.KindKafka {
		if len(a.Brokers) == 0 {
			return 0, 0, fmt.Errorf("kafka %w", errNotConfigured)
		}
		k := feed.NewKafkaSink(a.Brokers, cfg.Topics())
		defer func() { _ = k.Close() }() // WriteMessages returned: nothing is buffered
		return feed.RunKafka(ctx, a.DB, a.Keys, ref.SpaceID, ref.Sink, k, limit, a.now())
	}
	if a.Signer == nil {
		return 0, 0, fmt.Errorf("signing %w", errNotConfigured)
	}
	b, err := a.openBucket(ctx, ref, cfg)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = b.Close() }() // every write was closed (committed) or abandoned already
	return feed.RunFile(ctx, a.DB, a.Keys, ref.SpaceID, feed.FileSink{Bucket: b, Signer: a.Signer}, limit, a.now())
}

// openBucket opens a directory sink's directory (Dir/space/name, created) or a bucket
// sink's URL.
func (a *FeedActivities) openBucket(ctx context.Context, ref SinkRef, cfg spaces.ExportSink) (*blob.Bucket, error) {
	if cfg.Kind == feed.KindBucket {
		b, err := blob.OpenBucket(ctx, cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("open bucket: %w", err)
		}
		return b, nil
	}
	dir := filepath.Join(a.Dir, ref.SpaceID, ref.Sink)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, temporal.NewApplicationErrorWithCause("export directory", "export_dir", err)
	}
	// Temporary files beside the parts: the final rename stays on one file system.
	return fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true})
}

// ConfiguredSinks lists every configured sink of every space (the worker starts a
// SinkWorkflow for each).
func (a *FeedActivities) ConfiguredSinks(ctx context.Context) ([]SinkRef, error) {
	var ids []string
	if err := a.DB.NewSelect().Model((*models.Document)(nil)).Column("space_id").
		Where("name = 'features' AND body LIKE ?", `%"sinks"%`).Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("export sinks: %w", err)
	}
	var out []SinkRef
	for _, id := range ids {
		f, err := a.Docs.Features(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("export sinks: features: %w", err)
		}
		for _, s := range f.Export.Sinks {
			out = append(out, SinkRef{SpaceID: id, Sink: s.Name})
		}
	}
	return out, nil
}

func (a *FeedActivities) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}
