package knowledge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/models"
)

// Document statuses (KN-2).
const (
	StatusPending    = "pending"    // submitted; IngestWorkflow has not indexed it yet
	StatusReady      = "ready"      // indexed: its chunks are retrievable
	StatusRefused    = "refused"    // the gate found personal data under refuse (kinds)
	StatusFailed     = "failed"     // the workflow gave up (reason)
	StatusSuperseded = "superseded" // a newer version of the source is ready: no chunks
	StatusDeleted    = "deleted"    // deleted: no body, no chunks, no vectors
)

// Limits of a document.
const (
	MaxDocumentBytes = 1 << 20
	MaxSourceURI     = 500
	MaxTitle         = 200
	MaxVersionLabel  = 100
	// EmbedBatch is how many chunks one /api/embed call carries.
	EmbedBatch = 16
)

// SubmitRequest is the body of POST /v1/knowledge/{kb}/documents: Text (1 byte..1 MiB of
// UTF-8), Format "text" (default) or "markdown", SourceURI (required: the source's identity;
// a new version of the same URI supersedes the old), Title and Version (a label, default
// "1"), and Subject: the handle of the subject the document is about ("email:...",
// "phone:...", "document:...", "username:..."), required by and only taken by a base with
// personal_data allow_with_subject; it is stored only as its keyed hash.
type SubmitRequest struct {
	Text      string `json:"text"`
	Format    string `json:"format,omitempty"`
	SourceURI string `json:"source_uri"`
	Title     string `json:"title,omitempty"`
	Version   string `json:"version,omitempty"`
	Subject   string `json:"subject,omitempty"`
}

// Document is a document as the API shows it (never its text).
type Document struct {
	ID           string   `json:"id"`
	KBID         string   `json:"kb_id"`
	SourceURI    string   `json:"source_uri"`
	Title        string   `json:"title"`
	Version      string   `json:"version"`
	Format       string   `json:"format"`
	Status       string   `json:"status"`
	Reason       *string  `json:"reason"`
	Kinds        []string `json:"kinds"`
	Masked       bool     `json:"masked"`
	Chunks       int      `json:"chunks"`
	EmbedModel   string   `json:"embedding_model,omitempty"`
	Dims         int      `json:"dimensions,omitempty"`
	SupersededBy *string  `json:"superseded_by"`
	// NamesSubject is true when the document names a subject (allow_with_subject); the
	// subject itself is never shown.
	NamesSubject bool `json:"names_subject"`
	// KeyID and AgentVersion are the document's provenance (MS-5, QT-2): the key that
	// submitted it and the submission's Agent-Version header ("" when none was sent).
	KeyID        string  `json:"key_id"`
	AgentVersion string  `json:"agent_version"`
	CreatedAt    string  `json:"created_at"`
	IndexedAt    *string `json:"indexed_at"`
}

func toDocument(r models.KnowledgeDocument) Document {
	d := Document{ID: r.ID, KBID: r.KBID, SourceURI: r.SourceURI, Title: r.Title, Version: r.VersionLabel, Format: r.Format,
		Status: r.Status, Kinds: []string{}, Masked: r.Masked, Chunks: r.Chunks, EmbedModel: r.EmbedModel, Dims: r.Dims,
		NamesSubject: r.SubjectHash != "", KeyID: r.CreatedBy, AgentVersion: r.AgentVersion, CreatedAt: r.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	_ = json.Unmarshal([]byte(r.Kinds), &d.Kinds) // written by this package as a JSON array; an unreadable one reads as no kinds
	if d.Kinds == nil {
		d.Kinds = []string{}
	}
	if r.Reason != "" {
		d.Reason = &r.Reason
	}
	if r.SupersededBy != "" {
		d.SupersededBy = &r.SupersededBy
	}
	if r.IndexedAt != nil {
		t := r.IndexedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		d.IndexedAt = &t
	}
	return d
}

func (r *SubmitRequest) validate() error {
	if r.Format == "" {
		r.Format = "text"
	}
	if r.Version == "" {
		r.Version = "1"
	}
	switch {
	case r.Text == "" || len(r.Text) > MaxDocumentBytes:
		return invalid("text", "text is 1 byte to 1 MiB")
	case !utf8.ValidString(r.Text):
		return invalid("text", "text must be UTF-8")
	case r.Format != "text" && r.Format != "markdown":
		return invalid("format", `format is "text" or "markdown"`)
	case strings.TrimSpace(r.SourceURI) == "" || len(r.SourceURI) > MaxSourceURI || strings.ContainsAny(r.SourceURI, "\r\n\t"):
		return invalid("source_uri", "source_uri is 1-%d characters on one line", MaxSourceURI)
	case len(r.Title) > MaxTitle || strings.ContainsAny(r.Title, "\r\n"):
		return invalid("title", "title is at most %d characters on one line", MaxTitle)
	case len(r.Version) > MaxVersionLabel || strings.ContainsAny(r.Version, "\r\n\t"):
		return invalid("version", "version is 1-%d characters on one line", MaxVersionLabel)
	}
	return nil
}

// ContentHash is a document's identity for re-ingest (KN-2): SHA-256 of its base, source URI
// and stored bytes (after masking). The same bytes under the same source are a no-op.
func ContentHash(kbID, sourceURI, body string) string {
	h := sha256.Sum256([]byte("knowledge-document/v1\x00" + kbID + "\x00" + sourceURI + "\x00" + body))
	return hex.EncodeToString(h[:])
}

// Submit stores a document of base kbID for IngestWorkflow (KN-2) and returns it with
// created false when the same bytes of the same source are already pending or ready (a
// re-ingest: no-op, the existing document). CanWrite; the feature on; the base in p's space
// (else fault.NotFound "knowledge_base_not_found"). The ingest policy runs here, before
// anything is stored: the source URI and version label always pass the gate (they are
// repeated as provenance); under "refuse" the gate's local and model layers over title and text
// (personal data: fault.Unprocessable "personal_data_in_knowledge" with detail "kinds",
// nothing stored; the detector down: fault.Unavailable); under "mask" personal data is
// replaced by typed placeholders and the kinds recorded; under "allow_with_subject" the
// request must name its subject (fault.Invalid "invalid_member" subject when missing,
// "invalid_handle" when malformed), title and text are stored as they are, and the
// document and its chunks carry the subject's keyed hash, by which the subject's erasure
// finds them (Eraser). A subject given to a base with another policy is fault.Invalid. The
// workflow runs the gate again over the stored body under "refuse". Then, under the base's
// instructions policy "refuse" (the default), the stored title and body pass the
// instruction detector (GATE-3): a hit is fault.Unprocessable "instruction_in_knowledge"
// with detail "classes", nothing stored (personal data is reported first). It leaves a
// knowledge receipt "document.submit".
func (s *Service) Submit(ctx context.Context, p auth.Principal, kbID string, req SubmitRequest) (Document, bool, error) {
	row, err := s.submission(ctx, p, kbID, req)
	if err != nil {
		return Document{}, false, err
	}
	shown, bytes := toDocument(row), len(row.Body)
	kr := s.keyring()
	key, err := kr.key(ctx, DocumentKeyID(row.ID), true)
	if err != nil {
		return Document{}, false, err
	}
	if err := s.sealDocument(&row, key); err != nil {
		return Document{}, false, err
	}
	prev, err := s.insertUnlessDuplicate(ctx, p, row, bytes)
	if err != nil {
		// Nothing of the new row was stored: its key seals nothing. Dropping a failure to
		// destroy it is safe (an unused key opens no stored byte).
		_ = s.Keys.Destroy(ctx, DocumentKeyID(shown.ID))
	}
	if errors.Is(err, errDuplicate) {
		// the receipt of a no-op is rolled back with it: nothing happened
		if _, err := kr.openDocument(ctx, &prev); err != nil {
			return Document{}, false, err
		}
		return toDocument(prev), false, nil
	}
	if err != nil {
		// documents_per_base refused the insert: 409 quota_exceeded, nothing stored (issue 34 §1).
		return Document{}, false, quotas.Refusal(ctx, s.DB, p.SpaceID, err)
	}
	return shown, true, nil
}

// submission runs Submit's checks (authorisation, the base, the subject, the gate over the
// provenance, the base's policy and the instruction detector) and returns the pending row to
// store, in clear, with a new id. Errors are Submit's refusals.
func (s *Service) submission(ctx context.Context, p auth.Principal, kbID string, req SubmitRequest) (models.KnowledgeDocument, error) {
	if err := CanWrite(p); err != nil {
		return models.KnowledgeDocument{}, err
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return models.KnowledgeDocument{}, err
	}
	if err := req.validate(); err != nil {
		return models.KnowledgeDocument{}, err
	}
	b, err := s.base(ctx, s.DB, p.SpaceID, kbID)
	if err != nil {
		return models.KnowledgeDocument{}, err
	}
	subjectHash, err := s.subjectHash(ctx, p.SpaceID, b.Settings, req.Subject)
	if err != nil {
		return models.KnowledgeDocument{}, err
	}
	// The source and version label are provenance every retrieval repeats: whatever the
	// policy, they must hold no personal data (masking them would change the document's
	// identity), so the gate refuses them with the kinds found.
	if err := s.gate(ctx, p.SpaceID, redact.JoinForCheck(req.SourceURI, req.Version)); err != nil {
		return models.KnowledgeDocument{}, err
	}
	body, title, kinds, err := s.applyPolicy(ctx, p.SpaceID, b.Settings, req.Text, req.Title)
	if err != nil {
		return models.KnowledgeDocument{}, err
	}
	if cs := instructionClasses(b.Settings, title, body); len(cs) > 0 {
		return models.KnowledgeDocument{}, instructionRefused(cs)
	}
	now := s.now()
	return models.KnowledgeDocument{
		ID: auth.NewID("kd"), SpaceID: p.SpaceID, KBID: b.ID, SourceURI: req.SourceURI, Title: title, VersionLabel: req.Version,
		Format: req.Format, ContentHash: ContentHash(b.ID, req.SourceURI, body), Body: body, Status: StatusPending, Kinds: mustJSON(kinds),
		Masked: len(kinds) > 0, SubjectHash: subjectHash, CreatedBy: p.KeyID, AgentVersion: p.AgentVersion, CreatedAt: now, UpdatedAt: now,
	}, nil
}

// insertUnlessDuplicate inserts the sealed row with its "document.submit" receipt (bytes: the
// clear body's length) in one transaction, unless a pending or ready document of the same
// base, source, content and subject exists: then nothing is written and it returns that
// document (sealed, as stored) with errDuplicate. Other errors are the database's (a quota
// refusal among them).
func (s *Service) insertUnlessDuplicate(ctx context.Context, p auth.Principal, row models.KnowledgeDocument, bytes int) (models.KnowledgeDocument, error) {
	var prev models.KnowledgeDocument
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The receipt comes first: it locks the space's chain head, serialising the space's
		// writers, so two equal submissions cannot both insert.
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "document.submit", ActorKey: p.KeyID,
			ObjectIDs: []string{row.ID}, Detail: map[string]any{"kb_id": row.KBID, "bytes": bytes, "masked": row.Masked, "names_subject": row.SubjectHash != ""}}, row.CreatedAt); err != nil {
			return err
		}
		err := tx.NewSelect().Model(&prev).
			Where("space_id = ? AND kb_id = ? AND source_uri = ? AND content_hash = ? AND subject_hash = ? AND status IN (?)", p.SpaceID, row.KBID, row.SourceURI, row.ContentHash, row.SubjectHash, bun.In([]string{StatusPending, StatusReady})).
			OrderExpr("id DESC").Limit(1).Scan(ctx)
		if err == nil {
			return errDuplicate
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
		return err
	})
	return prev, err
}

var errDuplicate = errors.New("knowledge: duplicate")

// subjectHash checks a request's subject against the base's policy and returns its keyed
// hash ("" for no subject).
func (s *Service) subjectHash(ctx context.Context, spaceID string, st Settings, subject string) (string, error) {
	if st.PersonalData != PersonalDataWithSubject {
		if subject != "" {
			return "", invalid("subject", "subject is taken only by a base with personal_data allow_with_subject")
		}
		return "", nil
	}
	if strings.TrimSpace(subject) == "" {
		return "", invalid("subject", "this base's policy is allow_with_subject: name the subject the document is about (email:..., phone:...)")
	}
	c, err := s.Subjects.Canonical(ctx, spaceID, subject)
	if err != nil {
		return "", fault.New(fault.Invalid, "invalid_handle", "subject is a handle such as email:... or phone:...").With("member", "subject")
	}
	return s.Subjects.HandleHash(spaceID, c), nil
}

// applyPolicy runs base settings' ingest policy over text and title: the gated (or masked)
// body and title and the kinds masked.
func (s *Service) applyPolicy(ctx context.Context, spaceID string, st Settings, text, title string) (string, string, []string, error) {
	if st.PersonalData == PersonalDataWithSubject {
		return text, title, []string{}, nil // erased with the subject (Eraser)
	}
	if st.PersonalData == PersonalDataMask {
		opt, err := s.Masker.Options(ctx, spaceID)
		if err != nil {
			return "", "", nil, err
		}
		body, k1 := redact.Mask(text, opt)
		t, k2 := redact.Mask(title, opt)
		var kinds []string
		for _, k := range append(k1, k2...) {
			kinds = append(kinds, string(k))
		}
		slices.Sort(kinds)
		return body, t, slices.Compact(kinds), nil
	}
	if err := s.gate(ctx, spaceID, redact.JoinForCheck(title, text)); err != nil {
		return "", "", nil, err
	}
	return text, title, []string{}, nil
}

// instructionClasses runs the instruction detector (GATE-3) over a document's stored title
// and body under the base's instructions policy: the classes found (sorted), none under
// "allow". A base stored before the policy existed ("") refuses.
func instructionClasses(st Settings, title, body string) []string {
	if st.Instructions == InstructionsAllow {
		return nil
	}
	var out []string
	for _, c := range redact.DetectInstructions(title + "\n" + body) {
		out = append(out, string(c))
	}
	return out
}

// instructionRefused is the refusal of a document that reads as an instruction to the
// agents that retrieve it: fault.Unprocessable "instruction_in_knowledge" with detail
// "classes", never the text.
func instructionRefused(classes []string) error {
	return fault.New(fault.Unprocessable, CodeInstruction,
		"the document reads as an instruction to the agents that retrieve it (%s); this base's instructions policy is refuse: remove it, or use a base with instructions allow",
		strings.Join(classes, ", ")).With("classes", classes)
}

// gate is the notes gate with the knowledge store's refusal code.
func (s *Service) gate(ctx context.Context, spaceID, text string) error {
	err := s.Gate.Check(ctx, spaceID, text)
	fe := fault.As(err)
	if fe != nil && fe.Kind == fault.Unprocessable {
		kinds, _ := fe.Details["kinds"].([]string)
		if len(kinds) == 0 {
			kinds = []string{"personal_data"}
		}
		return fault.New(fault.Unprocessable, CodePersonalData,
			"the document carries personal data (%d kind(s)); this base's policy is refuse: remove them, or use a base with personal_data mask", len(kinds)).
			With("kinds", kinds)
	}
	return err
}

// IngestResult is what Ingest did: the document's status afterwards, its chunks, the model
// and dimensions of its vectors.
type IngestResult struct {
	DocumentID string   `json:"document_id"`
	Status     string   `json:"status"`
	Chunks     int      `json:"chunks"`
	Model      string   `json:"model,omitempty"`
	Dims       int      `json:"dims,omitempty"`
	Kinds      []string `json:"kinds,omitempty"`
}

// Ingest chunks, embeds and indexes pending document id (KN-2; IngestWorkflow's activity).
// Chunks that would pass the space's chunks_per_base quota are not stored: the document ends
// failed with reason "quota_exceeded:chunks_per_base" (issue 34 §1). A document no longer pending (indexed, refused, deleted meanwhile) is answered as it is:
// calling it again is a no-op. Under refuse the gate runs again over the stored body and a
// refusal ends the document refused (body cleared, kinds kept); under instructions refuse
// the instruction detector runs again and a hit ends it refused with reason
// "instruction_in_knowledge" and the classes as its kinds. The chunks (ChunkText with
// the base's size and overlap) are embedded EmbedBatch at a time with the base's model; an
// embedder that is down or answers unusable vectors is fault.Unavailable
// "embedder_unavailable" (retry). One transaction then inserts the chunks with their vectors
// and full-text rows, marks the document ready, and supersedes every ready older document of
// the same source (deleting its chunks, full-text rows and vectors, clearing its body): the
// old version leaves retrieval as the new one enters it. A newer version already ready makes
// this one superseded instead. It leaves a knowledge receipt "document.index" naming the
// chunks (and the superseded documents in detail).
func (s *Service) Ingest(ctx context.Context, id string) (IngestResult, error) {
	ix, done, err := s.loadIngest(ctx, id)
	if err != nil || done != nil {
		return deref(done), err
	}
	if res, refused, err := s.screenIngest(ctx, ix); refused || err != nil {
		return res, err
	}
	if err := s.prepareIngest(ctx, ix); err != nil {
		return IngestResult{}, err
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return s.indexIn(ctx, tx, ix) })
	if errors.Is(err, errNotPending) {
		return ix.res, nil
	}
	if q, ok := quotas.Exceeded(err); ok {
		// chunks_per_base refused the chunks (issue 34 §1): none is stored and the document
		// fails with the quota's name as its reason, instead of retrying a write that cannot fit.
		return s.finish(ctx, ix.doc, StatusFailed, quotas.CodeExceeded+":"+q, nil)
	}
	if err != nil {
		return IngestResult{}, err
	}
	if ix.vp.Name == PathPgvector {
		refreshStats(ctx, s.DB)
	}
	return ix.res, nil
}

// ingest is one Ingest of a pending document: the document (its body opened), its base, the
// keyring, then (prepareIngest) its chunks with their vectors, the vector path and the time,
// and the result so far.
type ingest struct {
	doc     models.KnowledgeDocument
	base    Base
	kr      *keyring
	chunks  []Chunk
	vectors [][]float32
	dims    int
	vp      VectorPath
	now     time.Time
	res     IngestResult
}

func deref(r *IngestResult) IngestResult {
	if r == nil {
		return IngestResult{}
	}
	return *r
}

// loadIngest is Ingest's first phase: document id (fault.NotFound document_not_found) opened
// with its base. A document no longer pending, or whose key is gone (deleted or erased
// meanwhile), is answered as it is (done).
func (s *Service) loadIngest(ctx context.Context, id string) (*ingest, *IngestResult, error) {
	ix := &ingest{kr: s.keyring()}
	doc := &ix.doc
	if err := s.DB.NewSelect().Model(doc).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil, fault.New(fault.NotFound, CodeDocumentNotFound, "no such document")
		}
		return nil, nil, fmt.Errorf("knowledge: load document: %w", err)
	}
	if doc.Status != StatusPending {
		return nil, &IngestResult{DocumentID: doc.ID, Status: doc.Status, Chunks: doc.Chunks, Model: doc.EmbedModel, Dims: doc.Dims}, nil
	}
	if ok, err := ix.kr.openDocument(ctx, doc); err != nil {
		return nil, nil, err
	} else if !ok {
		// Its key is gone: the document was deleted or erased meanwhile (its rows follow).
		return nil, &IngestResult{DocumentID: doc.ID, Status: StatusDeleted}, nil
	}
	b, err := s.base(ctx, s.DB, doc.SpaceID, doc.KBID)
	if err != nil {
		return nil, nil, err
	}
	ix.base = b
	return ix, nil, nil
}

// screenIngest is Ingest's second phase: under refuse the gate again over the stored body, and
// the instruction detector; a hit ends the document refused (refused true, its result).
func (s *Service) screenIngest(ctx context.Context, ix *ingest) (IngestResult, bool, error) {
	doc, set := ix.doc, ix.base.Settings
	if set.PersonalData == PersonalDataRefuse {
		if err := s.gate(ctx, doc.SpaceID, redact.JoinForCheck(doc.Title, doc.Body, doc.SourceURI, doc.VersionLabel)); err != nil {
			fe := fault.As(err)
			if fe == nil || fe.Code != CodePersonalData {
				return IngestResult{}, false, err
			}
			kinds, _ := fe.Details["kinds"].([]string)
			res, err := s.finish(ctx, doc, StatusRefused, CodePersonalData, kinds)
			return res, true, err
		}
	}
	if cs := instructionClasses(set, doc.Title, doc.Body); len(cs) > 0 {
		res, err := s.finish(ctx, doc, StatusRefused, CodeInstruction, cs)
		return res, true, err
	}
	return IngestResult{}, false, nil
}

// prepareIngest is Ingest's third phase, outside any transaction: the chunks (the base's size
// and overlap), their vectors (fault.Unavailable embedder_unavailable), the vector path.
func (s *Service) prepareIngest(ctx context.Context, ix *ingest) error {
	set := ix.base.Settings
	var err error
	if ix.chunks, err = ChunkText(ix.doc.ID, ix.doc.VersionLabel, ix.doc.Body, set.ChunkTokens, set.ChunkOverlap); err != nil {
		return err
	}
	if ix.vectors, ix.dims, err = s.embedChunks(ctx, set.EmbeddingModel, ix.doc.Title, ix.chunks); err != nil {
		return err
	}
	if ix.vp, err = s.indexPath(ctx); err != nil {
		return err
	}
	ix.now = s.now()
	ix.res = IngestResult{DocumentID: ix.doc.ID, Status: StatusReady, Chunks: len(ix.chunks), Model: set.EmbeddingModel, Dims: ix.dims}
	return nil
}

// indexIn is Ingest's transaction tx: the document.index receipt, the document still pending
// (errNotPending otherwise, ix.res its status), superseded by a newer ready version of its
// source or superseding the older ones, its chunks inserted and the row made ready, and a
// document.supersede receipt naming the versions it replaced.
func (s *Service) indexIn(ctx context.Context, tx bun.Tx, ix *ingest) error {
	doc, now := ix.doc, ix.now
	ids := make([]string, len(ix.chunks))
	for i, c := range ix.chunks {
		ids[i] = c.ID
	}
	if _, err := receipts.Append(ctx, tx, doc.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "document.index", ObjectIDs: ids,
		Detail: map[string]any{"document_id": doc.ID, "kb_id": doc.KBID, "chunks": len(ix.chunks), "model": ix.res.Model, "dims": ix.dims}}, now); err != nil {
		return err
	}
	var cur string
	if err := tx.NewSelect().Model((*models.KnowledgeDocument)(nil)).Column("status").Where("id = ?", doc.ID).Scan(ctx, &cur); err != nil {
		return err
	}
	if cur != StatusPending {
		ix.res.Status = cur
		return errNotPending
	}
	older, newer, err := sameSource(ctx, tx, doc)
	if err != nil {
		return err
	}
	if newer != "" {
		ix.res.Status, ix.res.Chunks = StatusSuperseded, 0
		_, err := tx.NewUpdate().Model((*models.KnowledgeDocument)(nil)).
			Set("status = ?, superseded_by = ?, body = '', sealed_body = NULL, updated_at = ?", StatusSuperseded, newer, now).Where("id = ?", doc.ID).Exec(ctx)
		return err
	}
	if err := supersede(ctx, tx, doc.ID, older, now); err != nil {
		return err
	}
	if err := s.storeIndexed(ctx, tx, ix); err != nil {
		return err
	}
	if len(older) == 0 {
		return nil
	}
	_, err = receipts.Append(ctx, tx, doc.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "document.supersede", ObjectIDs: older,
		Detail: map[string]any{"superseded_by": doc.ID}}, now)
	return err
}

// sameSource returns the ready documents of doc's source other than doc, split by
// splitVersions.
func sameSource(ctx context.Context, tx bun.Tx, doc models.KnowledgeDocument) (older []string, newer string, err error) {
	var others []models.KnowledgeDocument
	if err := tx.NewSelect().Model(&others).Column("id").
		Where("space_id = ? AND kb_id = ? AND source_uri = ? AND status = ? AND id <> ?", doc.SpaceID, doc.KBID, doc.SourceURI, StatusReady, doc.ID).
		Scan(ctx); err != nil {
		return nil, "", err
	}
	older, newer = splitVersions(doc.ID, others)
	return older, newer, nil
}

// splitVersions splits the other ready versions of document id's source into the older ones
// (in order) and a newer one ("" for none; the last when several): ids are time-ordered
// (UUIDv7), so a greater id is a later submission.
func splitVersions(id string, others []models.KnowledgeDocument) (older []string, newer string) {
	for _, o := range others {
		if o.ID > id {
			newer = o.ID
		} else {
			older = append(older, o.ID)
		}
	}
	return older, newer
}

// supersede ends the older versions of document id inside tx: their chunks, full-text rows
// and vectors deleted, their body cleared, superseded by id.
func supersede(ctx context.Context, tx bun.Tx, id string, older []string, now time.Time) error {
	for _, o := range older {
		if err := deleteChunks(ctx, tx, o); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*models.KnowledgeDocument)(nil)).
			Set("status = ?, superseded_by = ?, body = '', sealed_body = NULL, chunks = 0, updated_at = ?", StatusSuperseded, id, now).Where("id = ?", o).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// storeIndexed inserts ix's chunks and makes the document ready, only while its row is still
// pending: one deleted meanwhile (a subject's erasure takes no chain head lock) rolls
// everything back (errNotPending, ix.res deleted), so no chunk of a document that is gone is
// stored.
func (s *Service) storeIndexed(ctx context.Context, tx bun.Tx, ix *ingest) error {
	doc, now := ix.doc, ix.now
	if err := s.insertChunks(ctx, tx, ix.vp, ix.kr, doc, ix.chunks, ix.vectors, now); errors.Is(err, errNotPending) {
		ix.res = IngestResult{DocumentID: doc.ID, Status: StatusDeleted}
		return err
	} else if err != nil {
		return err
	}
	done, err := tx.NewUpdate().Model((*models.KnowledgeDocument)(nil)).
		Set("status = ?, chunks = ?, embed_model = ?, dims = ?, indexed_at = ?, updated_at = ?", StatusReady, len(ix.chunks), ix.res.Model, ix.dims, now, now).
		Where("id = ? AND status = ?", doc.ID, StatusPending).Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := done.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		ix.res = IngestResult{DocumentID: doc.ID, Status: StatusDeleted}
		return errNotPending
	}
	return nil
}

var errNotPending = errors.New("knowledge: not pending")

// insertChunks stores doc's chunks with their vectors, in tx: the rows sealed under doc's key
// (a legacy clear document's chunks stay clear, as it does, until restore seals both), then
// the derived entries from the clear values: full text (writeFullText) and the vector index
// (indexVectors).
func (s *Service) insertChunks(ctx context.Context, tx bun.Tx, vp VectorPath, kr *keyring, doc models.KnowledgeDocument, chunks []Chunk, vectors [][]float32, now time.Time) error {
	if len(chunks) == 0 {
		return nil
	}
	var key []byte
	if doc.SealedKey != "" {
		var err error
		if key, err = kr.key(ctx, doc.SealedKey, false); err != nil {
			return err
		}
		if key == nil {
			return errNotPending // deleted or erased meanwhile: store nothing
		}
	}
	clear := make([]models.KnowledgeChunk, len(chunks))
	rows := make([]models.KnowledgeChunk, len(chunks))
	for i, c := range chunks {
		clear[i] = models.KnowledgeChunk{ID: c.ID, SpaceID: doc.SpaceID, KBID: doc.KBID, DocumentID: doc.ID, Ord: c.Ord, Heading: doc.Title,
			StartByte: c.Start, EndByte: c.End, Tokens: c.Tokens, Text: c.Text, Embedding: encodeVector(vectors[i]), SubjectHash: doc.SubjectHash, CreatedAt: now}
		rows[i] = clear[i]
		if key != nil {
			if err := sealChunk(&rows[i], doc.SealedKey, key); err != nil {
				return err
			}
		}
	}
	if !db.IsSQLite(tx) {
		// PostgreSQL's full-text entry is part of the row: written by the insert itself, so
		// that no chunk row is written twice (an update would leave a dead tuple per chunk).
		for i := range rows {
			h, t := clear[i].Heading, clear[i].Text
			if _, err := tx.NewInsert().Model(&rows[i]).Value("search", "to_tsvector('simple', ?)", h+" "+t).
				Value("heading_search", "setweight(to_tsvector('simple', ?), 'A')", h).Exec(ctx); err != nil {
				return err
			}
		}
		return indexVectors(ctx, tx, vp, clear, now)
	}
	if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return err
	}
	for _, r := range clear {
		if err := writeFullText(ctx, tx, r.ID, r.Heading, r.Text); err != nil {
			return err
		}
	}
	return indexVectors(ctx, tx, vp, clear, now)
}

// writeFullText writes chunk id's full-text entry (derived data) from its clear heading (the
// document's title) and text: a row of knowledge_chunks_fts on SQLite, the search and
// heading_search columns of the chunk row on PostgreSQL.
func writeFullText(ctx context.Context, idb bun.IDB, id, heading, text string) error {
	if db.IsSQLite(idb) {
		if _, err := idb.ExecContext(ctx, "INSERT INTO knowledge_chunks_fts (chunk_id, heading, text) VALUES (?, ?, ?)", id, heading, text); err != nil {
			return fmt.Errorf("knowledge: full text: %w", err)
		}
		return nil
	}
	if _, err := idb.ExecContext(ctx, "UPDATE knowledge_chunks SET search = to_tsvector('simple', ? || ' ' || ?), heading_search = setweight(to_tsvector('simple', ?), 'A') WHERE id = ?",
		heading, text, heading, id); err != nil {
		return fmt.Errorf("knowledge: full text: %w", err)
	}
	return nil
}

// Fail ends pending document id failed with reason (IngestWorkflow gave up); a document no
// longer pending is left as it is. Its body is cleared.
func (s *Service) Fail(ctx context.Context, id, reason string) error {
	var doc models.KnowledgeDocument
	if err := s.DB.NewSelect().Model(&doc).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	}
	if doc.Status != StatusPending {
		return nil
	}
	_, err := s.finish(ctx, doc, StatusFailed, reason, nil)
	return err
}

// finish ends pending doc in status (refused or failed) with reason and kinds, clearing its
// body, with a receipt "document.<status>". When doc is no longer pending (another ingest of it,
// on this or another replica, ended it first) nothing is written, the receipt included, and
// its current status is answered: a document has one ending and one receipt of it.
func (s *Service) finish(ctx context.Context, doc models.KnowledgeDocument, status, reason string, kinds []string) (IngestResult, error) {
	if kinds == nil {
		kinds = []string{}
	}
	now := s.now()
	cur := IngestResult{DocumentID: doc.ID}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The receipt first: it takes the space's chain head lock, as Ingest's transaction does,
		// so the two queue in one order and the status read below is current.
		if _, err := receipts.Append(ctx, tx, doc.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "document." + status,
			ObjectIDs: []string{doc.ID}, Detail: map[string]any{"reason": reason, "kinds": kinds}}, now); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*models.KnowledgeDocument)(nil)).
			Set("status = ?, reason = ?, kinds = ?, body = '', sealed_body = NULL, updated_at = ?", status, reason, mustJSON(kinds), now).
			Where("id = ? AND status = ?", doc.ID, StatusPending).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return currentResult(ctx, tx, doc.ID, &cur)
	})
	if errors.Is(err, errNotPending) {
		return cur, nil // rolled back: the receipt of an ending that did not happen
	}
	if err != nil {
		return IngestResult{}, err
	}
	return IngestResult{DocumentID: doc.ID, Status: status, Kinds: kinds}, nil
}

// currentResult fills res with document id's current status, chunks, model and dimensions
// (StatusDeleted when the row is gone) and returns errNotPending, to roll back the caller's
// transaction.
func currentResult(ctx context.Context, tx bun.Tx, id string, res *IngestResult) error {
	var row models.KnowledgeDocument
	err := tx.NewSelect().Model(&row).Column("status", "chunks", "embed_model", "dims").Where("id = ?", id).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		res.Status = StatusDeleted
	case err != nil:
		return err
	default:
		res.Status, res.Chunks, res.Model, res.Dims = row.Status, row.Chunks, row.EmbedModel, row.Dims
	}
	return errNotPending
}

// embedChunks embeds "title\n\ntext" of each chunk, EmbedBatch per call: the vectors and
// their length.
func (s *Service) embedChunks(ctx context.Context, model, title string, chunks []Chunk) ([][]float32, int, error) {
	out := make([][]float32, 0, len(chunks))
	dims := 0
	for i := 0; i < len(chunks); i += EmbedBatch {
		j := min(i+EmbedBatch, len(chunks))
		texts := make([]string, 0, j-i)
		for _, c := range chunks[i:j] {
			texts = append(texts, embedText(title, c.Text))
		}
		vs, err := s.embed(ctx, model, texts)
		if err != nil {
			return nil, 0, err
		}
		for _, v := range vs {
			if dims == 0 {
				dims = len(v)
			}
			if len(v) != dims {
				return nil, 0, embedderDown()
			}
			out = append(out, v)
		}
	}
	return out, dims, nil
}

func embedText(title, text string) string {
	if title == "" {
		return text
	}
	return title + "\n\n" + text
}

// embed calls the Embedder, checking the answer's shape; any failure is embedderDown.
func (s *Service) embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if s.Embedder == nil {
		return nil, embedderDown()
	}
	vs, err := s.Embedder.Embed(ctx, model, texts)
	if err != nil || len(vs) != len(texts) {
		return nil, embedderDown()
	}
	for _, v := range vs {
		if len(v) == 0 {
			return nil, embedderDown()
		}
	}
	return vs, nil
}

func embedderDown() error {
	return fault.New(fault.Unavailable, CodeEmbedderDown, "the embedding model did not answer; retry later")
}

// deleteChunks removes document id's chunks: rows (with their vectors), vector index
// entries (unindexVectors) and full-text entries. Every path that deletes chunks goes
// through it (MS-4).
func deleteChunks(ctx context.Context, tx bun.Tx, docID string) error {
	if err := unindexVectors(ctx, tx, docID); err != nil {
		return err
	}
	if db.IsSQLite(tx) {
		if _, err := tx.ExecContext(ctx, "DELETE FROM knowledge_chunks_fts WHERE chunk_id IN (SELECT id FROM knowledge_chunks WHERE document_id = ?)", docID); err != nil {
			return err
		}
	}
	_, err := tx.NewDelete().Model((*models.KnowledgeChunk)(nil)).Where("document_id = ?", docID).Exec(ctx)
	return err
}

// encodeVector is v as little-endian float32 bytes.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector is encodeVector's inverse (nil for a malformed blob).
func decodeVector(b []byte) []float32 {
	if len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
