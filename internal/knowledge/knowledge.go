// Package knowledge is the company's own documents as governed retrieval (issue 18, KN-1..KN-4):
// knowledge bases per space with their settings, documents ingested through the
// personal-data gate, chunked deterministically, embedded through an Embedder (internal/llm's
// Ollama /api/embed client in the service) and indexed for full text (FTS5 on SQLite, a
// tsvector on PostgreSQL) and for vectors (float32 blobs in the chunk rows; on SQLite also a
// sqlite-vec index partitioned by space and base, vectors.go; on PostgreSQL a pgvector HNSW
// index where the server has the extension, pgvector.go, else an exact cosine scan of a
// base's rows). Retrieval
// fuses the vector and full-text rankings by reciprocal rank fusion and answers ranked
// chunks with provenance and a fenced context within a token budget. Each document's title,
// body, chunk texts and embeddings are sealed under its own key (seal.go); the full-text and
// vector entries are derived, and the restore procedure rebuilds them (restore.go).
//
// It never imports gin, Temporal, api, workflows or activities: IngestWorkflow (workflows/)
// calls Ingest through an activity.
package knowledge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Embedder turns texts into vectors with a named model (KN-2); internal/llm's Client is the
// service's. It returns one vector per text, all of one length, or an error (the embedder is
// down, the model is missing, a text is too long: never a silently truncated vector).
type Embedder interface {
	Embed(ctx context.Context, model string, texts []string) ([][]float32, error)
}

// Gate is the personal-data gate of notes (notes.Service.Check, AM-6): nil when text may be
// stored, a fault with detail "kinds" when it carries personal data, fault.Unavailable when the
// model layer did not answer.
type Gate interface {
	Check(ctx context.Context, spaceID, text string) error
}

// Masker gives the space's masking options (subjects.Service.Options) for the mask policy.
type Masker interface {
	Options(ctx context.Context, spaceID string) (redact.Options, error)
}

// Subjects canonicalises a subject's handle and gives its keyed hash
// (subjects.Service.Canonical and HandleHash: the same hash working memory's subject and the
// erasure use).
type Subjects interface {
	Canonical(ctx context.Context, spaceID, handle string) (string, error)
	HandleHash(spaceID, canonical string) string
}

// Service is the knowledge store. DB, Docs, Gate, Masker, Keys and Hasher are required, and
// Subjects for bases with allow_with_subject; Embedder nil means the embedder is down (each base's
// embedder_down policy decides); Now nil is time.Now.
type Service struct {
	DB       *bun.DB
	Docs     spaces.Documents
	Gate     Gate
	Masker   Masker
	Subjects Subjects
	Embedder Embedder
	// Keys holds each document's data key (DocumentKeyID): its title, body and chunks are
	// sealed under it, and deleting or erasing the document destroys it (issue 29 §1).
	Keys keystore.Store
	// Hasher gives the keyed hash of titles (the title filter of retrieval).
	Hasher keyed.Hasher
	Now    func() time.Time
	// Receipts commits the receipts of retrievals in groups (issue 16); nil: each retrieval
	// commits its own receipt.
	Receipts *receipts.Log
	// QueryEmbedTimeout bounds how long a retrieval waits for its query's embedding; past it
	// the model counts as down for that call, and each base's embedder_down setting applies
	// (503 embedder_unavailable, or lexical_only). 0: DefaultQueryEmbedTimeout.
	QueryEmbedTimeout time.Duration
	// Runs keeps the budgets of runs (CTX-3): a retrieval naming a run draws on it. Without
	// it a retrieval naming a run fails (an internal error).
	Runs *runs.Store

	// vec is the vector path (PrepareVectors or the first use), under vecMu.
	vecMu sync.Mutex
	vec   *VectorPath
}

// DefaultQueryEmbedTimeout is Service.QueryEmbedTimeout's default
// (AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT): a retrieval is an agent's synchronous call, so a
// slow model must not hold it for the HTTP client's minutes.
const DefaultQueryEmbedTimeout = 10 * time.Second

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// Policies of a base (KN-1).
const (
	EmbedderDownFail        = "fail"
	EmbedderDownLexicalOnly = "lexical_only"
	PersonalDataRefuse      = "refuse"
	PersonalDataMask        = "mask"
	// PersonalDataWithSubject admits personal data in a document that names the subject it is
	// about (SubmitRequest.Subject), kept only as a keyed hash so that the subject's erasure
	// deletes the document, its chunks, full-text entries and vectors (KN-3).
	PersonalDataWithSubject = "allow_with_subject"
	// InstructionsRefuse (the default) refuses a document that reads as an instruction to
	// the agents that retrieve it (GATE-3: override, privilege, exfiltration, invisible text)
	// with "instruction_in_knowledge" and its classes.
	InstructionsRefuse = "refuse"
	// InstructionsAllow stores such a document as it is (a base about prompt injection,
	// say): its chunks are still fenced as evidence under the context's header (MS-7).
	InstructionsAllow = "allow"
)

// Error codes of the store.
const (
	CodeFeatureDisabled  = "feature_disabled"
	CodeBaseNotFound     = "knowledge_base_not_found"
	CodeDocumentNotFound = "document_not_found"
	CodePersonalData     = "personal_data_in_knowledge"
	CodeInstruction      = "instruction_in_knowledge"
	CodeEmbedderDown     = "embedder_unavailable"
	CodeBaseExists       = "knowledge_base_exists"
)

// Settings are a base's settings (KN-1); zero members take the defaults of Normalize.
type Settings struct {
	// EmbeddingModel is the Ollama model of /api/embed (default "nomic-embed-text").
	EmbeddingModel string `json:"embedding_model"`
	// ChunkTokens is the target chunk size in cl100k tokens, 50..2000 (default 200).
	ChunkTokens int `json:"chunk_tokens"`
	// ChunkOverlap is the tokens a chunk repeats from the previous one, 0..ChunkTokens/2
	// (default 40).
	ChunkOverlap int `json:"chunk_overlap"`
	// TopK is the default number of chunks retrieved, 1..50 (default 5).
	TopK int `json:"top_k"`
	// MaxTokens is the default context budget, 100..8000 (default 1000).
	MaxTokens int `json:"max_tokens"`
	// MaxAge ("30d", "12h"; empty: no limit) excludes chunks indexed longer ago (freshness).
	MaxAge string `json:"max_age,omitempty"`
	// EmbedderDown is "fail" (default: retrieval answers 503) or "lexical_only" (full text
	// only, said in the answer's mode).
	EmbedderDown string `json:"embedder_down"`
	// PersonalData is the ingest policy: "refuse" (default: a document with personal data is
	// refused with its kinds), "mask" (stored masked, as turns are) or "allow_with_subject"
	// (every document names the subject it is about; its personal data is stored and erased
	// with the subject).
	PersonalData string `json:"personal_data"`
	// Instructions is the ingest policy for text that reads as an instruction to the agents
	// that retrieve it (GATE-3): "refuse" (default: refused with "instruction_in_knowledge"
	// and its classes) or "allow". A base stored before the setting existed reads as refuse.
	Instructions string `json:"instructions"`
	// Readers is who may read the base (KN-1, MS-2); nil on a request is no agent at all
	// (Readers' zero value). It is kept in knowledge_readers, never in the settings column.
	Readers *Readers `json:"readers,omitempty"`
}

// Readers are a base's read grants (KN-1, MS-2). An agent key with knowledge:read reads the
// base when Space is true (an explicit grant to every agent of the space), when its agent name
// is in Agents, or when its vendor is in Vendors. The zero value grants no agent: a base
// created without readers is read only by person keys (roles admin and integration) until an
// admin grants it. Names are 1-100 characters without control characters, at most MaxGrants
// of each, kept sorted and without repeats.
type Readers struct {
	Space   bool     `json:"space"`
	Agents  []string `json:"agents"`
	Vendors []string `json:"vendors"`
}

// MaxGrants caps Readers.Agents and Readers.Vendors.
const MaxGrants = 100

// Grant kinds of knowledge_readers.
const (
	grantSpace  = "space"
	grantAgent  = "agent"
	grantVendor = "vendor"
)

// normalize validates r (members named from prefix) and sorts and de-duplicates its names.
func (r *Readers) normalize(prefix string) error {
	for _, l := range []struct {
		member string
		names  *[]string
	}{{prefix + ".agents", &r.Agents}, {prefix + ".vendors", &r.Vendors}} {
		if len(*l.names) > MaxGrants {
			return invalid(l.member, "%s lists at most %d names", l.member, MaxGrants)
		}
		for i, n := range *l.names {
			if n == "" || len(n) > 100 || strings.IndexFunc(n, unicode.IsControl) >= 0 {
				return invalid(fmt.Sprintf("%s[%d]", l.member, i), "a name is 1-100 characters without control characters")
			}
		}
		out := append([]string{}, *l.names...)
		slices.Sort(out)
		*l.names = slices.Compact(out)
	}
	return nil
}

// rows are r as knowledge_readers rows of base kbID.
func (r Readers) rows(spaceID, kbID string) []models.KnowledgeReader {
	var out []models.KnowledgeReader
	if r.Space {
		out = append(out, models.KnowledgeReader{SpaceID: spaceID, KBID: kbID, Kind: grantSpace, Name: ""})
	}
	for _, n := range r.Agents {
		out = append(out, models.KnowledgeReader{SpaceID: spaceID, KBID: kbID, Kind: grantAgent, Name: n})
	}
	for _, n := range r.Vendors {
		out = append(out, models.KnowledgeReader{SpaceID: spaceID, KBID: kbID, Kind: grantVendor, Name: n})
	}
	return out
}

// Normalize fills defaults and validates s; errors are fault.Invalid naming the member
// (settings.<member>).
func (s *Settings) Normalize() error {
	if s.EmbeddingModel == "" {
		s.EmbeddingModel = "nomic-embed-text"
	}
	if s.ChunkTokens == 0 {
		s.ChunkTokens = 200
	}
	if s.ChunkOverlap == 0 {
		s.ChunkOverlap = 40
		if s.ChunkOverlap > s.ChunkTokens/2 {
			s.ChunkOverlap = s.ChunkTokens / 2
		}
	}
	if s.TopK == 0 {
		s.TopK = 5
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = 1000
	}
	if s.EmbedderDown == "" {
		s.EmbedderDown = EmbedderDownFail
	}
	if s.PersonalData == "" {
		s.PersonalData = PersonalDataRefuse
	}
	if s.Instructions == "" {
		s.Instructions = InstructionsRefuse
	}
	if s.Readers == nil {
		s.Readers = &Readers{}
	}
	if err := s.Readers.normalize("settings.readers"); err != nil {
		return err
	}
	switch {
	case len(s.EmbeddingModel) > 200 || strings.ContainsAny(s.EmbeddingModel, " \t\r\n"):
		return invalid("settings.embedding_model", "embedding_model is a model name of at most 200 characters")
	case s.ChunkTokens < 50 || s.ChunkTokens > 2000:
		return invalid("settings.chunk_tokens", "chunk_tokens must be from 50 to 2000")
	case s.ChunkOverlap < 0 || s.ChunkOverlap > s.ChunkTokens/2:
		return invalid("settings.chunk_overlap", "chunk_overlap must be from 0 to half of chunk_tokens")
	case s.TopK < 1 || s.TopK > MaxTopK:
		return invalid("settings.top_k", "top_k must be from 1 to %d", MaxTopK)
	case s.MaxTokens < MinContextTokens || s.MaxTokens > MaxContextTokens:
		return invalid("settings.max_tokens", "max_tokens must be from %d to %d", MinContextTokens, MaxContextTokens)
	case s.EmbedderDown != EmbedderDownFail && s.EmbedderDown != EmbedderDownLexicalOnly:
		return invalid("settings.embedder_down", `embedder_down must be "fail" or "lexical_only"`)
	case s.PersonalData != PersonalDataRefuse && s.PersonalData != PersonalDataMask && s.PersonalData != PersonalDataWithSubject:
		return invalid("settings.personal_data", `personal_data must be "refuse", "mask" or "allow_with_subject"`)
	case s.Instructions != InstructionsRefuse && s.Instructions != InstructionsAllow:
		return invalid("settings.instructions", `instructions must be "refuse" or "allow"`)
	}
	if s.MaxAge != "" {
		if _, err := spaces.ParseRetention(s.MaxAge); err != nil {
			return invalid("settings.max_age", "max_age %s", err.Error())
		}
	}
	return nil
}

// maxAge is s.MaxAge as a duration (0: no limit).
func (s Settings) maxAge() time.Duration {
	d, _ := spaces.ParseRetention(s.MaxAge)
	return d
}

// Base is a knowledge base as the API shows it.
type Base struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Settings  Settings  `json:"settings"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateBaseRequest is the body of POST /v1/knowledge.
type CreateBaseRequest struct {
	Name     string   `json:"name"`
	Settings Settings `json:"settings"`
}

var baseNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

func invalid(member, format string, args ...any) error {
	return fault.New(fault.Invalid, "invalid_member", format, args...).With("member", member)
}

// enabled returns fault.Forbidden "feature_disabled" unless the space has knowledge on (KN-1).
func (s *Service) enabled(ctx context.Context, spaceID string) error {
	f, err := s.Docs.Features(ctx, spaceID)
	if err != nil {
		return err
	}
	if !f.Knowledge.Enabled {
		return fault.New(fault.Forbidden, CodeFeatureDisabled, "knowledge is off for this space (features.knowledge.enabled)")
	}
	return nil
}

// CanRead: an agent key with knowledge:read, or a person key with role admin or integration.
func CanRead(p auth.Principal) error {
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeKnowledgeRead) {
			return fault.New(fault.Forbidden, "scope_required", "this key lacks scope knowledge:read")
		}
		return nil
	}
	return p.RequireRole(auth.RoleAdmin, auth.RoleIntegration)
}

// CanWrite: an agent key with knowledge:write, or a person key with role integration or admin
// (KN-1: reading does not imply writing).
func CanWrite(p auth.Principal) error {
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeKnowledgeWrite) {
			return fault.New(fault.Forbidden, "scope_required", "this key lacks scope knowledge:write")
		}
		return nil
	}
	return p.RequireRole(auth.RoleIntegration, auth.RoleAdmin)
}

// CreateBase creates a base in p's space (KN-1): a person key with role admin; the feature
// on; name 1-64 characters of a-z 0-9 _ . - (unique in the space: fault.Conflict
// "knowledge_base_exists"); settings validated by Normalize, the read grants stored with the
// base in the same transaction. It leaves a knowledge receipt "base.create" (with the grants'
// counts, never names).
func (s *Service) CreateBase(ctx context.Context, p auth.Principal, req CreateBaseRequest) (Base, error) {
	if err := requireAdmin(p, "creating a knowledge base"); err != nil {
		return Base{}, err
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return Base{}, err
	}
	if !baseNamePattern.MatchString(req.Name) {
		return Base{}, invalid("name", "name is 1-64 characters of a-z, 0-9, _ . - starting with a letter or digit")
	}
	st := req.Settings
	if err := st.Normalize(); err != nil {
		return Base{}, err
	}
	readers := *st.Readers
	stored := st
	stored.Readers = nil // knowledge_readers holds them
	now := s.now()
	row := models.KnowledgeBase{ID: auth.NewID("kb"), SpaceID: p.SpaceID, Name: req.Name, Settings: mustJSON(stored), CreatedBy: p.KeyID, CreatedAt: now}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "base.create", ActorKey: p.KeyID, ObjectIDs: []string{row.ID},
			Detail: readersDetail(readers)}, now); err != nil {
			return err
		}
		taken, err := tx.NewSelect().Model((*models.KnowledgeBase)(nil)).Where("space_id = ? AND name = ?", p.SpaceID, req.Name).Exists(ctx)
		if err != nil {
			return err
		}
		if taken {
			return fault.New(fault.Conflict, CodeBaseExists, "a knowledge base of that name exists in this space").With("member", "name")
		}
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			return err
		}
		return insertReaders(ctx, tx, readers.rows(p.SpaceID, row.ID))
	})
	if err != nil {
		return Base{}, err
	}
	return Base{ID: row.ID, Name: row.Name, Settings: st, CreatedAt: row.CreatedAt}, nil
}

// SetReaders replaces the read grants of base kbID (KN-1, MS-2): a person key with role
// admin; the feature on; the base in p's space (else fault.NotFound
// "knowledge_base_not_found"); r validated as settings' readers (fault.Invalid naming
// readers.<member>). The grants change in one transaction with a knowledge receipt
// "base.readers" (counts, never names); the next retrieval sees them. It returns the base.
func (s *Service) SetReaders(ctx context.Context, p auth.Principal, kbID string, r Readers) (Base, error) {
	if err := requireAdmin(p, "changing who reads a knowledge base"); err != nil {
		return Base{}, err
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return Base{}, err
	}
	if err := r.normalize("readers"); err != nil {
		return Base{}, err
	}
	now := s.now()
	var b Base
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "base.readers", ActorKey: p.KeyID, ObjectIDs: []string{kbID},
			Detail: readersDetail(r)}, now); err != nil {
			return err
		}
		if _, err := s.base(ctx, tx, p.SpaceID, kbID); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*models.KnowledgeReader)(nil)).Where("space_id = ? AND kb_id = ?", p.SpaceID, kbID).Exec(ctx); err != nil {
			return err
		}
		if err := insertReaders(ctx, tx, r.rows(p.SpaceID, kbID)); err != nil {
			return err
		}
		var err error
		b, err = s.base(ctx, tx, p.SpaceID, kbID)
		return err
	})
	if err != nil {
		return Base{}, err
	}
	return b, nil
}

func requireAdmin(p auth.Principal, what string) error {
	if p.IsAgent() {
		return fault.New(fault.Forbidden, "role_required", "%s needs a person key with role admin", what)
	}
	return p.RequireRole(auth.RoleAdmin)
}

func readersDetail(r Readers) map[string]any {
	return map[string]any{"readers_space": r.Space, "readers_agents": len(r.Agents), "readers_vendors": len(r.Vendors)}
}

func insertReaders(ctx context.Context, tx bun.Tx, rows []models.KnowledgeReader) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// ListBases lists the bases of p's space by name, each with its read grants (CanRead or
// CanWrite; the feature on). An agent key with knowledge:read alone sees only the bases it may
// read (whereReadable); one with knowledge:write sees every base (it loads documents into
// them).
func (s *Service) ListBases(ctx context.Context, p auth.Principal) ([]Base, error) {
	if CanRead(p) != nil {
		if err := CanWrite(p); err != nil {
			return nil, err
		}
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return nil, err
	}
	var rows []models.KnowledgeBase
	q := s.DB.NewSelect().Model(&rows).Where("space_id = ?", p.SpaceID)
	if !mayReadMetadata(p) {
		q = s.whereReadable(q, p, "id")
	}
	if err := q.OrderExpr("name ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: list bases: %w", err)
	}
	return s.toBases(ctx, s.DB, p.SpaceID, rows)
}

// ReadableBaseIDs returns the ids of at most limit bases p may retrieve from, by name (MCP
// search_knowledge without kbs): every base for a person key, the granted ones for an agent.
func (s *Service) ReadableBaseIDs(ctx context.Context, p auth.Principal, limit int) ([]string, error) {
	if err := CanRead(p); err != nil {
		return nil, err
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return nil, err
	}
	var ids []string
	q := s.DB.NewSelect().Model((*models.KnowledgeBase)(nil)).Column("id").Where("space_id = ?", p.SpaceID)
	if err := s.whereReadable(q, p, "id").OrderExpr("name ASC").Limit(int64(limit)).Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("knowledge: readable bases: %w", err)
	}
	return ids, nil
}

// whereReadable restricts q to the bases p may read (KN-1, MS-2); kbCol names q's base id
// column (a constant of the caller). A person key (roles admin or integration, checked by the
// caller) reads every base of its space; an agent key only the bases whose knowledge_readers
// grant the whole space, its agent name or its vendor. The predicate is part of the query
// itself, so nothing a request names (bases, filters) can widen it.
func (s *Service) whereReadable(q *bun.SelectQuery, p auth.Principal, kbCol string) *bun.SelectQuery {
	if !p.IsAgent() {
		return q
	}
	granted := s.DB.NewSelect().TableExpr("knowledge_readers AS g").Column("g.kb_id").
		Where("g.space_id = ?", p.SpaceID).
		Where("(g.kind = ? OR (g.kind = ? AND g.name = ?) OR (g.kind = ? AND g.name = ?))", grantSpace, grantAgent, p.Agent, grantVendor, p.Vendor)
	return q.Where(kbCol+" IN (?)", granted)
}

// mayReadMetadata reports whether p reads every base's list and document statuses without a
// read grant: person keys, and agent keys with knowledge:write (they load the documents).
func mayReadMetadata(p auth.Principal) bool {
	return !p.IsAgent() || p.HasScope(auth.ScopeKnowledgeWrite)
}

// base loads base id of spaceID: another space's base is fault.NotFound like a missing one
// (the tenant filter is in the query; a request cannot widen it).
func (s *Service) base(ctx context.Context, idb bun.IDB, spaceID, id string) (Base, error) {
	return s.loadBase(ctx, idb, auth.Principal{SpaceID: spaceID}, id)
}

// readableBase loads base id as p may read it: of p's space and, for an agent key, granted to
// it (whereReadable). A base p may not read is fault.NotFound "knowledge_base_not_found",
// exactly like a missing one or another space's.
func (s *Service) readableBase(ctx context.Context, p auth.Principal, id string) (Base, error) {
	return s.loadBase(ctx, s.DB, p, id)
}

func (s *Service) loadBase(ctx context.Context, idb bun.IDB, p auth.Principal, id string) (Base, error) {
	var row models.KnowledgeBase
	q := idb.NewSelect().Model(&row).Where("space_id = ? AND id = ?", p.SpaceID, id)
	err := s.whereReadable(q, p, "id").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Base{}, fault.New(fault.NotFound, CodeBaseNotFound, "no knowledge base with that id in this space that this key may read")
	}
	if err != nil {
		return Base{}, fmt.Errorf("knowledge: load base: %w", err)
	}
	bs, err := s.toBases(ctx, idb, p.SpaceID, []models.KnowledgeBase{row})
	if err != nil {
		return Base{}, err
	}
	return bs[0], nil
}

// toBases decodes rows with their read grants.
func (s *Service) toBases(ctx context.Context, idb bun.IDB, spaceID string, rows []models.KnowledgeBase) ([]Base, error) {
	out := make([]Base, 0, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var grants []models.KnowledgeReader
	if err := idb.NewSelect().Model(&grants).Where("space_id = ? AND kb_id IN (?)", spaceID, bun.In(ids)).OrderExpr("kb_id, kind, name").Scan(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: load readers: %w", err)
	}
	readers := map[string]*Readers{}
	for _, id := range ids {
		readers[id] = &Readers{Agents: []string{}, Vendors: []string{}}
	}
	for _, g := range grants {
		r := readers[g.KBID]
		switch g.Kind {
		case grantSpace:
			r.Space = true
		case grantAgent:
			r.Agents = append(r.Agents, g.Name)
		case grantVendor:
			r.Vendors = append(r.Vendors, g.Name)
		}
	}
	for _, row := range rows {
		var st Settings
		if err := json.Unmarshal([]byte(row.Settings), &st); err != nil {
			return nil, fmt.Errorf("knowledge: base %s settings: %w", row.ID, err)
		}
		st.Readers = readers[row.ID]
		out = append(out, Base{ID: row.ID, Name: row.Name, Settings: st, CreatedAt: row.CreatedAt.UTC()})
	}
	return out, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
