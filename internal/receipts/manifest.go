package receipts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/uptrace/bun"
)

// Manifest kinds: what a manifest's items are.
const (
	ManifestBlock  = "block"  // the note versions a prompt block delivered (AM-4)
	ManifestChunks = "chunks" // the knowledge chunks a retrieval returned
)

// ManifestDetail is the detail key of a receipt that names its objects through a manifest:
// its value is the manifest's hash, and the receipt's object_ids are empty (issue 32).
const ManifestDetail = "manifest"

// ManifestItem is one object a manifest names: an id and, for a note, its version (each note
// id is one immutable version; the version is there for the reader). Never content.
type ManifestItem struct {
	ID      string `json:"id"`
	Version int    `json:"version,omitempty"`
}

// Manifest is what a read delivered, stored once per space and distinct content (issue 32):
// a block is a deterministic function of the note versions it holds, its view, tags and
// token budget, so every read of the same block names one manifest by its hash instead of
// carrying every note id in its receipt. It holds ids, versions and request parameters
// only, never a value (erasure.AllowedTables). Hash is the hex SHA-256 of Body, the manifest's
// JSON encoding (the struct's field order; items in delivered order); build it with
// NewManifest and treat it as immutable (blocks share it across reads).
type Manifest struct {
	Hash   string         `json:"hash"`
	Kind   string         `json:"kind"`
	View   string         `json:"view,omitempty"`
	Tags   []string       `json:"tags,omitempty"`
	Budget int            `json:"budget,omitempty"` // the request's max_tokens
	Items  []ManifestItem `json:"items"`

	body []byte
}

// manifestDoc is what a manifest's hash covers, in this order.
type manifestDoc struct {
	V      int            `json:"v"`
	Kind   string         `json:"kind"`
	View   string         `json:"view"`
	Tags   []string       `json:"tags"`
	Budget int            `json:"budget"`
	Items  []ManifestItem `json:"items"`
}

// NewManifest builds the manifest of kind over items (in delivered order) for a request of
// view, tags and budget, with its body and hash.
func NewManifest(kind, view string, tags []string, budget int, items []ManifestItem) *Manifest {
	if tags == nil {
		tags = []string{}
	}
	if items == nil {
		items = []ManifestItem{}
	}
	body, err := json.Marshal(manifestDoc{V: 1, Kind: kind, View: view, Tags: tags, Budget: budget, Items: items})
	if err != nil {
		panic(fmt.Sprintf("receipts: encode manifest: %v", err)) // strings and ints: never
	}
	s := sha256.Sum256(body)
	return &Manifest{Hash: hex.EncodeToString(s[:]), Kind: kind, View: view, Tags: slices.Clone(tags), Budget: budget,
		Items: slices.Clone(items), body: body}
}

// IDs returns the ids the manifest names, in its order.
func (m *Manifest) IDs() []string {
	out := make([]string, len(m.Items))
	for i, it := range m.Items {
		out[i] = it.ID
	}
	return out
}

// manifestRow is a stored manifest (table receipt_manifests).
type manifestRow struct {
	bun.BaseModel `bun:"table:receipt_manifests"`

	SpaceID string `bun:"space_id,pk"`
	Hash    string `bun:"hash,pk"`
	Kind    string `bun:"kind"`
	Body    string `bun:"body"`
}

// storedManifests remembers, per database, the manifests this process stored (committed):
// a block read whose manifest is known writes nothing more than its receipt. Manifests are
// never deleted (receipts, append-only, name them), so an entry never goes stale. It is
// emptied for a database when it reaches maxKnownManifests entries.
var storedManifests = struct {
	sync.Mutex
	by map[*bun.DB]map[string]bool
}{by: map[*bun.DB]map[string]bool{}}

// maxKnownManifests bounds storedManifests per database.
const maxKnownManifests = 100000

// knownManifest reports whether this process stored the manifest of space and hash in d.
func knownManifest(d *bun.DB, spaceID, hash string) bool {
	storedManifests.Lock()
	defer storedManifests.Unlock()
	return storedManifests.by[d][spaceID+"/"+hash]
}

// rememberManifest records that the manifest of space and hash is stored in d.
func rememberManifest(d *bun.DB, spaceID, hash string) {
	storedManifests.Lock()
	defer storedManifests.Unlock()
	m := storedManifests.by[d]
	if m == nil || len(m) >= maxKnownManifests {
		m = map[string]bool{}
		storedManifests.by[d] = m
	}
	m[spaceID+"/"+hash] = true
}

// storeManifest makes m a stored manifest of the space, durably, before a receipt naming it
// is queued: an insert that keeps an existing row (same hash, same content), in a commit of
// its own (synchronous on PostgreSQL), skipped when this process stored it before. A manifest
// stored for a receipt that then fails is harmless: it names ids only.
func storeManifest(ctx context.Context, d *bun.DB, spaceID string, m *Manifest) error {
	if knownManifest(d, spaceID, m.Hash) {
		return nil
	}
	if err := insertManifest(ctx, d, spaceID, m); err != nil {
		return err
	}
	rememberManifest(d, spaceID, m.Hash)
	return nil
}

// insertManifest inserts m as a manifest of the space through idb unless it is stored.
func insertManifest(ctx context.Context, idb bun.IDB, spaceID string, m *Manifest) error {
	row := &manifestRow{SpaceID: spaceID, Hash: m.Hash, Kind: m.Kind, Body: string(m.body)}
	if _, err := idb.NewInsert().Model(row).On("CONFLICT (space_id, hash) DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("receipts: store manifest: %w", err)
	}
	return nil
}

// withManifest is e naming its objects through its manifest, when it has one: the hash in
// the detail, no object ids.
func withManifest(e Entry) Entry {
	if e.Manifest == nil {
		return e
	}
	detail := make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		detail[k] = v
	}
	detail[ManifestDetail] = e.Manifest.Hash
	e.Detail, e.ObjectIDs = detail, []string{}
	return e
}

// ManifestOf returns the hash of the manifest r names (detail "manifest"), or "".
func ManifestOf(r Receipt) string {
	h, _ := r.Detail[ManifestDetail].(string)
	return h
}

// Manifests returns the space's stored manifests of hashes, by hash, each checked against
// its hash: a stored body that does not give its hash is an error (the manifest was changed).
// A hash with no stored manifest is absent from the map.
func Manifests(ctx context.Context, idb bun.IDB, spaceID string, hashes []string) (map[string]*Manifest, error) {
	out := map[string]*Manifest{}
	hashes = slices.Compact(slices.Sorted(slices.Values(hashes)))
	for len(hashes) > 0 {
		n := min(len(hashes), 500)
		var rows []manifestRow
		if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND hash IN (?)", spaceID, bun.In(hashes[:n])).Scan(ctx); err != nil {
			return nil, fmt.Errorf("receipts: manifests: %w", err)
		}
		for _, row := range rows {
			m, err := decodeManifest(row)
			if err != nil {
				return nil, err
			}
			out[m.Hash] = m
		}
		hashes = hashes[n:]
	}
	return out, nil
}

// decodeManifest decodes a stored manifest and checks its body against its hash.
func decodeManifest(row manifestRow) (*Manifest, error) {
	s := sha256.Sum256([]byte(row.Body))
	if hex.EncodeToString(s[:]) != row.Hash {
		return nil, fmt.Errorf("receipts: manifest %s: its content does not give its hash", row.Hash)
	}
	var doc manifestDoc
	if err := json.Unmarshal([]byte(row.Body), &doc); err != nil {
		return nil, fmt.Errorf("receipts: manifest %s: %w", row.Hash, err)
	}
	return &Manifest{Hash: row.Hash, Kind: doc.Kind, View: doc.View, Tags: doc.Tags, Budget: doc.Budget,
		Items: doc.Items, body: []byte(row.Body)}, nil
}

// resolveManifests sets the Manifest of each of list's receipts that names one, from the
// space's stored manifests as stored (storedManifestsOf): a changed manifest is shown as it
// is, and Verify (or a Walker over the listing) reports it.
func resolveManifests(ctx context.Context, idb bun.IDB, spaceID string, list []Receipt) error {
	return storedManifestsOf(ctx, idb, spaceID, list)
}

// ResolveManifest sets r's Manifest from the space's stored manifests when r names one.
func ResolveManifest(ctx context.Context, idb bun.IDB, r *Receipt) error {
	list := []Receipt{*r}
	if err := resolveManifests(ctx, idb, r.SpaceID, list); err != nil {
		return err
	}
	r.Manifest = list[0].Manifest
	return nil
}

// ManifestsNaming returns the hashes of the space's manifests that name any of ids (at most
// 10,000 candidates), for a search of the receipts that touched them (a data subject's
// export). A LIKE finds the candidates ('_' in ids is a wildcard there: it can only widen
// the match), each is then checked exactly.
func ManifestsNaming(ctx context.Context, idb bun.IDB, spaceID string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []manifestRow
	q := idb.NewSelect().Model(&rows).Where("space_id = ?", spaceID)
	q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		for _, id := range ids {
			b, _ := json.Marshal(id) // a string always encodes
			q = q.WhereOr("body LIKE ?", `%{"id":`+string(b)+`%`)
		}
		return q
	})
	if err := q.Limit(10000).Scan(ctx); err != nil {
		return nil, fmt.Errorf("receipts: manifests naming: %w", err)
	}
	var hashes []string
	for _, row := range rows {
		m, err := decodeManifest(row)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(m.Items, func(it ManifestItem) bool { return slices.Contains(ids, it.ID) }) {
			hashes = append(hashes, m.Hash)
		}
	}
	return hashes, nil
}

// storedManifestsOf sets the Manifest of each of list's receipts that names one to the stored
// manifest's content as stored, unchecked (for Verify, whose Walker checks it against the
// hash); a receipt whose manifest is not stored keeps none.
func storedManifestsOf(ctx context.Context, idb bun.IDB, spaceID string, list []Receipt) error {
	var hashes []string
	for _, r := range list {
		if h := ManifestOf(r); h != "" {
			hashes = append(hashes, h)
		}
	}
	hashes = slices.Compact(slices.Sorted(slices.Values(hashes)))
	stored := map[string]*Manifest{}
	for len(hashes) > 0 {
		n := min(len(hashes), 500)
		var rows []manifestRow
		if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND hash IN (?)", spaceID, bun.In(hashes[:n])).Scan(ctx); err != nil {
			return fmt.Errorf("receipts: manifests: %w", err)
		}
		for _, row := range rows {
			var doc manifestDoc
			if err := json.Unmarshal([]byte(row.Body), &doc); err != nil {
				doc = manifestDoc{Kind: "unreadable"} // gives another hash: the walk fails it
			}
			stored[row.Hash] = &Manifest{Hash: row.Hash, Kind: doc.Kind, View: doc.View, Tags: doc.Tags, Budget: doc.Budget, Items: doc.Items}
		}
		hashes = hashes[n:]
	}
	for i := range list {
		list[i].Manifest = stored[ManifestOf(list[i])]
	}
	return nil
}
