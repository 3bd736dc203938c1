// Package knowledge is the company's own documents as governed retrieval (issue 18, KN-1..KN-4):
// knowledge bases per space with their settings, documents ingested through the
// personal-data gate, chunked deterministically, embedded through an Embedder (internal/llm's
// Ollama /api/embed client in the service) and indexed for full text (FTS5 on SQLite, a
// tsvector on PostgreSQL) and for vectors (float32 blobs, exact cosine computed in Go over a
// base's rows, the tenant filter in the query: no pgvector or sqlite-vec yet). Retrieval
// fuses the vector and full-text rankings by reciprocal rank fusion and answers ranked
// chunks with provenance and a fenced context within a token budget.
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
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
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

// Service is the knowledge store. DB, Docs, Gate and Masker are required; Embedder nil
// means the embedder is down (each base's embedder_down policy decides); Now nil is time.Now.
type Service struct {
	DB       *bun.DB
	Docs     spaces.Documents
	Gate     Gate
	Masker   Masker
	Embedder Embedder
	Now      func() time.Time
	// Receipts commits the receipts of retrievals in groups (issue 16); nil: each retrieval
	// commits its own receipt.
	Receipts *receipts.Log
}

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
)

// Error codes of the store.
const (
	CodeFeatureDisabled  = "feature_disabled"
	CodeBaseNotFound     = "knowledge_base_not_found"
	CodeDocumentNotFound = "document_not_found"
	CodePersonalData     = "personal_data_in_knowledge"
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
	// refused with its kinds) or "mask" (stored masked, as turns are).
	PersonalData string `json:"personal_data"`
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
	case s.PersonalData != PersonalDataRefuse && s.PersonalData != PersonalDataMask:
		return invalid("settings.personal_data", `personal_data must be "refuse" or "mask"`)
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
// "knowledge_base_exists"); settings validated by Normalize. It leaves a knowledge receipt
// "base.create".
func (s *Service) CreateBase(ctx context.Context, p auth.Principal, req CreateBaseRequest) (Base, error) {
	if p.IsAgent() {
		return Base{}, fault.New(fault.Forbidden, "role_required", "creating a knowledge base needs a person key with role admin")
	}
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
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
	now := s.now()
	row := models.KnowledgeBase{ID: auth.NewID("kb"), SpaceID: p.SpaceID, Name: req.Name, Settings: mustJSON(st), CreatedBy: p.KeyID, CreatedAt: now}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "base.create", ActorKey: p.KeyID, ObjectIDs: []string{row.ID}}, now); err != nil {
			return err
		}
		taken, err := tx.NewSelect().Model((*models.KnowledgeBase)(nil)).Where("space_id = ? AND name = ?", p.SpaceID, req.Name).Exists(ctx)
		if err != nil {
			return err
		}
		if taken {
			return fault.New(fault.Conflict, CodeBaseExists, "a knowledge base of that name exists in this space").With("member", "name")
		}
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
		return err
	})
	if err != nil {
		return Base{}, err
	}
	return Base{ID: row.ID, Name: row.Name, Settings: st, CreatedAt: row.CreatedAt}, nil
}

// ListBases lists the bases of p's space by name (CanRead or CanWrite; the feature on).
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
	if err := s.DB.NewSelect().Model(&rows).Where("space_id = ?", p.SpaceID).OrderExpr("name ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: list bases: %w", err)
	}
	out := make([]Base, 0, len(rows))
	for _, r := range rows {
		b, err := toBase(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// base loads base id of spaceID: another space's base is fault.NotFound like a missing one
// (the tenant filter is in the query; a request cannot widen it).
func (s *Service) base(ctx context.Context, idb bun.IDB, spaceID, id string) (Base, error) {
	var row models.KnowledgeBase
	err := idb.NewSelect().Model(&row).Where("space_id = ? AND id = ?", spaceID, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Base{}, fault.New(fault.NotFound, CodeBaseNotFound, "no knowledge base with that id in this space")
	}
	if err != nil {
		return Base{}, fmt.Errorf("knowledge: load base: %w", err)
	}
	return toBase(row)
}

func toBase(r models.KnowledgeBase) (Base, error) {
	var st Settings
	if err := json.Unmarshal([]byte(r.Settings), &st); err != nil {
		return Base{}, fmt.Errorf("knowledge: base %s settings: %w", r.ID, err)
	}
	return Base{ID: r.ID, Name: r.Name, Settings: st, CreatedAt: r.CreatedAt.UTC()}, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
