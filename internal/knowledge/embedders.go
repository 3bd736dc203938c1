package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentmemory/agentmemory/models"
)

// ProbeTimeout bounds each embedding model's probe in CheckEmbedders.
const ProbeTimeout = 3 * time.Second

// EmbedderStatus is what CheckEmbedders found across every space: how many knowledge bases
// exist, and which of their embedding models did not answer (sorted; empty when all did).
type EmbedderStatus struct {
	Bases       int
	Unreachable []string
}

// CheckEmbedders asks the embedder once for each embedding model the stored bases use (one
// short text, at most ProbeTimeout each), so that a start can warn when bases exist whose
// embedder does not answer: their retrieval then answers 503 embedder_unavailable (or ranks
// lexically when a base allows it) and their ingests wait (issue 27: bases created under
// `dev --fake-model` after a plain restart). With no Embedder every model is unreachable.
// Errors are the database's; a model that fails is reported, not an error. It reads no
// space's content, and the result names models only.
func (s *Service) CheckEmbedders(ctx context.Context) (EmbedderStatus, error) {
	var rows []models.KnowledgeBase
	if err := s.DB.NewSelect().Model(&rows).Column("id", "settings").Scan(ctx); err != nil {
		return EmbedderStatus{}, fmt.Errorf("knowledge: list bases: %w", err)
	}
	st := EmbedderStatus{Bases: len(rows)}
	seen := map[string]bool{}
	for _, row := range rows {
		var set Settings
		if err := json.Unmarshal([]byte(row.Settings), &set); err != nil {
			return st, fmt.Errorf("knowledge: base settings: %w", err)
		}
		model := set.EmbeddingModel
		if model == "" {
			model = "nomic-embed-text" // Normalize's default
		}
		if seen[model] {
			continue
		}
		seen[model] = true
		if err := s.probe(ctx, model); err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			st.Unreachable = append(st.Unreachable, model)
		}
	}
	sort.Strings(st.Unreachable)
	return st, nil
}

// probe embeds one short text with model.
func (s *Service) probe(ctx context.Context, model string) error {
	if s.Embedder == nil {
		return errors.New("no embedder")
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	vecs, err := s.Embedder.Embed(ctx, model, []string{"agentmemory start check"})
	if err == nil && len(vecs) != 1 {
		err = errors.New("no vector")
	}
	return err
}
