package spaces

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// Document names.
const (
	DocFeatures    = "features"
	DocObjectTypes = "object-types"
)

// Features is the "features" document: which features are on, with their settings. Every
// feature is off by default (WM-1, AM-3).
type Features struct {
	AgentState  AgentStateFeature  `json:"agent_state"`
	AgentMemory AgentMemoryFeature `json:"agent_memory"`
	Masking     MaskingSettings    `json:"masking"`
	Turns       TurnsSettings      `json:"turns"`
	Documents   DocumentSettings   `json:"documents"`
	Knowledge   KnowledgeFeature   `json:"knowledge"`
	Quotas      QuotaSettings      `json:"quotas,omitzero"`
	Retention   RetentionSettings  `json:"retention,omitzero"`
	Export      ExportSettings     `json:"export,omitzero"`
}

// QuotaSettings are the space's storage limits (issue 34 §1, QT-1, MS-3), each a count (bytes
// for StateBytesPerSpace) from 1 to MaxQuota; an absent member takes its default
// (internal/quotas.Defaults). Working-memory writes past a limit answer stored:false
// over_quota (WM-8's rule); other writes 409 quota_exceeded naming the quota.
// StatesPerScopeKind holds per scope kind (conversation, task, object, subject, agent) its own limit.
// TurnsPerConversation bounds each conversation's and each task's turns. Documents count while
// pending or ready (a superseded, refused, failed or deleted one does not). BoardsPerSpace
// bounds the space's board instances (issue 31; a write creating one more is 409
// quota_exceeded).
type QuotaSettings struct {
	StatesPerSpace       int64            `json:"states_per_space,omitempty"`
	StatesPerScopeKind   map[string]int64 `json:"states_per_scope_kind,omitempty"`
	StateBytesPerSpace   int64            `json:"state_bytes_per_space,omitempty"`
	TurnsPerConversation int64            `json:"turns_per_conversation,omitempty"`
	TurnsPerSpace        int64            `json:"turns_per_space,omitempty"`
	DocumentsPerBase     int64            `json:"documents_per_base,omitempty"`
	ChunksPerBase        int64            `json:"chunks_per_base,omitempty"`
	BoardsPerSpace       int64            `json:"boards_per_space,omitempty"`
}

// MaxQuota bounds every quota (2^40: a terabyte of state bytes, far more rows than one space
// holds).
const MaxQuota = 1 << 40

// RetentionSettings: Notes is how long an active agent note lives after its last revision
// ("180d"; days or hours, ParseRetention) before the retention sweep retires it with a
// receipt (issue 34 §1); empty (the default) keeps notes until retired by hand.
type RetentionSettings struct {
	Notes string `json:"notes,omitempty"`
}

// NotesRetention is retention.notes as a duration, 0 when off.
func (f Features) NotesRetention() time.Duration {
	if f.Retention.Notes == "" {
		return 0
	}
	d, err := ParseRetention(f.Retention.Notes)
	if err != nil {
		return 0 // ParseFeatures refused it: a stored document never holds a bad one
	}
	return d
}

// DocumentSettings govern how the space's documents change. DirectPut allows a direct
// PUT /v1/documents/{name}; false (the default of spaces created without
// `space create --direct-put`) means they change only through change requests that a second
// person holding role security approves. Absent, the space's creation choice applies; a
// stored features document always states it (Put and change requests fill it in).
type DocumentSettings struct {
	DirectPut *bool `json:"direct_put,omitempty"`
}

// KnowledgeFeature turns knowledge bases and retrieval on (KN-1); off by default. The
// settings of each base live on the base (POST /v1/knowledge).
type KnowledgeFeature struct {
	Enabled bool `json:"enabled"`
}

// AgentStateFeature turns working memory on (WM-1).
type AgentStateFeature struct {
	Enabled bool `json:"enabled"`
}

// AgentMemoryFeature configures agent memory (AM-3): Writes is "agents" (default) or
// "human_only"; MaxNotesPerSource caps active notes per agent (default 500); ReviewerApproves
// lets role reviewer approve proposals (default true); WebhookURL receives events when set;
// Gate says what name and instruction hits of the gate do (GATE-2, GATE-3; nil: refuse);
// CacheSeconds is the freshness period of a block or context answer (CTX-4; see
// Features.ContextMaxAge); RunTTLHours is how long a run's budget lasts after the run's first
// call (CTX-3; see Features.RunTTL).
type AgentMemoryFeature struct {
	Enabled           bool             `json:"enabled"`
	Writes            string           `json:"writes,omitempty"`
	MaxNotesPerSource int              `json:"max_notes_per_source,omitempty"`
	ReviewerApproves  *bool            `json:"reviewer_approves,omitempty"`
	WebhookURL        string           `json:"webhook_url,omitempty"`
	Gate              *AgentMemoryGate `json:"gate,omitempty"`
	CacheSeconds      *int             `json:"cache_seconds,omitempty"`
	RunTTLHours       int              `json:"run_ttl_hours,omitempty"`
}

// MaskingSettings are the space's masking rules: DefaultRegion is the ISO 3166 region used to
// read national phone numbers (default "BR").
type MaskingSettings struct {
	DefaultRegion string `json:"default_region,omitempty"`
}

// TurnsSettings: RetentionDays keeps masked turns that many days (default 90).
type TurnsSettings struct {
	RetentionDays int `json:"retention_days,omitempty"`
}

// Region returns the default phone region.
func (f Features) Region() string {
	if f.Masking.DefaultRegion == "" {
		return "BR"
	}
	return f.Masking.DefaultRegion
}

// NotesCap returns the cap of active notes per source.
func (f Features) NotesCap() int {
	if f.AgentMemory.MaxNotesPerSource <= 0 {
		return 500
	}
	return f.AgentMemory.MaxNotesPerSource
}

// Freshness period of block and context answers, in seconds (CTX-4).
const (
	DefaultContextMaxAge = 60
	MaxContextMaxAge     = 3600
)

// ContextMaxAge is how long, in seconds, a client may keep a block or context answer before
// revalidating it with If-None-Match (CTX-4): agent_memory.cache_seconds, 0 to 3600, default
// DefaultContextMaxAge. The server sends it as Cache-Control max-age; 0 asks clients to
// revalidate every time.
func (f Features) ContextMaxAge() int {
	if f.AgentMemory.CacheSeconds == nil {
		return DefaultContextMaxAge
	}
	return *f.AgentMemory.CacheSeconds
}

// Lifetime of a run's budget, in hours (CTX-3).
const (
	DefaultRunTTLHours = 24
	MaxRunTTLHours     = 720
)

// RunTTL is how long a run lasts after its first call (CTX-3): agent_memory.run_ttl_hours,
// 1 to 720 hours, default DefaultRunTTLHours. An expired run names nothing: its id may begin
// a new run.
func (f Features) RunTTL() time.Duration {
	h := f.AgentMemory.RunTTLHours
	if h <= 0 {
		h = DefaultRunTTLHours
	}
	return time.Duration(h) * time.Hour
}

// HumanOnly reports whether agents' note writes become proposals (AM-8).
func (f Features) HumanOnly() bool { return f.AgentMemory.Writes == "human_only" }

// ReviewersMayApprove reports whether role reviewer may approve proposals.
func (f Features) ReviewersMayApprove() bool {
	return f.AgentMemory.ReviewerApproves == nil || *f.AgentMemory.ReviewerApproves
}

var regionPattern = regexp.MustCompile(`^[A-Z]{2}$`)

// ParseFeatures parses and validates a features document (nested at most
// strictjson.MaxPlainDepth levels, else "json_too_deep"). Errors are fault.Invalid naming the
// member.
func ParseFeatures(data []byte) (Features, error) {
	var f Features
	if err := strictjson.DecodeDepth(data, &f, strictjson.MaxPlainDepth); err != nil {
		return f, err
	}
	switch f.AgentMemory.Writes {
	case "", "agents", "human_only":
	default:
		return f, invalidMember("agent_memory.writes", `must be "agents" or "human_only"`)
	}
	if f.AgentMemory.MaxNotesPerSource < 0 || f.AgentMemory.MaxNotesPerSource > 100000 {
		return f, invalidMember("agent_memory.max_notes_per_source", "must be between 1 and 100000")
	}
	if u := f.AgentMemory.WebhookURL; u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return f, invalidMember("agent_memory.webhook_url", "must be an http(s) URL")
	}
	if c := f.AgentMemory.CacheSeconds; c != nil && (*c < 0 || *c > MaxContextMaxAge) {
		return f, invalidMember("agent_memory.cache_seconds", "must be between 0 and 3600")
	}
	if h := f.AgentMemory.RunTTLHours; h < 0 || h > MaxRunTTLHours {
		return f, invalidMember("agent_memory.run_ttl_hours", "must be between 1 and 720")
	}
	if err := validateGate(f.AgentMemory.Gate); err != nil {
		return f, err
	}
	if r := f.Masking.DefaultRegion; r != "" && !regionPattern.MatchString(r) {
		return f, invalidMember("masking.default_region", "must be an ISO 3166 alpha-2 region such as BR")
	}
	if d := f.Turns.RetentionDays; d < 0 || d > 3650 {
		return f, invalidMember("turns.retention_days", "must be between 1 and 3650")
	}
	if err := validateQuotas(f.Quotas); err != nil {
		return f, err
	}
	if r := f.Retention.Notes; r != "" {
		if _, err := ParseRetention(r); err != nil {
			return f, invalidMember("retention.notes", err.Error())
		}
	}
	if err := validateExport(f.Export); err != nil {
		return f, err
	}
	return f, nil
}

// validateQuotas checks every limit is 1 to MaxQuota (absent is 0: the default) and that
// states_per_scope_kind names only scope kinds.
func validateQuotas(q QuotaSettings) error {
	check := func(member string, n int64) error {
		if n < 0 || n > MaxQuota {
			return invalidMember("quotas."+member, fmt.Sprintf("must be between 1 and %d", int64(MaxQuota)))
		}
		return nil
	}
	for _, c := range []struct {
		member string
		n      int64
	}{{"states_per_space", q.StatesPerSpace}, {"state_bytes_per_space", q.StateBytesPerSpace},
		{"turns_per_conversation", q.TurnsPerConversation}, {"turns_per_space", q.TurnsPerSpace},
		{"documents_per_base", q.DocumentsPerBase}, {"chunks_per_base", q.ChunksPerBase}, {"boards_per_space", q.BoardsPerSpace}} {
		if err := check(c.member, c.n); err != nil {
			return err
		}
	}
	for kind, n := range q.StatesPerScopeKind {
		if !slices.Contains(ScopeKinds, kind) {
			return invalidMember("quotas.states_per_scope_kind", fmt.Sprintf("unknown scope kind %q (known: %s)", kind, strings.Join(ScopeKinds, ", ")))
		}
		if n < 1 || n > MaxQuota {
			return invalidMember("quotas.states_per_scope_kind."+kind, fmt.Sprintf("must be between 1 and %d", int64(MaxQuota)))
		}
	}
	return nil
}

// ObjectTypes is the "object-types" document: the registry of types, and the space's
// operations and systems (CTX-1: with the type names, the vocabulary of note tags; each list
// at most MaxVocabulary distinct words of the tag alphabet, omitted when empty).
type ObjectTypes struct {
	Types      []ObjectType `json:"types"`
	Operations []string     `json:"operations,omitempty"`
	Systems    []string     `json:"systems,omitempty"`
}

// ObjectType declares a type's fields; with Ownership "agent" it is a working-memory schema
// (WM-2) and AgentState is required; with Ownership "shared" it is a board type (issue 31,
// internal/boards) and Board may set its limits.
type ObjectType struct {
	Type        string            `json:"type"`
	Ownership   string            `json:"ownership,omitempty"`
	Fields      map[string]Field  `json:"fields"`
	AgentState  *AgentStateSpec   `json:"agent_state,omitempty"`
	Board       *BoardSpec        `json:"board,omitempty"`
	Retention   map[string]string `json:"retention,omitempty"`
	Description string            `json:"description,omitempty"`
}

// Field declares one field: Type is one of FieldTypes; PII fields are masked at write;
// Sensitivity is "low", "medium" or "high" (default "low"); Values lists an enum's values.
type Field struct {
	Type        string   `json:"type"`
	PII         bool     `json:"pii,omitempty"`
	Sensitivity string   `json:"sensitivity,omitempty"`
	Values      []string `json:"values,omitempty"`
	Description string   `json:"description,omitempty"`
	// Subject marks a board field whose value names a customer (a handle such as
	// email:..., or an array of them): erasing that customer erases the boards naming them
	// (issue 31). Only a shared type's fields take it.
	Subject bool `json:"subject,omitempty"`
	// Conflict is a board field's conflict rule (issue 31): how a write made at an older
	// version than the stored one settles this field when both changed it. Nil is "reject".
	// Only a shared type's fields take it.
	Conflict *ConflictRule `json:"conflict,omitempty"`
}

// AgentStateSpec is a schema's agent_state section (WM-2).
type AgentStateSpec struct {
	Scope    string `json:"scope"`
	MaxBytes int    `json:"max_bytes,omitempty"`
	Write    string `json:"write,omitempty"`
	OverCap  string `json:"over_cap,omitempty"`
	// Lease is "required" (the default: while a lease on a state is held, writes without it
	// are refused, 409 lease_held) or "advisory" (issue 31).
	Lease string `json:"lease,omitempty"`
}

// FieldTypes are the declarable field types.
var FieldTypes = []string{"string", "text", "enum", "integer", "number", "boolean", "object", "array", "date", "datetime", "json"}

// ScopeKinds are the kinds of working-memory scope (WM-2). "agent" is one state for the agent
// instance named by the scope's id, shared by all its runs (issue 31).
var ScopeKinds = []string{"conversation", "task", "object", "subject", "agent"}

// Working-memory limits (WM-2).
const (
	DefaultMaxBytes   = 16384
	MaxMaxBytes       = 65536
	DefaultStateTTL   = 30 * 24 * time.Hour
	MinStateRetention = 24 * time.Hour
	MaxStateRetention = 180 * 24 * time.Hour
)

var typeNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)
var fieldNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// ParseObjectTypes parses and validates an object-types document: unknown members, unknown
// field types, a scope outside the four kinds, max_bytes over 65,536, a retention outside
// 1d..180d (fields: 1h..180d) or naming an undeclared field are fault.Invalid naming the member;
// nesting beyond strictjson.MaxPlainDepth levels is "json_too_deep".
func ParseObjectTypes(data []byte) (ObjectTypes, error) {
	var d ObjectTypes
	if err := strictjson.DecodeDepth(data, &d, strictjson.MaxPlainDepth); err != nil {
		return d, err
	}
	if err := validateVocabulary(d); err != nil {
		return d, err
	}
	seen := map[string]bool{}
	for i := range d.Types {
		if err := validateObjectType(d.Types[i], fmt.Sprintf("types[%d]", i), seen); err != nil {
			return d, err
		}
	}
	return d, nil
}

// validateObjectType checks type t at member path at (its name unique among seen, which it
// extends; ownership; board settings; fields; agent_state; retention).
func validateObjectType(t ObjectType, at string, seen map[string]bool) error {
	if !typeNamePattern.MatchString(t.Type) {
		return invalidMember(at+".type", "must be 1-64 characters of a-z, 0-9, _ . - starting with a letter")
	}
	if seen[t.Type] {
		return invalidMember(at+".type", fmt.Sprintf("type %q is declared twice", t.Type))
	}
	seen[t.Type] = true
	switch t.Ownership {
	case "", "agent", "space", "integration", OwnershipShared:
	default:
		return invalidMember(at+".ownership", `must be "agent", "space", "integration" or "shared"`)
	}
	if err := validateBoardType(t, at); err != nil {
		return err
	}
	if err := validateFields(t, at); err != nil {
		return err
	}
	if err := validateAgentState(t, at); err != nil {
		return err
	}
	return validateRetention(t, at)
}

// validateFields checks t's fields in name order: names, known types, sensitivity, and values
// only on an enum.
func validateFields(t ObjectType, at string) error {
	names := make([]string, 0, len(t.Fields))
	for name := range t.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := t.Fields[name]
		fat := at + ".fields." + name
		if !fieldNamePattern.MatchString(name) {
			return invalidMember(fat, "field names are 1-64 characters of letters, digits and _")
		}
		if !slices.Contains(FieldTypes, f.Type) {
			return invalidMember(fat+".type", fmt.Sprintf("unknown field type %q (known: %s)", f.Type, strings.Join(FieldTypes, ", ")))
		}
		switch f.Sensitivity {
		case "", "low", "medium", "high":
		default:
			return invalidMember(fat+".sensitivity", `must be "low", "medium" or "high"`)
		}
		if len(f.Values) > 0 && f.Type != "enum" {
			return invalidMember(fat+".values", "only an enum takes values")
		}
	}
	return nil
}

// validateAgentState checks t's agent_state section: required with ownership agent (scope,
// max_bytes, write, over_cap, lease), refused otherwise.
func validateAgentState(t ObjectType, at string) error {
	if t.Ownership != "agent" {
		if t.AgentState != nil {
			return invalidMember(at+".agent_state", "only a type with ownership agent takes an agent_state section")
		}
		return nil
	}
	if t.AgentState == nil {
		return invalidMember(at+".agent_state", "a type with ownership agent needs an agent_state section")
	}
	s := t.AgentState
	if !slices.Contains(ScopeKinds, s.Scope) {
		return invalidMember(at+".agent_state.scope", "must be one of conversation, task, object, subject, agent")
	}
	if s.MaxBytes < 0 || s.MaxBytes > MaxMaxBytes {
		return invalidMember(at+".agent_state.max_bytes", "must be between 1 and 65536")
	}
	switch s.Write {
	case "", "both", "cas", "merge_by_key":
	default:
		return invalidMember(at+".agent_state.write", `must be "cas", "merge_by_key" or "both"`)
	}
	if s.OverCap != "" && s.OverCap != "keep_previous" {
		return invalidMember(at+".agent_state.over_cap", `must be "keep_previous"`)
	}
	if s.Lease != "" && s.Lease != LeaseRequired && s.Lease != LeaseAdvisory {
		return invalidMember(at+".agent_state.lease", `must be "required" or "advisory"`)
	}
	return nil
}

// validateRetention checks t's retention: "state" within 1d..180d, a field's within 1h..180d,
// and only declared fields named.
func validateRetention(t ObjectType, at string) error {
	for key, val := range t.Retention {
		rat := at + ".retention." + key
		dur, err := ParseRetention(val)
		if err != nil {
			return invalidMember(rat, err.Error())
		}
		if key == "state" {
			if dur < MinStateRetention || dur > MaxStateRetention {
				return invalidMember(rat, "must be between 1d and 180d")
			}
			continue
		}
		if _, ok := t.Fields[key]; !ok {
			return invalidMember(rat, fmt.Sprintf("names no declared field %q", key))
		}
		if dur < time.Hour || dur > MaxStateRetention {
			return invalidMember(rat, "must be between 1h and 180d")
		}
	}
	return nil
}

// ParseRetention reads a retention such as "30d" or "12h": a positive count of days or hours,
// at most maxRetentionDays days; anything else is an error saying what it must look like.
func ParseRetention(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, errRetentionShape
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, errRetentionShape
	}
	var d time.Duration
	switch s[len(s)-1] {
	case 'd':
		d = 24 * time.Hour
	case 'h':
		d = time.Hour
	default:
		return 0, errRetentionShape
	}
	if n > maxRetentionDays*int(24*time.Hour/d) {
		return 0, errRetentionTooLong
	}
	return time.Duration(n) * d, nil
}

// ParseRetention's errors, built once: ObjectType.StateTTL and FieldTTL parse on every
// working-memory request, mostly an absent (empty) retention.
var (
	errRetentionShape   = errors.New("must look like 30d or 12h")
	errRetentionTooLong = fmt.Errorf("must be at most %dd", maxRetentionDays)
)

// maxRetentionDays bounds ParseRetention (100 years): a larger count would overflow
// time.Duration and read as a negative age.
const maxRetentionDays = 36500

// SchemaFor returns the working-memory schema of agent (WM-2): the type named like the agent
// with ownership agent, else the only type of that ownership; ok is false when none is declared.
func (d ObjectTypes) SchemaFor(agent string) (ObjectType, bool) {
	var only []ObjectType
	for _, t := range d.Types {
		if t.Ownership != "agent" {
			continue
		}
		if t.Type == agent {
			return t, true
		}
		only = append(only, t)
	}
	if len(only) == 1 {
		return only[0], true
	}
	return ObjectType{}, false
}

// MaxBytes returns the state cap of t.
func (t ObjectType) MaxBytes() int {
	if t.AgentState == nil || t.AgentState.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return t.AgentState.MaxBytes
}

// AllowsMode reports whether t's agent_state.write allows mode ("cas" or "merge_by_key").
func (t ObjectType) AllowsMode(mode string) bool {
	w := ""
	if t.AgentState != nil {
		w = t.AgentState.Write
	}
	return w == "" || w == "both" || w == mode
}

// StateTTL returns how long a state lives after its last write.
func (t ObjectType) StateTTL() time.Duration {
	if d, err := ParseRetention(t.Retention["state"]); err == nil {
		return d
	}
	return DefaultStateTTL
}

// FieldTTL returns how long field lives after its own last write (the state's TTL unless the
// type sets a shorter one).
func (t ObjectType) FieldTTL(field string) time.Duration {
	st := t.StateTTL()
	if d, err := ParseRetention(t.Retention[field]); err == nil && d < st {
		return d
	}
	return st
}

func invalidMember(member, msg string) error {
	return fault.New(fault.Invalid, "invalid_document", "%s %s", member, msg).With("member", member)
}

// marshal encodes a document for storage without HTML escaping.
func marshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
