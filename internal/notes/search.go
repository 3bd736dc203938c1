package notes

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/models"
)

// Search limits (AM-14).
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
	maxQueryWords      = 16
)

// SearchRequest is GET /v1/agent-memory/search: Q (words, all of which must match), Tags
// (all of which the note must carry), Limit 1..50 (0 means 10), SourceID as in BlockRequest.
// Run names the run the search belongs to (CTX-3; nil: none): it returns the notes that fit
// what the run has left (searchInRun).
type SearchRequest struct {
	Q        string
	Tags     []string
	Limit    int
	SourceID string
	Run      *runs.Run
}

// SearchResult is the answer of a search: the matching notes, best first; in a run (CTX-3),
// Run is the run's figures after it and BudgetExhausted says no matching note fitted what the
// run had left (then Notes is empty).
type SearchResult struct {
	Enabled         bool         `json:"enabled"`
	Notes           []Note       `json:"notes"`
	Run             *runs.Report `json:"run,omitempty"`
	BudgetExhausted bool         `json:"budget_exhausted,omitempty"`
}

// The full-text query of each engine, side by side. Both select the notes table as n,
// restricted afterwards by the same visibility, status, expiry and tag rules as the block.
//
//   - SQLite: the FTS5 table notes_fts (title, body, tags; unicode61, diacritics removed),
//     matched with a query of quoted words (all must match), ranked by bm25.
//   - PostgreSQL: the generated tsvector column notes.search (to_tsvector('simple', ...)),
//     matched with plainto_tsquery('simple', words) (all must match), ranked by ts_rank.
//
// The 'simple' configuration neither stems nor drops stop words: notes are in any language.
const (
	sqliteMatch = `n.id IN (SELECT note_id FROM notes_fts WHERE notes_fts MATCH ?)`
	sqliteRank  = `(SELECT bm25(notes_fts) FROM notes_fts WHERE notes_fts MATCH ? AND notes_fts.note_id = n.id) ASC`
	pgMatch     = `n.search @@ plainto_tsquery('simple', ?)`
	pgRank      = `ts_rank(n.search, plainto_tsquery('simple', ?)) DESC`
)

// queryWords splits q into at most 16 words of letters and digits.
func queryWords(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if len(words) > maxQueryWords {
		words = words[:maxQueryWords]
	}
	return words
}

// Search finds the notes p may read by words and tags (AM-14): the same visibility, status
// and expiry rules as the block; no vectors. With no word and no tag it is fault.Invalid
// (member q). Every search leaves an agent_memory receipt "search" naming the notes
// delivered (never the query). Feature off: Enabled false and no notes.
func (s *Service) Search(ctx context.Context, p auth.Principal, req SearchRequest) (SearchResult, error) {
	words, err := checkSearch(&req)
	if err != nil {
		return SearchResult{}, err
	}
	v, err := s.reader(ctx, p, req.SourceID, false)
	if err != nil {
		return SearchResult{}, err
	}
	return s.search(ctx, p, v, req, words)
}

// checkSearch validates req (setting the default limit) and returns its query words.
func checkSearch(req *SearchRequest) ([]string, error) {
	if req.Limit == 0 {
		req.Limit = DefaultSearchLimit
	}
	if req.Limit < 1 || req.Limit > MaxSearchLimit {
		return nil, invalid("limit", "limit must be from 1 to %d", MaxSearchLimit)
	}
	if len([]rune(req.Q)) > 500 {
		return nil, invalid("q", "q is at most 500 characters")
	}
	if len(req.Tags) > MaxTags {
		return nil, invalid("tags", "at most %d tags", MaxTags)
	}
	for _, t := range req.Tags {
		if !tagPattern.MatchString(t) || len(t) > MaxTagLen {
			return nil, invalid("tags", "a tag is lower-case a-z, 0-9, _ . : -")
		}
	}
	words := queryWords(req.Q)
	if len(words) == 0 && len(req.Tags) == 0 {
		return nil, invalid("q", "search needs words in q or tags")
	}
	return words, req.Run.Validate()
}

// search runs a validated search as viewer v and records its receipt.
func (s *Service) search(ctx context.Context, p auth.Principal, v viewer, req SearchRequest, words []string) (SearchResult, error) {
	f, err := s.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		return SearchResult{}, err
	}
	if !f.AgentMemory.Enabled {
		return SearchResult{Notes: []Note{}}, nil
	}
	now := s.now()
	var rows []models.Note
	q := deliverable(s.DB.NewSelect().Model(&rows), v, now)
	for _, t := range req.Tags {
		q = q.Where("EXISTS (SELECT 1 FROM note_tags t WHERE t.note_id = n.id AND t.tag = ?)", t)
	}
	if len(words) > 0 {
		q = fullText(q, db.IsSQLite(s.DB), words)
	}
	if err := q.OrderExpr("n.id ASC").Limit(int64(req.Limit)).Scan(ctx); err != nil {
		return SearchResult{}, fmt.Errorf("notes: search: %w", err)
	}
	if rows, err = s.openNotes(ctx, rows); err != nil {
		return SearchResult{}, err
	}
	if req.Run != nil {
		return s.searchInRun(ctx, p, v, req, rows, len(words))
	}
	out := SearchResult{Enabled: true, Notes: make([]Note, 0, len(rows))}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		out.Notes = append(out.Notes, toNote(r))
		ids = append(ids, r.ID)
	}
	err = receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{
		Kind: receipts.KindAgentMemory, Action: "search", ActorKey: p.KeyID, ObjectIDs: ids,
		Detail: map[string]any{"count": len(ids), "words": len(words), "tags": len(req.Tags), "source_id": v.source},
	}, now)
	if err != nil {
		return SearchResult{}, err
	}
	return out, nil
}

// fullText adds each engine's match and rank to q (see sqliteMatch/pgMatch).
func fullText(q *bun.SelectQuery, sqlite bool, words []string) *bun.SelectQuery {
	if sqlite {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = `"` + w + `"` // words hold only letters and digits: no quote to escape
		}
		match := strings.Join(quoted, " ")
		return q.Where(sqliteMatch, match).OrderExpr(sqliteRank, match)
	}
	text := strings.Join(words, " ")
	return q.Where(pgMatch, text).OrderExpr(pgRank, text)
}
