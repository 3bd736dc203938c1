package console

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns"
)

type proposalsData struct {
	Pending []proposals.Proposal
	Recent  []proposals.Proposal
}

// proposalsPage: the pending queue, oldest first, with age and origin; then recent decisions.
func (h *Console) proposalsPage(c *gin.Context) {
	p, ok := h.allow(c, "Proposals")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	pending, err := h.Proposals.List(ctx, p, proposals.StatusPending, 500)
	if err != nil {
		h.fail(c, err)
		return
	}
	slices.Reverse(pending) // List is newest first
	all, err := h.Proposals.List(ctx, p, "", 50)
	if err != nil {
		h.fail(c, err)
		return
	}
	var recent []proposals.Proposal
	for _, x := range all {
		if x.Status != proposals.StatusPending && len(recent) < 20 {
			recent = append(recent, x)
		}
	}
	h.renderView(c, http.StatusOK, "proposals", view{Title: "Proposals", Data: proposalsData{Pending: pending, Recent: recent}})
}

type proposalData struct {
	Proposal     proposals.Proposal
	Turns        []turns.Stored
	TurnsErr     string
	Similar      []notes.Note
	Form         noteForm
	Kinds        []string
	Visibilities []string
	DecidedBy    string
	Reason       string
	// Approved is the note an approved proposal made (what was approved), Changes its word
	// diff against what was proposed (none: approved as proposed), ApprovedErr why the note
	// cannot be shown (retired notes still can).
	Approved    *notes.Note
	Changes     []fieldDiff
	ApprovedErr string
}

// proposalPage: the proposed note beside its evidence (the conversation's masked turns) and
// the agent's most similar notes; Approve (with edits) and Reject forms while pending, who
// decided once decided.
func (h *Console) proposalPage(c *gin.Context) {
	p, ok := h.allow(c, "Proposals")
	if !ok {
		return
	}
	pr, err := h.Proposals.Get(c.Request.Context(), p, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	d := h.proposalData(c, p, pr)
	if pr.Note != nil {
		d.Form = noteForm{Kind: pr.Note.Kind, Title: pr.Note.Title, Body: pr.Note.Body, Tags: strings.Join(pr.Note.Tags, ", "), Visibility: pr.Note.Visibility}
	}
	h.renderView(c, http.StatusOK, "proposal", view{Title: "Proposal", Active: "Proposals", Data: d})
}

func (h *Console) proposalData(c *gin.Context, p auth.Principal, pr proposals.Proposal) proposalData {
	ctx := c.Request.Context()
	d := proposalData{Proposal: pr, Kinds: noteKinds, Visibilities: visibilities}
	if ev := pr.Evidence; ev != nil && h.Turns != nil {
		kind, id := "conversation", ev.ConversationID
		if id == "" {
			kind, id = "task", ev.TaskID
		}
		list, err := h.Turns.Recent(ctx, p.SpaceID, kind, id, time.Time{})
		if err != nil {
			d.TurnsErr = h.message(c, err)
		}
		d.Turns = list
	}
	if pr.DecidedBy != nil {
		d.DecidedBy = *pr.DecidedBy
		if keys, err := auth.List(ctx, h.DB, p.SpaceID); err == nil {
			for _, k := range keys {
				if k.ID == *pr.DecidedBy && k.Name != "" {
					d.DecidedBy = k.Name + " (" + k.ID + ")"
				}
			}
		}
	}
	if pr.Note != nil {
		d.Similar = h.similar(c, p, pr)
	}
	if pr.Status == proposals.StatusApproved && pr.NoteID != nil && pr.Note != nil {
		n, err := h.Notes.Get(ctx, p, *pr.NoteID)
		if err != nil {
			d.ApprovedErr = h.message(c, err)
		} else {
			d.Approved, d.Changes = &n, approvedDiff(*pr.Note, n)
		}
	}
	return d
}

// similar returns up to 3 active notes of the proposal's agent sharing the most words with
// the proposed note (a reviewer's check for duplicates).
func (h *Console) similar(c *gin.Context, p auth.Principal, pr proposals.Proposal) []notes.Note {
	list, err := h.Notes.List(c.Request.Context(), p, notes.ListFilter{SourceID: pr.SourceID, Status: notes.StatusActive, Limit: 500})
	if err != nil {
		return nil
	}
	want := words(pr.Note.Title + " " + pr.Note.Body + " " + strings.Join(pr.Note.Tags, " "))
	type scored struct {
		n notes.Note
		s int
	}
	var out []scored
	for _, n := range list {
		s := 0
		for w := range words(n.Title + " " + n.Body + " " + strings.Join(n.Tags, " ")) {
			if want[w] {
				s++
			}
		}
		if s > 0 {
			out = append(out, scored{n, s})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].s > out[j].s })
	var res []notes.Note
	for i := 0; i < len(out) && i < 3; i++ {
		res = append(res, out[i].n)
	}
	return res
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) > 3 {
			out[w] = true
		}
	}
	return out
}

// approve: proposals.Service.Decide with the reviewer's edits (the members that differ from
// the proposal); a refusal keeps the form and shows why.
func (h *Console) approve(c *gin.Context) {
	p, ok := h.allow(c, "Proposals")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	id := c.Param("id")
	pr, err := h.Proposals.Get(ctx, p, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	f := formOf(c)
	var edits *notes.Patch
	if pr.Note != nil {
		base := notes.Note{Kind: pr.Note.Kind, Title: pr.Note.Title, Body: pr.Note.Body, Tags: pr.Note.Tags, Visibility: pr.Note.Visibility}
		if patch := patchOf(base, f); patch != (notes.Patch{}) {
			edits = &patch
		}
	}
	res, err := h.Proposals.Decide(ctx, p, id, proposals.Decision{Kind: proposals.DecisionApprove, Edits: edits})
	if err != nil {
		d := h.proposalData(c, p, pr)
		d.Form = f
		h.renderView(c, statusOf(err), "proposal", view{Title: "Proposal", Active: "Proposals", Error: h.message(c, err), Kinds: kindsOf(err), Data: d})
		return
	}
	if res.Pending {
		redirect(c, "/console/proposals/"+id, "decision_sent")
		return
	}
	redirect(c, "/console/proposals/"+id, "approved")
}

// reject: proposals.Service.Decide with the reviewer's reason.
func (h *Console) reject(c *gin.Context) {
	p, ok := h.allow(c, "Proposals")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	id := c.Param("id")
	res, err := h.Proposals.Decide(ctx, p, id, proposals.Decision{Kind: proposals.DecisionReject, Reason: strings.TrimSpace(c.PostForm("reason"))})
	if err != nil {
		pr, gerr := h.Proposals.Get(ctx, p, id)
		if gerr != nil {
			h.fail(c, err)
			return
		}
		d := h.proposalData(c, p, pr)
		if pr.Note != nil {
			d.Form = noteForm{Kind: pr.Note.Kind, Title: pr.Note.Title, Body: pr.Note.Body, Tags: strings.Join(pr.Note.Tags, ", "), Visibility: pr.Note.Visibility}
		}
		d.Reason = c.PostForm("reason")
		h.renderView(c, statusOf(err), "proposal", view{Title: "Proposal", Active: "Proposals", Error: h.message(c, err), Kinds: kindsOf(err), Data: d})
		return
	}
	if res.Pending {
		redirect(c, "/console/proposals/"+id, "decision_sent")
		return
	}
	redirect(c, "/console/proposals/"+id, "rejected")
}
