package notes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tiktoken-go/tokenizer"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Block limits (AM-4).
const (
	MinBlockTokens     = 50
	MaxBlockTokens     = 2000
	DefaultBlockTokens = 300
)

// BlockOpen and BlockClose wrap the block; BlockHeader is its first line.
const (
	BlockOpen   = "<agent_notes>"
	BlockClose  = "</agent_notes>"
	BlockHeader = "These are your own procedures and working notes as an agent, learned about your trade; they are not customer data and not instructions from a customer."
)

// BlockRequest is GET /v1/agent-memory/block: MaxTokens 50..2000 (0 means 300); Tags name the
// task's tags: notes carrying one of them come first; View names a view of the space's views
// document whose tags order the notes ahead of that (CTX-1; without a views document the
// view's name is one more tag); SourceID is named by a person
// (integration) reading as an agent; IfNoneMatch is the If-None-Match header.
type BlockRequest struct {
	MaxTokens   int
	Tags        []string
	View        string
	SourceID    string
	IfNoneMatch string
	// Run names the run the read belongs to (CTX-3; nil: none): the block is built within
	// what the run has left (blockInRun).
	Run *runs.Run

	// viewTags are the tags of View in the views document (resolveView); viewDefined says
	// the document defines View (else View is one more tag, as before CTX-1).
	viewTags    []string
	viewDefined bool
}

// Block is the prompt block (AM-4). ETag is a strong validator of the whole answer;
// NotModified is set when IfNoneMatch matched it (answer 304 without a body).
type Block struct {
	Text        string   `json:"text"`
	Enabled     bool     `json:"enabled"`
	NoteIDs     []string `json:"note_ids"`
	Tokens      int      `json:"tokens"`
	ETag        string   `json:"-"`
	NotModified bool     `json:"-"`
	// MaxAge is the space's freshness period in seconds (spaces.Features.ContextMaxAge),
	// sent as Cache-Control max-age (CTX-4).
	MaxAge int `json:"-"`
	// Run is the run's figures after this read (CTX-3; nil without a run); BudgetExhausted
	// says the run had too little left for any note the block would hold (then no note).
	Run             *runs.Report `json:"run,omitempty"`
	BudgetExhausted bool         `json:"budget_exhausted,omitempty"`

	body []byte // Body's bytes, encoded once when the block is built (withBody)

	// versions are the versions of NoteIDs' notes, in their order, and budget the token
	// budget the block was assembled within (assemble): what its manifest names.
	versions []int
	budget   int
	// manifest is the block's receipt manifest (blockManifest), built once with the block
	// and shared by every read of it; nil until then.
	manifest *receipts.Manifest
}

// blockManifest is the receipt manifest of b answered to req (issue 32): the delivered notes'
// ids and versions in block order, the view, the requested tags and the budget b was built
// within. b's own when it has one.
func blockManifest(b Block, req BlockRequest) *receipts.Manifest {
	if b.manifest != nil {
		return b.manifest
	}
	items := make([]receipts.ManifestItem, len(b.NoteIDs))
	for i, id := range b.NoteIDs {
		items[i] = receipts.ManifestItem{ID: id}
		if i < len(b.versions) {
			items[i].Version = b.versions[i]
		}
	}
	return receipts.NewManifest(receipts.ManifestBlock, req.View, req.Tags, b.budget, items)
}

// Body is the block's JSON answer: {"text", "enabled", "note_ids", "tokens"} as
// encoding/json's Encoder writes it with HTML escaping off, newline included (what Gin's
// PureJSON writes). A block Service.Block answers carries it encoded once, when the block
// was built, and shares it with every answer of the same block (the caller must not change
// it); another is encoded on the call.
func (b Block) Body() []byte {
	if b.body != nil {
		return b.body
	}
	return encodeBody(b)
}

// withBody is b with its Body encoded, for a block complete but for NotModified (which Body
// does not hold).
func withBody(b Block) Block {
	b.body = encodeBody(b)
	return b
}

// encodeBody writes Body's bytes for b.
func encodeBody(b Block) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		panic(fmt.Sprintf("notes: encode block: %v", err)) // strings, a bool, an int: never
	}
	return buf.Bytes()
}

var (
	codecOnce sync.Once
	codec     tokenizer.Codec
	codecErr  error
)

// countTokens counts the tokens of text with cl100k_base.
func countTokens(text string) (int, error) {
	codecOnce.Do(func() { codec, codecErr = tokenizer.Get(tokenizer.Cl100kBase) })
	if codecErr != nil {
		return 0, fmt.Errorf("notes: tokenizer: %w", codecErr)
	}
	return codec.Count(text)
}

// CountTokens is the block's token count of text (cl100k_base), exported for tests and tools.
func CountTokens(text string) (int, error) { return countTokens(text) }

func (r *BlockRequest) validate() error {
	if r.MaxTokens == 0 {
		r.MaxTokens = DefaultBlockTokens
	}
	if r.MaxTokens < MinBlockTokens || r.MaxTokens > MaxBlockTokens {
		return invalid("max_tokens", "max_tokens must be from %d to %d", MinBlockTokens, MaxBlockTokens)
	}
	if len(r.Tags) > MaxTags {
		return invalid("tags", "at most %d tags", MaxTags)
	}
	for _, t := range r.Tags {
		if !tagPattern.MatchString(t) || len(t) > MaxTagLen {
			return invalid("tags", "a tag is lower-case a-z, 0-9, _ . : -")
		}
	}
	if r.View != "" && (!tagPattern.MatchString(r.View) || len(r.View) > MaxTagLen) {
		return invalid("view", "a view is lower-case a-z, 0-9, _ . : -")
	}
	return r.Run.Validate()
}

// Block builds the prompt block p may read (AM-4): the active, unexpired notes visible to p,
// in sortForBlock's order (the view's tags in the view's order, then the requested tags,
// then higher version, older, id; CTX-1); then whole notes in that order while the whole text
// (wrapper included) stays within MaxTokens by cl100k_base. A note that does not fit is
// skipped whole (a later, shorter one may still fit); a note is never cut. No note delivered
// gives an empty text. The same request over the same notes gives the same bytes and ETag,
// whoever the customer is; any change to a delivered note makes it a new version (a new id),
// which changes the ETag.
//
// Every answer, a 304 included, leaves an agent_memory receipt "block.read" naming the
// delivered note ids (detail not_modified true for a 304): the prompt the agent used is
// answerable either way. Feature off: Enabled false, empty text, no receipt.
//
// Issue 16: BlockAt, with the request's snapshot (the configuration revision its key and
// documents were read at, spaces.Snapshot), keeps the answer is kept in this replica's memory under the request, the
// viewer, that revision and the space's notes revision (spaces.RevisionNotes) until the
// first valid_until of the notes it was decided on; a later identical request is answered
// from it without a statement, and its receipt commits only if both revisions are still the
// same in the receipt's transaction (receipts.Expect); an answer decided from the store is
// given only if no note was removed since (spaces.RevisionNotesRemoved). Otherwise nothing is stored, the
// space's answers are dropped and the error is spaces.ErrStaleConfig: the caller reloads the
// key (a revoked key is then refused) and calls again, which decides from the store
// (spaces.KeyCache.Run). Block itself assumes no snapshot: it reads the documents from the
// store and keeps no answer.
func (s *Service) Block(ctx context.Context, p auth.Principal, req BlockRequest) (Block, error) {
	return s.BlockAt(ctx, spaces.Snapshot{}, p, req)
}

// BlockAt is Block on snap, the request's key and documents as authenticated (issue 30 §1):
// the features are snap's, and the answer is kept and given only at snap's configuration
// revision (else spaces.ErrStaleConfig, nothing stored).
func (s *Service) BlockAt(ctx context.Context, snap spaces.Snapshot, p auth.Principal, req BlockRequest) (Block, error) {
	if err := req.validate(); err != nil {
		return Block{}, err
	}
	if err := s.resolveView(ctx, p.SpaceID, &req); err != nil {
		return Block{}, err
	}
	v, err := s.reader(ctx, p, req.SourceID, false)
	if err != nil {
		return Block{}, err
	}
	f, err := s.snapFeatures(ctx, snap, p.SpaceID)
	if err != nil {
		return Block{}, err
	}
	var b Block
	if req.Run != nil {
		b, err = s.blockInRun(ctx, snap, p, req, v, f)
	} else {
		b, err = s.blockOf(ctx, snap, p, req, v, f)
	}
	b.MaxAge = f.ContextMaxAge()
	return b, err
}

// snapFeatures is the space's features document: snap's when it assumes spaceID, else read.
func (s *Service) snapFeatures(ctx context.Context, snap spaces.Snapshot, spaceID string) (spaces.Features, error) {
	if snap.Assumes(spaceID) {
		f, _, err := snap.Documents(ctx, s.Docs, spaceID)
		return f, err
	}
	return s.Docs.Features(ctx, spaceID)
}

// blockOf is Block's answer once the request, the view, the reader and the features are
// known.
func (s *Service) blockOf(ctx context.Context, snap spaces.Snapshot, p auth.Principal, req BlockRequest, v viewer, f spaces.Features) (Block, error) {
	config, known := snap.Revision, snap.Assumes(p.SpaceID)
	if !f.AgentMemory.Enabled {
		return s.disabledBlock(ctx, snap, p, req)
	}
	now := s.now()
	var expect []receipts.Expect
	akey := answerKey(v, req)
	if known {
		expect = append(expect, receipts.Expect{Name: spaces.RevisionConfig, Revision: config})
		if a, ok := s.answers.get(p.SpaceID, akey, config, now); ok {
			// Decided in memory; given only if neither the key and documents nor any note of
			// the space changed since (checked when the receipt commits).
			return s.answerBlock(ctx, p, v, req, a.block, now, append(expect, receipts.Expect{Name: spaces.RevisionNotes, Revision: a.notes}))
		}
	}
	// The notes revision, read before the notes: an answer kept under it is never newer
	// than it says (a change after this read makes the kept answer stale, never wrong).
	notesRev, err := spaces.Revision(ctx, s.DB, p.SpaceID, spaces.RevisionNotes)
	if err != nil {
		return Block{}, err
	}
	var removed int64 // the notes_removed revision, read before the notes too
	if known {
		if removed, err = spaces.Revision(ctx, s.DB, p.SpaceID, spaces.RevisionNotesRemoved); err != nil {
			return Block{}, err
		}
	}
	ids, until, err := s.deliverableIDs(ctx, v, now)
	if err != nil {
		return Block{}, err
	}
	// The space's note-erasure revision, read before the notes: a block cached under an
	// older one is dropped, so an erasure run by any process (the worker) purges every
	// replica's blocks of the space at its next block read (MS-4).
	erased, err := spaces.Revision(ctx, s.DB, p.SpaceID, spaces.RevisionNotesErased)
	if err != nil {
		return Block{}, err
	}
	b, ok := cachedBlock(p.SpaceID, erased, blockKey(ids, req))
	if !ok {
		if b, err = s.buildBlock(ctx, v, req, now, erased, ids); err != nil {
			return Block{}, err
		}
	}
	if known {
		s.answers.put(p.SpaceID, akey, blockAnswer{block: b, config: config, notes: notesRev, until: until})
		// Given only if no note of the space was removed since the notes were read: a
		// retire or an erasure committed meanwhile (by any replica) is never answered past
		// (the caller reads again). A note added meanwhile is not waited for: the answer
		// is then the one of just before it, as if read first.
		expect = append(expect, receipts.Expect{Name: spaces.RevisionNotesRemoved, Revision: removed})
	}
	return s.answerBlock(ctx, p, v, req, b, now, expect)
}

// disabledBlock is the answer while agent memory is off: Enabled false, no notes, no receipt.
// With no receipt to check the key's revision, a snap from a cache is confirmed current here
// (confirmConfig).
func (s *Service) disabledBlock(ctx context.Context, snap spaces.Snapshot, p auth.Principal, req BlockRequest) (Block, error) {
	if err := s.confirmConfig(ctx, snap, p.SpaceID); err != nil {
		return Block{}, err
	}
	b := Block{NoteIDs: []string{}}
	b.ETag = etag(b, req)
	b = withBody(b)
	b.NotModified = matches(req.IfNoneMatch, b.ETag)
	return b, nil
}

// deliverableIDs returns the ids of the notes v may read at now, in id order, and the first
// valid_until among them (zero: none ends). The ids decide the answer (each id is one
// immutable version: an edit is a new id, a retire or an expiry drops the id), so a block
// built once for them and the request is answered, a 304 included, without loading or
// tokenising notes.
func (s *Service) deliverableIDs(ctx context.Context, v viewer, now time.Time) ([]string, time.Time, error) {
	var rows []struct {
		ID         string     `bun:"id"`
		ValidUntil *time.Time `bun:"valid_until"`
	}
	if err := deliverable(s.DB.NewSelect().Model((*models.Note)(nil)).Column("n.id", "n.valid_until"), v, now).
		Order("n.id").Scan(ctx, &rows); err != nil {
		return nil, time.Time{}, fmt.Errorf("notes: block: %w", err)
	}
	ids := make([]string, len(rows))
	var until time.Time
	for i, r := range rows {
		ids[i] = r.ID
		if r.ValidUntil != nil && (until.IsZero() || r.ValidUntil.Before(until)) {
			until = *r.ValidUntil
		}
	}
	return ids, until, nil
}

// answerBlock records the receipt of block b answered to req (a 304 when If-None-Match
// names its ETag) and returns b once the receipt has committed (group-committed with other
// reads), only while the space's revisions are still expect. When one changed, nothing is
// stored, the space's kept answers are dropped and the error is spaces.ErrStaleConfig.
func (s *Service) answerBlock(ctx context.Context, p auth.Principal, v viewer, req BlockRequest, b Block, now time.Time, expect []receipts.Expect) (Block, error) {
	b.NotModified = matches(req.IfNoneMatch, b.ETag)
	err := receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{
		Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: p.KeyID, Manifest: blockManifest(b, req),
		Detail: map[string]any{"tokens": b.Tokens, "not_modified": b.NotModified, "source_id": v.source},
	}, now, expect...)
	if errors.Is(err, receipts.ErrStale) {
		s.answers.drop(p.SpaceID)
		return Block{}, spaces.ErrStaleConfig
	}
	if err != nil {
		return Block{}, err
	}
	return b, nil
}

// buildBlock builds the block of req over the deliverable notes ids (sorted) of v at now and
// caches it under ids and the space's note-erasure revision erased. The rows come from the
// row cache, loading only the ids it does not keep (loadBlockRows, issue 27); when one of
// those is no longer deliverable, every deliverable row is loaded again, as one statement, and
// the block is built and cached under the ids of what was loaded.
func (s *Service) buildBlock(ctx context.Context, v viewer, req BlockRequest, now time.Time, erased int64, ids []string) (Block, error) {
	rows, ok, err := s.loadBlockRows(ctx, v, ids, now, erased)
	if err != nil {
		return Block{}, err
	}
	if !ok {
		var notes []models.Note
		if err := deliverable(s.DB.NewSelect().Model(&notes), v, now).Scan(ctx); err != nil {
			return Block{}, fmt.Errorf("notes: block: %w", err)
		}
		if notes, err = s.openNotes(ctx, notes); err != nil {
			return Block{}, err
		}
		rows, ids = make([]blockRow, len(notes)), make([]string, len(notes))
		for i, n := range notes {
			rows[i], ids[i] = blockRow{note: n, tags: noterows.DecodeTags(n.Tags)}, n.ID
		}
		slices.Sort(ids)
	}
	b, err := assemble(orderRows(rows, req), req.MaxTokens)
	if err != nil {
		return Block{}, err
	}
	b.Enabled = true
	b.ETag = etag(b, req)
	b = withBody(b)
	b.manifest = blockManifest(b, req)
	storeBlock(v.spaceID, erased, blockKey(ids, req), b)
	return b, nil
}

// orderRows returns the notes of rows in block order (sortForBlock: AM-4, CTX-1).
func orderRows(rows []blockRow, req BlockRequest) []models.Note {
	out := make([]models.Note, len(rows))
	for i, r := range rows {
		out[i] = r.note
	}
	sortForBlock(out, req)
	return out
}

// blockCache keeps built blocks per space, in this process only. A key names the exact
// note versions and request a block was built from, so an entry is never stale; a space's
// entries are kept under the space's note-erasure revision they were built at and dropped
// when a block read finds another one (an erasure through any process), and all of them
// whenever this process erases notes (EraseSource), so no erased text stays in memory
// (MS-4). It is emptied when it reaches maxCachedBlocks entries.
//
// Beside the blocks it keeps the rows of the note versions they were built from (blockRow,
// at most maxCachedRows), so a block whose notes changed by one is built loading one row
// (issue 27); the rows live and die with the space's blocks.
var blockCache = struct {
	sync.Mutex
	spaces map[string]*spaceBlocks
	n      int // blocks kept
	rows   int // rows kept
}{spaces: map[string]*spaceBlocks{}}

// spaceBlocks are one space's cached blocks and note rows, kept at note-erasure revision
// erased.
type spaceBlocks struct {
	erased int64
	blocks map[string]Block
	rows   map[string]blockRow
}

// maxCachedBlocks bounds blockCache.
const maxCachedBlocks = 1024

// blockKey names the block of req over the notes ids (sorted): the budget, tags and view
// in request order, the view's tags (viewKey), and every id.
func blockKey(ids []string, req BlockRequest) string {
	h := sha256.New()
	fmt.Fprintf(h, "block/v1\n%d\n%s\n%s\n%s\n", req.MaxTokens, strings.Join(req.Tags, ","), req.View, viewKey(req))
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return string(h.Sum(nil))
}

// cachedBlock returns the block of space cached under key (with its own copy of NoteIDs).
// The space's blocks built at another note-erasure revision than erased are dropped first.
func cachedBlock(spaceID string, erased int64, key string) (Block, bool) {
	blockCache.Lock()
	defer blockCache.Unlock()
	sb := blockCache.spaces[spaceID]
	if sb == nil {
		return Block{}, false
	}
	if sb.erased != erased {
		dropSpaceLocked(spaceID)
		return Block{}, false
	}
	b, ok := sb.blocks[key]
	b.NoteIDs = slices.Clone(b.NoteIDs)
	return b, ok
}

// storeBlock caches b under space, key and the note-erasure revision it was built at.
func storeBlock(spaceID string, erased int64, key string, b Block) {
	b.NotModified = false
	b.NoteIDs = slices.Clone(b.NoteIDs)
	blockCache.Lock()
	defer blockCache.Unlock()
	if blockCache.n >= maxCachedBlocks {
		blockCache.spaces, blockCache.n, blockCache.rows = map[string]*spaceBlocks{}, 0, 0
	}
	sb := spaceLocked(spaceID, erased)
	if _, ok := sb.blocks[key]; !ok {
		blockCache.n++
	}
	sb.blocks[key] = b
}

// forgetBlocks empties blockCache.
func forgetBlocks() {
	blockCache.Lock()
	blockCache.spaces, blockCache.n, blockCache.rows = map[string]*spaceBlocks{}, 0, 0
	blockCache.Unlock()
}

// blockAnswer is a block answer kept by a replica: the block, the space's configuration and
// notes revisions it was decided at, and when it ends (the first valid_until of the notes it
// was decided on; zero: never).
type blockAnswer struct {
	block         Block
	config, notes int64
	until         time.Time
}

// blockAnswers are a Service's block answers by space and answerKey (issue 16), at most
// maxCachedBlocks of them (emptied when full). The zero value is empty and ready; safe for
// concurrent use.
type blockAnswers struct {
	mu     sync.Mutex
	spaces map[string]map[string]blockAnswer
	n      int
}

// answerKey names a block request of viewer v: who reads (the source, its vendor, or the
// whole space) and the request's budget, tags (in order) and view.
func answerKey(v viewer, req BlockRequest) string {
	return strconv.FormatBool(v.all) + "\x00" + v.source + "\x00" + v.vendor + "\x00" + strconv.Itoa(req.MaxTokens) + "\x00" +
		strings.Join(req.Tags, ",") + "\x00" + req.View
}

// get returns the answer of space kept under key if it was decided at configuration
// revision config and has not ended at now (with its own copy of NoteIDs).
func (c *blockAnswers) get(spaceID, key string, config int64, now time.Time) (blockAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.spaces[spaceID][key]
	if !ok || a.config != config || (!a.until.IsZero() && !now.Before(a.until)) {
		return blockAnswer{}, false
	}
	a.block.NoteIDs = slices.Clone(a.block.NoteIDs)
	return a, true
}

// put keeps a under space and key.
func (c *blockAnswers) put(spaceID, key string, a blockAnswer) {
	a.block.NotModified = false
	a.block.NoteIDs = slices.Clone(a.block.NoteIDs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spaces == nil || c.n >= maxCachedBlocks {
		c.spaces, c.n = map[string]map[string]blockAnswer{}, 0
	}
	m := c.spaces[spaceID]
	if m == nil {
		m = map[string]blockAnswer{}
		c.spaces[spaceID] = m
	}
	if _, ok := m[key]; !ok {
		c.n++
	}
	m[key] = a
}

// drop forgets the space's answers.
func (c *blockAnswers) drop(spaceID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n -= len(c.spaces[spaceID])
	delete(c.spaces, spaceID)
}

// forget forgets every answer.
func (c *blockAnswers) forget() {
	c.mu.Lock()
	c.spaces, c.n = nil, 0
	c.mu.Unlock()
}

// renderNote is one note's part of the block. Writes refuse fence tags and multi-line
// titles; rows stored before that rule (or written around the service) are neutralised here
// as well (MS-7): every fence tag in the title or body loses its "<" (written "&lt;"), and
// control characters and line separators in the title become spaces, so a note can neither
// close the block nor forge a heading through its title.
func renderNote(r models.Note) string {
	return "\n## " + escapeFences(oneLine(r.Title)) + " (" + escapeFences(oneLine(r.Kind)) + ")\n" + escapeFences(r.Body) + "\n"
}

// escapeFences writes the "<" of every fence tag in s (read after normalisation, as
// hasFence reads it) as "&lt;".
func escapeFences(s string) string { return fence.Escape(s) }

// oneLine replaces control characters and line separators of s with spaces.
func oneLine(s string) string {
	if controlIndex(s) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if controlIndex(string(r)) >= 0 {
			return ' '
		}
		return r
	}, s)
}

// assemble adds whole notes in order while the whole text fits max tokens. Each note's
// token count is cached by note id (a version never changes); the decision sums them and the
// whole text is then counted exactly once (cached by its hash), dropping the last added note
// in the rare case where the exact count of the joined text exceeds the budget.
func assemble(rows []models.Note, max int) (Block, error) {
	b := Block{NoteIDs: []string{}, budget: max}
	head := BlockOpen + "\n" + BlockHeader + "\n"
	base, err := cachedCount("", head+BlockClose)
	if err != nil {
		return b, err
	}
	used := base
	var chosen []models.Note
	for _, r := range rows {
		n, err := cachedCount(r.ID, renderNote(r))
		if err != nil {
			return b, err
		}
		if used+n > max {
			continue
		}
		used += n
		chosen = append(chosen, r)
	}
	for len(chosen) > 0 {
		var body strings.Builder
		body.WriteString(head)
		for _, r := range chosen {
			body.WriteString(renderNote(r))
		}
		body.WriteString(BlockClose)
		text := body.String()
		exact, err := cachedCount("", text)
		if err != nil {
			return b, err
		}
		if exact <= max {
			for _, r := range chosen {
				b.NoteIDs = append(b.NoteIDs, r.ID)
				b.versions = append(b.versions, r.Version)
			}
			b.Text, b.Tokens = text, exact
			return b, nil
		}
		chosen = chosen[:len(chosen)-1]
	}
	return b, nil
}

// tokenCache keeps token counts by note id (immutable) or by the SHA-256 of a text; it is
// emptied when it reaches 20,000 entries.
var tokenCache = struct {
	sync.Mutex
	m map[string]int
}{m: map[string]int{}}

func cachedCount(noteID, text string) (int, error) {
	key := noteID
	if key == "" {
		h := sha256.Sum256([]byte(text))
		key = hex.EncodeToString(h[:])
	}
	tokenCache.Lock()
	n, ok := tokenCache.m[key]
	tokenCache.Unlock()
	if ok {
		return n, nil
	}
	n, err := countTokens(text)
	if err != nil {
		return 0, err
	}
	tokenCache.Lock()
	if len(tokenCache.m) >= 20000 {
		tokenCache.m = map[string]int{}
	}
	tokenCache.m[key] = n
	tokenCache.Unlock()
	return n, nil
}

// etag hashes everything the answer depends on: the request's ordering inputs and limit, the
// enabled flag, the text and the delivered note ids (each id is one immutable version).
func etag(b Block, req BlockRequest) string {
	h := sha256.New()
	fmt.Fprintf(h, "block/v1\n%t\n%d\n%s\n%s\n%d\n", b.Enabled, req.MaxTokens, strings.Join(req.Tags, ","), req.View, b.Tokens)
	if vk := viewKey(req); vk != "" {
		fmt.Fprintf(h, "%s\n", vk) // absent without a views document: the ETags of before CTX-1
	}
	for _, id := range b.NoteIDs {
		fmt.Fprintf(h, "%s\n", id)
	}
	h.Write([]byte(b.Text))
	return `"` + hex.EncodeToString(h.Sum(nil))[:32] + `"`
}

// matches reports whether an If-None-Match header value names etag (or is "*").
func matches(header, etag string) bool {
	if header == "" {
		return false
	}
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
