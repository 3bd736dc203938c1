package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/promptctx"
)

// previewForm is the block preview's form (issue 28), kept as typed when a preview is
// refused. Types are the task's object types (checked boxes of the space's vocabulary, or a
// comma-separated list where the space declares none); MaxTokens and BlockTokens are the
// context call's max_tokens and block_max_tokens as typed; KB and Query ask for knowledge.
type previewForm struct {
	Agent, View            string
	Types                  []string
	MaxTokens, BlockTokens string
	IncludeAgentMemory     bool
	KB, Query              string
	typesText              string
}

// vocabGroup is one group of the task object types' checkboxes: the space's type names,
// operations or systems (CTX-1).
type vocabGroup struct {
	Label string
	Tags  []string
}

// previewNote is a delivered note as the page lists it: its id, title and tags ("" title
// when the note could not be read back).
type previewNote struct {
	ID, Title string
	Tags      []previewTag
}

// previewTag is a delivered note's tag; Unknown when it is none of the space's vocabulary.
type previewTag struct {
	Name    string
	Unknown bool
}

// tokenRow is one line of the token table: a part, its count and the most it may take.
type tokenRow struct {
	Part   string
	Tokens int
	Limit  string
	Total  bool
}

// previewData is the block preview page: the pickers (agents, views, vocabulary, bases), the
// form, and, after a preview, the context call's answer with its token table and notes.
type previewData struct {
	Agents        []string
	Views         []viewOption
	Vocab         []vocabGroup
	Bases         []knowledge.Base
	KnowledgeNote string
	Form          previewForm
	Min, Max      int
	BlockMax      int
	TaskTokens    int
	Answer        *promptctx.Answer
	Budget        int
	Rows          []tokenRow
	BlockNotes    []previewNote
	TaskNotes     []previewNote
}

// viewOption is one view of the picker: its name and tags, in order.
type viewOption struct {
	Name string
	Tags string
}

// blockPage: the block preview's form (GET /console/notes/block; ?agent= and ?view= preselect,
// they are names, never scope ids or personal data). The preview itself is a POST
// (previewContext), so that a knowledge query never travels in a URL.
func (h *Console) blockPage(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	f := previewForm{Agent: c.Query("agent"), View: c.Query("view"), MaxTokens: strconv.Itoa(promptctx.DefaultTokens),
		BlockTokens: strconv.Itoa(notes.DefaultBlockTokens)}
	d := h.previewPickers(c, p, f)
	h.renderView(c, http.StatusOK, "block", view{Title: "Block preview", Active: "Notes", Data: &d})
}

// previewContext: POST /console/notes/block runs the context call (promptctx.Service.Build,
// the service of POST /v1/context) as the chosen agent: the person reads with source_id, so
// the service's rules apply as on REST (role integration; the agent's visibility). It shows
// the system block, the context, the token counts per part against the budget, the notes and
// chunks delivered and the ETag. Like the REST call it leaves one context.read receipt (the
// page says so). A refusal (bad budget, unknown view, ...) keeps the form and names the field.
func (h *Console) previewContext(c *gin.Context) {
	p, ok := h.allow(c, "Notes")
	if !ok {
		return
	}
	f := previewFormOf(c)
	d := h.previewPickers(c, p, f)
	v := view{Title: "Block preview", Active: "Notes", Data: &d}
	req, err := h.contextRequest(f)
	if err == nil {
		var a promptctx.Answer
		if a, err = h.Context.Build(c.Request.Context(), p, req, ""); err == nil {
			h.showAnswer(c, p, &d, req, a)
			h.renderView(c, http.StatusOK, "block", v)
			return
		}
	}
	v.Error = h.previewMessage(c, err)
	h.renderView(c, statusOf(err), "block", v)
}

// previewFormOf reads the preview's POST form.
func previewFormOf(c *gin.Context) previewForm {
	f := previewForm{Agent: c.PostForm("agent"), View: c.PostForm("view"), KB: c.PostForm("kb"),
		Query: strings.TrimSpace(c.PostForm("query")), IncludeAgentMemory: c.PostForm("include_agent_memory") == "on"}
	f.MaxTokens, f.BlockTokens = strings.TrimSpace(c.PostForm("max_tokens")), strings.TrimSpace(c.PostForm("block_max_tokens"))
	for _, v := range c.PostFormArray("types") {
		for _, t := range splitTags(v) {
			if !slices.Contains(f.Types, t) {
				f.Types = append(f.Types, t)
			}
		}
	}
	f.typesText = strings.Join(f.Types, ", ")
	return f
}

// TypesText is the task object types as one comma-separated line (the text field's value).
func (f previewForm) TypesText() string { return f.typesText }

// contextRequest is the context call of form f, read as agent f.Agent: a number that does not
// parse is fault.Invalid naming its member, as the service names the ones out of range.
func (h *Console) contextRequest(f previewForm) (promptctx.Request, error) {
	if f.Agent == "" {
		return promptctx.Request{}, fault.New(fault.Invalid, "invalid_member", "choose the agent whose block to preview").With("member", "source_id")
	}
	req := promptctx.Request{View: f.View, SourceID: f.Agent, IncludeAgentMemory: f.IncludeAgentMemory}
	var err error
	if req.MaxTokens, err = tokensOf(f.MaxTokens, "max_tokens"); err != nil {
		return req, err
	}
	if req.BlockMaxTokens, err = tokensOf(f.BlockTokens, "block_max_tokens"); err != nil {
		return req, err
	}
	if len(f.Types) > 0 {
		req.Task = &promptctx.Task{ObjectTypes: f.Types}
	}
	if f.KB != "" || f.Query != "" {
		if h.Knowledge == nil {
			return req, fault.New(fault.Invalid, "invalid_member", "knowledge is not served by this server").With("member", "kbs")
		}
		if f.KB == "" {
			return req, fault.New(fault.Invalid, "invalid_member", "choose a knowledge base for the query").With("member", "kbs")
		}
		req.Knowledge = &promptctx.Knowledge{KBs: []string{f.KB}, Query: f.Query}
	}
	return req, nil
}

// tokensOf parses a token count as typed ("" is 0: the service's default).
func tokensOf(s, member string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fault.New(fault.Invalid, "invalid_member", "%s is a whole number of tokens", member).With("member", member)
	}
	return n, nil
}

// previewFields are the form's labels of the context call's members, for refusals.
var previewFields = map[string]string{
	"source_id": "Agent", "view": "View", "max_tokens": "Max tokens", "block_max_tokens": "Block share",
	"task.object_types": "Task object types", "include_agent_memory": "Include agent memory",
	"kbs": "Knowledge base", "query": "Query", "top_k": "Knowledge",
}

// previewMessage is a refusal as the page says it: the form field it concerns, then the
// service's message (which never carries personal data).
func (h *Console) previewMessage(c *gin.Context, err error) string {
	msg := h.message(c, err)
	if fe := fault.As(err); fe != nil {
		if m, _ := fe.Details["member"].(string); previewFields[m] != "" {
			return previewFields[m] + ": " + msg
		}
	}
	return msg
}

// previewPickers fills the page's pickers for p: the space's agents, its views (none when the
// views document was never written or is empty), the task object types' vocabulary (the
// object-types document's type names, operations and systems) and the bases p may read. A
// picker that cannot be read is left empty: the form still works, and the preview's own
// call reports any refusal.
func (h *Console) previewPickers(c *gin.Context, p auth.Principal, f previewForm) previewData {
	ctx := c.Request.Context()
	d := previewData{Agents: h.agents(c, p), Form: f, Min: promptctx.MinTokens, Max: promptctx.MaxTokens,
		BlockMax: notes.MaxBlockTokens, TaskTokens: notes.TaskSectionTokens}
	if vs, _, err := h.Docs.Views(ctx, p.SpaceID); err == nil {
		for _, v := range vs.Views {
			d.Views = append(d.Views, viewOption{Name: v.Name, Tags: strings.Join(v.Tags, ", ")})
		}
	}
	if ot, err := h.Docs.ObjectTypes(ctx, p.SpaceID); err == nil {
		var types []string
		for _, t := range ot.Types {
			types = append(types, t.Type)
		}
		for _, g := range []vocabGroup{{"Types", types}, {"Operations", ot.Operations}, {"Systems", ot.Systems}} {
			if len(g.Tags) > 0 {
				d.Vocab = append(d.Vocab, g)
			}
		}
	}
	d.Bases, d.KnowledgeNote = h.previewBases(c, p)
	return d
}

// previewBases lists the bases p may retrieve from, or says why there are none.
func (h *Console) previewBases(c *gin.Context, p auth.Principal) ([]knowledge.Base, string) {
	if h.Knowledge == nil {
		return nil, "Knowledge is not served by this server."
	}
	bases, err := h.Knowledge.ListBases(c.Request.Context(), p)
	switch {
	case fault.IsCode(err, knowledge.CodeFeatureDisabled):
		return nil, "Knowledge is off for this space (features: knowledge.enabled)."
	case err != nil:
		return nil, "The knowledge bases could not be listed: " + h.message(c, err)
	case len(bases) == 0:
		return nil, "This space has no knowledge base yet."
	}
	return bases, ""
}

// showAnswer puts answer a of request req into d: the token table against the budget, and
// the delivered notes with their titles (read back as p, who may read every note).
func (h *Console) showAnswer(c *gin.Context, p auth.Principal, d *previewData, req promptctx.Request, a promptctx.Answer) {
	d.Answer, d.Budget = &a, req.MaxTokens
	if d.Budget == 0 {
		d.Budget = promptctx.DefaultTokens
	}
	block := req.BlockMaxTokens
	if block == 0 {
		block = min(notes.DefaultBlockTokens, d.Budget)
	}
	t := a.Tokens
	d.Rows = []tokenRow{
		{Part: "System block", Tokens: t.SystemBlock, Limit: "at most " + strconv.Itoa(block)},
		{Part: "Task notes", Tokens: t.TaskNotes, Limit: taskLimit(req)},
		{Part: "Knowledge", Tokens: t.Knowledge, Limit: "what is left"},
	}
	if joins := t.Total - t.SystemBlock - t.TaskNotes - t.Knowledge; joins != 0 {
		d.Rows = append(d.Rows, tokenRow{Part: "Joins between parts", Tokens: joins, Limit: "—"})
	}
	d.Rows = append(d.Rows, tokenRow{Part: "Total", Tokens: t.Total, Limit: "budget " + strconv.Itoa(d.Budget), Total: true})
	d.BlockNotes = h.previewNotes(c, p, a.NoteIDs)
	d.TaskNotes = h.previewNotes(c, p, a.TaskNoteIDs)
}

// taskLimit is what the task section may take under req.
func taskLimit(req promptctx.Request) string {
	if !req.IncludeAgentMemory {
		return "not asked for"
	}
	return "at most " + strconv.Itoa(notes.TaskSectionTokens)
}

// previewNotes reads back the notes ids names, in order, for their titles and tags (those
// outside the space's vocabulary marked, CTX-1).
func (h *Console) previewNotes(c *gin.Context, p auth.Principal, ids []string) []previewNote {
	var read []notes.Note
	out := make([]previewNote, 0, len(ids))
	for _, id := range ids {
		n, err := h.Notes.Get(c.Request.Context(), p, id)
		if err != nil {
			// Only the title is lost: the id is still listed, and the text is in the block.
			out = append(out, previewNote{ID: id})
			continue
		}
		read = append(read, n)
		out = append(out, previewNote{ID: id, Title: n.Title})
	}
	unknown := h.unknownTags(c, p.SpaceID, read...)
	for i, j := 0, 0; i < len(out) && j < len(read); i++ {
		if out[i].ID != read[j].ID {
			continue
		}
		for _, t := range read[j].Tags {
			out[i].Tags = append(out[i].Tags, previewTag{Name: t, Unknown: unknown[t]})
		}
		j++
	}
	return out
}
