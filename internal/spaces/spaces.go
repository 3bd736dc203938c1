// Package spaces creates spaces (tenants) and keeps their documents: "features" (which
// features are on, WM-1, AM-3) and "object-types" (the type registry, WM-2).
package spaces

import (
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

// Create makes a space named name and its first person key holding every role. It returns
// the space id and that key (shown once).
func Create(ctx context.Context, db *bun.DB, name string, now time.Time) (spaceID, adminKey string, err error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 120 {
		return "", "", fault.New(fault.Invalid, "invalid_member", "a space name is 1-120 characters").With("member", "name")
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		sp := &models.Space{ID: auth.NewID("sp"), Name: name, CreatedAt: now.UTC()}
		if _, err := tx.NewInsert().Model(sp).Exec(ctx); err != nil {
			return fmt.Errorf("spaces: insert: %w", err)
		}
		if _, err := receipts.Append(ctx, tx, sp.ID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "space.create", ActorKey: "cli", ObjectIDs: []string{sp.ID},
		}, now); err != nil {
			return err
		}
		key, err := mintAdmin(ctx, tx, sp.ID, now)
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
		key, err = mintAdmin(ctx, tx, spaceID, now)
		return err
	})
	return key, err
}

// mintAdmin mints a person key with every role, with its receipt, inside tx.
func mintAdmin(ctx context.Context, tx bun.Tx, spaceID string, now time.Time) (string, error) {
	keyID, key, err := auth.Mint(ctx, tx, spaceID, "cli", auth.KeySpec{Kind: auth.KindPerson, Name: "admin", Roles: auth.AllRoles}, now)
	if err != nil {
		return "", err
	}
	_, err = receipts.Append(ctx, tx, spaceID, receipts.Entry{
		Kind: receipts.KindAdmin, Action: "key.create", ActorKey: "cli", ObjectIDs: []string{keyID},
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
	var f Features
	var t ObjectTypes
	for _, row := range rows {
		switch row.Name {
		case DocFeatures:
			v, err := parseCached(DocFeatures, row.Body, func(b []byte) (any, error) { return ParseFeatures(b) })
			if err != nil {
				return Features{}, ObjectTypes{}, err
			}
			f = v.(Features)
		case DocObjectTypes:
			v, err := parseCached(DocObjectTypes, row.Body, func(b []byte) (any, error) { return ParseObjectTypes(b) })
			if err != nil {
				return Features{}, ObjectTypes{}, err
			}
			t = v.(ObjectTypes)
		}
	}
	return f, t, nil
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

// prefetchKey is the context key of the documents AuthenticateWithDocuments read.
type prefetchKey struct{}

type prefetched struct {
	spaceID string
	docs    []models.Document
}

// keyAndDocuments reads a key row by hash and, in the same statement, its space's features
// and object-types documents (one row per document; one row with empty names when neither
// exists).
const keyAndDocuments = `SELECT k.id, k.space_id, k.hash, k.kind, k.agent, k.vendor, k.name, k.scopes, k.roles,
 CASE WHEN k.revoked_at IS NULL THEN 0 ELSE 1 END, COALESCE(d.name, ''), COALESCE(d.body, '')
 FROM api_keys k LEFT JOIN documents d ON d.space_id = k.space_id AND d.name IN (?, ?)
 WHERE k.hash = ?`

// AuthenticateWithDocuments is auth.Authenticate that also reads, in the same statement
// (one round trip instead of two), the features and object-types documents of the key's
// space, and returns ctx carrying them: Documents.Both, Features and ObjectTypes answer from
// them for the rest of the request. For requests that only read documents (the
// working-memory routes, the prompt block): a request that writes a document must not use it.
func AuthenticateWithDocuments(ctx context.Context, d *bun.DB, key string) (auth.Principal, context.Context, error) {
	hash, err := auth.CheckKeyFormat(key)
	if err != nil {
		return auth.Principal{}, ctx, err
	}
	rows, err := db.QueryRows(ctx, d, keyAndDocuments, DocFeatures, DocObjectTypes, hash)
	if err != nil {
		return auth.Principal{}, ctx, fmt.Errorf("auth: load key: %w", err)
	}
	defer rows.Close()
	var row models.APIKey
	var docs []models.Document
	found := false
	for rows.Next() {
		var scopes, roles, name, body string
		var revoked int
		if err := rows.Scan(&row.ID, &row.SpaceID, &row.Hash, &row.Kind, &row.Agent, &row.Vendor, &row.Name,
			&scopes, &roles, &revoked, &name, &body); err != nil {
			return auth.Principal{}, ctx, fmt.Errorf("auth: load key: %w", err)
		}
		if !found {
			found = true
			if err := json.Unmarshal([]byte(scopes), &row.Scopes); err != nil {
				return auth.Principal{}, ctx, fmt.Errorf("auth: key scopes: %w", err)
			}
			if err := json.Unmarshal([]byte(roles), &row.Roles); err != nil {
				return auth.Principal{}, ctx, fmt.Errorf("auth: key roles: %w", err)
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
		return auth.Principal{}, ctx, fmt.Errorf("auth: load key: %w", err)
	}
	if !found {
		return auth.Principal{}, ctx, auth.InvalidKey()
	}
	p, err := auth.FromRow(row, hash)
	if err != nil {
		return p, ctx, err
	}
	return p, context.WithValue(ctx, prefetchKey{}, prefetched{spaceID: p.SpaceID, docs: docs}), nil
}

// parsedDocs caches parsed documents by their exact stored text: the same text always parses
// to the same value, so the cache never serves a stale document (every request still reads
// the current text from the store). It is cleared when it reaches maxParsedDocs entries.
var (
	parsedMu   sync.Mutex
	parsedDocs = map[string]any{}
)

const maxParsedDocs = 512

func parseCached(name, text string, parse func([]byte) (any, error)) (any, error) {
	k := name + "\x00" + text
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

// Get returns the document as stored JSON text (a default when never written) and its
// version (0 when never written). An unknown name is fault.NotFound.
func (d Documents) Get(ctx context.Context, spaceID, name string) (string, int64, error) {
	var row models.Document
	err := d.DB.NewSelect().Model(&row).Where("space_id = ? AND name = ?", spaceID, name).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		switch name {
		case DocFeatures:
			return marshal(Features{}), 0, nil
		case DocObjectTypes:
			return `{"types":[]}`, 0, nil
		}
		return "", 0, fault.New(fault.NotFound, "document_not_found", "the documents are features and object-types")
	case err != nil:
		return "", 0, fmt.Errorf("spaces: load document: %w", err)
	}
	return row.Body, row.Version, nil
}

func (d Documents) raw(ctx context.Context, spaceID, name string) (string, error) {
	if pre, ok := ctx.Value(prefetchKey{}).(prefetched); ok && pre.spaceID == spaceID && (name == DocFeatures || name == DocObjectTypes) {
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
// needs role security and object-types admin or integration (fault.Forbidden); another name is
// fault.NotFound "document_not_found".
func (d Documents) MayPut(p auth.Principal, name string) error {
	switch name {
	case DocFeatures:
		return p.RequireRole(auth.RoleSecurity)
	case DocObjectTypes:
		return p.RequireRole(auth.RoleAdmin, auth.RoleIntegration)
	default:
		return fault.New(fault.NotFound, "document_not_found", "the documents are features and object-types")
	}
}

// Put validates and stores a document written by p, with an admin receipt, and returns the
// stored text and its new version. Writing features needs role security; object-types needs
// admin or integration. Invalid documents are fault.Invalid naming the member; nothing changes.
func (d Documents) Put(ctx context.Context, db *bun.DB, p auth.Principal, name string, body []byte, now time.Time) (string, int64, error) {
	if err := d.MayPut(p, name); err != nil {
		return "", 0, err
	}
	var text string
	switch name {
	case DocFeatures:
		f, err := ParseFeatures(body)
		if err != nil {
			return "", 0, err
		}
		if u := f.AgentMemory.WebhookURL; u != "" {
			if err := netguard.CheckURL(u, d.AllowPrivateWebhooks); err != nil {
				return "", 0, invalidMember("agent_memory.webhook_url", err.Error())
			}
		}
		text = marshal(f)
	case DocObjectTypes:
		t, err := ParseObjectTypes(body)
		if err != nil {
			return "", 0, err
		}
		if t.Types == nil {
			t.Types = []ObjectType{}
		}
		text = marshal(t)
	default:
		return "", 0, fault.New(fault.NotFound, "document_not_found", "the documents are features and object-types")
	}
	var version int64
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var cur models.Document
		err := tx.NewSelect().Model(&cur).Where("space_id = ? AND name = ?", p.SpaceID, name).Scan(ctx)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("spaces: load document: %w", err)
		}
		row := &models.Document{SpaceID: p.SpaceID, Name: name, Body: text, Version: cur.Version + 1, UpdatedBy: p.KeyID, UpdatedAt: now.UTC()}
		if _, err := tx.NewInsert().Model(row).
			On("CONFLICT (space_id, name) DO UPDATE").
			Set("body = EXCLUDED.body, version = EXCLUDED.version, updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at").
			Exec(ctx); err != nil {
			return fmt.Errorf("spaces: store %s: %w", name, err)
		}
		version = row.Version
		_, err = receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "document.put", ActorKey: p.KeyID,
			ObjectIDs: []string{name}, Detail: map[string]any{"version": version},
		}, now)
		return err
	})
	return text, version, err
}
