package spaces

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// DocViews is the name of the "views" document (CTX-1).
const DocViews = "views"

// View limits (CTX-1).
const (
	MaxViews       = 64
	MaxViewTags    = 16
	MaxVocabulary  = 500
	maxViewNameLen = 64
)

// Views is the "views" document (CTX-1): each view names an ordered list of tags. A block read
// with view=<name> puts the notes carrying the view's first tag first, then those carrying its
// second, and so on (a note counts at its earliest tag), then the rest in AM-4's order. It is
// written like the other documents: by a direct PUT where the space allows it (role security
// or admin), else by a change request a second person holding role security approves.
type Views struct {
	Views []View `json:"views"`
}

// View is one view: Name (1-64 characters of a-z, 0-9, _ . : -, unique in the document) and
// Tags (1-16 distinct tags of the same alphabet), in the order the block takes them.
type View struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// viewTagPattern is the alphabet of view names and their tags (the notes' tag alphabet).
var viewTagPattern = regexp.MustCompile(`^[a-z0-9_.:-]{1,64}$`)

// ParseViews parses and validates a views document: unknown members, a name or tag outside
// the alphabet, a name declared twice, a view without tags or with more than MaxViewTags, a
// tag listed twice in a view, or more than MaxViews views are fault.Invalid naming the member
// (views[i].name, views[i].tags); nesting beyond strictjson.MaxPlainDepth is "json_too_deep".
func ParseViews(data []byte) (Views, error) {
	var d Views
	if err := strictjson.DecodeDepth(data, &d, strictjson.MaxPlainDepth); err != nil {
		return d, err
	}
	if len(d.Views) > MaxViews {
		return d, invalidMember("views", fmt.Sprintf("at most %d views", MaxViews))
	}
	seen := map[string]bool{}
	for i, v := range d.Views {
		at := fmt.Sprintf("views[%d]", i)
		if !viewTagPattern.MatchString(v.Name) || len(v.Name) > maxViewNameLen {
			return d, invalidMember(at+".name", "must be 1-64 characters of a-z, 0-9, _ . : -")
		}
		if seen[v.Name] {
			return d, invalidMember(at+".name", fmt.Sprintf("view %q is declared twice", v.Name))
		}
		seen[v.Name] = true
		if len(v.Tags) == 0 || len(v.Tags) > MaxViewTags {
			return d, invalidMember(at+".tags", fmt.Sprintf("a view lists 1-%d tags", MaxViewTags))
		}
		for j, t := range v.Tags {
			if !viewTagPattern.MatchString(t) {
				return d, invalidMember(at+".tags", "a tag is 1-64 characters of a-z, 0-9, _ . : -")
			}
			if slices.Contains(v.Tags[:j], t) {
				return d, invalidMember(at+".tags", fmt.Sprintf("tag %q is listed twice", t))
			}
		}
	}
	return d, nil
}

// Lookup returns the tags of the view named name, in order; ok is false when no view has
// that name.
func (d Views) Lookup(name string) (tags []string, ok bool) {
	for _, v := range d.Views {
		if v.Name == name {
			return v.Tags, true
		}
	}
	return nil, false
}

// Views returns the space's views document; written is false when it was never written (a
// block read then takes a view's name as one more tag, as before CTX-1). The result is shared
// with other callers: read it, never modify it.
func (d Documents) Views(ctx context.Context, spaceID string) (v Views, written bool, err error) {
	raw, err := d.raw(ctx, spaceID, DocViews)
	if err != nil || raw == "" {
		return Views{}, false, err
	}
	parsed, err := parseCached(DocViews, raw, func(b []byte) (any, error) { return ParseViews(b) })
	if err != nil {
		return Views{}, false, err
	}
	return parsed.(Views), true, nil
}

// normalizeViews is normalize for the views document.
func normalizeViews(body []byte) (string, error) {
	v, err := ParseViews(body)
	if err != nil {
		return "", err
	}
	if err := requireObject(body); err != nil {
		return "", err
	}
	if v.Views == nil {
		v.Views = []View{}
	}
	return marshal(v), nil
}

// Vocabulary is the set of tags a space declares in its object-types document (CTX-1): its
// type names, operations and systems. Empty when the space declares none of them.
func (d ObjectTypes) Vocabulary() map[string]bool {
	out := make(map[string]bool, len(d.Types)+len(d.Operations)+len(d.Systems))
	for _, t := range d.Types {
		out[t.Type] = true
	}
	for _, o := range d.Operations {
		out[o] = true
	}
	for _, s := range d.Systems {
		out[s] = true
	}
	return out
}

// validateVocabulary checks the object-types document's operations and systems: each at most
// MaxVocabulary distinct words of the tag alphabet (fault.Invalid naming the member).
func validateVocabulary(d ObjectTypes) error {
	for _, list := range []struct {
		member string
		words  []string
	}{{"operations", d.Operations}, {"systems", d.Systems}} {
		if len(list.words) > MaxVocabulary {
			return invalidMember(list.member, fmt.Sprintf("at most %d entries", MaxVocabulary))
		}
		for j, w := range list.words {
			if !viewTagPattern.MatchString(w) {
				return invalidMember(list.member, "an entry is 1-64 characters of a-z, 0-9, _ . : -")
			}
			if slices.Contains(list.words[:j], w) {
				return invalidMember(list.member, fmt.Sprintf("%q is listed twice", w))
			}
		}
	}
	return nil
}
