package console

import (
	"context"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// bridgesData is the Bridges screen: the space's id (which the other side's security people
// name), its bridges with their status, and the proposals awaiting a second person.
type bridgesData struct {
	SpaceID   string
	CanDecide bool
	Bridges   []bridgeRow
	Proposals []changeView
}

// bridgeRow is one bridge of this space's document: Peer is the other space.
type bridgeRow struct {
	boards.BridgeView
	Peer string
}

// bridgesPage: the space's bridges (active or awaiting the other side; Remove) and the
// pending change requests of its bridges document (diff, Approve as a second person, Reject),
// and a form to propose one.
func (h *Console) bridgesPage(c *gin.Context) {
	p, ok := h.allow(c, "Bridges")
	if !ok || !h.boardsOn(c) {
		return
	}
	h.showBridges(c, p, http.StatusOK, "", "", "")
}

// showBridges renders the screen with errMsg at the top, and on change changeID its refusal.
func (h *Console) showBridges(c *gin.Context, p auth.Principal, status int, errMsg, changeID, changeErr string) {
	ctx := c.Request.Context()
	list, err := h.Boards.Bridges(ctx, p)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := bridgesData{SpaceID: p.SpaceID, CanDecide: p.HasRole(auth.RoleSecurity)}
	for _, b := range list.Bridges {
		row := bridgeRow{BridgeView: b, Peer: b.To}
		if b.Direction == "in" {
			row.Peer = b.From
		}
		d.Bridges = append(d.Bridges, row)
	}
	names := h.personNames(ctx, p.SpaceID)
	for i := len(list.Proposals) - 1; i >= 0; i-- { // oldest first: the queue order
		ch := list.Proposals[i]
		v := changeView{Change: ch, Proposer: names(ch.ProposedBy), Lines: diffLines(ch.Diff)}
		v.Own = ch.ProposedBy == p.KeyID || (p.Name != "" && strings.EqualFold(strings.TrimSpace(p.Name), strings.TrimSpace(v.Proposer)))
		d.Proposals = append(d.Proposals, v)
	}
	h.renderView(c, status, "bridges", view{Title: "Bridges", Error: errMsg, Data: bridgeErr{bridgesData: d, ChangeID: changeID, ChangeError: changeErr}})
}

// bridgeErr is bridgesData with a refused decision's change and message.
type bridgeErr struct {
	bridgesData
	ChangeID    string
	ChangeError string
}

// personNames returns a lookup of the space's key ids to their names (the id itself when
// the key has none).
func (h *Console) personNames(ctx context.Context, spaceID string) func(string) string {
	names := map[string]string{}
	if keys, err := auth.List(ctx, h.DB, spaceID); err == nil {
		for _, k := range keys {
			names[k.ID] = k.Name
		}
	}
	return func(id string) string {
		if n := names[id]; n != "" {
			return n
		}
		return id
	}
}

// proposeBridge: boards.Service.ProposeBridge, as POST /v1/bridges. The form names the other
// space, the direction (out: its agents read this space's boards and bases; in: this space's
// agents read its own), the agents (comma-separated), the boards ("type" or "type:pattern",
// comma-separated) and the knowledge bases (base names of the source space, comma-separated;
// issue 31), boards, bases or both, and the id when the other side proposed first.
func (h *Console) proposeBridge(c *gin.Context) {
	p, ok := h.allow(c, "Bridges")
	if !ok || !h.boardsOn(c) {
		return
	}
	req := boards.BridgeRequest{ID: strings.TrimSpace(c.PostForm("id")), From: p.SpaceID, To: strings.TrimSpace(c.PostForm("peer")),
		Agents: splitList(c.PostForm("agents")), Boards: boardSets(c.PostForm("boards")), KnowledgeBases: splitList(c.PostForm("knowledge_bases"))}
	if c.PostForm("direction") == "in" {
		req.From, req.To = req.To, p.SpaceID
	}
	if _, err := h.Boards.ProposeBridge(c.Request.Context(), p, req); err != nil {
		h.showBridges(c, p, statusOf(err), h.message(c, err), "", "")
		return
	}
	redirect(c, "/console/bridges", "bridge_proposed")
}

// approveBridge: changes.Service.Approve of the bridges document (a second person holding
// security), as POST /v1/documents/bridges/changes/{id}/approve.
func (h *Console) approveBridge(c *gin.Context) {
	p, ok := h.allow(c, "Bridges")
	if !ok || !h.boardsOn(c) {
		return
	}
	id := c.Param("id")
	if _, err := h.Changes.Approve(c.Request.Context(), p, spaces.DocBridges, id, h.Now()); err != nil {
		msg := h.message(c, err)
		h.showBridges(c, p, statusOf(err), msg, id, msg)
		return
	}
	redirect(c, "/console/bridges", "bridge_approved")
}

// rejectBridge: changes.Service.Reject of the bridges document with the form's reason.
func (h *Console) rejectBridge(c *gin.Context) {
	p, ok := h.allow(c, "Bridges")
	if !ok || !h.boardsOn(c) {
		return
	}
	id := c.Param("id")
	if _, err := h.Changes.Reject(c.Request.Context(), p, spaces.DocBridges, id, c.PostForm("reason"), h.Now()); err != nil {
		msg := h.message(c, err)
		h.showBridges(c, p, statusOf(err), msg, id, msg)
		return
	}
	redirect(c, "/console/bridges", "change_rejected")
}

// revokeBridge: boards.Service.RevokeBridge, as DELETE /v1/bridges/{bridge_id}.
func (h *Console) revokeBridge(c *gin.Context) {
	p, ok := h.allow(c, "Bridges")
	if !ok || !h.boardsOn(c) {
		return
	}
	if _, err := h.Boards.RevokeBridge(c.Request.Context(), p, c.Param("id")); err != nil {
		h.showBridges(c, p, statusOf(err), h.message(c, err), "", "")
		return
	}
	redirect(c, "/console/bridges", "bridge_removed")
}

// splitList splits a comma-separated list, trimming and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// boardSets reads "type" or "type:pattern" items of a comma-separated list.
func boardSets(s string) []spaces.BridgeBoards {
	var out []spaces.BridgeBoards
	for _, x := range splitList(s) {
		typ, ids, _ := strings.Cut(x, ":")
		out = append(out, spaces.BridgeBoards{Type: strings.TrimSpace(typ), IDs: strings.TrimSpace(ids)})
	}
	return out
}
