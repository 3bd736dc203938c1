package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/models"
)

// Table is one exported table: Name is its name in the feed (and the `tables` filter), load
// reads the rows of keys in a space as exported (by key; a key without a row, or whose sealed
// content no longer opens with the key store ks, is absent).
type Table struct {
	Name string
	load func(ctx context.Context, idb bun.IDB, ks keystore.Store, spaceID string, keys []string) (map[string]any, error)
}

// Tables are the exported tables, in a stable order. Each is captured by the triggers of
// migration 20261205050000 under the same name. Boards (SH-1) join here with their metadata
// only, captured by their own migration, when they land.
var Tables = []Table{
	{"notes", loadOpened(notes.OpenRows, func(r models.Note) (string, any) { return r.ID, notes.FeedView(r) }, "id")},
	{"proposals", loadOpened(noterows.OpenProposals, func(r models.NoteProposal) (string, any) { return r.ID, proposals.FeedView(r) }, "id")},
	{"decisions", loadBy(func(r models.ProposalDecision) (string, any) { return r.ID, decisionView(r) }, "id")},
	{"receipts", loadBy(func(r models.Receipt) (string, any) { return r.ID, receiptView(r) }, "id")},
	{"receipt_checkpoints", loadBy(func(r models.ReceiptBatch) (string, any) {
		return strconv.FormatInt(r.Seq, 10), checkpointView(r)
	}, "seq")},
	{"knowledge_bases", loadBy(func(r models.KnowledgeBase) (string, any) { return r.ID, baseView(r) }, "id")},
	{"knowledge_documents", loadOpened(knowledge.OpenDocuments, func(r models.KnowledgeDocument) (string, any) {
		return r.ID, knowledge.FeedDocument(r)
	}, "id", "body")},
	{"knowledge_chunks", loadOpened(knowledge.OpenChunks, func(r models.KnowledgeChunk) (string, any) { return r.ID, chunkView(r) }, "id", "embedding", "sealed_embedding")},
	{"agent_states", loadBy(func(r models.AgentState) (string, any) { return r.ID, stateView(r) }, "id", "body", "field_times")},
	{"keys", loadBy(func(r models.APIKey) (string, any) { return r.ID, auth.FeedView(r) }, "id", "hash")},
	{"change_requests", loadBy(func(r models.DocumentChange) (string, any) { return r.ID, changes.FeedView(r) }, "id")},
	{"documents", loadBy(func(r models.Document) (string, any) { return r.Name, documentView(r) }, "name")},
}

var tableByName = func() map[string]Table {
	m := make(map[string]Table, len(Tables))
	for _, t := range Tables {
		m[t.Name] = t
	}
	return m
}()

// TableNames returns the names of Tables, in order.
func TableNames() []string {
	out := make([]string, len(Tables))
	for i, t := range Tables {
		out[i] = t.Name
	}
	return out
}

// loadBy loads rows of type T of a space whose keyCol is one of the keys, leaving out the
// columns excluded (content the export never carries: a state's body, a key's hash), and
// turns each into its key and exported view.
func loadBy[T any](view func(T) (string, any), keyCol string, excluded ...string) func(context.Context, bun.IDB, keystore.Store, string, []string) (map[string]any, error) {
	return loadOpened(func(_ context.Context, _ keystore.Store, rows []T) ([]T, error) { return rows, nil }, view, keyCol, excluded...)
}

// loadOpened is loadBy for a table whose content is sealed (notes, proposals, knowledge:
// issue 29 §1): open unseals the rows with the key store and leaves out those whose key is
// gone (erased or deleted), which then read as deletes.
func loadOpened[T any](open func(context.Context, keystore.Store, []T) ([]T, error), view func(T) (string, any), keyCol string, excluded ...string) func(context.Context, bun.IDB, keystore.Store, string, []string) (map[string]any, error) {
	return func(ctx context.Context, idb bun.IDB, ks keystore.Store, spaceID string, keys []string) (map[string]any, error) {
		var rows []T
		q := idb.NewSelect().Model(&rows).Where("space_id = ?", spaceID).Where("? IN (?)", bun.Ident(keyCol), bun.In(keys))
		if len(excluded) > 0 {
			q = q.ExcludeColumn(excluded...)
		}
		if err := q.Scan(ctx); err != nil {
			return nil, err
		}
		rows, err := open(ctx, ks, rows)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(rows))
		for _, r := range rows {
			k, v := view(r)
			out[k] = v
		}
		return out, nil
	}
}

// render gives each change its row as exported now: the changes are grouped by table, each
// table's rows loaded once, and a change whose row is gone becomes a delete.
func render(ctx context.Context, idb bun.IDB, ks keystore.Store, spaceID string, changes []models.FeedChange) ([]Record, error) {
	byTable := map[string][]string{}
	for _, c := range changes {
		if c.Op == OpUpsert {
			byTable[c.Tbl] = append(byTable[c.Tbl], c.PK)
		}
	}
	names := make([]string, 0, len(byTable))
	for name := range byTable {
		names = append(names, name)
	}
	sort.Strings(names)
	rows := map[string]map[string]any{}
	for _, name := range names {
		t, ok := tableByName[name]
		if !ok {
			return nil, fmt.Errorf("feed: change of unknown table %q", name)
		}
		m, err := t.load(ctx, idb, ks, spaceID, byTable[name])
		if err != nil {
			return nil, fmt.Errorf("feed: load %s: %w", name, err)
		}
		rows[name] = m
	}
	out := make([]Record, 0, len(changes))
	for _, c := range changes {
		r := Record{Cursor: *c.Position, Table: c.Tbl, Key: c.PK, Op: OpDelete, ChangedAt: time.UnixMicro(c.ChangedUs).UTC()}
		if v, ok := rows[c.Tbl][c.PK]; ok && c.Op == OpUpsert {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("feed: encode %s: %w", c.Tbl, err)
			}
			r.Op, r.Row = OpUpsert, b
		}
		out = append(out, r)
	}
	return out, nil
}

// rawOrNull is s as JSON, or null when s is empty or not JSON.
func rawOrNull(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

type decisionRow struct {
	ID           string          `json:"id"`
	ProposalID   string          `json:"proposal_id"`
	Decision     string          `json:"decision"`
	Patch        json.RawMessage `json:"patch"`
	Reason       string          `json:"reason"`
	ByKeyID      string          `json:"by_key_id"`
	Outcome      string          `json:"outcome"`
	RefusedCode  string          `json:"refused_code"`
	RefusedKinds json.RawMessage `json:"refused_kinds"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

func decisionView(r models.ProposalDecision) decisionRow {
	return decisionRow{ID: r.ID, ProposalID: r.ProposalID, Decision: r.Decision, Patch: rawOrNull(r.Patch), Reason: r.Reason,
		ByKeyID: r.ByKeyID, Outcome: r.Outcome, RefusedCode: r.RefusedCode, RefusedKinds: rawOrNull(r.RefusedKinds),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

type receiptRow struct {
	ID         string          `json:"id"`
	Seq        int64           `json:"seq"`
	Kind       string          `json:"kind"`
	Action     string          `json:"action"`
	ActorKeyID string          `json:"actor_key_id"`
	ObjectIDs  json.RawMessage `json:"object_ids"`
	Detail     json.RawMessage `json:"detail"`
	At         time.Time       `json:"at"`
	Hash       string          `json:"hash"`
}

func receiptView(r models.Receipt) receiptRow {
	return receiptRow{ID: r.ID, Seq: r.Seq, Kind: r.Kind, Action: r.Action, ActorKeyID: r.ActorKeyID,
		ObjectIDs: rawOrNull(r.ObjectIDs), Detail: rawOrNull(r.Detail), At: r.At.UTC(), Hash: r.Hash}
}

type checkpointRow struct {
	Seq      int64     `json:"seq"`
	FirstSeq int64     `json:"first_seq"`
	Version  int       `json:"version"`
	Root     string    `json:"root"`
	PrevHash string    `json:"prev_hash"`
	Hash     string    `json:"hash"`
	At       time.Time `json:"at"`
}

func checkpointView(r models.ReceiptBatch) checkpointRow {
	return checkpointRow{Seq: r.Seq, FirstSeq: r.FirstSeq, Version: r.Version, Root: r.Root, PrevHash: r.PrevHash,
		Hash: r.Hash, At: r.At.UTC()}
}

type baseRow struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Settings  json.RawMessage `json:"settings"`
	CreatedBy string          `json:"created_by"`
	CreatedAt time.Time       `json:"created_at"`
}

func baseView(r models.KnowledgeBase) baseRow {
	return baseRow{ID: r.ID, Name: r.Name, Settings: rawOrNull(r.Settings), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC()}
}

// chunkRow is a knowledge chunk as exported. Text is the chunk's indexed text (gated, and
// masked under the base's mask policy), left out (nil) for a chunk of a document naming a
// subject (the base's allow_with_subject policy): personal data stored for retrieval and
// erased with the subject does not leave in the export.
type chunkRow struct {
	ID           string    `json:"id"`
	KBID         string    `json:"kb_id"`
	DocumentID   string    `json:"document_id"`
	Ord          int       `json:"ord"`
	Heading      string    `json:"heading"`
	StartByte    int       `json:"start_byte"`
	EndByte      int       `json:"end_byte"`
	Tokens       int       `json:"tokens"`
	Text         *string   `json:"text"`
	NamesSubject bool      `json:"names_subject"`
	CreatedAt    time.Time `json:"created_at"`
}

func chunkView(r models.KnowledgeChunk) chunkRow {
	c := chunkRow{ID: r.ID, KBID: r.KBID, DocumentID: r.DocumentID, Ord: r.Ord, Heading: r.Heading, StartByte: r.StartByte,
		EndByte: r.EndByte, Tokens: r.Tokens, NamesSubject: r.SubjectHash != "", CreatedAt: r.CreatedAt.UTC()}
	if r.SubjectHash == "" {
		t := r.Text
		c.Text = &t
	}
	return c
}

// stateRow is a working state's metadata as exported (WM-11: never its body or fields): the
// keyed hash of its scope, never the scope.
type stateRow struct {
	ID           string    `json:"id"`
	ScopeHash    string    `json:"scope_hash"`
	ScopeKind    string    `json:"scope_kind"`
	Agent        string    `json:"agent"`
	Version      int64     `json:"version"`
	Bytes        int       `json:"bytes"`
	KeyID        string    `json:"key_id"`
	AgentVersion string    `json:"agent_version"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	ExpiresAt    time.Time `json:"expires_at"`
}

func stateView(r models.AgentState) stateRow {
	return stateRow{ID: r.ID, ScopeHash: r.ScopeHash, ScopeKind: r.ScopeKind, Agent: r.Agent, Version: r.Version,
		Bytes: r.Bytes, KeyID: r.KeyID, AgentVersion: r.AgentVersion, CreatedAt: r.CreatedAt.UTC(),
		UpdatedAt: r.UpdatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
}

type documentRow struct {
	Name      string          `json:"name"`
	Version   int64           `json:"version"`
	Document  json.RawMessage `json:"document"`
	UpdatedBy string          `json:"updated_by"`
	UpdatedAt time.Time       `json:"updated_at"`
}

func documentView(r models.Document) documentRow {
	return documentRow{Name: r.Name, Version: r.Version, Document: rawOrNull(r.Body), UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt.UTC()}
}
