// Package llm is the service's only door to the model server: it speaks Ollama's /api/chat
// through github.com/ollama/ollama/api (the only importer of that module) and asks for
// structured output with a JSON schema. It distils one reusable note from masked turns
// (AM-9) and lists the kinds of personal data in a text for the gate's model layer (AM-6).
//
// Nothing here logs prompts or answers: they hold turn and note text.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ollama/ollama/api"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// ErrBadAnswer marks an answer that is not usable: empty, "{}", truncated, not JSON, or not
// of the asked schema. It is worth retrying (a model samples anew) a bounded number of times.
var ErrBadAnswer = errors.New("llm: bad model answer")

// ErrUnavailable marks a model server that did not answer (unreachable, timed out, or an
// error status such as a missing model). It is worth retrying for as long as the caller waits.
var ErrUnavailable = errors.New("llm: model server unavailable")

// Client asks an Ollama-API server. Build it with New.
type Client struct {
	api           *api.Client
	model         string
	detectorModel string
}

// Config names the server and the models.
type Config struct {
	// Host is the server's base URL, e.g. http://127.0.0.1:11434 (OLLAMA_HOST).
	Host string
	// Model distils notes (OLLAMA_MODEL).
	Model string
	// DetectorModel lists personal data for the gate; empty means Model.
	DetectorModel string
	// HTTPClient is used for every call; nil means a client with a 5-minute timeout.
	HTTPClient *http.Client
}

// New returns a Client for cfg. A Host that is not an http(s) URL is an error.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: OLLAMA_HOST must be an http(s) URL such as http://127.0.0.1:11434")
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("llm: no model named")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	dm := cfg.DetectorModel
	if dm == "" {
		dm = cfg.Model
	}
	return &Client{api: api.NewClient(u, hc), model: cfg.Model, detectorModel: dm}, nil
}

// Turn is one masked turn of a conversation as the model sees it.
type Turn struct {
	// Speaker is "customer", "agent" or "system".
	Speaker string
	// Text is the masked text (personal data already replaced by typed placeholders).
	Text string
}

// Proposal is the note the model proposes, in the fixed schema of AM-1 (kind, title, body,
// tags): the one shape of a proposed note, notes.ProposedNote (visibility and valid_until
// stay empty; a distilled note is visible to its source only).
type Proposal = notes.ProposedNote

// Kinds lists the note kinds of AM-1.
var Kinds = []string{"procedure", "tool_note", "process_note", "pitfall"}

// distillSchema is the JSON schema given as format: either a note or {"none": true}.
var distillSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "none": {"type": "boolean"},
    "kind": {"type": "string", "enum": ["procedure", "tool_note", "process_note", "pitfall"]},
    "title": {"type": "string", "minLength": 1, "maxLength": 120},
    "body": {"type": "string", "minLength": 1, "maxLength": 2000},
    "tags": {"type": "array", "maxItems": 8, "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.:-]{0,39}$"}}
  },
  "additionalProperties": false
}`)

// distillPrompt is the system prompt of Distill.
const distillPrompt = `You write agent memory: short working notes an AI customer-service agent keeps about its own trade.
You receive one masked conversation between a customer and an agent. Placeholders such as <email>, <phone>, <name> stand for personal data that was removed.

Write at most ONE reusable note that would help an agent handle FUTURE conversations of the same kind:
- a procedure (the steps to follow), a tool_note (how a tool or system behaves), a process_note (how a company process works) or a pitfall (a mistake to avoid).
- Write it as a general procedure for any customer. NEVER include customer data: no names, e-mail addresses, phone numbers, usernames, order ids, account numbers, addresses, amounts or dates of this customer, and no placeholders.
- Never quote what the customer said.
- title: at most 120 characters; body: at most 2000 characters; tags: at most 8, lower case (object types, operations, systems).

If the conversation teaches nothing reusable, answer exactly {"none": true}.
Otherwise answer {"kind": ..., "title": ..., "body": ..., "tags": [...]}. Answer with JSON only.`

var tagPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.:-]{0,39}$`)

// Distill asks the model for one reusable note from turns (already masked). It returns the
// proposal and true, or false when the model says nothing reusable is in them. An unusable
// answer wraps ErrBadAnswer; a server that does not answer wraps ErrUnavailable.
func (c *Client) Distill(ctx context.Context, turns []Turn) (Proposal, bool, error) {
	var b strings.Builder
	for _, t := range turns {
		fmt.Fprintf(&b, "%s: %s\n", t.Speaker, strings.ReplaceAll(t.Text, "\n", " "))
	}
	content, err := c.chat(ctx, c.model, distillPrompt, "Conversation:\n"+b.String(), distillSchema)
	if err != nil {
		return Proposal{}, false, err
	}
	var ans struct {
		None  *bool     `json:"none"`
		Kind  *string   `json:"kind"`
		Title *string   `json:"title"`
		Body  *string   `json:"body"`
		Tags  *[]string `json:"tags"`
	}
	if err := decodeStrict(content, &ans); err != nil {
		return Proposal{}, false, err
	}
	hasNote := ans.Kind != nil || ans.Title != nil || ans.Body != nil || ans.Tags != nil
	if ans.None != nil && *ans.None {
		if hasNote {
			return Proposal{}, false, fmt.Errorf("%w: both none and a note", ErrBadAnswer)
		}
		return Proposal{}, false, nil
	}
	if ans.Kind == nil || ans.Title == nil || ans.Body == nil {
		return Proposal{}, false, fmt.Errorf("%w: kind, title and body are required", ErrBadAnswer)
	}
	p := Proposal{Kind: *ans.Kind, Title: strings.TrimSpace(*ans.Title), Body: strings.TrimSpace(*ans.Body), Tags: []string{}}
	if ans.Tags != nil {
		p.Tags = append(p.Tags, (*ans.Tags)...)
	}
	if err := ValidateProposal(p); err != nil {
		return Proposal{}, false, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	return p, true, nil
}

// ValidateProposal checks the model's answer p against AM-1's limits as the answer's schema
// states them: a known kind, a title of 1-120 characters, a body of 1-2,000 characters, at
// most 8 lower-case tags. An error means an unusable answer.
func ValidateProposal(p Proposal) error {
	known := false
	for _, k := range Kinds {
		known = known || p.Kind == k
	}
	switch {
	case !known:
		return errors.New("unknown kind")
	case p.Title == "" || utf8.RuneCountInString(p.Title) > 120:
		return errors.New("title must have 1 to 120 characters")
	case p.Body == "" || utf8.RuneCountInString(p.Body) > 2000:
		return errors.New("body must have 1 to 2000 characters")
	case len(p.Tags) > 8:
		return errors.New("at most 8 tags")
	}
	for _, t := range p.Tags {
		if !tagPattern.MatchString(t) {
			return errors.New("tags are lower case")
		}
	}
	return nil
}

// PersonalKinds lists the kinds DetectKinds may report.
var PersonalKinds = []string{"email", "phone", "document", "name", "address", "account_id", "other"}

var detectSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "kinds": {"type": "array", "items": {"type": "string", "enum": ["email", "phone", "document", "name", "address", "account_id", "other"]}}
  },
  "required": ["kinds"],
  "additionalProperties": false
}`)

const detectPrompt = `You are a personal-data detector. Read the text and list the kinds of personal data about a private person that it contains:
email, phone, document (identity or tax numbers), name (of a private person), address (a street address of a person), account_id (a customer's username, order id or account number), other.
Organisations, products, company names, cities and countries are NOT personal data. Typed placeholders such as <email> are NOT personal data.
Answer with JSON only: {"kinds": [...]}, an empty list when there is none. Never repeat the values.`

// DetectKinds asks the detector model which kinds of personal data text holds (the gate's
// model layer, AM-6). It returns the kinds found, sorted and unique, or none. An unusable
// answer wraps ErrBadAnswer; a server that does not answer wraps ErrUnavailable.
func (c *Client) DetectKinds(ctx context.Context, text string) ([]string, error) {
	content, err := c.chat(ctx, c.detectorModel, detectPrompt, text, detectSchema)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Kinds *[]string `json:"kinds"`
	}
	if err := decodeStrict(content, &ans); err != nil {
		return nil, err
	}
	if ans.Kinds == nil {
		return nil, fmt.Errorf("%w: kinds is required", ErrBadAnswer)
	}
	seen := map[string]bool{}
	var kinds []string
	for _, k := range PersonalKinds {
		for _, got := range *ans.Kinds {
			if got == k && !seen[k] {
				seen[k] = true
				kinds = append(kinds, k)
			}
		}
	}
	for _, got := range *ans.Kinds {
		if !seen[got] {
			return nil, fmt.Errorf("%w: unknown kind", ErrBadAnswer)
		}
	}
	return kinds, nil
}

// chat sends one non-streaming chat with a JSON-schema format and returns the answer's text.
func (c *Client) chat(ctx context.Context, model, system, user string, schema json.RawMessage) (string, error) {
	stream := false
	req := &api.ChatRequest{
		Model:    model,
		Messages: []api.Message{{Role: "system", Content: system}, {Role: "user", Content: user}},
		Stream:   &stream,
		Format:   schema,
		Options:  map[string]any{"temperature": 0},
	}
	var content strings.Builder
	var done bool
	var reason string
	err := c.api.Chat(ctx, req, func(r api.ChatResponse) error {
		content.WriteString(r.Message.Content)
		if r.Done {
			done, reason = true, r.DoneReason
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
		var se api.StatusError
		if errors.As(err, &se) {
			// The status says what went wrong; the message may echo the request, so it is dropped.
			return "", fmt.Errorf("%w: status %d", ErrUnavailable, se.StatusCode)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			return "", fmt.Errorf("%w: %s", ErrUnavailable, ue.Op)
		}
		// Anything else came from reading or decoding the answer.
		return "", fmt.Errorf("%w: unreadable answer", ErrBadAnswer)
	}
	if !done {
		return "", fmt.Errorf("%w: the answer did not finish", ErrBadAnswer)
	}
	if reason == "length" {
		return "", fmt.Errorf("%w: the answer was cut at the length limit", ErrBadAnswer)
	}
	text := strings.TrimSpace(content.String())
	if text == "" {
		return "", fmt.Errorf("%w: empty answer", ErrBadAnswer)
	}
	return text, nil
}

// decodeStrict decodes one JSON object into v, refusing unknown members, trailing data, "{}"
// and nesting deeper than strictjson.MaxBodyDepth (checked in linear time before any parse).
// Errors wrap ErrBadAnswer and never carry the answer's text.
func decodeStrict(text string, v any) error {
	if err := strictjson.Scan([]byte(text), strictjson.MaxBodyDepth); err != nil {
		return fmt.Errorf("%w: %s", ErrBadAnswer, fault.As(err).Message)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &probe); err != nil {
		return fmt.Errorf("%w: not a JSON object (truncated or malformed)", ErrBadAnswer)
	}
	if len(probe) == 0 {
		return fmt.Errorf("%w: empty object", ErrBadAnswer)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: not of the schema", ErrBadAnswer)
	}
	return nil
}

// Embed asks the server's /api/embed for the vectors of texts with model (KN-2), in one
// call: Ollama embeds a batch per request. Truncation is off, so a text longer than the
// model's context is an error, never a silently shortened vector. It returns one vector per
// text, all of one length. A server that does not answer (or answers an error status, such
// as a missing model or an over-long input) wraps ErrUnavailable; an answer with the wrong
// number of vectors, empty or unequal vectors wraps ErrBadAnswer.
func (c *Client) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	truncate := false
	resp, err := c.api.Embed(ctx, &api.EmbedRequest{Model: model, Input: texts, Truncate: &truncate})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
		var se api.StatusError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: status %d", ErrUnavailable, se.StatusCode)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("%w: %s", ErrUnavailable, ue.Op)
		}
		return nil, fmt.Errorf("%w: unreadable answer", ErrBadAnswer)
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrBadAnswer, len(resp.Embeddings), len(texts))
	}
	dims := len(resp.Embeddings[0])
	for _, v := range resp.Embeddings {
		if len(v) == 0 || len(v) != dims {
			return nil, fmt.Errorf("%w: vectors of unequal or zero length", ErrBadAnswer)
		}
	}
	return resp.Embeddings, nil
}
