package erasure

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/redact"
)

// Content-probe match kinds (issue 29 §1b): what tied a finding to the subject.
const (
	// MatchHandle is one of the subject's handles (e-mail, phone, document, username) written
	// in the text in any form the personal-data gate reads (plain, spelled out, spaced,
	// national or international phone, full-width...): the store can tie the item to the
	// subject without doubt, so the erasure erases it.
	MatchHandle = "handle"
	// MatchName is the subject's profile name only (case and accents folded): it may be
	// someone else of the same name, so the item is listed as residue for a person to decide.
	MatchName = "name"
)

// Needles is what a content probe looks for: the subject's canonical handles
// ("email:ana@example.com", "phone:+5511912345678") and profile names, with the space's
// default phone region. It exists only in memory (and sealed on the erasure row under the
// erasure's own key, destroyed when the erasure ends): never in logs, histories or
// certificates.
type Needles struct {
	Handles []string `json:"handles"`
	Names   []string `json:"names"`
	Region  string   `json:"region"`
}

// Empty reports whether n has nothing to look for.
func (n Needles) Empty() bool { return len(n.Handles) == 0 && len(n.Names) == 0 }

// Merge returns n with o's handles and names added (each once, sorted) and o's region when n
// has none.
func (n Needles) Merge(o Needles) Needles {
	out := Needles{Region: n.Region}
	if out.Region == "" {
		out.Region = o.Region
	}
	out.Handles = slices.Compact(slices.Sorted(slices.Values(append(append([]string{}, n.Handles...), o.Handles...))))
	out.Names = slices.Compact(slices.Sorted(slices.Values(append(append([]string{}, n.Names...), o.Names...))))
	return out
}

// Matcher finds the subject's handles and names in text with the personal-data gate's
// detectors (internal/redact): handles as KnownSubjects handles (every written form the gate
// reads, phones by national significant number), names as KnownSubjects names (NFKC,
// case-folded, accents stripped; one-word names under four letters are ignored, as the gate
// does). Its digests are keyed with a random per-matcher key, so the matcher holds no value
// in clear. A nil *Matcher matches nothing. Safe for concurrent use.
type Matcher struct {
	handles *redact.KnownSubjects
	names   *redact.KnownSubjects
	region  string
	empty   bool
}

// NewMatcher returns the matcher of n.
func NewMatcher(n Needles) *Matcher {
	m := &Matcher{handles: redact.NewKnownSubjects(randomKey()), names: redact.NewKnownSubjects(randomKey()),
		region: n.Region, empty: n.Empty()}
	for _, h := range n.Handles {
		m.handles.AddHandle(h)
	}
	for _, name := range n.Names {
		m.names.AddName(name)
	}
	return m
}

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+: it aborts the program instead)
	return k
}

// Match reports how text names the subject: MatchHandle when one of the subject's handles is
// in it (a handle wins over a name), MatchName when only a name is, "" when neither.
func (m *Matcher) Match(text string) string {
	if m == nil || m.empty || strings.TrimSpace(text) == "" {
		return ""
	}
	if slices.Contains(redact.Detect(text, redact.Options{DefaultRegion: m.region, Known: m.handles}), redact.KindSubject) {
		return MatchHandle
	}
	if slices.Contains(redact.Detect(text, redact.Options{DefaultRegion: m.region, Known: m.names}), redact.KindSubject) {
		return MatchName
	}
	return ""
}

// MatchAll is the strongest Match over texts (MatchHandle over MatchName over "").
func (m *Matcher) MatchAll(texts ...string) string {
	best := ""
	for _, t := range texts {
		switch m.Match(t) {
		case MatchHandle:
			return MatchHandle
		case MatchName:
			best = MatchName
		}
	}
	return best
}

// Finding is one item a content probe found: the store's item kind and id (as in Reach),
// where it looked (a table and column, never a value) and how it matched (MatchHandle or
// MatchName).
type Finding struct {
	Kind  string `json:"kind"`
	ID    string `json:"id"`
	Where string `json:"where"`
	Match string `json:"match"`
}

// ByMatch returns the findings of fs whose Match is match, in order.
func ByMatch(fs []Finding, match string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Match == match {
			out = append(out, f)
		}
	}
	return out
}

// IDsOf returns the ids of the findings of kind, in order.
func IDsOf(fs []Finding, kind string) []string {
	var out []string
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f.ID)
		}
	}
	return out
}

// ContentProber is a store's content probe (issue 29 §1b), part of every Eraser:
//   - Searched names what the probe reads ("agent_states.body (unsealed)"), for the
//     certificate; a store whose data is all sealed or hashed says so and finds nothing.
//   - ProbeContent searches, read only through idb, the store's readable text of t.SpaceID
//     (full-text indexes where it has them, unsealed columns otherwise) for t.Content and
//     returns one Finding per item that names the subject (nil Content: nothing).
//   - EraseFound deletes, inside tx, the items found (kind and id of each; what indexes or
//     caches them goes too) and returns what it deleted; an item already gone is skipped, a
//     kind it does not own is an error.
type ContentProber interface {
	Searched() string
	ProbeContent(ctx context.Context, idb bun.IDB, t Target) ([]Finding, error)
	EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []Finding) (Reach, error)
}
