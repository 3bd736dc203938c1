// Package notes is agent memory (AM-1..AM-14): notes an agent learned about its own trade,
// never about a customer. Every door (REST, MCP; a proposal's approval through
// InsertApproved, inside the approval's transaction) writes through the one Service, which
// validates, runs the personal-data gate, applies the limits and idempotency, and commits
// each change whole with its admin receipt and its outbox event. Reads (list, block, search)
// apply the visibility rules of AM-2 and leave agent_memory receipts naming the notes
// delivered.
//
// The proposal lifecycle (AM-8, AM-9) is internal/proposals, which imports this package;
// this one never reaches it: an agent's write under writes: human_only stores its pending
// proposal through internal/noterows (InsertProposal), the row-level primitives both share
// (codecs, sealing, the cap, idempotency records, the note and proposal inserts), and
// proposals decides it from there. The package never imports gin, Temporal or
// internal/proposals; errors are *fault.Error.
package notes

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Note kinds (AM-1).
const (
	KindProcedure   = "procedure"
	KindToolNote    = "tool_note"
	KindProcessNote = "process_note"
	KindPitfall     = "pitfall"
)

// Visibilities (AM-1, AM-2).
const (
	VisibilitySource = "source" // the owning agent only (the default)
	VisibilityVendor = "vendor" // agents of the owner's vendor
	VisibilitySpace  = "space"  // every agent of the space: an explicit choice of the writer
)

// Origins (AM-1).
const (
	OriginAgent     = "agent"
	OriginHuman     = "human"
	OriginDistilled = "distilled"
)

// Note statuses.
const (
	StatusActive  = noterows.StatusActive
	StatusRetired = noterows.StatusRetired
)

// Limits (AM-1, AM-7), in Unicode code points where they concern text.
const (
	MaxTitle       = 120
	MaxBody        = 2000
	MaxTags        = 8
	MaxTagLen      = 64
	MaxEvidenceLen = 128
	RateLimit      = noterows.RateLimit
	RateWindow     = noterows.RateWindow
)

var (
	kinds        = []string{KindProcedure, KindToolNote, KindProcessNote, KindPitfall}
	visibilities = []string{VisibilitySource, VisibilityVendor, VisibilitySpace}
	tagPattern   = regexp.MustCompile(`^[a-z0-9_.:-]+$`)
	idPattern    = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)
)

// OptionsSource gives the personal-data options of a space (its default phone region and
// known subjects); *subjects.Service implements it.
type OptionsSource interface {
	Options(ctx context.Context, spaceID string) (redact.Options, error)
}

// Service is agent memory. DB, Docs, Subjects and Hasher are required (Hasher keys the
// stored hashes of Idempotency-Key values, which are never stored in clear); Detector is the
// optional model layer of the gate (nil: local layer only); DetectorTimeout bounds one model
// call (default 10 s); Now is the clock (default time.Now).
type Service struct {
	DB              *bun.DB
	Docs            spaces.Documents
	Subjects        OptionsSource
	Hasher          keyed.Hasher
	Detector        Detector
	DetectorTimeout time.Duration
	Now             func() time.Time
	// Receipts commits the receipts of block reads and searches in groups (issue 16); nil:
	// each read commits its own receipt.
	Receipts *receipts.Log
	// Runs keeps the budgets of runs (CTX-3): a block or search naming a run draws on it.
	// Without it a call naming a run is refused (runs_unavailable).
	Runs *runs.Store
	// Keys holds the keys sealing notes' and proposals' title and body (issue 29 §1; a
	// keystore.Cache in the app, since every block and search unseals). Without it (package
	// tests) rows are stored in clear.
	Keys keystore.Store

	// answers are this replica's block answers (issue 16).
	answers blockAnswers
	// writes queues this replica's note writes of a space and commits them in groups (issue 16).
	writes spaceQueues
	// beforeBatchCommit, when set (tests), runs at the end of a note batch's transaction with
	// the number of writes it ran; an error rolls the whole transaction back as a failed
	// commit would.
	beforeBatchCommit func(n int) error
}

func (s *Service) now() time.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	// Stored times keep microseconds (PostgreSQL's precision): answers equal later reads.
	return now().UTC().Truncate(time.Microsecond)
}

// Evidence names where a note was learned: exactly one of a conversation or a task id (the
// id only, never content). Its columns' codec is noterows' (EvidenceOf, EvidenceColumns).
type Evidence = noterows.Evidence

// Input is the body of POST /v1/agent-memory/notes. SourceID is named only by a person with
// role integration (an agent writes as itself). Visibility defaults to "source".
type Input struct {
	SourceID   string     `json:"source_id,omitempty"`
	Kind       string     `json:"kind"`
	Title      string     `json:"title"`
	Body       string     `json:"body"`
	Tags       []string   `json:"tags"`
	Visibility string     `json:"visibility,omitempty"`
	Evidence   *Evidence  `json:"evidence,omitempty"`
	ValidUntil *time.Time `json:"valid_until,omitempty"`
}

// Patch is an edit (POST .../notes/{id}/versions, or approval edits): members left out keep
// the previous value.
type Patch struct {
	Kind       *string    `json:"kind,omitempty"`
	Title      *string    `json:"title,omitempty"`
	Body       *string    `json:"body,omitempty"`
	Tags       *[]string  `json:"tags,omitempty"`
	Visibility *string    `json:"visibility,omitempty"`
	Evidence   *Evidence  `json:"evidence,omitempty"`
	ValidUntil *time.Time `json:"valid_until,omitempty"`
}

// Note is a note version as the API shows it.
type Note struct {
	ID               string     `json:"id"`
	Version          int        `json:"version"`
	SupersedesNoteID *string    `json:"supersedes_note_id"`
	SourceID         string     `json:"source_id"`
	Vendor           string     `json:"vendor"`
	Kind             string     `json:"kind"`
	Title            string     `json:"title"`
	Body             string     `json:"body"`
	Tags             []string   `json:"tags"`
	Visibility       string     `json:"visibility"`
	Evidence         *Evidence  `json:"evidence"`
	Origin           string     `json:"origin"`
	Status           string     `json:"status"`
	ValidUntil       *time.Time `json:"valid_until"`
	ProposalID       *string    `json:"proposal_id"`
	// KeyID and AgentVersion are the version's provenance (MS-5, QT-2): the key that wrote
	// it (for an approved proposal, the approving person's key) and the Agent-Version header
	// of the agent's write (for an approved proposal, of the request that proposed it; ""
	// when none was sent).
	KeyID        string     `json:"key_id"`
	AgentVersion string     `json:"agent_version"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	RetiredAt    *time.Time `json:"retired_at"`
}

// content is a validated note body.
type content struct {
	Kind       string
	Title      string
	Body       string
	Tags       []string
	Visibility string
	Evidence   *Evidence
	ValidUntil *time.Time
}

func invalid(member, format string, args ...any) error {
	return noterows.Invalid(member, format, args...)
}

// validate checks c against AM-1's limits, in order: kind, title, body, tags, visibility,
// evidence, valid_until; errors are fault.Invalid naming the member. It fills the defaults
// (no tags, VisibilitySource) and truncates ValidUntil to microseconds (UTC). Text is never
// truncated.
func (c *content) validate(now time.Time) error {
	if !slices.Contains(kinds, c.Kind) {
		return invalid("kind", "kind must be one of %s", strings.Join(kinds, ", "))
	}
	if err := validateTitle(c.Title); err != nil {
		return err
	}
	if err := validateBody(c.Body); err != nil {
		return err
	}
	if !utf8.ValidString(c.Title) || !utf8.ValidString(c.Body) {
		return invalid("body", "title and body must be valid UTF-8")
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if err := validateTags(c.Tags); err != nil {
		return err
	}
	if c.Visibility == "" {
		c.Visibility = VisibilitySource
	}
	if !slices.Contains(visibilities, c.Visibility) {
		return invalid("visibility", "visibility must be one of %s", strings.Join(visibilities, ", "))
	}
	if err := validateEvidence(c.Evidence); err != nil {
		return err
	}
	if c.ValidUntil != nil {
		v := c.ValidUntil.UTC().Truncate(time.Microsecond)
		if !v.After(now) {
			return invalid("valid_until", "valid_until must be in the future")
		}
		c.ValidUntil = &v
	}
	return nil
}

// validateTitle checks a note's title: present, one line, no fence tags, at most MaxTitle
// code points (AM-1, MS-7).
func validateTitle(title string) error {
	if strings.TrimSpace(title) == "" {
		return invalid("title", "title is required")
	}
	if i := controlIndex(title); i >= 0 {
		return invalid("title", "a title is one line: no control characters or line separators (at byte %d)", i)
	}
	if hasFence(title) {
		return invalid("title", "a title may not contain the block's fence tags <agent_notes> or </agent_notes>")
	}
	if n := utf8.RuneCountInString(title); n > MaxTitle {
		return invalid("title", "title is %d characters (code points); at most %d", n, MaxTitle)
	}
	return nil
}

// validateBody checks a note's body: present, no control characters but newline, carriage
// return and tab, at most MaxBody code points, no fence tags (AM-1).
func validateBody(body string) error {
	if strings.TrimSpace(body) == "" {
		return invalid("body", "body is required")
	}
	if i := bodyControlIndex(body); i >= 0 {
		return invalid("body", "a body may not contain control characters other than newline, carriage return and tab (at byte %d)", i)
	}
	if n := utf8.RuneCountInString(body); n > MaxBody {
		return invalid("body", "body is %d characters (code points); at most %d", n, MaxBody)
	}
	if hasFence(body) {
		return invalid("body", "a body may not contain the block's fence tags <agent_notes> or </agent_notes>")
	}
	return nil
}

// validateTags checks a note's tags: at most MaxTags, each one line of tagPattern and at most
// MaxTagLen bytes, none repeated; errors name the first bad index.
func validateTags(tags []string) error {
	if len(tags) > MaxTags {
		return invalid("tags", "at most %d tags, got %d", MaxTags, len(tags))
	}
	for i, t := range tags {
		if controlIndex(t) >= 0 {
			return invalid("tags", "tags[%d] contains a control character or line separator", i)
		}
		if len(t) == 0 || len(t) > MaxTagLen || !tagPattern.MatchString(t) {
			return invalid("tags", "tags[%d] must be 1-%d characters of lower-case a-z, 0-9, _ . : -", i, MaxTagLen)
		}
		if slices.Contains(tags[:i], t) {
			return invalid("tags", "tags[%d] repeats a tag", i)
		}
	}
	return nil
}

// validateEvidence checks a note's evidence, when given: exactly one of conversation_id or
// task_id, of idPattern and at most MaxEvidenceLen characters.
func validateEvidence(e *Evidence) error {
	if e == nil {
		return nil
	}
	switch {
	case (e.ConversationID == "") == (e.TaskID == ""):
		return invalid("evidence", "evidence names exactly one of conversation_id or task_id")
	case len(e.ConversationID+e.TaskID) > MaxEvidenceLen || !idPattern.MatchString(e.ConversationID+e.TaskID):
		return invalid("evidence", "an evidence id is 1-%d characters of letters, digits, _ . : -", MaxEvidenceLen)
	}
	return nil
}

// controlIndex returns the byte index of the first control character of s (a rune below
// 0x20, 0x7f-0x9f, or the line and paragraph separators U+2028, U+2029), or -1. Titles and
// tags are one line (MS-7): a newline in a title could forge a heading in the block.
func controlIndex(s string) int {
	for i, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u2028' || r == '\u2029' {
			return i
		}
	}
	return -1
}

// bodyControlIndex returns the byte index of the first control character of body other than
// \n, \r and \t (a rune below 0x20, or 0x7f-0x9f), or -1. Such characters (NUL above all)
// cannot be stored by every database and have no place in a note, whatever door it came
// through (REST, MCP, distillation).
func bodyControlIndex(s string) int {
	for i, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			continue
		}
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return i
		}
	}
	return -1
}

// fence finds the block's fence tags inside note text (AM-4, MS-7): "<", optional spaces,
// an optional "/", optional spaces and "agent_notes" as a whole word, in any case, whatever
// follows (attributes, spaces, a missing ">"), read after normalisation (redact.Fence: a
// zero-width character inside the tag, an ideographic space, "İ", "<\/", full-width
// letters and look-alikes are the same tag).
var fence = redact.NewFence("agent_notes")

// hasFence reports whether s holds something that reads as <agent_notes> or </agent_notes>.
func hasFence(s string) bool { return fence.Has(s) }

// GateText is everything of a note the personal-data gate (Check) reads, the one gate text
// of every write path (REST, MCP, proposals, distillation): title, body and tags each on
// their own and also concatenated without separator (redact.JoinForCheck), so a value split
// across fields ("Customer ana@" + "example.com is the right mailbox") is caught; adjacent
// tags joined by "@" where they form an address (redact.JoinTagsForCheck: a local part
// and a dotted domain, ["ana", "example.com"]), so an address split across tags is
// caught (redact.NoteText); then the evidence ids (ev may be nil).
func GateText(title, body string, tags []string, ev *Evidence) string {
	var b strings.Builder
	b.WriteString(redact.NoteText(title, body, tags))
	if ev != nil {
		b.WriteString("\n")
		b.WriteString(ev.ConversationID + ev.TaskID)
	}
	return b.String()
}

func (in Input) content() content {
	return content{Kind: in.Kind, Title: in.Title, Body: in.Body, Tags: slices.Clone(in.Tags),
		Visibility: in.Visibility, Evidence: in.Evidence, ValidUntil: in.ValidUntil}
}

// apply returns c with p's members applied.
func (c content) apply(p *Patch) content {
	if p == nil {
		return c
	}
	if p.Kind != nil {
		c.Kind = *p.Kind
	}
	if p.Title != nil {
		c.Title = *p.Title
	}
	if p.Body != nil {
		c.Body = *p.Body
	}
	if p.Tags != nil {
		c.Tags = slices.Clone(*p.Tags)
	}
	if p.Visibility != nil {
		c.Visibility = *p.Visibility
	}
	if p.Evidence != nil {
		c.Evidence = p.Evidence
	}
	if p.ValidUntil != nil {
		c.ValidUntil = p.ValidUntil
	}
	return c
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func toNote(r models.Note) Note {
	return Note{
		ID: r.ID, Version: r.Version, SupersedesNoteID: strPtr(r.SupersedesNoteID), SourceID: r.SourceID,
		Vendor: r.Vendor, Kind: r.Kind, Title: r.Title, Body: r.Body, Tags: noterows.DecodeTags(r.Tags),
		Visibility: r.Visibility, Evidence: noterows.EvidenceOf(r.EvidenceKind, r.EvidenceID), Origin: r.Origin,
		Status: r.Status, ValidUntil: utcPtr(r.ValidUntil), ProposalID: strPtr(r.ProposalID),
		KeyID: r.ActorKeyID, AgentVersion: r.AgentVersion, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), RetiredAt: utcPtr(r.RetiredAt),
	}
}

func noteContent(r models.Note) content {
	return content{Kind: r.Kind, Title: r.Title, Body: r.Body, Tags: noterows.DecodeTags(r.Tags),
		Visibility: r.Visibility, Evidence: noterows.EvidenceOf(r.EvidenceKind, r.EvidenceID), ValidUntil: utcPtr(r.ValidUntil)}
}

// actor is who writes and for which source.
type actor struct {
	p        auth.Principal
	sourceID string
	vendor   string
}

func (a actor) kind() string {
	if a.p.IsAgent() {
		return auth.KindAgent
	}
	return auth.KindPerson
}

func (a actor) origin() string {
	if a.p.IsAgent() {
		return OriginAgent
	}
	return OriginHuman
}
