package boards

import (
	"context"
	"encoding/json"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// GrantRequest is the body of POST /v1/boards/{type}/grants: exactly one of Agent (an agent
// key's agent name) or Vendor (every agent key of that vendor), Access ("read" or
// "read_write") and Boards (an id pattern, path.Match's glob; empty: every board of the type).
type GrantRequest struct {
	Agent  string `json:"agent"`
	Vendor string `json:"vendor"`
	Access string `json:"access"`
	Boards string `json:"boards"`
}

// GrantResult is the answer of a grant or a revocation: the grant, and either Applied (the
// board-grants document was written at Version: in force on the next request on every
// replica) or the pending change request (ChangeID) a second person holding role security
// approves, where the space's documents change only through change requests.
type GrantResult struct {
	Grant    spaces.BoardGrant `json:"grant"`
	Applied  bool              `json:"applied"`
	Version  int64             `json:"version,omitempty"`
	ChangeID string            `json:"change_id,omitempty"`
}

// CodeGrantNotFound (404): no grant of that id on the type.
const CodeGrantNotFound = "board_grant_not_found"

// Grant adds a grant on board type typ (issue 31): a person key with role admin; the type
// declared with ownership shared (fault.NotFound CodeTypeNotFound); the grant validated as
// the board-grants document validates it (fault.Invalid naming grants[i].<member>). Where
// the space allows a direct PUT the document is written at once, with its document.put
// receipt (detail: the grant's id and type); else a change request is proposed.
func (s *Service) Grant(ctx context.Context, p auth.Principal, typ string, req GrantRequest) (GrantResult, error) {
	g := spaces.BoardGrant{ID: auth.NewID("bg"), Type: typ, Agent: req.Agent, Vendor: req.Vendor, Access: req.Access, Boards: req.Boards}
	res, err := s.changeGrants(ctx, p, typ, "grant", func(doc *spaces.BoardGrants) error {
		doc.Grants = append(doc.Grants, g)
		return nil
	})
	res.Grant = g
	return res, err
}

// Revoke removes grant grantID of board type typ, as Grant adds one (fault.NotFound
// CodeGrantNotFound when the type has no such grant).
func (s *Service) Revoke(ctx context.Context, p auth.Principal, typ, grantID string) (GrantResult, error) {
	var gone spaces.BoardGrant
	res, err := s.changeGrants(ctx, p, typ, "revoke", func(doc *spaces.BoardGrants) error {
		kept := doc.Grants[:0]
		for _, g := range doc.Grants {
			if g.ID == grantID && g.Type == typ {
				gone = g
				continue
			}
			kept = append(kept, g)
		}
		if gone.ID == "" {
			return fault.New(fault.NotFound, CodeGrantNotFound, "board type %q has no grant %q", typ, grantID)
		}
		doc.Grants = kept
		return nil
	})
	res.Grant = gone
	return res, err
}

// Grants lists the grants of board type typ for a person key (any role: who may read which
// board is no secret to the space's people); a type the space does not declare is
// fault.NotFound CodeTypeNotFound (as another space's type is).
func (s *Service) Grants(ctx context.Context, p auth.Principal, typ string) ([]spaces.BoardGrant, error) {
	if p.IsAgent() {
		return nil, errPeopleOnly()
	}
	types, err := s.Docs.ObjectTypes(ctx, p.SpaceID)
	if err != nil {
		return nil, err
	}
	if _, ok := types.BoardType(typ); !ok {
		return nil, fault.New(fault.NotFound, CodeTypeNotFound, "object-types declares no board type %q (ownership shared)", typ)
	}
	doc, err := s.Docs.BoardGrants(ctx, p.SpaceID)
	if err != nil {
		return nil, err
	}
	out := []spaces.BoardGrant{}
	for _, g := range doc.Grants {
		if g.Type == typ {
			out = append(out, g)
		}
	}
	return out, nil
}

func errPeopleOnly() error {
	return fault.New(fault.Forbidden, "role_required", "board grants and metadata are managed by people (a person key)")
}

// changeGrants applies edit to the space's board-grants document and writes it (direct PUT
// allowed) or proposes it as a change request.
func (s *Service) changeGrants(ctx context.Context, p auth.Principal, typ, action string, edit func(*spaces.BoardGrants) error) (GrantResult, error) {
	if p.IsAgent() {
		return GrantResult{}, errPeopleOnly()
	}
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return GrantResult{}, err
	}
	types, err := s.Docs.ObjectTypes(ctx, p.SpaceID)
	if err != nil {
		return GrantResult{}, err
	}
	if _, ok := types.BoardType(typ); !ok {
		return GrantResult{}, fault.New(fault.NotFound, CodeTypeNotFound, "object-types declares no board type %q (ownership shared)", typ)
	}
	direct, err := s.Docs.DirectPut(ctx, p.SpaceID)
	if err != nil {
		return GrantResult{}, err
	}
	now := s.Now().UTC()
	if !direct {
		body, _, err := editedGrants(ctx, s.DB, s.Docs, p.SpaceID, edit)
		if err != nil {
			return GrantResult{}, err
		}
		c, err := s.Changes.Propose(ctx, p, spaces.DocBoardGrants, body, now)
		if err != nil {
			return GrantResult{}, err
		}
		return GrantResult{ChangeID: c.ID}, nil
	}
	var out GrantResult
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		body, base, err := editedGrants(ctx, tx, s.Docs, p.SpaceID, edit)
		if err != nil {
			return err
		}
		text, err := s.Docs.Normalize(ctx, tx, p.SpaceID, spaces.DocBoardGrants, body)
		if err != nil {
			return err
		}
		v, err := s.Docs.Write(ctx, tx, p, spaces.DocBoardGrants, text, base, now, map[string]any{"board_grant": action, "board_type": typ})
		out = GrantResult{Applied: true, Version: v}
		return err
	})
	return out, err
}

// editedGrants reads the board-grants document through idb, applies edit and returns the
// edited document's JSON and the version it was read at.
func editedGrants(ctx context.Context, idb bun.IDB, docs spaces.Documents, spaceID string, edit func(*spaces.BoardGrants) error) ([]byte, int64, error) {
	text, version, err := docs.Current(ctx, idb, spaceID, spaces.DocBoardGrants)
	if err != nil {
		return nil, 0, err
	}
	doc, err := spaces.ParseBoardGrants([]byte(text))
	if err != nil {
		return nil, 0, err
	}
	if err := edit(&doc); err != nil {
		return nil, 0, err
	}
	body, err := json.Marshal(doc)
	return body, version, err
}
