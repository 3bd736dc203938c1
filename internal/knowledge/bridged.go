package knowledge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/models"
)

// ActionRetrieveBridged is the knowledge receipt, in the chain of the space whose bases were
// read, of a retrieval through a bridge (issue 31, SH-3); the reading space's chain has the
// usual "retrieve" naming the bridges and the other space.
const ActionRetrieveBridged = "retrieve.bridged"

// bridged reports whether req names another space than p's (RetrieveRequest.Space).
func (req RetrieveRequest) bridged(p auth.Principal) bool {
	return req.Space != "" && req.Space != p.SpaceID
}

// crossing is what a bridged retrieval may read: the other space's base ids (in request
// order, deduplicated) and the bridges that let them cross (sorted, deduplicated).
type crossing struct {
	kbIDs   []string
	bridges []string
}

// retrieveBridged serves req, naming space req.Space other than p's, whose KBs are base
// names of that space: each must be listed, with p's agent, by a bridge from that space to
// p's that both spaces' bridges documents hold with the same terms
// (spaces.Documents.ActiveKnowledgeBridge, read on every call). The other space's reader
// grants name its own agents and do not apply; the bridge's bases take their place, and the
// retrieval runs as retrieve does with the other space as tenant and those base ids only
// (chunkScope keeps every query to them). A run (req.Run) is the reader's: a run of p's
// space, drawn on as an unbridged retrieval draws (inRun: the context cut to what the run has
// left, the answer's run figures), and named in the reader's receipt only. Receipted in both
// chains (ActionRetrieveBridged in the other's, "retrieve" in p's). No bridge, a base it does
// not list or the other space does not have, the other space's knowledge off: the one
// errBaseNotFound. A person key is fault.Forbidden "role_required".
func (s *Service) retrieveBridged(ctx context.Context, p auth.Principal, req RetrieveRequest) (Retrieval, error) {
	if !p.IsAgent() {
		return Retrieval{}, fault.New(fault.Forbidden, "role_required", "another space's knowledge bases are retrieved with agent keys, through a bridge")
	}
	if err := checkBridged(req); err != nil {
		return Retrieval{}, err
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return Retrieval{}, err
	}
	cr, err := s.crossingBases(ctx, p, req)
	if err != nil {
		return Retrieval{}, err
	}
	inner := req
	inner.Space, inner.KBs, inner.Run = "", cr.kbIDs, nil
	// The other space as tenant, without an agent: its reader grants (of its own agents) do
	// not apply, the bridge's bases (inner.KBs, in every query's chunkScope) do.
	src := auth.Principal{SpaceID: req.Space, KeyID: p.KeyID}
	out, order, now, err := s.retrieve(ctx, src, inner)
	if err != nil {
		return Retrieval{}, err
	}
	return s.answerInRun(ctx, p, req.Run, out, func(d *runs.Draw, out Retrieval) error {
		return s.receiptBridged(ctx, p, req.Space, cr, d, out, order, req.MaxTokens, now)
	})
}

// checkBridged checks what a bridged retrieval refuses before it reads anything: the run
// (runs.Run.Validate), kbs 1..MaxBasesPerQuery, and the members retrieve checks (query,
// min_score, filters), so a bad request is the same 400 with or without a bridge.
func checkBridged(req RetrieveRequest) error {
	if err := req.Run.Validate(); err != nil {
		return err
	}
	if strings.TrimSpace(req.Query) == "" || len([]rune(req.Query)) > MaxQueryRunes {
		return invalid("query", "query is 1-%d characters", MaxQueryRunes)
	}
	if len(req.KBs) == 0 || len(req.KBs) > MaxBasesPerQuery {
		return invalid("kbs", "kbs names 1-%d knowledge bases", MaxBasesPerQuery)
	}
	if req.MinScore < 0 || req.MinScore > 1 {
		return invalid("min_score", "min_score is from 0 to 1")
	}
	return req.Filters.validate()
}

// crossingBases resolves req.KBs (base names of space req.Space) through active bridges to
// p's agent, then to that space's base ids; anything missing is errBaseNotFound.
func (s *Service) crossingBases(ctx context.Context, p auth.Principal, req RetrieveRequest) (crossing, error) {
	var cr crossing
	var names []string
	for _, name := range req.KBs {
		if slices.Contains(names, name) {
			continue
		}
		b, ok, err := s.Docs.ActiveKnowledgeBridge(ctx, req.Space, p.SpaceID, name, p.Agent)
		if err != nil {
			return crossing{}, err
		}
		if !ok {
			return crossing{}, errBaseNotFound()
		}
		names = append(names, name)
		if !slices.Contains(cr.bridges, b.ID) {
			cr.bridges = append(cr.bridges, b.ID)
		}
	}
	slices.Sort(cr.bridges)
	if err := s.enabled(ctx, req.Space); err != nil {
		if fault.As(err) != nil {
			return crossing{}, errBaseNotFound() // its settings are its own
		}
		return crossing{}, err
	}
	var rows []models.KnowledgeBase
	if err := s.DB.NewSelect().Model(&rows).Column("id", "name").Where("space_id = ? AND name IN (?)", req.Space, bun.In(names)).Scan(ctx); err != nil {
		return crossing{}, fmt.Errorf("knowledge: bridged bases: %w", err)
	}
	for _, name := range names {
		i := slices.IndexFunc(rows, func(r models.KnowledgeBase) bool { return r.Name == name })
		if i < 0 {
			return crossing{}, errBaseNotFound()
		}
		cr.kbIDs = append(cr.kbIDs, rows[i].ID)
	}
	return cr, nil
}

// receiptBridged records a bridged retrieval in both spaces' chains before it is answered:
// ActionRetrieveBridged in from's naming the bridges, the reading space and the chunks, then
// "retrieve" in p's naming the bridges, from, the chunks and the run d draws on (run_id and
// run_tokens, runs.Draw.Detail; nil: none), never the query. The run is the reader's own and
// is not named in from's chain.
func (s *Service) receiptBridged(ctx context.Context, p auth.Principal, from string, cr crossing, d *runs.Draw, out Retrieval, order []string, maxTokens int, now time.Time) error {
	items := make([]receipts.ManifestItem, 0, len(out.Chunks))
	inContext := 0
	for _, c := range out.Chunks {
		items = append(items, receipts.ManifestItem{ID: c.ChunkID})
		if c.InContext {
			inContext++
		}
	}
	detail := func(side string, space string) map[string]any {
		return map[string]any{"kbs": order, "mode": out.Mode, "chunks": len(items), "in_context": inContext, "context_tokens": out.ContextTokens,
			"bridges": cr.bridges, side: space}
	}
	manifest := func() *receipts.Manifest {
		return receipts.NewManifest(receipts.ManifestChunks, "", nil, maxTokens, items)
	}
	err := receipts.Record(ctx, s.Receipts, s.DB, from, receipts.Entry{Kind: receipts.KindKnowledge, Action: ActionRetrieveBridged, ActorKey: p.KeyID,
		ObjectIDs: cr.bridges, Manifest: manifest(), Detail: detail("reader_space", p.SpaceID)}, now)
	if err != nil {
		return err
	}
	mine := detail("from_space", from)
	d.Detail(mine, out.ContextTokens)
	return receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "retrieve", ActorKey: p.KeyID,
		ObjectIDs: cr.bridges, Manifest: manifest(), Detail: mine}, now)
}

// errBaseNotFound is the one answer to a bridged retrieval that finds nothing it may read:
// the status and body of a base that does not exist (loadBase's).
func errBaseNotFound() error {
	return fault.New(fault.NotFound, CodeBaseNotFound, "no knowledge base with that id in this space that this key may read")
}
