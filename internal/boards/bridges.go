package boards

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Bridge codes and actions (issue 31, SH-3).
const (
	// CodeBoardNotFound (404): the answer to a read naming another space's board that no
	// active bridge lets the agent read, and to one that does not exist: the same status and
	// body, so a space learns nothing of another's data without a bridge.
	CodeBoardNotFound = "board_not_found"
	// CodeBridgeExists (409): this space's bridges document already holds a bridge of that id.
	CodeBridgeExists = "bridge_exists"
	// CodeBridgeNotFound (404): this space's bridges document holds no bridge of that id.
	CodeBridgeNotFound = "bridge_not_found"
	// ActionBridgedRead is the receipt, in the chain of the space whose board was read, of a
	// read through a bridge (the reading space's chain has board.read naming the bridge).
	ActionBridgedRead = "board.read.bridged"
)

// Bridge statuses as BridgeView shows them.
const (
	// BridgeActive: both spaces' bridges documents hold the bridge with the same terms.
	BridgeActive = "active"
	// BridgeAwaitingPeer: only this space's document holds it (or the other's terms differ).
	BridgeAwaitingPeer = "awaiting_peer"
)

// BridgeRequest is the body of POST /v1/bridges: the bridge as this space's side proposes it.
// ID is empty for the side that proposes first (a br_... id is made) and the first side's id
// for the other; From and To are the space ids (one is this space), Agents the agent names of
// To that may read, Boards and KnowledgeBases (base names of From) what may cross.
type BridgeRequest struct {
	ID             string                `json:"id"`
	From           string                `json:"from"`
	To             string                `json:"to"`
	Agents         []string              `json:"agents"`
	Boards         []spaces.BridgeBoards `json:"boards"`
	KnowledgeBases []string              `json:"knowledge_bases,omitempty"`
}

// BridgeProposal is the answer of POST /v1/bridges: the bridge in canonical form and the
// change request of this space's bridges document that a second person holding role security
// approves (POST /v1/documents/bridges/changes/{change_id}/approve).
type BridgeProposal struct {
	Bridge   spaces.Bridge `json:"bridge"`
	ChangeID string        `json:"change_id"`
}

// BridgeView is a bridge of this space's document with its status (BridgeActive or
// BridgeAwaitingPeer) and Direction: "out" (this space's boards are read) or "in" (this
// space's agents read).
type BridgeView struct {
	spaces.Bridge
	Direction string `json:"direction"`
	Status    string `json:"status"`
}

// BridgeList is the answer of GET /v1/bridges: this space's bridges and the pending change
// requests of its bridges document (proposals awaiting a second person).
type BridgeList struct {
	Bridges   []BridgeView     `json:"bridges"`
	Proposals []changes.Change `json:"proposals"`
}

// ProposeBridge proposes adding req's bridge to the bridges document of p's space, as a
// change request (never applied directly, whatever the space's direct-PUT setting). p is a
// person key with role security (fault.Forbidden "role_required"); the bridge is validated as
// the document validates it (fault.Invalid naming bridges[i].<member>; one side must be p's
// space); an id the document already holds is fault.Conflict CodeBridgeExists.
func (s *Service) ProposeBridge(ctx context.Context, p auth.Principal, req BridgeRequest) (BridgeProposal, error) {
	if err := requireSecurity(p); err != nil {
		return BridgeProposal{}, err
	}
	b := spaces.Bridge{ID: req.ID, From: req.From, To: req.To, Agents: req.Agents, Boards: req.Boards, KnowledgeBases: req.KnowledgeBases}
	if b.ID == "" {
		b.ID = auth.NewID("br")
	}
	doc, _, err := s.bridgesDoc(ctx, s.DB, p.SpaceID)
	if err != nil {
		return BridgeProposal{}, err
	}
	if _, ok := doc.Find(b.ID); ok {
		return BridgeProposal{}, fault.New(fault.Conflict, CodeBridgeExists, "this space already has bridge %q", b.ID)
	}
	doc.Bridges = append(doc.Bridges, b)
	body, err := json.Marshal(doc)
	if err != nil {
		return BridgeProposal{}, err
	}
	c, err := s.Changes.Propose(ctx, p, spaces.DocBridges, body, s.Now().UTC())
	if err != nil {
		return BridgeProposal{}, err
	}
	stored, err := spaces.ParseBridges(c.Document)
	if err != nil {
		return BridgeProposal{}, err
	}
	b, _ = stored.Find(b.ID)
	return BridgeProposal{Bridge: b, ChangeID: c.ID}, nil
}

// RevokeBridge removes bridge id from the bridges document of p's space at once (a person
// key with role security; no second person: removing a bridge only narrows what crosses),
// with the document.put receipt naming the bridge, and returns the removed bridge. The
// bridge ends on the next request on every replica, whichever side removed it. An id the
// document does not hold is fault.NotFound CodeBridgeNotFound.
func (s *Service) RevokeBridge(ctx context.Context, p auth.Principal, id string) (spaces.Bridge, error) {
	if err := requireSecurity(p); err != nil {
		return spaces.Bridge{}, err
	}
	var gone spaces.Bridge
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		doc, base, err := s.bridgesDoc(ctx, tx, p.SpaceID)
		if err != nil {
			return err
		}
		kept := []spaces.Bridge{}
		for _, b := range doc.Bridges {
			if b.ID == id {
				gone = b
				continue
			}
			kept = append(kept, b)
		}
		if gone.ID == "" {
			return fault.New(fault.NotFound, CodeBridgeNotFound, "this space has no bridge %q", id)
		}
		doc.Bridges = kept
		body, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		text, err := s.Docs.Normalize(ctx, tx, p.SpaceID, spaces.DocBridges, body)
		if err != nil {
			return err
		}
		_, err = s.Docs.Write(ctx, tx, p, spaces.DocBridges, text, base, s.Now().UTC(), map[string]any{"bridge": id, "bridge_action": "revoke"})
		return err
	})
	return gone, err
}

// Bridges lists the bridges of p's space with their status, and the pending proposals of its
// bridges document (any person key; agent keys are fault.Forbidden "role_required").
func (s *Service) Bridges(ctx context.Context, p auth.Principal) (BridgeList, error) {
	if p.IsAgent() {
		return BridgeList{}, errBridgesPeopleOnly()
	}
	doc, err := s.Docs.Bridges(ctx, p.SpaceID)
	if err != nil {
		return BridgeList{}, err
	}
	out := BridgeList{Bridges: []BridgeView{}}
	for _, b := range doc.Bridges {
		v := BridgeView{Bridge: b, Direction: "out", Status: BridgeAwaitingPeer}
		peer := b.To
		if b.To == p.SpaceID {
			v.Direction, peer = "in", b.From
		}
		theirs, err := s.Docs.Bridges(ctx, peer)
		if err != nil {
			return BridgeList{}, err
		}
		if o, ok := theirs.Find(b.ID); ok && o.SameTerms(b) {
			v.Status = BridgeActive
		}
		out.Bridges = append(out.Bridges, v)
	}
	if out.Proposals, err = s.Changes.List(ctx, p, spaces.DocBridges, changes.Pending, 100); err != nil {
		return BridgeList{}, err
	}
	return out, nil
}

// bridgesDoc reads the bridges document of spaceID through idb and its version.
func (s *Service) bridgesDoc(ctx context.Context, idb bun.IDB, spaceID string) (spaces.Bridges, int64, error) {
	text, version, err := s.Docs.Current(ctx, idb, spaceID, spaces.DocBridges)
	if err != nil {
		return spaces.Bridges{}, 0, err
	}
	doc, err := spaces.ParseBridges([]byte(text))
	return doc, version, err
}

func requireSecurity(p auth.Principal) error {
	if p.IsAgent() {
		return errBridgesPeopleOnly()
	}
	return p.RequireRole(auth.RoleSecurity)
}

func errBridgesPeopleOnly() error {
	return fault.New(fault.Forbidden, "role_required", "bridges are managed by people (a person key; role security to propose or remove one)")
}

// errBoardNotFound is the one answer to a cross-space read that finds nothing it may serve.
func errBoardNotFound() error {
	return fault.New(fault.NotFound, CodeBoardNotFound, "no such board")
}

// readBridged serves req, naming space req.Space other than p's, through an active bridge
// (spaces.Documents.ActiveBridge) from that space to p's that lists p's agent and the board:
// the board as its own space stores it, past-retention fields never served, receipted in both
// spaces' chains (board.read in p's naming the bridge and the other space; ActionBridgedRead
// in the other's naming the bridge, the reading space and the agent's key). No bridge, a type
// the other space does not declare, a board never written or with nothing live: the same
// CodeBoardNotFound error.
func (s *Service) readBridged(ctx context.Context, p auth.Principal, req ReadRequest) (ReadResult, error) {
	if !p.IsAgent() {
		return ReadResult{}, fault.New(fault.Forbidden, "role_required", "boards are read and written with agent keys; people see their metadata (GET /v1/boards)")
	}
	bridge, ok, err := s.Docs.ActiveBridge(ctx, req.Space, p.SpaceID, req.Type, req.ID, p.Agent)
	if err != nil || !ok {
		return ReadResult{}, orNotFound(err)
	}
	types, err := s.Docs.ObjectTypes(ctx, req.Space)
	if err != nil {
		return ReadResult{}, err
	}
	schema, ok := types.BoardType(req.Type)
	if !ok {
		return ReadResult{}, errBoardNotFound()
	}
	t := target{spaceID: req.Space, typ: req.Type, hash: s.Hasher.Hash(req.Space, "board:"+req.Type, req.ID), schema: schema}
	row, err := s.loadBoard(ctx, s.DB, t, false)
	if err != nil {
		return ReadResult{}, wrap("bridged read", err)
	}
	now := s.Now().UTC()
	if row == nil {
		return ReadResult{}, errBoardNotFound()
	}
	fields := liveFields(row, schema, now)
	if len(fields) == 0 {
		return ReadResult{}, errBoardNotFound()
	}
	at := row.UpdatedAt.UTC()
	out := ReadResult{Type: req.Type, ID: req.ID, Space: req.Space, Body: fields.Join(), Version: row.Version, UpdatedAt: &at}
	return out, s.receiptBridged(ctx, p, bridge, row.ID, out.Version, now)
}

// receiptBridged records a bridged read in both spaces' chains before it is answered.
func (s *Service) receiptBridged(ctx context.Context, p auth.Principal, b spaces.Bridge, boardID string, version int64, now time.Time) error {
	err := receipts.Record(ctx, s.Receipts, s.DB, b.From, receipts.Entry{Kind: receipts.KindBoard, Action: ActionBridgedRead, ActorKey: p.KeyID,
		ObjectIDs: []string{boardID, b.ID}, Detail: map[string]any{"bridge": b.ID, "reader_space": b.To, "version": version}}, now)
	if err != nil {
		return wrap("bridged read receipt", err)
	}
	err = receipts.Record(ctx, s.Receipts, s.DB, b.To, receipts.Entry{Kind: receipts.KindBoard, Action: ActionRead, ActorKey: p.KeyID,
		ObjectIDs: []string{boardID, b.ID}, Detail: map[string]any{"bridge": b.ID, "from_space": b.From, "version": version}}, now)
	return wrap("bridged read receipt", err)
}

// orNotFound is err, or the one not-found answer when err is nil.
func orNotFound(err error) error {
	if err != nil {
		return err
	}
	return errBoardNotFound()
}
