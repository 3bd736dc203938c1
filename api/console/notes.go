package console

import (
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// noteFilter is the Notes screen's filter form.
type noteFilter struct {
	Agent, Visibility, Status, Q, Tag string
}

type notesData struct {
	Agents       []string
	Visibilities []string
	Filter       noteFilter
	Notes        []notes.Note
	Searched     bool
	// Unknown are the listed notes' tags outside the space's vocabulary (CTX-1).
	Unknown map[string]bool
}

// agents lists the agent names of the space's agent keys, sorted.
func (h *Console) agents(c *gin.Context, p auth.Principal) []string {
	keys, err := auth.List(c.Request.Context(), h.DB, p.SpaceID)
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		if k.Kind == auth.KindAgent && !slices.Contains(out, k.Agent) {
			out = append(out, k.Agent)
		}
	}
	sort.Strings(out)
	return out
}

var visibilities = []string{notes.VisibilitySource, notes.VisibilityVendor, notes.VisibilitySpace}
var noteKinds = []string{notes.KindProcedure, notes.KindToolNote, notes.KindProcessNote, notes.KindPitfall}

// notesPage: the notes by agent and visibility; a word or tag searches as that agent.
func (h *Console) notesPage(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	f := noteFilter{Agent: c.Query("agent"), Visibility: c.Query("visibility"), Status: c.DefaultQuery("status", notes.StatusActive),
		Q: strings.TrimSpace(c.Query("q")), Tag: strings.TrimSpace(c.Query("tag"))}
	if f.Status == "all" {
		f.Status = ""
	}
	d := notesData{Agents: h.agents(c, p), Visibilities: visibilities, Filter: f}
	var list []notes.Note
	var err error
	if f.Q != "" {
		d.Searched = true
		list, err = h.searchNotes(c, p, f)
	} else {
		list, err = h.Notes.List(c.Request.Context(), p, notes.ListFilter{SourceID: f.Agent, Tag: f.Tag, Status: f.Status, Limit: 500})
	}
	if fault.IsCode(err, notes.CodeFeatureDisabled) {
		// Not a failure of the page: the space has not turned agent memory on yet.
		h.renderView(c, http.StatusOK, "notes", view{Title: "Notes", Data: d,
			Error: "Agent memory is off for this space: there are no notes yet. A person holding security turns it on in Settings (features: agent_memory.enabled)."})
		return
	}
	if err != nil {
		h.renderView(c, statusOf(err), "notes", view{Title: "Notes", Error: h.message(c, err), Data: d})
		return
	}
	for _, n := range list {
		if f.Visibility == "" || n.Visibility == f.Visibility {
			d.Notes = append(d.Notes, n)
		}
	}
	if f.Status == "" {
		d.Filter.Status = "all"
	}
	d.Unknown = h.unknownTags(c, p.SpaceID, d.Notes...)
	h.renderView(c, http.StatusOK, "notes", view{Title: "Notes", Data: d})
}

// searchNotes finds notes by word (and tag): with an agent picked, as that agent sees them
// (notes.Service.Search, role integration); with "All agents", every agent's live notes
// (notes.Service.SearchAcross, as a person may list them: issue 27).
func (h *Console) searchNotes(c *gin.Context, p auth.Principal, f noteFilter) ([]notes.Note, error) {
	req := notes.SearchRequest{Q: f.Q, Tags: splitTags(f.Tag), Limit: notes.MaxSearchLimit, SourceID: f.Agent}
	var res notes.SearchResult
	var err error
	if f.Agent == "" {
		res, err = h.Notes.SearchAcross(c.Request.Context(), p, req)
	} else {
		res, err = h.Notes.Search(c.Request.Context(), p, req)
	}
	return res.Notes, err
}

func splitTags(v string) []string {
	var out []string
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// noteForm is the create and edit form's values, kept when a write is refused.
type noteForm struct {
	Agent, Kind, Title, Body, Tags, Visibility string
}

type noteFormData struct {
	Agents       []string
	Kinds        []string
	Visibilities []string
	Form         noteForm
}

func formOf(c *gin.Context) noteForm {
	return noteForm{Agent: c.PostForm("agent"), Kind: c.PostForm("kind"), Title: c.PostForm("title"),
		Body: c.PostForm("body"), Tags: c.PostForm("tags"), Visibility: c.PostForm("visibility")}
}

// newNotePage: the form to create a note for an agent.
func (h *Console) newNotePage(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	h.renderView(c, http.StatusOK, "note_new", view{Title: "New note", Active: "Notes", Data: noteFormData{
		Agents: h.agents(c, p), Kinds: noteKinds, Visibilities: visibilities,
		Form: noteForm{Agent: c.Query("agent"), Kind: notes.KindProcedure, Visibility: notes.VisibilitySource}}})
}

// createNote: notes.Service.Create for the chosen agent (role integration: the service
// checks); a refusal keeps the form and shows why (the personal-data kinds inline).
func (h *Console) createNote(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	f := formOf(c)
	res, err := h.Notes.Create(c.Request.Context(), p, "", "", notes.Input{SourceID: f.Agent, Kind: f.Kind, Title: f.Title,
		Body: f.Body, Tags: splitTags(f.Tags), Visibility: f.Visibility})
	if err != nil {
		h.renderView(c, statusOf(err), "note_new", view{Title: "New note", Active: "Notes", Error: h.message(c, err), Kinds: kindsOf(err),
			Data: noteFormData{Agents: h.agents(c, p), Kinds: noteKinds, Visibilities: visibilities, Form: f}})
		return
	}
	switch {
	case res.DuplicateOf != "":
		redirect(c, "/console/notes/"+res.DuplicateOf, "duplicate")
	case res.ProposalID != "":
		redirect(c, "/console/notes", "note_proposed")
	default:
		redirect(c, "/console/notes/"+res.Note.ID, "note_created")
	}
}

type noteData struct {
	Note notes.Note
	// Unknown are the note's tags outside the space's vocabulary (CTX-1), in its order.
	Unknown      []string
	History      []notes.Note
	Kinds        []string
	Visibilities []string
	Form         noteForm
}

// history returns every version of n's chain, newest first, from the notes of its source.
func (h *Console) history(c *gin.Context, p auth.Principal, n notes.Note) []notes.Note {
	all, err := h.Notes.List(c.Request.Context(), p, notes.ListFilter{SourceID: n.SourceID, Limit: 500})
	if err != nil {
		return []notes.Note{n}
	}
	byID := map[string]notes.Note{}
	next := map[string]string{}
	for _, x := range all {
		byID[x.ID] = x
		if x.SupersedesNoteID != nil {
			next[*x.SupersedesNoteID] = x.ID
		}
	}
	byID[n.ID] = n
	head := n.ID
	for seen := 0; next[head] != "" && seen < 1000; seen++ {
		head = next[head]
	}
	var out []notes.Note
	for id, seen := head, 0; id != "" && seen < 1000; seen++ {
		x, ok := byID[id]
		if !ok {
			break
		}
		out = append(out, x)
		id = ""
		if x.SupersedesNoteID != nil {
			id = *x.SupersedesNoteID
		}
	}
	return out
}

func formFromNote(n notes.Note) noteForm {
	return noteForm{Agent: n.SourceID, Kind: n.Kind, Title: n.Title, Body: n.Body, Tags: strings.Join(n.Tags, ", "), Visibility: n.Visibility}
}

// notePage: one note version, its history and the edit and retire forms.
func (h *Console) notePage(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	n, err := h.Notes.Get(c.Request.Context(), p, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.renderView(c, http.StatusOK, "note", view{Title: n.Title, Active: "Notes", Data: noteData{
		Note: n, Unknown: h.unknownOf(c, p.SpaceID, n), History: h.history(c, p, n), Kinds: noteKinds, Visibilities: visibilities, Form: formFromNote(n)}})
}

// editNote: notes.Service.NewVersion with the changed members; a refusal (the gate's kinds
// inline) keeps the form as typed.
func (h *Console) editNote(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	n, err := h.Notes.Get(ctx, p, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	f := formOf(c)
	patch := patchOf(n, f)
	res, err := h.Notes.NewVersion(ctx, p, "", "", n.ID, patch)
	if err != nil {
		f.Agent = n.SourceID
		h.renderView(c, statusOf(err), "note", view{Title: n.Title, Active: "Notes", Error: h.message(c, err), Kinds: kindsOf(err),
			Data: noteData{Note: n, Unknown: h.unknownOf(c, p.SpaceID, n), History: h.history(c, p, n), Kinds: noteKinds, Visibilities: visibilities, Form: f}})
		return
	}
	switch {
	case res.DuplicateOf != "":
		redirect(c, "/console/notes/"+res.DuplicateOf, "duplicate")
	case res.ProposalID != "":
		redirect(c, "/console/notes/"+n.ID, "note_proposed")
	default:
		redirect(c, "/console/notes/"+res.Note.ID, "note_versioned")
	}
}

// patchOf is the edit of n that form f makes: only the members that changed.
func patchOf(n notes.Note, f noteForm) notes.Patch {
	var patch notes.Patch
	if f.Kind != "" && f.Kind != n.Kind {
		patch.Kind = &f.Kind
	}
	if f.Title != n.Title {
		patch.Title = &f.Title
	}
	if f.Body != n.Body {
		patch.Body = &f.Body
	}
	if tags := splitTags(f.Tags); !slices.Equal(tags, n.Tags) {
		if tags == nil {
			tags = []string{}
		}
		patch.Tags = &tags
	}
	if f.Visibility != "" && f.Visibility != n.Visibility {
		patch.Visibility = &f.Visibility
	}
	return patch
}

// retireNote: notes.Service.Retire.
func (h *Console) retireNote(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	n, err := h.Notes.Retire(c.Request.Context(), p, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	redirect(c, "/console/notes/"+n.ID, "note_retired")
}

// unknownTags returns the set of the tags of ns that are none of the space's vocabulary: its
// type names, operations and systems (notes.Service.UnknownTags, CTX-1). Nil when the space
// declares no vocabulary; a document that cannot be read marks nothing (logged), since the
// mark is advice, not a rule.
func (h *Console) unknownTags(c *gin.Context, spaceID string, ns ...notes.Note) map[string]bool {
	var all []string
	for _, n := range ns {
		for _, t := range n.Tags {
			if !slices.Contains(all, t) {
				all = append(all, t)
			}
		}
	}
	unknown, err := h.Notes.UnknownTags(c.Request.Context(), spaceID, all)
	if err != nil {
		h.Logger.WarnContext(c.Request.Context(), "console: vocabulary", httpfault.Scrubbed(err)...)
		return nil
	}
	var out map[string]bool
	for _, t := range unknown {
		if out == nil {
			out = map[string]bool{}
		}
		out[t] = true
	}
	return out
}

// unknownOf is n's tags outside the space's vocabulary, in n's order.
func (h *Console) unknownOf(c *gin.Context, spaceID string, n notes.Note) []string {
	set := h.unknownTags(c, spaceID, n)
	var out []string
	for _, t := range n.Tags {
		if set[t] {
			out = append(out, t)
		}
	}
	return out
}
