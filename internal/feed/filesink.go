package feed

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agentmemory/agentmemory/internal/signing"
)

// ManifestKey is the object of a file sink's bucket holding its signed manifest.
const ManifestKey = "manifest.json"

// Manifest lists a file sink's parts (issue 33): each part's object key (table=T/date=D/
// part-NNNNNN.jsonl.gz), the hex SHA-256 of its bytes, its row count and cursor range. Cursor
// is the last cursor the parts hold (the sink's acknowledged cursor) and NextPart the number
// the next part takes. A part is listed only once whole: the manifest is written after its
// parts, and a part not listed (a crash mid-batch) is replaced by the next delivery.
type Manifest struct {
	SpaceID   string    `json:"space_id"`
	Sink      string    `json:"sink"`
	Cursor    int64     `json:"cursor"`
	NextPart  int64     `json:"next_part"`
	Parts     []Part    `json:"parts"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Part is one part of a Manifest: Rows records with cursors FirstCursor..LastCursor (in
// order, of one table and one UTC date of change).
type Part struct {
	Key         string `json:"key"`
	Table       string `json:"table"`
	Date        string `json:"date"`
	SHA256      string `json:"sha256"`
	Rows        int    `json:"rows"`
	FirstCursor int64  `json:"first_cursor"`
	LastCursor  int64  `json:"last_cursor"`
}

// signedManifest is the manifest object: {"manifest": ..., "signature": ...}, verifiable with
// signing.Envelope and signing.Verify against GET /v1/signing-keys.
type signedManifest struct {
	Manifest  json.RawMessage   `json:"manifest"`
	Signature signing.Signature `json:"signature"`
}

// FileSink writes feed records as gzipped JSON-lines parts to Bucket (a directory through
// fileblob, or S3, GCS or Azure), with a manifest signed by Signer.
type FileSink struct {
	Bucket *blob.Bucket
	Signer *signing.Signer
	// BeforeManifest, when set, runs after the parts are written and before the manifest is
	// (tests crash a delivery there); an error ends the delivery with it.
	BeforeManifest func() error
}

// ReadManifest returns the sink's manifest as stored (the zero manifest, NextPart 1, when the
// bucket has none yet), after checking its signature against keys when keys is not nil.
func ReadManifest(ctx context.Context, b *blob.Bucket, keys []signing.PublicKey) (Manifest, error) {
	data, err := b.ReadAll(ctx, ManifestKey)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Manifest{NextPart: 1, Parts: []Part{}}, nil
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("feed: read manifest: %w", err)
	}
	name, doc, sig, err := signing.Envelope(data)
	if err != nil || name != "manifest" {
		return Manifest{}, fmt.Errorf("feed: manifest envelope: %v", err)
	}
	if keys != nil {
		if err := signing.Verify(doc, sig, keys); err != nil {
			return Manifest{}, fmt.Errorf("feed: manifest signature: %w", err)
		}
	}
	var m Manifest
	if err := json.Unmarshal(doc, &m); err != nil {
		return Manifest{}, fmt.Errorf("feed: decode manifest: %w", err)
	}
	return m, nil
}

// Deliver writes recs (the records after m.Cursor, in cursor order) as parts after those of m,
// one per run of records of the same table and date, then the manifest listing them; it
// returns the new manifest. Parts are written under the numbers m.NextPart onward, so a
// delivery that crashed before its manifest is redone under the same keys (a whole object
// replaces the stray one) and no half part is ever listed.
func (f FileSink) Deliver(ctx context.Context, m Manifest, recs []Record, now time.Time) (Manifest, error) {
	if len(recs) == 0 {
		return m, nil
	}
	if recs[0].Cursor != m.Cursor+1 {
		return m, fmt.Errorf("feed: file sink: records start at %d, the manifest is at %d", recs[0].Cursor, m.Cursor)
	}
	if err := f.removeStrays(ctx, m); err != nil {
		return m, err
	}
	next := m
	next.Parts = append([]Part{}, m.Parts...)
	for _, run := range runs(recs) {
		p, err := f.writePart(ctx, next.NextPart, run)
		if err != nil {
			return m, err
		}
		next.Parts = append(next.Parts, p)
		next.NextPart++
	}
	next.Cursor, next.UpdatedAt = recs[len(recs)-1].Cursor, now.UTC()
	if f.BeforeManifest != nil {
		if err := f.BeforeManifest(); err != nil {
			return m, err
		}
	}
	if err := f.writeManifest(ctx, next); err != nil {
		return m, err
	}
	return next, nil
}

// removeStrays deletes the part objects m does not list, so that after a delivery the
// bucket's parts are exactly the manifest's, whatever table or date a crashed delivery gave
// its numbers.
func (f FileSink) removeStrays(ctx context.Context, m Manifest) error {
	strays, err := Strays(ctx, f.Bucket, m)
	if err != nil {
		return err
	}
	for _, k := range strays {
		if err := f.Bucket.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("feed: remove stray part %s: %w", k, err)
		}
	}
	return nil
}

// runs splits recs into runs of consecutive records of one table and one UTC date.
func runs(recs []Record) [][]Record {
	var out [][]Record
	start := 0
	for i := 1; i <= len(recs); i++ {
		if i == len(recs) || recs[i].Table != recs[start].Table || day(recs[i]) != day(recs[start]) {
			out = append(out, recs[start:i])
			start = i
		}
	}
	return out
}

func day(r Record) string { return r.ChangedAt.UTC().Format(time.DateOnly) }

// PartKey is the object key of part n of table on date: table=T/date=D/part-NNNNNN.jsonl.gz.
func PartKey(table, date string, n int64) string {
	return fmt.Sprintf("table=%s/date=%s/part-%06d.jsonl.gz", table, date, n)
}

// writePart writes run as part n: gzipped JSON lines, one record each, hashed as written. The
// object appears only when its writer closes without error (blob's contract: fileblob renames
// a finished temporary file, object stores commit the upload), so a crash leaves no half part
// under the key.
func (f FileSink) writePart(ctx context.Context, n int64, run []Record) (Part, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, r := range run {
		if err := enc.Encode(r); err != nil {
			return Part{}, fmt.Errorf("feed: encode part: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return Part{}, fmt.Errorf("feed: compress part: %w", err)
	}
	p := Part{Key: PartKey(run[0].Table, day(run[0]), n), Table: run[0].Table, Date: day(run[0]), Rows: len(run),
		FirstCursor: run[0].Cursor, LastCursor: run[len(run)-1].Cursor}
	sum := sha256.Sum256(buf.Bytes())
	p.SHA256 = hex.EncodeToString(sum[:])
	w, err := f.Bucket.NewWriter(ctx, p.Key, &blob.WriterOptions{ContentType: "application/x-ndjson", ContentEncoding: "gzip"})
	if err != nil {
		return Part{}, fmt.Errorf("feed: open part %s: %w", p.Key, err)
	}
	if _, err := io.Copy(w, &buf); err != nil {
		_ = w.Close() // the copy's error is the one to report; a failed writer leaves no object
		return Part{}, fmt.Errorf("feed: write part %s: %w", p.Key, err)
	}
	if err := w.Close(); err != nil {
		return Part{}, fmt.Errorf("feed: close part %s: %w", p.Key, err)
	}
	return p, nil
}

// writeManifest signs m and replaces the manifest object with it (one whole object: the
// delivery's commit point).
func (f FileSink) writeManifest(ctx context.Context, m Manifest) error {
	doc, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("feed: encode manifest: %w", err)
	}
	sig, err := f.Signer.Sign(doc)
	if err != nil {
		return fmt.Errorf("feed: sign manifest: %w", err)
	}
	data, err := json.Marshal(signedManifest{Manifest: doc, Signature: sig})
	if err != nil {
		return fmt.Errorf("feed: encode manifest: %w", err)
	}
	if err := f.Bucket.WriteAll(ctx, ManifestKey, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("feed: write manifest: %w", err)
	}
	return nil
}

// ErrPartMismatch is returned by VerifyParts when a listed part is missing or its bytes, rows
// or cursors differ from the manifest.
var ErrPartMismatch = errors.New("feed: part does not match the manifest")

// VerifyParts reads every part m lists and checks its hash, row count and cursors (each part's
// records in order, the parts together FirstCursor 1 to m.Cursor without gap or repeat). It
// returns the records of all parts, in order.
func VerifyParts(ctx context.Context, b *blob.Bucket, m Manifest) ([]Record, error) {
	var all []Record
	for _, p := range m.Parts {
		data, err := b.ReadAll(ctx, p.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrPartMismatch, p.Key, err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != p.SHA256 {
			return nil, fmt.Errorf("%w: %s: hash", ErrPartMismatch, p.Key)
		}
		recs, err := decodePart(data)
		if err != nil || len(recs) != p.Rows || recs[0].Cursor != p.FirstCursor || recs[len(recs)-1].Cursor != p.LastCursor {
			return nil, fmt.Errorf("%w: %s: rows or cursors (%v)", ErrPartMismatch, p.Key, err)
		}
		all = append(all, recs...)
	}
	for i, r := range all {
		if r.Cursor != int64(i+1) {
			return nil, fmt.Errorf("%w: cursor %d at position %d", ErrPartMismatch, r.Cursor, i+1)
		}
	}
	if int64(len(all)) != m.Cursor {
		return nil, fmt.Errorf("%w: %d records, manifest cursor %d", ErrPartMismatch, len(all), m.Cursor)
	}
	return all, nil
}

func decodePart(data []byte) ([]Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out []Record
	dec := json.NewDecoder(zr)
	for {
		var r Record
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
}

// partNumber is n of a key .../part-NNNNNN.jsonl.gz (false for any other key).
func partNumber(key string) (int64, bool) {
	i := strings.LastIndex(key, "/part-")
	if i < 0 || !strings.HasSuffix(key, ".jsonl.gz") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(key[i+len("/part-"):], ".jsonl.gz"), 10, 64)
	return n, err == nil
}

// Strays lists the part objects of b that m does not list (left by a delivery that crashed
// before its manifest): the next delivery replaces those under its part numbers; the
// others a reader ignores, as the manifest is what names a sink's parts.
func Strays(ctx context.Context, b *blob.Bucket, m Manifest) ([]string, error) {
	listed := make(map[string]bool, len(m.Parts))
	for _, p := range m.Parts {
		listed[p.Key] = true
	}
	var out []string
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("feed: list parts: %w", err)
		}
		if _, ok := partNumber(obj.Key); ok && !listed[obj.Key] {
			out = append(out, obj.Key)
		}
	}
}
