package spaces

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"

	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// DocBridges is the document of a space's bridges (issue 31, SH-3): which boards and
// knowledge bases of one space the named agents of another may read. A bridge is in force only while both spaces'
// bridges documents hold it with the same terms, and each side's document changes only by a
// change request a second person holding role security approves (never a direct PUT), so
// a bridge needs both sides' security people; removing it from either side ends it.
const DocBridges = "bridges"

// Bridges is the bridges document.
type Bridges struct {
	Bridges []Bridge `json:"bridges"`
}

// Bridge lets the agents named in Agents, agent keys of space To, read (never write) the
// boards of space From that Boards lists and retrieve from (never ingest into or delete
// from) its knowledge bases that KnowledgeBases names by base name. A bridge lists at least
// one board set or base. ID ("br_...") is the same on both sides: the
// security people of the two spaces agree on it and on the terms out of band, and each side
// proposes the same bridge in its own document. A bridge's terms are compared in their
// canonical form (agents, boards and bases sorted, absent lists empty), so both sides may
// list them in any order.
type Bridge struct {
	ID             string         `json:"id"`
	From           string         `json:"from"`
	To             string         `json:"to"`
	Agents         []string       `json:"agents"`
	Boards         []BridgeBoards `json:"boards"`
	KnowledgeBases []string       `json:"knowledge_bases"`
}

// BridgeBoards names boards that cross a bridge: those of board type Type whose id matches
// IDs (a glob as path.Match reads it, as a board grant's pattern; empty: every board of the
// type).
type BridgeBoards struct {
	Type string `json:"type"`
	IDs  string `json:"ids,omitempty"`
}

// Bridge limits.
const (
	MaxBridges        = 100
	MaxBridgeAgents   = 50
	MaxBridgeBoardSet = 50
	MaxBridgeBases    = 10
)

var (
	bridgeIDPattern = regexp.MustCompile(`^br_[A-Za-z0-9_-]{1,64}$`)
	spaceIDPattern  = regexp.MustCompile(`^sp_[A-Za-z0-9_-]{1,64}$`)
	// baseNamePattern is a knowledge base's name (as internal/knowledge checks it).
	baseNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
)

// ParseBridges parses and validates a bridges document, returning it in canonical form (each
// bridge's agents and boards sorted and without repeats): unknown members, more than
// MaxBridges bridges, a malformed or repeated id, from or to not a space id or both the same,
// no agents, neither boards nor knowledge bases (or more than MaxBridgeAgents /
// MaxBridgeBoardSet / MaxBridgeBases), a malformed agent name, type, pattern or base name are
// fault.Invalid naming the member.
func ParseBridges(data []byte) (Bridges, error) {
	var d Bridges
	if err := strictjson.DecodeDepth(data, &d, strictjson.MaxPlainDepth); err != nil {
		return d, err
	}
	if len(d.Bridges) > MaxBridges {
		return d, invalidMember("bridges", fmt.Sprintf("at most %d bridges", MaxBridges))
	}
	seen := map[string]bool{}
	for i := range d.Bridges {
		b, at := &d.Bridges[i], fmt.Sprintf("bridges[%d]", i)
		if !bridgeIDPattern.MatchString(b.ID) || seen[b.ID] {
			return d, invalidMember(at+".id", "must be a distinct br_... id")
		}
		seen[b.ID] = true
		if err := checkBridge(*b, at); err != nil {
			return d, err
		}
		canonical(b)
	}
	if d.Bridges == nil {
		d.Bridges = []Bridge{}
	}
	return d, nil
}

// checkBridge validates one bridge's spaces, agents and boards at "at".
func checkBridge(b Bridge, at string) error {
	if !spaceIDPattern.MatchString(b.From) {
		return invalidMember(at+".from", "must be a space id (sp_...)")
	}
	if !spaceIDPattern.MatchString(b.To) || b.To == b.From {
		return invalidMember(at+".to", "must be another space's id (sp_...)")
	}
	if len(b.Agents) == 0 || len(b.Agents) > MaxBridgeAgents {
		return invalidMember(at+".agents", fmt.Sprintf("name 1-%d agents of the reading space", MaxBridgeAgents))
	}
	for j, a := range b.Agents {
		if !grantNamePattern.MatchString(a) {
			return invalidMember(fmt.Sprintf("%s.agents[%d]", at, j), "an agent name is 1-128 characters of letters, digits and _ . : @ -")
		}
	}
	if len(b.Boards) == 0 && len(b.KnowledgeBases) == 0 {
		return invalidMember(at+".boards", "list the boards (or knowledge_bases) that may cross")
	}
	if len(b.Boards) > MaxBridgeBoardSet {
		return invalidMember(at+".boards", fmt.Sprintf("list at most %d board types (and id patterns) that may cross", MaxBridgeBoardSet))
	}
	if err := checkBridgeBases(b.KnowledgeBases, at); err != nil {
		return err
	}
	for j, bb := range b.Boards {
		bat := fmt.Sprintf("%s.boards[%d]", at, j)
		if !typeNamePattern.MatchString(bb.Type) {
			return invalidMember(bat+".type", "must name a type (1-64 characters of a-z, 0-9, _ . -)")
		}
		if _, err := path.Match(bb.IDs, ""); err != nil || len(bb.IDs) > 256 {
			return invalidMember(bat+".ids", "must be a glob pattern of at most 256 characters (e.g. incident-*)")
		}
	}
	return nil
}

// checkBridgeBases validates a bridge's knowledge base names at "at".
func checkBridgeBases(names []string, at string) error {
	if len(names) > MaxBridgeBases {
		return invalidMember(at+".knowledge_bases", fmt.Sprintf("list at most %d knowledge bases that may cross", MaxBridgeBases))
	}
	for j, n := range names {
		if !baseNamePattern.MatchString(n) {
			return invalidMember(fmt.Sprintf("%s.knowledge_bases[%d]", at, j), "must name a knowledge base (1-64 characters of a-z, 0-9, _ . -)")
		}
	}
	return nil
}

// canonical sorts b's agents, boards and bases and drops repeats, so two sides' terms compare
// equal however each listed them (an absent list is empty).
func canonical(b *Bridge) {
	if b.Boards == nil {
		b.Boards = []BridgeBoards{}
	}
	if b.KnowledgeBases == nil {
		b.KnowledgeBases = []string{}
	}
	sort.Strings(b.KnowledgeBases)
	b.KnowledgeBases = slices.Compact(b.KnowledgeBases)
	sort.Strings(b.Agents)
	b.Agents = slices.Compact(b.Agents)
	sort.Slice(b.Boards, func(i, j int) bool {
		if b.Boards[i].Type != b.Boards[j].Type {
			return b.Boards[i].Type < b.Boards[j].Type
		}
		return b.Boards[i].IDs < b.Boards[j].IDs
	})
	b.Boards = slices.Compact(b.Boards)
}

// checkBridgesOf refuses a bridges document of space spaceID holding a bridge that space is
// neither side of (fault.Invalid naming bridges[i].from).
func checkBridgesOf(d Bridges, spaceID string) error {
	for i, b := range d.Bridges {
		if b.From != spaceID && b.To != spaceID {
			return invalidMember(fmt.Sprintf("bridges[%d].from", i), "one side of a bridge is this space: from (its boards are read) or to (its agents read)")
		}
	}
	return nil
}

// SameTerms reports whether b and o are the same bridge with the same terms (both in
// canonical form, as ParseBridges returns them).
func (b Bridge) SameTerms(o Bridge) bool {
	x, err1 := json.Marshal(b)
	y, err2 := json.Marshal(o)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// Allows reports whether b lets agent (an agent key's agent name of space b.To) read board
// id of typ in space b.From.
func (b Bridge) Allows(typ, id, agent string) bool {
	if !slices.Contains(b.Agents, agent) {
		return false
	}
	for _, bb := range b.Boards {
		if bb.Type != typ {
			continue
		}
		if bb.IDs == "" {
			return true
		}
		if ok, err := path.Match(bb.IDs, id); err == nil && ok {
			return true
		}
	}
	return false
}

// AllowsBase reports whether b lets agent (an agent key's agent name of space b.To) retrieve
// from the knowledge base named base of space b.From.
func (b Bridge) AllowsBase(base, agent string) bool {
	return slices.Contains(b.Agents, agent) && slices.Contains(b.KnowledgeBases, base)
}

// Find returns the bridge of d named id; ok is false when d holds none.
func (d Bridges) Find(id string) (Bridge, bool) {
	for _, b := range d.Bridges {
		if b.ID == id {
			return b, true
		}
	}
	return Bridge{}, false
}

// Bridges returns the space's bridges document, read from the store on every call (a bridge
// approved or removed on either side is in force on the next request on every replica); no
// bridges when never written (as for a space id that does not exist).
func (d Documents) Bridges(ctx context.Context, spaceID string) (Bridges, error) {
	raw, err := d.raw(ctx, spaceID, DocBridges)
	if err != nil {
		return Bridges{}, err
	}
	if raw == "" {
		return Bridges{Bridges: []Bridge{}}, nil
	}
	v, err := parseCached(DocBridges, raw, func(b []byte) (any, error) { return ParseBridges(b) })
	if err != nil {
		return Bridges{}, err
	}
	return v.(Bridges), nil
}

// ActiveBridge returns the bridge from space from to space to that lets agent read board id
// of typ, when both spaces' bridges documents hold it with the same terms; ok is false
// otherwise (no such space, no such bridge, one side only, terms that differ, an agent or
// board it does not list).
func (d Documents) ActiveBridge(ctx context.Context, from, to, typ, id, agent string) (Bridge, bool, error) {
	return d.activeBridge(ctx, from, to, func(b Bridge) bool { return b.Allows(typ, id, agent) })
}

// ActiveKnowledgeBridge returns the bridge from space from to space to that lets agent
// retrieve from the knowledge base named base, when both spaces' bridges documents hold it
// with the same terms; ok is false otherwise, as for ActiveBridge.
func (d Documents) ActiveKnowledgeBridge(ctx context.Context, from, to, base, agent string) (Bridge, bool, error) {
	return d.activeBridge(ctx, from, to, func(b Bridge) bool { return b.AllowsBase(base, agent) })
}

// activeBridge is the first bridge of to's document from from to to that allows accepts and
// that from's document holds with the same terms (both read from the store on every call).
func (d Documents) activeBridge(ctx context.Context, from, to string, allows func(Bridge) bool) (Bridge, bool, error) {
	mine, err := d.Bridges(ctx, to)
	if err != nil {
		return Bridge{}, false, err
	}
	for _, b := range mine.Bridges {
		if b.From != from || b.To != to || !allows(b) {
			continue
		}
		theirs, err := d.Bridges(ctx, from)
		if err != nil {
			return Bridge{}, false, err
		}
		if o, ok := theirs.Find(b.ID); ok && o.SameTerms(b) {
			return b, true, nil
		}
	}
	return Bridge{}, false, nil
}
