package console

import (
	"context"
	"net/http"
	"sort"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// boardField is one field of a board type as the Boards screen shows it: its declaration
// and conflict rule (Rule "reject" when the field declares none), never a value.
type boardField struct {
	Name      string
	Type      string
	PII       bool
	Subject   bool
	Rule      string
	Then      string
	Expr      string
	Retention string
	Default   bool // no rule declared: reject
}

// boardType is one board type of the Boards screen: its settings, fields, grants and the
// metadata of its boards (size, version, writers, dates: never content, WM-11).
type boardType struct {
	Type     string
	MaxBytes int
	History  int
	Lease    string
	Fields   []boardField
	Grants   []spaces.BoardGrant
	Boards   []boards.Meta
}

type boardsData struct {
	Types     []boardType
	CanGrant  bool
	DirectPut bool
}

// boardsShown is how many boards of each type the screen lists (most recently written first).
const boardsShown = 50

// boardsPage: each board type of object-types with its fields' rules, its grants (grant,
// revoke) and its boards' metadata.
func (h *Console) boardsPage(c *gin.Context) {
	p, ok := h.allow(c, "Boards")
	if !ok {
		return
	}
	h.showBoards(c, p, http.StatusOK, "")
}

// boardsOn reports whether the server has boards, else renders 503 and returns false.
func (h *Console) boardsOn(c *gin.Context) bool {
	if h.Boards == nil {
		h.renderView(c, http.StatusServiceUnavailable, "error", view{Title: "Boards", Error: "Boards are not configured on this server."})
		return false
	}
	return true
}

func (h *Console) showBoards(c *gin.Context, p auth.Principal, status int, errMsg string) {
	if !h.boardsOn(c) {
		return
	}
	ctx := c.Request.Context()
	types, err := h.Docs.ObjectTypes(ctx, p.SpaceID)
	if err != nil {
		h.fail(c, err)
		return
	}
	direct, err := h.Docs.DirectPut(ctx, p.SpaceID)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := boardsData{CanGrant: p.HasRole(auth.RoleAdmin), DirectPut: direct}
	for _, t := range types.BoardTypes() {
		bt, err := h.boardTypeView(ctx, p, t)
		if err != nil {
			h.fail(c, err)
			return
		}
		d.Types = append(d.Types, bt)
	}
	h.renderView(c, status, "boards", view{Title: "Boards", Error: errMsg, Data: d})
}

// boardTypeView reads the grants and board metadata of type t.
func (h *Console) boardTypeView(ctx context.Context, p auth.Principal, t spaces.ObjectType) (boardType, error) {
	bt := boardType{Type: t.Type, MaxBytes: t.BoardMaxBytes(), History: t.BoardHistory(), Lease: spaces.LeaseRequired}
	if t.LeaseAdvisory() {
		bt.Lease = spaces.LeaseAdvisory
	}
	for name, f := range t.Fields {
		bf := boardField{Name: name, Type: f.Type, PII: f.PII, Subject: f.Subject, Rule: "reject", Default: f.Conflict == nil, Retention: t.Retention[name]}
		if r := f.Conflict; r != nil {
			bf.Rule, bf.Then, bf.Expr = r.Rule, r.Then, r.Expr
		}
		bt.Fields = append(bt.Fields, bf)
	}
	sort.Slice(bt.Fields, func(i, j int) bool { return bt.Fields[i].Name < bt.Fields[j].Name })
	var err error
	if bt.Grants, err = h.Boards.Grants(ctx, p, t.Type); err != nil {
		return bt, err
	}
	bt.Boards, err = h.Boards.List(ctx, p, boards.MetaFilter{Type: t.Type, Limit: boardsShown})
	return bt, err
}

// grantBoard: boards.Service.Grant with the form's agent or vendor, access and id pattern, as
// POST /v1/boards/{type}/grants (role admin; a change request where direct PUT is off).
func (h *Console) grantBoard(c *gin.Context) {
	p, ok := h.allow(c, "Boards")
	if !ok || !h.boardsOn(c) {
		return
	}
	req := boards.GrantRequest{Access: c.PostForm("access"), Boards: c.PostForm("boards")}
	if c.PostForm("who") == "vendor" {
		req.Vendor = c.PostForm("name")
	} else {
		req.Agent = c.PostForm("name")
	}
	res, err := h.Boards.Grant(c.Request.Context(), p, c.Param("type"), req)
	h.afterGrant(c, p, res, err, "grant_added")
}

// revokeBoardGrant: boards.Service.Revoke, as DELETE /v1/boards/{type}/grants/{grant_id}.
func (h *Console) revokeBoardGrant(c *gin.Context) {
	p, ok := h.allow(c, "Boards")
	if !ok || !h.boardsOn(c) {
		return
	}
	res, err := h.Boards.Revoke(c.Request.Context(), p, c.Param("type"), c.Param("id"))
	h.afterGrant(c, p, res, err, "grant_revoked")
}

// afterGrant redirects with applied's flash (or grant_proposed for a change request), or
// re-renders the screen with the refusal.
func (h *Console) afterGrant(c *gin.Context, p auth.Principal, res boards.GrantResult, err error, applied string) {
	if err != nil {
		h.showBoards(c, p, statusOf(err), h.message(c, err))
		return
	}
	if !res.Applied {
		applied = "grant_proposed"
	}
	redirect(c, "/console/boards", applied)
}
