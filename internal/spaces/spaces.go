// Package spaces creates spaces (tenants) and keeps their documents: "features" (which
// features are on, WM-1, AM-3) and "object-types" (the type registry, WM-2). A document is
// written by a direct PUT only where the space allows it (Documents.DirectPut); otherwise
// through a change request (internal/changes), whose apply is the same Documents.Write.
package spaces

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/netguard"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Create makes a space named name and its first person key holding every role, with direct
// PUT of its documents off (CreateWith with the zero CreateOptions). It returns the space id
// and that key (shown once).
func Create(ctx context.Context, db *bun.DB, name string, now time.Time) (spaceID, adminKey string, err error) {
	return CreateWith(ctx, db, name, now, CreateOptions{})
}

// CreateOptions are a new space's choices. DirectPut lets its documents be written by a
// direct PUT (a single operator's or a test's space); without it they change only through
// change requests approved by a second person holding role security (issue 15). The features
// document's documents.direct_put overrides it once written.
type CreateOptions struct {
	DirectPut bool
	// Actor is who creates the space, named as the actor of its space.create and key.create
	// receipts: "" (or "cli") for `agentmemory space create`, an operator key's id for
	// POST /v1/spaces.
	Actor string
}

// CreateWith is Create with opts. A name that is blank or over 120 characters is
// fault.Invalid (member name).
func CreateWith(ctx context.Context, db *bun.DB, name string, now time.Time, opts CreateOptions) (spaceID, adminKey string, err error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 120 {
		return "", "", fault.New(fault.Invalid, "invalid_member", "a space name is 1-120 characters").With("member", "name")
	}
	if opts.Actor == "" {
		opts.Actor = "cli"
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		sp := &models.Space{ID: auth.NewID("sp"), Name: name, DirectPut: opts.DirectPut, CreatedAt: now.UTC()}
		if _, err := tx.NewInsert().Model(sp).Exec(ctx); err != nil {
			return fmt.Errorf("spaces: insert: %w", err)
		}
		if _, err := receipts.Append(ctx, tx, sp.ID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "space.create", ActorKey: opts.Actor, ObjectIDs: []string{sp.ID},
			Detail: map[string]any{"direct_put": opts.DirectPut},
		}, now); err != nil {
			return err
		}
		key, err := mintAdmin(ctx, tx, sp.ID, opts.Actor, now)
		spaceID, adminKey = sp.ID, key
		return err
	})
	return spaceID, adminKey, err
}

// AdminKey mints a new person key holding every role for an existing space (recovery from the
// command line, which only an operator with access to the database can run). An unknown space
// is fault.NotFound.
func AdminKey(ctx context.Context, db *bun.DB, spaceID string, now time.Time) (string, error) {
	var key string
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		exists, err := tx.NewSelect().Model((*models.Space)(nil)).Where("id = ?", spaceID).Exists(ctx)
		if err != nil {
			return fmt.Errorf("spaces: load: %w", err)
		}
		if !exists {
			return fault.New(fault.NotFound, "space_not_found", "no space with that id")
		}
		key, err = mintAdmin(ctx, tx, spaceID, "cli", now)
		return err
	})
	return key, err
}

// mintAdmin mints a person key with every role, with its receipt naming actor, inside tx.
func mintAdmin(ctx context.Context, tx bun.Tx, spaceID, actor string, now time.Time) (string, error) {
	keyID, key, err := auth.Mint(ctx, tx, spaceID, actor, auth.KeySpec{Kind: auth.KindPerson, Name: "admin", Roles: auth.AllRoles}, now)
	if err != nil {
		return "", err
	}
	if err := BumpRevision(ctx, tx, spaceID, RevisionConfig); err != nil {
		return "", err
	}
	_, err = receipts.Append(ctx, tx, spaceID, receipts.Entry{
		Kind: receipts.KindAdmin, Action: "key.create", ActorKey: actor, ObjectIDs: []string{keyID},
		Detail: map[string]any{"kind": auth.KindPerson},
	}, now)
	return key, err
}

// Documents reads and writes a space's documents.
type Documents struct {
	DB bun.IDB
	// AllowPrivateWebhooks lets Put accept an agent_memory.webhook_url whose host is a
	// loopback, private or link-local address (AGENTMEMORY_WEBHOOK_ALLOW_PRIVATE; tests with
	// a local receiver). Off, such a URL is refused (SSRF).
	AllowPrivateWebhooks bool
}

// Features returns the space's features document, or all features off when never written.
func (d Documents) Features(ctx context.Context, spaceID string) (Features, error) {
	raw, err := d.raw(ctx, spaceID, DocFeatures)
	if err != nil || raw == "" {
		return Features{}, err
	}
	v, err := parseCached(DocFeatures, raw, func(b []byte) (any, error) { return ParseFeatures(b) })
	if err != nil {
		return Features{}, err
	}
	return v.(Features), nil
}

// ObjectTypes returns the space's type registry, empty when never written. The result is
// shared with other callers: read it, never modify it.
func (d Documents) ObjectTypes(ctx context.Context, spaceID string) (ObjectTypes, error) {
	raw, err := d.raw(ctx, spaceID, DocObjectTypes)
	if err != nil || raw == "" {
		return ObjectTypes{}, err
	}
	v, err := parseCached(DocObjectTypes, raw, func(b []byte) (any, error) { return ParseObjectTypes(b) })
	if err != nil {
		return ObjectTypes{}, err
	}
	return v.(ObjectTypes), nil
}

// Both returns the features document and the type registry in one read (the working-memory
// write path needs both on every request); defaults as Features and ObjectTypes give them.
func (d Documents) Both(ctx context.Context, spaceID string) (Features, ObjectTypes, error) {
	rows, err := d.both(ctx, spaceID)
	if err != nil {
		return Features{}, ObjectTypes{}, fmt.Errorf("spaces: load documents: %w", err)
	}
	return parseDocuments(rows)
}

// both reads the features and object-types documents of spaceID (a prepared statement on a
// pool, bun's query in a transaction).
func (d Documents) both(ctx context.Context, spaceID string) ([]models.Document, error) {
	if pre, ok := ctx.Value(prefetchKey{}).(prefetched); ok && pre.spaceID == spaceID {
		return pre.docs, nil
	}
	var out []models.Document
	pool, ok := d.DB.(*bun.DB)
	if !ok {
		err := d.DB.NewSelect().Model(&out).Column("name", "body").
			Where("space_id = ? AND name IN (?)", spaceID, bun.In([]string{DocFeatures, DocObjectTypes})).Scan(ctx)
		return out, err
	}
	rows, err := db.QueryRows(ctx, pool, `SELECT name, body FROM documents WHERE space_id = ? AND name IN (?, ?)`, spaceID, DocFeatures, DocObjectTypes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r models.Document
		if err := rows.Scan(&r.Name, &r.Body); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// prefetchKey is the context key of a Snapshot's documents (Snapshot.WithDocuments).
type prefetchKey struct{}

type prefetched struct {
	spaceID string
	docs    []models.Document
}

// keyAndDocuments reads a key row by hash, its space's configuration revision and, in the
// same statement, its space's features, object-types and views documents (one row per
// document; one row with empty names when none exists).
const keyAndDocuments = `SELECT k.id, k.space_id, k.hash, k.kind, k.agent, k.vendor, k.name, k.scopes, k.roles,
 CASE WHEN k.revoked_at IS NULL THEN 0 ELSE 1 END, COALESCE(r.revision, 0), COALESCE(d.name, ''), COALESCE(d.body, '')
 FROM api_keys k LEFT JOIN space_revisions r ON r.space_id = k.space_id AND r.name = 'config'
 LEFT JOIN documents d ON d.space_id = k.space_id AND d.name IN (?, ?, ?)
 WHERE k.hash = ?`

// AuthenticateWithDocuments is auth.Authenticate that also reads, in the same statement
// (one round trip instead of two), the features and object-types documents of the key's
// space and its configuration revision, and returns them as the request's Snapshot (its
// WithDocuments lets the rest of the request read them). For requests that only read
// documents: a request that writes a document must not use it.
func AuthenticateWithDocuments(ctx context.Context, d *bun.DB, key string) (auth.Principal, Snapshot, error) {
	hash, err := auth.CheckKeyFormat(key)
	if err != nil {
		return auth.Principal{}, Snapshot{}, err
	}
	p, docs, rev, err := keyAndDocumentsByHash(ctx, d, hash)
	if err != nil {
		return p, Snapshot{}, err
	}
	return p, newSnapshot(p.SpaceID, hash, rev, docs), nil
}

// keyAndDocumentsByHash runs keyAndDocuments: the Principal of the key of hash (auth.FromRow's
// errors), its space's documents and configuration revision.
func keyAndDocumentsByHash(ctx context.Context, d *bun.DB, hash string) (auth.Principal, []models.Document, int64, error) {
	rows, err := db.QueryRows(ctx, d, keyAndDocuments, DocFeatures, DocObjectTypes, DocViews, hash)
	if err != nil {
		return auth.Principal{}, nil, 0, fmt.Errorf("auth: load key: %w", err)
	}
	defer rows.Close()
	var row models.APIKey
	var docs []models.Document
	var rev int64
	found := false
	for rows.Next() {
		var scopes, roles, name, body string
		var revoked int
		if err := rows.Scan(&row.ID, &row.SpaceID, &row.Hash, &row.Kind, &row.Agent, &row.Vendor, &row.Name,
			&scopes, &roles, &revoked, &rev, &name, &body); err != nil {
			return auth.Principal{}, nil, 0, fmt.Errorf("auth: load key: %w", err)
		}
		if !found {
			found = true
			if err := json.Unmarshal([]byte(scopes), &row.Scopes); err != nil {
				return auth.Principal{}, nil, 0, fmt.Errorf("auth: key scopes: %w", err)
			}
			if err := json.Unmarshal([]byte(roles), &row.Roles); err != nil {
				return auth.Principal{}, nil, 0, fmt.Errorf("auth: key roles: %w", err)
			}
			if revoked != 0 {
				now := time.Time{}
				row.RevokedAt = &now
			}
		}
		if name != "" {
			docs = append(docs, models.Document{SpaceID: row.SpaceID, Name: name, Body: body})
		}
	}
	if err := rows.Err(); err != nil {
		return auth.Principal{}, nil, 0, fmt.Errorf("auth: load key: %w", err)
	}
	if !found {
		return auth.Principal{}, nil, 0, auth.InvalidKey()
	}
	p, err := auth.FromRow(row, hash)
	if err != nil {
		return p, nil, 0, err
	}
	return p, docs, rev, nil
}

// parsedDocs caches parsed documents by their exact stored text: the same text always parses
// to the same value, so the cache never serves a stale document (every request still reads
// the current text from the store). It is cleared when it reaches maxParsedDocs entries.
var (
	parsedMu   sync.Mutex
	parsedDocs = map[parsedKey]any{}
)

const maxParsedDocs = 512

// parsedKey names a parsed document by its name and exact stored text.
type parsedKey struct{ name, text string }

func parseCached(name, text string, parse func([]byte) (any, error)) (any, error) {
	k := parsedKey{name, text}
	parsedMu.Lock()
	v, ok := parsedDocs[k]
	parsedMu.Unlock()
	if ok {
		return v, nil
	}
	v, err := parse([]byte(text))
	if err != nil {
		return nil, err
	}
	parsedMu.Lock()
	if len(parsedDocs) >= maxParsedDocs {
		clear(parsedDocs)
	}
	parsedDocs[k] = v
	parsedMu.Unlock()
	return v, nil
}

// Get returns the document as stored JSON text (a default when never written; the default
// features state documents.direct_put as the space was created) and its version (0 when never
// written). An unknown name is fault.NotFound.
func (d Documents) Get(ctx context.Context, spaceID, name string) (string, int64, error) {
	return d.get(ctx, d.DB, spaceID, name)
}

func (d Documents) get(ctx context.Context, db bun.IDB, spaceID, name string) (string, int64, error) {
	var row models.Document
	err := db.NewSelect().Model(&row).Where("space_id = ? AND name = ?", spaceID, name).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		switch name {
		case DocFeatures:
			direct, err := createdDirectPut(ctx, db, spaceID)
			if err != nil {
				return "", 0, err
			}
			return marshal(Features{Documents: DocumentSettings{DirectPut: &direct}}), 0, nil
		case DocObjectTypes:
			return `{"types":[]}`, 0, nil
		case DocViews:
			return `{"views":[]}`, 0, nil
		case DocBoardGrants:
			return `{"grants":[]}`, 0, nil
		case DocBridges:
			return `{"bridges":[]}`, 0, nil
		}
		return "", 0, errNoDocument()
	case err != nil:
		return "", 0, fmt.Errorf("spaces: load document: %w", err)
	}
	return row.Body, row.Version, nil
}

func errNoDocument() error {
	return fault.New(fault.NotFound, "document_not_found", "the documents are features, object-types, views, board-grants and bridges")
}

// DirectPut reports whether the space's documents may be written by a direct PUT: the
// features document's documents.direct_put when it states it, else the choice made when the
// space was created (CreateOptions.DirectPut; true for spaces created before change requests).
func (d Documents) DirectPut(ctx context.Context, spaceID string) (bool, error) {
	return directPut(ctx, d.DB, spaceID)
}

func directPut(ctx context.Context, db bun.IDB, spaceID string) (bool, error) {
	var row models.Document
	err := db.NewSelect().Model(&row).Column("body").Where("space_id = ? AND name = ?", spaceID, DocFeatures).Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("spaces: load document: %w", err)
	}
	if err == nil {
		v, err := parseCached(DocFeatures, row.Body, func(b []byte) (any, error) { return ParseFeatures(b) })
		if err != nil {
			return false, err
		}
		if dp := v.(Features).Documents.DirectPut; dp != nil {
			return *dp, nil
		}
	}
	return createdDirectPut(ctx, db, spaceID)
}

// createdDirectPut is the space's creation choice (spaces.direct_put).
func createdDirectPut(ctx context.Context, db bun.IDB, spaceID string) (bool, error) {
	var sp models.Space
	if err := db.NewSelect().Model(&sp).Column("direct_put").Where("id = ?", spaceID).Scan(ctx); err != nil {
		return false, fmt.Errorf("spaces: load space: %w", err)
	}
	return sp.DirectPut, nil
}

func (d Documents) raw(ctx context.Context, spaceID, name string) (string, error) {
	if pre, ok := ctx.Value(prefetchKey{}).(prefetched); ok && pre.spaceID == spaceID && (name == DocFeatures || name == DocObjectTypes || name == DocViews) {
		for _, doc := range pre.docs {
			if doc.Name == name {
				return doc.Body, nil
			}
		}
		return "", nil // read with the key: not written
	}
	var row models.Document
	var err error
	if pool, ok := d.DB.(*bun.DB); ok {
		err = db.QueryOne(ctx, pool, `SELECT body FROM documents WHERE space_id = ? AND name = ?`, []any{&row.Body}, spaceID, name)
	} else {
		err = d.DB.NewSelect().Model(&row).Column("body").Where("space_id = ? AND name = ?", spaceID, name).Scan(ctx)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("spaces: load document: %w", err)
	}
	return row.Body, nil
}

// MayPut reports whether p may write the document name, before its body is read: features
// needs role security, object-types admin or integration, views security or admin,
// board-grants admin, bridges security (fault.Forbidden); another name is
// fault.NotFound "document_not_found".
func (d Documents) MayPut(p auth.Principal, name string) error {
	switch name {
	case DocFeatures:
		return p.RequireRole(auth.RoleSecurity)
	case DocObjectTypes:
		return p.RequireRole(auth.RoleAdmin, auth.RoleIntegration)
	case DocViews:
		return p.RequireRole(auth.RoleSecurity, auth.RoleAdmin)
	case DocBoardGrants:
		return p.RequireRole(auth.RoleAdmin)
	case DocBridges:
		return p.RequireRole(auth.RoleSecurity)
	default:
		return errNoDocument()
	}
}

// Put validates and stores a document written by p with a direct PUT, with an admin receipt
// ("document.put"), and returns the stored text and its new version. Writing features needs
// role security; object-types needs admin or integration (fault.Forbidden). A space whose
// documents change only through change requests (DirectPut false) refuses it with
// fault.Conflict "direct_put_disabled". Invalid documents are fault.Invalid naming the member;
// a write that lost a race with another is fault.Conflict "document_conflict". In every error
// nothing changes. Pending change requests of the document become stale (their base version
// is no longer the document's). The bridges document is never written by a direct PUT, in
// any space (fault.Conflict "bridge_change_request_required"): a bridge needs a second
// person's approval on each side (SH-3).
func (d Documents) Put(ctx context.Context, db *bun.DB, p auth.Principal, name string, body []byte, now time.Time) (string, int64, error) {
	if err := d.MayPut(p, name); err != nil {
		return "", 0, err
	}
	if name == DocBridges {
		return "", 0, fault.New(fault.Conflict, "bridge_change_request_required",
			"bridges change only through change requests (POST /v1/bridges) approved by a second person holding role security")
	}
	var text string
	var version int64
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		direct, err := directPut(ctx, tx, p.SpaceID)
		if err != nil {
			return err
		}
		if !direct {
			return fault.New(fault.Conflict, "direct_put_disabled",
				"this space's documents change through change requests (POST /v1/documents/%s/changes) approved by a second person holding role security", name)
		}
		if text, err = d.normalize(name, body, direct); err != nil {
			return err
		}
		_, cur, err := d.get(ctx, tx, p.SpaceID, name)
		if err != nil {
			return err
		}
		version, err = d.Write(ctx, tx, p, name, text, cur, now, map[string]any{})
		return err
	})
	return text, version, err
}

// Normalize validates a proposed document of the space as a direct PUT does and returns the
// text it would be stored as (see normalize), reading the space's direct-PUT setting through
// idb (a transaction's reads see its own writes). A bridges document's bridges each have
// spaceID as one side (checkBridgesOf).
func (d Documents) Normalize(ctx context.Context, idb bun.IDB, spaceID, name string, body []byte) (string, error) {
	if name == DocBridges {
		b, err := ParseBridges(body)
		if err != nil {
			return "", err
		}
		if err := requireObject(body); err != nil {
			return "", err
		}
		if err := checkBridgesOf(b, spaceID); err != nil {
			return "", err
		}
		return marshal(b), nil
	}
	direct, err := directPut(ctx, idb, spaceID)
	if err != nil {
		return "", err
	}
	return d.normalize(name, body, direct)
}

// Current is Get read through idb (inside a transaction).
func (d Documents) Current(ctx context.Context, idb bun.IDB, spaceID, name string) (string, int64, error) {
	return d.get(ctx, idb, spaceID, name)
}

// requireObject refuses a parsed document whose JSON is not an object: null would decode as an
// empty document and reset every setting to its default (fault.Invalid "invalid_document").
func requireObject(body []byte) error {
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return fault.New(fault.Invalid, "invalid_document", "the document must be a JSON object")
	}
	return nil
}

// normalize validates a proposed document and returns the text it is stored as: the
// canonical JSON of its parsed value. A features document that does not state
// documents.direct_put states direct, the space's current setting (a document never drops the
// setting silently). Errors are fault.Invalid naming the member, or "document_not_found".
func (d Documents) normalize(name string, body []byte, direct bool) (string, error) {
	switch name {
	case DocFeatures:
		f, err := ParseFeatures(body)
		if err != nil {
			return "", err
		}
		if err := requireObject(body); err != nil {
			return "", err
		}
		if u := f.AgentMemory.WebhookURL; u != "" {
			if err := netguard.CheckURL(u, d.AllowPrivateWebhooks); err != nil {
				return "", invalidMember("agent_memory.webhook_url", err.Error())
			}
		}
		if f.Documents.DirectPut == nil {
			f.Documents.DirectPut = &direct
		}
		return marshal(f), nil
	case DocObjectTypes:
		t, err := ParseObjectTypes(body)
		if err != nil {
			return "", err
		}
		if err := requireObject(body); err != nil {
			return "", err
		}
		if err := requireEnumValues(t); err != nil { // on write only: stored documents still read
			return "", err
		}
		if t.Types == nil {
			t.Types = []ObjectType{}
		}
		return marshal(t), nil
	case DocViews:
		return normalizeViews(body)
	case DocBoardGrants:
		g, err := ParseBoardGrants(body)
		if err != nil {
			return "", err
		}
		if err := requireObject(body); err != nil {
			return "", err
		}
		return marshal(g), nil
	}
	return "", errNoDocument()
}

// Write stores text (a document Normalize returned) as document name inside tx if its
// version is still base (compare and swap), with the "document.put" receipt by p (detail plus
// the new version), and returns the new version: the one write of a direct PUT and of an
// applied change request. A version other than base is fault.Conflict "document_conflict".
// Roles and the direct-PUT setting are the caller's to check.
func (d Documents) Write(ctx context.Context, tx bun.Tx, p auth.Principal, name, text string, base int64, now time.Time, detail map[string]any) (int64, error) {
	now = now.UTC()
	row := &models.Document{SpaceID: p.SpaceID, Name: name, Body: text, Version: base + 1, UpdatedBy: p.KeyID, UpdatedAt: now}
	var res sql.Result
	var err error
	if base == 0 {
		res, err = tx.NewInsert().Model(row).On("CONFLICT (space_id, name) DO NOTHING").Exec(ctx)
	} else {
		res, err = tx.NewUpdate().Model(row).Column("body", "version", "updated_by", "updated_at").
			Where("space_id = ? AND name = ? AND version = ?", p.SpaceID, name, base).Exec(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("spaces: store %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("spaces: store %s: %w", name, err)
	} else if n != 1 {
		return 0, fault.New(fault.Conflict, "document_conflict", "the document changed during this write; read it and try again")
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["version"] = row.Version
	if err := BumpRevision(ctx, tx, p.SpaceID, RevisionConfig); err != nil {
		return 0, err
	}
	_, err = receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
		Kind: receipts.KindAdmin, Action: "document.put", ActorKey: p.KeyID,
		ObjectIDs: []string{name}, Detail: detail,
	}, now)
	return row.Version, err
}
