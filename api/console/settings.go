package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// documents are the space documents the Settings screen edits, in order (bridges have their
// own screen: they change only by change requests, two sides).
var documents = []string{"features", "object-types", "views", spaces.DocBoardGrants}

// recentDecisions is how many decided change requests each document shows.
const recentDecisions = 5

// docForm is one document of the Settings screen: its JSON form, and its change requests.
type docForm struct {
	Name    string
	Text    string
	Version int64
	CanEdit bool
	Error   string
	Pending []changeView
	Decided []changeView
}

// settingsData is the Settings screen: DirectPut says whether a Save may write a document
// directly (else every change is a change request a second security person approves).
type settingsData struct {
	DirectPut   bool
	CanApprove  bool
	Docs        []docForm
	ListErr     string
	ChangeID    string
	ChangeError string
	// Sinks are the export sinks features export.sinks configures, with their acknowledged
	// cursor and lag (issue 33); FeedHead is the feed's head; SinksErr a failure reading them.
	Sinks    []feed.SinkLag
	FeedHead int64
	SinksErr string
}

// changeView is a change request as the screen shows it: people by name, the diff by line.
type changeView struct {
	changes.Change
	Proposer string
	Decider  string
	Own      bool
	Lines    []diffLine
}

// diffLine is one line of a unified diff with its style: hdr (file names), hunk (@@), add,
// del or ctx.
type diffLine struct {
	Class string
	Text  string
}

// diffLines splits a unified diff into styled lines.
func diffLines(diff string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		class := "ctx"
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			class = "hdr"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		out = append(out, diffLine{Class: class, Text: l})
	}
	return out
}

// settingsPage: each space document as a JSON form, with its pending change requests (diff,
// Approve, Reject) and its recent decisions.
func (h *Console) settingsPage(c *gin.Context) {
	p, ok := h.allow(c, "Settings")
	if !ok {
		return
	}
	h.showSettings(c, p, http.StatusOK, "", settingsData{})
}

// showSettings renders the screen with d's inline error (a refused document keeps its text
// in d.Docs' form of that name; a refused decision names its change).
func (h *Console) showSettings(c *gin.Context, p auth.Principal, status int, errMsg string, d settingsData) {
	ctx := c.Request.Context()
	kept := map[string]docForm{}
	for _, f := range d.Docs {
		kept[f.Name] = f
	}
	direct, err := h.Docs.DirectPut(ctx, p.SpaceID)
	if err != nil {
		h.fail(c, err)
		return
	}
	d.DirectPut, d.CanApprove = direct, p.HasRole(auth.RoleSecurity)
	h.loadSinks(c, p, &d)
	person := h.keyNamer(ctx, p.SpaceID)
	d.Docs = nil
	for _, n := range documents {
		f, listErr := h.docFormOf(c, p, n, person)
		if k, ok := kept[n]; ok {
			f.Text, f.Error = k.Text, k.Error
		}
		if listErr != "" {
			d.ListErr = listErr
		}
		d.Docs = append(d.Docs, f)
	}
	h.renderView(c, status, "settings", view{Title: "Settings", Error: errMsg, Data: d})
}

// keyNamer returns a function giving the name of the space's key id, or the id itself when
// the key has no name or the keys cannot be read (the screen still shows who, by id).
func (h *Console) keyNamer(ctx context.Context, spaceID string) func(id string) string {
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

// docFormOf is document n's form for p: its current text and version (or the error reading
// it) and its change requests (changeViews); listErr is the message of a failure listing
// them, "" when none.
func (h *Console) docFormOf(c *gin.Context, p auth.Principal, n string, person func(string) string) (f docForm, listErr string) {
	ctx := c.Request.Context()
	f = docForm{Name: n, CanEdit: h.Docs.MayPut(p, n) == nil}
	raw, version, err := h.Docs.Get(ctx, p.SpaceID, n)
	if err == nil {
		f.Text, f.Version = pretty(raw), version
	} else {
		f.Error = h.message(c, err)
	}
	list, err := h.Changes.List(ctx, p, n, "", 50)
	if err != nil {
		listErr = h.message(c, err)
	}
	f.Pending, f.Decided = changeViews(list, p, person)
	return f, listErr
}

// changeViews splits list (newest first) into the pending change requests, oldest first (the
// queue order), and at most recentDecisions decided ones, newest first, each with its
// proposer's and decider's names (person) and whether p proposed it (by key id or name).
func changeViews(list []changes.Change, p auth.Principal, person func(string) string) (pending, decided []changeView) {
	for _, ch := range list {
		v := changeView{Change: ch, Proposer: person(ch.ProposedBy), Lines: diffLines(ch.Diff)}
		v.Own = ch.ProposedBy == p.KeyID || (p.Name != "" && strings.EqualFold(strings.TrimSpace(p.Name), strings.TrimSpace(v.Proposer)))
		if ch.DecidedBy != nil {
			v.Decider = person(*ch.DecidedBy)
		}
		switch {
		case ch.Status == changes.Pending:
			pending = append(pending, v)
		case len(decided) < recentDecisions:
			decided = append(decided, v)
		}
	}
	slices.Reverse(pending)
	return pending, decided
}

func pretty(raw string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(raw), "", "  ") != nil {
		return raw
	}
	return b.String()
}

// refusedDocument re-renders the screen keeping the refused text of document name.
func (h *Console) refusedDocument(c *gin.Context, p auth.Principal, name, text string, err error) {
	msg := h.message(c, err)
	h.showSettings(c, p, statusOf(err), name+": "+msg, settingsData{Docs: []docForm{{Name: name, Text: text, Error: msg}}})
}

// saveDocument: spaces.Documents.Put, as PUT /v1/documents/{name} (the role rule of MayPut;
// a space without direct PUT refuses it with direct_put_disabled).
func (h *Console) saveDocument(c *gin.Context) {
	p, ok := h.allow(c, "Settings")
	if !ok {
		return
	}
	name := c.Param("name")
	if err := h.Docs.MayPut(p, name); err != nil {
		h.fail(c, err)
		return
	}
	text := c.PostForm("document")
	if _, _, err := h.Docs.Put(c.Request.Context(), h.DB, p, name, []byte(text), h.Now()); err != nil {
		h.refusedDocument(c, p, name, text, err)
		return
	}
	redirect(c, "/console/settings", "saved")
}

// proposeChange: changes.Service.Propose, as POST /v1/documents/{name}/changes.
func (h *Console) proposeChange(c *gin.Context) {
	p, ok := h.allow(c, "Settings")
	if !ok {
		return
	}
	name := c.Param("name")
	if err := h.Docs.MayPut(p, name); err != nil {
		h.fail(c, err)
		return
	}
	text := c.PostForm("document")
	if _, err := h.Changes.Propose(c.Request.Context(), p, name, []byte(text), h.Now()); err != nil {
		h.refusedDocument(c, p, name, text, err)
		return
	}
	redirect(c, "/console/settings", "change_proposed")
}

// approveChange: changes.Service.Approve, as POST /v1/documents/{name}/changes/{id}/approve
// (a second person holding security; the proposer is refused with change_own_proposal).
func (h *Console) approveChange(c *gin.Context) {
	p, ok := h.allow(c, "Settings")
	if !ok {
		return
	}
	name, id := c.Param("name"), c.Param("id")
	if _, err := h.Changes.Approve(c.Request.Context(), p, name, id, h.Now()); err != nil {
		h.refusedChange(c, p, name, id, err)
		return
	}
	redirect(c, "/console/settings", "change_applied")
}

// rejectChange: changes.Service.Reject with the form's reason, as POST
// /v1/documents/{name}/changes/{id}/reject.
func (h *Console) rejectChange(c *gin.Context) {
	p, ok := h.allow(c, "Settings")
	if !ok {
		return
	}
	name, id := c.Param("name"), c.Param("id")
	if _, err := h.Changes.Reject(c.Request.Context(), p, name, id, c.PostForm("reason"), h.Now()); err != nil {
		h.refusedChange(c, p, name, id, err)
		return
	}
	redirect(c, "/console/settings", "change_rejected")
}

// refusedChange re-renders the screen with the service's refusal at the top and on the change.
func (h *Console) refusedChange(c *gin.Context, p auth.Principal, name, id string, err error) {
	msg := h.message(c, err)
	h.showSettings(c, p, statusOf(err), name+": "+msg, settingsData{ChangeID: id, ChangeError: msg})
}

// loadSinks fills d's export sinks (features export.sinks, in order) with their cursor and
// lag; a failure shows as d.SinksErr, the rest of the screen still renders.
func (h *Console) loadSinks(c *gin.Context, p auth.Principal, d *settingsData) {
	ctx := c.Request.Context()
	f, err := h.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		d.SinksErr = h.message(c, err)
		return
	}
	configured := make([]feed.SinkState, len(f.Export.Sinks))
	for i, sk := range f.Export.Sinks {
		configured[i] = feed.SinkState{Name: sk.Name, Kind: sk.Kind}
	}
	if d.Sinks, d.FeedHead, err = feed.Lags(ctx, h.DB, p.SpaceID, configured); err != nil {
		d.SinksErr = h.message(c, err)
	}
}
