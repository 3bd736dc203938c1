package notes

import (
	"context"
	"slices"
	"strings"

	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/models"
)

// resolveView reads the space's views document and sets req's view tags (CTX-1). With a
// views document, req.View must name one of its views (else fault.Invalid naming view) and
// the view's tags order the block; without one (never written), the view's name is one more
// tag, as before views existed, so a view= from an older client keeps its meaning.
func (s *Service) resolveView(ctx context.Context, spaceID string, req *BlockRequest) error {
	req.viewTags, req.viewDefined = nil, false
	if req.View == "" {
		return nil
	}
	views, written, err := s.Docs.Views(ctx, spaceID)
	if err != nil || !written {
		return err
	}
	tags, ok := views.Lookup(req.View)
	if !ok {
		return invalid("view", "no view %q in the space's views document", req.View)
	}
	req.viewTags, req.viewDefined = tags, true
	return nil
}

// viewKey is the part of a block's cache key and ETag that names the view's definition: the
// view's tags in order when the views document defines it, "" otherwise. A change of the
// view's tags changes the ETag even where the block's bytes do not change.
func viewKey(req BlockRequest) string {
	if !req.viewDefined {
		return ""
	}
	return "view-tags:" + strings.Join(req.viewTags, ",")
}

// sortForBlock puts rows in the block's order (AM-4, CTX-1): (1) by the view's tags, a note
// counting at its earliest view tag (notes with none after all that have one); (2) notes
// carrying a requested tag (or, without a views document, the view's name) first; (3) higher
// version first; (4) older first; (5) id. The order is total, so the same notes and request
// always give the same block.
func sortForBlock(rows []models.Note, req BlockRequest) {
	flat := slices.Clone(req.Tags)
	if req.View != "" && !req.viewDefined {
		flat = append(flat, req.View)
	}
	type key struct {
		rank  int
		match bool
	}
	keys := make(map[string]key, len(rows))
	for _, r := range rows {
		tags := noterows.DecodeTags(r.Tags)
		k := key{rank: len(req.viewTags)}
		for i, vt := range req.viewTags {
			if slices.Contains(tags, vt) {
				k.rank = i
				break
			}
		}
		k.match = slices.ContainsFunc(tags, func(t string) bool { return slices.Contains(flat, t) })
		keys[r.ID] = k
	}
	slices.SortFunc(rows, func(a, b models.Note) int {
		ka, kb := keys[a.ID], keys[b.ID]
		switch {
		case ka.rank != kb.rank:
			return ka.rank - kb.rank
		case ka.match != kb.match:
			if ka.match {
				return -1
			}
			return 1
		case a.Version != b.Version:
			return b.Version - a.Version
		case !a.CreatedAt.Equal(b.CreatedAt):
			return a.CreatedAt.Compare(b.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
}
