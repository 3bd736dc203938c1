package spaces

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"

	"github.com/agentmemory/agentmemory/internal/boardrules"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// OwnershipShared is the ownership of a board type (issue 31): a board of findings many
// agents share, only by grant (the board-grants document).
const OwnershipShared = "shared"

// ConflictRule is a board field's conflict rule (issue 31, internal/boardrules): Rule is one
// of reject, ours, theirs, merge_by_key, union, max, min, sum or cel; Then is merge_by_key's
// rule for a key both sides changed (reject, ours, theirs, max, min, sum; default reject);
// Expr is a cel rule's expression over base, ours and theirs.
type ConflictRule struct {
	Rule string `json:"rule"`
	Then string `json:"then,omitempty"`
	Expr string `json:"expr,omitempty"`
}

// BoardSpec is a board type's board section: MaxBytes caps a board's stored body (default
// DefaultMaxBytes, at most MaxMaxBytes, as working memory's cap); History is how many past
// versions a board keeps as bases of later merges (default DefaultBoardHistory, at most
// MaxBoardHistory; a write whose base is older is settled as reject); Lease is "required"
// (the default: while a lease is held, writes without it are refused) or "advisory".
type BoardSpec struct {
	MaxBytes int    `json:"max_bytes,omitempty"`
	History  int    `json:"history,omitempty"`
	Lease    string `json:"lease,omitempty"`
}

// Board limits (issue 31).
const (
	DefaultBoardHistory = 32
	MaxBoardHistory     = 256
)

// Lease modes of a board type or working-memory schema (issue 31).
const (
	LeaseRequired = "required"
	LeaseAdvisory = "advisory"
)

// validateBoardType checks the board members of type t at "at": a shared type's board
// section, its fields' conflict rules (each compiled: a cel rule that does not compile is
// refused here, when the document is written) and subject fields; any other ownership takes
// none of them. Errors are fault.Invalid naming the member.
func validateBoardType(t ObjectType, at string) error {
	shared := t.Ownership == OwnershipShared
	if !shared && t.Board != nil {
		return invalidMember(at+".board", "only a type with ownership shared takes a board section")
	}
	if b := t.Board; b != nil {
		if b.MaxBytes < 0 || b.MaxBytes > MaxMaxBytes {
			return invalidMember(at+".board.max_bytes", fmt.Sprintf("must be between 1 and %d", MaxMaxBytes))
		}
		if b.History < 0 || b.History > MaxBoardHistory {
			return invalidMember(at+".board.history", fmt.Sprintf("must be between 1 and %d", MaxBoardHistory))
		}
		if b.Lease != "" && b.Lease != LeaseRequired && b.Lease != LeaseAdvisory {
			return invalidMember(at+".board.lease", `must be "required" or "advisory"`)
		}
	}
	names := make([]string, 0, len(t.Fields))
	for name := range t.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f, fat := t.Fields[name], at+".fields."+name
		if !shared && (f.Conflict != nil || f.Subject) {
			return invalidMember(fat, "conflict and subject are for the fields of a type with ownership shared")
		}
		if f.Subject && !slices.Contains([]string{"string", "array", "json"}, f.Type) {
			return invalidMember(fat+".subject", "a subject field is a string (a customer handle) or an array of them")
		}
		if c := f.Conflict; c != nil {
			if _, err := boardrules.Check(c.Rule, c.Then, c.Expr, f.Type); err != nil {
				return invalidMember(fat+".conflict", err.Error())
			}
		}
	}
	return nil
}

// BoardType returns the board type named typ (ownership shared); ok is false when the
// registry declares none.
func (d ObjectTypes) BoardType(typ string) (ObjectType, bool) {
	for _, t := range d.Types {
		if t.Type == typ && t.Ownership == OwnershipShared {
			return t, true
		}
	}
	return ObjectType{}, false
}

// BoardTypes returns the registry's board types in declaration order.
func (d ObjectTypes) BoardTypes() []ObjectType {
	var out []ObjectType
	for _, t := range d.Types {
		if t.Ownership == OwnershipShared {
			out = append(out, t)
		}
	}
	return out
}

// BoardMaxBytes is a board type's cap on a board's stored body.
func (t ObjectType) BoardMaxBytes() int {
	if t.Board == nil || t.Board.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return t.Board.MaxBytes
}

// BoardHistory is how many past versions a board of type t keeps.
func (t ObjectType) BoardHistory() int {
	if t.Board == nil || t.Board.History == 0 {
		return DefaultBoardHistory
	}
	return t.Board.History
}

// LeaseAdvisory reports whether t's leases are advisory: writes without the lease are not
// refused while one is held (a board type's board.lease, a schema's agent_state.lease).
func (t ObjectType) LeaseAdvisory() bool {
	if t.Board != nil {
		return t.Board.Lease == LeaseAdvisory
	}
	return t.AgentState != nil && t.AgentState.Lease == LeaseAdvisory
}

// ConflictRules compiles the conflict rules of t's fields (boardrules.Rule by field name; a
// field without a rule is absent, which boardrules.Merge reads as reject). A stored document
// was checked when written, so an error here is a corrupt document.
func (t ObjectType) ConflictRules() (map[string]boardrules.Rule, error) {
	out := map[string]boardrules.Rule{}
	for name, f := range t.Fields {
		if f.Conflict == nil {
			continue
		}
		r, err := boardrules.Check(f.Conflict.Rule, f.Conflict.Then, f.Conflict.Expr, f.Type)
		if err != nil {
			return nil, fmt.Errorf("spaces: field %s: %w", name, err)
		}
		out[name] = r
	}
	return out, nil
}

// DocBoardGrants is the document of a space's board grants (issue 31): who may read or
// write which boards. It changes like every document (a direct PUT where the space allows
// it, else a change request a second person holding role security approves), and through
// POST /v1/boards/{type}/grants, which does the same.
const DocBoardGrants = "board-grants"

// BoardGrants is the board-grants document.
type BoardGrants struct {
	Grants []BoardGrant `json:"grants"`
}

// BoardGrant lets one agent (Agent, an agent key's agent name) or every agent of one vendor
// (Vendor) read ("read") or read and write ("read_write") the boards of Type whose id matches
// Boards (a glob as path.Match reads it: * matches any run of characters, ? one, [a-z] a
// class; empty: every board of the type). ID ("bg_...") names it for revocation. Exactly one of Agent or Vendor.
type BoardGrant struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Agent  string `json:"agent,omitempty"`
	Vendor string `json:"vendor,omitempty"`
	Access string `json:"access"`
	Boards string `json:"boards,omitempty"`
}

// Board access levels.
const (
	AccessRead      = "read"
	AccessReadWrite = "read_write"
)

var grantIDPattern = regexp.MustCompile(`^bg_[A-Za-z0-9_-]{1,64}$`)
var grantNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$`)

// ParseBoardGrants parses and validates a board-grants document: unknown members, a grant
// without an id, with both or neither of agent and vendor, an access other than read or
// read_write, a malformed pattern or a repeated id are fault.Invalid naming the member.
func ParseBoardGrants(data []byte) (BoardGrants, error) {
	var d BoardGrants
	if err := strictjson.DecodeDepth(data, &d, strictjson.MaxPlainDepth); err != nil {
		return d, err
	}
	seen := map[string]bool{}
	for i, g := range d.Grants {
		at := fmt.Sprintf("grants[%d]", i)
		if !grantIDPattern.MatchString(g.ID) || seen[g.ID] {
			return d, invalidMember(at+".id", "must be a distinct bg_... id")
		}
		seen[g.ID] = true
		if !typeNamePattern.MatchString(g.Type) {
			return d, invalidMember(at+".type", "must name a type (1-64 characters of a-z, 0-9, _ . -)")
		}
		if (g.Agent == "") == (g.Vendor == "") {
			return d, invalidMember(at+".agent", "give exactly one of agent or vendor")
		}
		if (g.Agent != "" && !grantNamePattern.MatchString(g.Agent)) || (g.Vendor != "" && !grantNamePattern.MatchString(g.Vendor)) {
			return d, invalidMember(at+".agent", "agent and vendor are 1-128 characters of letters, digits and _ . : @ -")
		}
		if g.Access != AccessRead && g.Access != AccessReadWrite {
			return d, invalidMember(at+".access", `must be "read" or "read_write"`)
		}
		if _, err := path.Match(g.Boards, ""); err != nil || len(g.Boards) > 256 {
			return d, invalidMember(at+".boards", "must be a glob pattern of at most 256 characters (e.g. incident-*)")
		}
	}
	if d.Grants == nil {
		d.Grants = []BoardGrant{}
	}
	return d, nil
}

// Allows reports whether g lets an agent of agent and vendor have access (AccessRead or
// AccessReadWrite) to board id of typ. Sharing a vendor with a granted agent, or a team, or a
// prompt, grants nothing: only a grant naming the agent or its vendor does.
func (g BoardGrant) Allows(typ, id, agent, vendor, access string) bool {
	if g.Type != typ {
		return false
	}
	if !(g.Agent != "" && g.Agent == agent) && !(g.Vendor != "" && g.Vendor == vendor) {
		return false
	}
	if access == AccessReadWrite && g.Access != AccessReadWrite {
		return false
	}
	if g.Boards == "" {
		return true
	}
	ok, err := path.Match(g.Boards, id)
	return err == nil && ok
}

// BoardGrants returns the space's board-grants document, read from the store on every call
// (a grant or a revocation is in force on the next request on every replica); no grants when
// never written.
func (d Documents) BoardGrants(ctx context.Context, spaceID string) (BoardGrants, error) {
	raw, err := d.raw(ctx, spaceID, DocBoardGrants)
	if err != nil {
		return BoardGrants{}, err
	}
	if raw == "" {
		return BoardGrants{Grants: []BoardGrant{}}, nil
	}
	v, err := parseCached(DocBoardGrants, raw, func(b []byte) (any, error) { return ParseBoardGrants(b) })
	if err != nil {
		return BoardGrants{}, err
	}
	return v.(BoardGrants), nil
}
