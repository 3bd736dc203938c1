package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"github.com/agentmemory/agentmemory/sdk"
)

// searchArgs, rememberArgs and knowledgeArgs are the tools' arguments; a pointer marks a
// required member, so that its absence is told apart from an empty value.
type searchArgs struct {
	Query *string  `json:"query"`
	Tags  []string `json:"tags"`
	Limit int      `json:"limit"`
	Run   *sdk.Run `json:"run"`
}

type rememberArgs struct {
	Kind  *string  `json:"kind"`
	Title *string  `json:"title"`
	Body  *string  `json:"body"`
	Tags  []string `json:"tags"`
}

type knowledgeArgs struct {
	Query     *string        `json:"query"`
	KBs       []string       `json:"kbs"`
	TopK      int            `json:"top_k"`
	MaxTokens int            `json:"max_tokens"`
	Filters   map[string]any `json:"filters"`
	Run       *sdk.Run       `json:"run"`
	Space     string         `json:"space"`
}

// toolNote is a note as the tools show it (the MCP server's mcpNote).
type toolNote struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Title    string   `json:"title"`
	Body     string   `json:"body"`
	Tags     []string `json:"tags"`
	Version  int      `json:"version"`
	SourceID string   `json:"source_id"`
}

// rememberResult is remember's answer (the MCP server's mcpRememberOutput).
type rememberResult struct {
	Status      string   `json:"status"`
	NoteID      string   `json:"note_id,omitempty"`
	Version     int      `json:"version,omitempty"`
	ProposalID  string   `json:"proposal_id,omitempty"`
	DuplicateOf string   `json:"duplicate_of,omitempty"`
	UnknownTags []string `json:"unknown_tags,omitempty"`
}

// Dispatch runs one tool call of the model: name and its arguments as the model sent them
// (JSON text of an object; "" is {}). It returns the JSON text to hand back to the model, the
// same shapes as the MCP server's tool results:
//
//   - search_agent_memory: {"enabled", "notes": [{id, kind, title, body, tags, version, source_id}]}
//   - remember: {"status": "stored", "note_id", "version"}, {"status": "proposed", "proposal_id"}
//     or {"status": "duplicate", "note_id", "version", "duplicate_of"} (with "unknown_tags"
//     when a tag is outside the space's vocabulary)
//   - search_knowledge: {"mode", "chunks": [...], "context", "context_tokens"}: context is the
//     fenced evidence (POST /v1/knowledge/retrieve, KN-4)
//   - a refusal: {"error": {"code", "message", ...}}, e.g. personal_data_in_agent_memory with
//     "kinds" (never values), instruction_in_agent_memory with "classes",
//     "retry_after_seconds" for limits; unknown_tool for a tool the kit does not offer,
//     invalid_arguments for arguments that are not the schema's.
//
// A refusal is a result, never err: the model reads it and may rewrite its note. err is
// non-nil only when the service could not be reached or ctx ended (the run cannot go on).
func (k *Kit) Dispatch(ctx context.Context, name, arguments string) (string, error) {
	if !k.Offers(name) {
		return errorResult("unknown_tool", "this tool is not offered"), nil
	}
	data := []byte(strings.TrimSpace(arguments))
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	var (
		out any
		err error
	)
	switch name {
	case SearchAgentMemory:
		out, err = k.search(ctx, data)
	case Remember:
		out, err = k.remember(ctx, data)
	case SearchKnowledge:
		var text string
		text, err = k.searchKnowledge(ctx, data)
		out = json.RawMessage(text)
	}
	if err != nil {
		return refusal(err)
	}
	res, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	return string(res), nil
}

// errInvalidArguments is a decoding failure shown to the model as invalid_arguments.
type errInvalidArguments struct{ msg string }

func (e errInvalidArguments) Error() string { return e.msg }

// decodeArgs decodes a tool's arguments strictly: an object, no unknown member, the right
// types, every required member (named in required) present. Messages never repeat values.
func decodeArgs(data []byte, v any, required map[string]bool) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return errInvalidArguments{"the arguments must be a JSON object"}
	}
	for name := range required {
		if v, ok := members[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return errInvalidArguments{"missing argument: " + name}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errInvalidArguments{"wrong type: " + te.Field}
		}
		return errInvalidArguments{"unknown argument or malformed arguments"}
	}
	return nil
}

func (k *Kit) search(ctx context.Context, data []byte) (any, error) {
	var a searchArgs
	if err := decodeArgs(data, &a, map[string]bool{"query": true}); err != nil {
		return nil, err
	}
	found, err := k.client.FindInRun(ctx, *a.Query, a.Tags, a.Limit, a.Run)
	if err != nil {
		return nil, err
	}
	notes := make([]toolNote, 0, len(found.Notes))
	for _, n := range found.Notes {
		notes = append(notes, toolNote{ID: n.ID, Kind: n.Kind, Title: n.Title, Body: n.Body, Tags: n.Tags, Version: n.Version, SourceID: n.SourceID})
	}
	out := map[string]any{"enabled": found.Enabled, "notes": notes}
	if found.Run != nil { // in a run (CTX-3), as the MCP tool answers
		out["run"], out["budget_exhausted"] = found.Run, found.BudgetExhausted
	}
	return out, nil
}

func (k *Kit) remember(ctx context.Context, data []byte) (any, error) {
	var a rememberArgs
	if err := decodeArgs(data, &a, map[string]bool{"kind": true, "title": true, "body": true}); err != nil {
		return nil, err
	}
	got, err := k.client.Remember(ctx, sdk.Note{Kind: *a.Kind, Title: *a.Title, Body: *a.Body, Tags: a.Tags, Evidence: k.opt.Evidence}, "")
	if err != nil {
		return nil, err
	}
	out := rememberResult{Status: "stored", UnknownTags: got.UnknownTags}
	switch {
	case got.ProposalID != "":
		out.Status, out.ProposalID = "proposed", got.ProposalID
	case got.DuplicateOf != "":
		out.Status, out.DuplicateOf = "duplicate", got.DuplicateOf
	}
	if got.Note != nil {
		out.NoteID, out.Version = got.Note.ID, got.Note.Version
	}
	return out, nil
}

// searchKnowledge retrieves through POST /v1/knowledge/retrieve with the model's kbs, else
// Options.KnowledgeBases; with neither, it asks the MCP server's search_knowledge, which
// searches every base the key may read (what the tool's description promises). With space
// (issue 31) it is a retrieval through a bridge: the model's kbs (names of that space's
// bases) only, never Options.KnowledgeBases.
func (k *Kit) searchKnowledge(ctx context.Context, data []byte) (string, error) {
	var a knowledgeArgs
	if err := decodeArgs(data, &a, map[string]bool{"query": true}); err != nil {
		return "", err
	}
	kbs := a.KBs
	if len(kbs) == 0 && a.Space == "" { // another space's bases are named by the model, never defaulted
		kbs = k.opt.KnowledgeBases
	}
	if len(kbs) == 0 && a.Space == "" {
		text, isError, err := k.client.MCPCallTool(ctx, SearchKnowledge, data)
		if err != nil {
			return "", err
		}
		if isError || !json.Valid([]byte(text)) {
			return text, toolError{text}
		}
		return text, nil
	}
	res, err := k.client.Retrieve(ctx, sdk.RetrieveRequest{Query: *a.Query, KBs: kbs, TopK: a.TopK, MaxTokens: a.MaxTokens, Filters: a.Filters, Run: a.Run, Space: a.Space})
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(res)
	return string(out), err
}

// toolError is an MCP tool error whose text is already the result the model reads.
type toolError struct{ text string }

func (e toolError) Error() string { return "tool error" }

// refusal turns err into the result the model reads, or returns it when the run cannot go on
// (the service unreachable, ctx ended, an answer that does not decode).
func refusal(err error) (string, error) {
	var (
		ia errInvalidArguments
		te toolError
		ae *sdk.Error
	)
	switch {
	case errors.As(err, &ia):
		return errorResult("invalid_arguments", ia.msg), nil
	case errors.As(err, &te):
		if json.Valid([]byte(te.text)) {
			return te.text, nil
		}
		return errorResult("tool_error", "the tool failed"), nil
	case errors.As(err, &ae):
		inner := map[string]any{"code": ae.Code, "message": ae.Message}
		if len(ae.Kinds) > 0 {
			inner["kinds"] = ae.Kinds
		}
		if len(ae.Classes) > 0 {
			inner["classes"] = ae.Classes
		}
		if ae.RetryAfter > 0 {
			inner["retry_after_seconds"] = int(math.Ceil(ae.RetryAfter.Seconds()))
		}
		data, mErr := json.Marshal(map[string]any{"error": inner})
		return string(data), mErr
	}
	return "", err
}

// errorResult is {"error": {"code", "message"}} as JSON text.
func errorResult(code, message string) string {
	data, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": message}}) // strings always marshal
	return string(data)
}

// IsError reports whether a Dispatch result is a refusal ({"error": ...}): the providers'
// tool-result messages carry it (Anthropic's is_error).
func IsError(result string) bool {
	var r struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal([]byte(result), &r) == nil && len(r.Error) > 0 && string(r.Error) != "null"
}
