package models

import (
	"time"

	"github.com/uptrace/bun"
)

// KnowledgeBase is one knowledge base of a space (KN-1): Settings is its JSON settings.
type KnowledgeBase struct {
	bun.BaseModel `bun:"table:knowledge_bases"`

	ID        string    `bun:"id,pk"`
	SpaceID   string    `bun:"space_id"`
	Name      string    `bun:"name"`
	Settings  string    `bun:"settings"`
	CreatedBy string    `bun:"created_by"`
	CreatedAt time.Time `bun:"created_at"`
}

// KnowledgeDocument is one submitted version of a source (KN-2). Body holds the gated text
// (masked under the mask policy) until it is indexed or refused; Kinds is a JSON list of the
// personal-data kinds the gate found (never values). SubjectHash is the keyed hash of the
// subject the document is about under the policy allow_with_subject ("" otherwise): a subject
// erasure deletes the document with its chunks (KN-3).
type KnowledgeDocument struct {
	bun.BaseModel `bun:"table:knowledge_documents"`

	ID           string `bun:"id,pk"`
	SpaceID      string `bun:"space_id"`
	KBID         string `bun:"kb_id"`
	SourceURI    string `bun:"source_uri"`
	Title        string `bun:"title"`
	VersionLabel string `bun:"version_label"`
	Format       string `bun:"format"`
	ContentHash  string `bun:"content_hash"`
	Body         string `bun:"body"`
	Status       string `bun:"status"`
	Reason       string `bun:"reason"`
	Kinds        string `bun:"kinds"`
	Masked       bool   `bun:"masked"`
	Chunks       int    `bun:"chunks"`
	EmbedModel   string `bun:"embed_model"`
	Dims         int    `bun:"dims"`
	SupersededBy string `bun:"superseded_by"`
	SubjectHash  string `bun:"subject_hash"`
	// SealedKey is the key-store id the title and body are sealed under (knowledge.DocumentKeyID;
	// "" for a legacy row stored in clear, sealed by `agentmemory restore`); SealedTitle and
	// SealedBody are then the sealed title and body (nil when there is none), Title and Body
	// empty, and TitleHash the title's keyed hash (the title filter of retrieval).
	SealedKey   string `bun:"sealed_key"`
	SealedTitle []byte `bun:"sealed_title"`
	SealedBody  []byte `bun:"sealed_body"`
	TitleHash   string `bun:"title_hash"`
	CreatedBy   string `bun:"created_by"`
	// AgentVersion is the Agent-Version header of the submission (MS-5), "" when none.
	AgentVersion string     `bun:"agent_version"`
	CreatedAt    time.Time  `bun:"created_at"`
	UpdatedAt    time.Time  `bun:"updated_at"`
	IndexedAt    *time.Time `bun:"indexed_at"`
}

// KnowledgeChunk is one indexed chunk (KN-2): its byte range [StartByte, EndByte) in the
// document's body, Heading (the document title, indexed with the text) and Embedding
// (little-endian float32s; nil when none). SubjectHash repeats its document's.
type KnowledgeChunk struct {
	bun.BaseModel `bun:"table:knowledge_chunks"`

	ID          string `bun:"id,pk"`
	SpaceID     string `bun:"space_id"`
	KBID        string `bun:"kb_id"`
	DocumentID  string `bun:"document_id"`
	Ord         int    `bun:"ord"`
	Heading     string `bun:"heading"`
	StartByte   int    `bun:"start_byte"`
	EndByte     int    `bun:"end_byte"`
	Tokens      int    `bun:"tokens"`
	Text        string `bun:"text"`
	Embedding   []byte `bun:"embedding"`
	SubjectHash string `bun:"subject_hash"`
	// SealedKey is the key-store id of its document's key ("" for a legacy clear row);
	// SealedText and SealedEmbedding are then the sealed text and embedding, Heading and Text
	// empty. Embedding stays as the exact scan's derived vector (rebuilt by restore).
	SealedKey       string    `bun:"sealed_key"`
	SealedText      []byte    `bun:"sealed_text"`
	SealedEmbedding []byte    `bun:"sealed_embedding"`
	CreatedAt       time.Time `bun:"created_at"`
}

// KnowledgeReader is one read grant of a knowledge base (KN-1, MS-2): Kind "space" (Name
// empty: every agent key of the space with knowledge:read), "agent" (Name: the agent's name)
// or "vendor" (Name: the vendor's name).
type KnowledgeReader struct {
	bun.BaseModel `bun:"table:knowledge_readers"`

	SpaceID string `bun:"space_id"`
	KBID    string `bun:"kb_id,pk"`
	Kind    string `bun:"kind,pk"`
	Name    string `bun:"name,pk"`
}
