package notes

import (
	"context"
)

// UnknownTags returns the tags, in their order, that are none of the space's vocabulary: the
// type names, operations and systems of its object-types document (CTX-1). A note with such
// a tag is stored all the same; the write answers name them (unknown_tags) so that a typo
// does not silently keep a note out of every view. A space that declares no vocabulary at all
// (no types, operations or systems) checks nothing: the answer is nil. Errors are the
// document read's.
func (s *Service) UnknownTags(ctx context.Context, spaceID string, tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	types, err := s.Docs.ObjectTypes(ctx, spaceID)
	if err != nil {
		return nil, err
	}
	known := types.Vocabulary()
	if len(known) == 0 {
		return nil, nil
	}
	var out []string
	for _, t := range tags {
		if !known[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// WrittenTags returns the tags a write answered by res stores or proposes: the stored note's
// (a duplicate's: the existing note's), else those of the write's input (in), else, for an
// edit held as a proposal, those of its patch (nil: the edit keeps the note's tags, reported
// when it was written).
func WrittenTags(res WriteResult, in []string, patch *[]string) []string {
	switch {
	case res.Note != nil:
		return res.Note.Tags
	case in != nil:
		return in
	case patch != nil:
		return *patch
	}
	return nil
}
