package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Note is one version of an agent-memory note (AM-1). An edit inserts a new row with
// Version+1 and SupersedesNoteID set, and retires the previous row; LineageID is the id of
// version 1. Tags is a JSON array; TagsText the same tags joined by spaces (for search).
// ActorKind is the kind of key that wrote the row ("agent" or "person"): only agent writes
// count against the hourly limit (AM-7). ContentHash is notes.ContentHash of the row's
// content (duplicate detection, issue 17 §2).
type Note struct {
	bun.BaseModel `bun:"table:notes,alias:n"`

	ID               string     `bun:"id,pk"`
	SpaceID          string     `bun:"space_id"`
	LineageID        string     `bun:"lineage_id"`
	Version          int        `bun:"version"`
	SupersedesNoteID string     `bun:"supersedes_note_id"`
	SourceID         string     `bun:"source_id"`
	Vendor           string     `bun:"vendor"`
	Kind             string     `bun:"kind"`
	Title            string     `bun:"title"`
	Body             string     `bun:"body"`
	Tags             string     `bun:"tags"`
	TagsText         string     `bun:"tags_text"`
	Visibility       string     `bun:"visibility"`
	EvidenceKind     string     `bun:"evidence_kind"`
	EvidenceID       string     `bun:"evidence_id"`
	Origin           string     `bun:"origin"`
	Status           string     `bun:"status"`
	ValidUntil       *time.Time `bun:"valid_until"`
	ContentHash      string     `bun:"content_hash"`
	ProposalID       string     `bun:"proposal_id"`
	ActorKeyID       string     `bun:"actor_key_id"`
	ActorKind        string     `bun:"actor_kind"`
	AgentVersion     string     `bun:"agent_version"`
	CreatedAt        time.Time  `bun:"created_at"`
	UpdatedAt        time.Time  `bun:"updated_at"`
	RetiredAt        *time.Time `bun:"retired_at"`
	// Sealed is the title and body sealed under the lineage's key (notes.NoteKeyID; issue 29
	// §1), the title and body columns then empty; nil for a row stored in clear (before
	// sealing, or by a service without a key store). Readers unseal it into Title and Body.
	Sealed []byte `bun:"sealed"`
}

// NoteTag lists one tag of a note, for tag filters in list, block and search.
type NoteTag struct {
	bun.BaseModel `bun:"table:note_tags"`

	NoteID  string `bun:"note_id,pk"`
	Tag     string `bun:"tag,pk"`
	SpaceID string `bun:"space_id"`
}

// NoteProposal is a note waiting for a person's decision (AM-8, AM-9). Status is drafting,
// pending, approved, rejected, failed or expired; while drafting the content may be empty.
// SupersedesNoteID is set when the proposal is an edit of that note; NoteID is the note an
// approval created.
type NoteProposal struct {
	bun.BaseModel `bun:"table:note_proposals"`

	ID               string     `bun:"id,pk"`
	SpaceID          string     `bun:"space_id"`
	SourceID         string     `bun:"source_id"`
	Vendor           string     `bun:"vendor"`
	Origin           string     `bun:"origin"`
	Status           string     `bun:"status"`
	Reason           string     `bun:"reason"`
	Kind             string     `bun:"kind"`
	Title            string     `bun:"title"`
	Body             string     `bun:"body"`
	Tags             string     `bun:"tags"`
	Visibility       string     `bun:"visibility"`
	EvidenceKind     string     `bun:"evidence_kind"`
	EvidenceID       string     `bun:"evidence_id"`
	ValidUntil       *time.Time `bun:"valid_until"`
	SupersedesNoteID string     `bun:"supersedes_note_id"`
	NoteID           string     `bun:"note_id"`
	ActorKeyID       string     `bun:"actor_key_id"`
	ActorKind        string     `bun:"actor_kind"`
	AgentVersion     string     `bun:"agent_version"`
	DecidedBy        string     `bun:"decided_by"`
	DecidedAt        *time.Time `bun:"decided_at"`
	CreatedAt        time.Time  `bun:"created_at"`
	UpdatedAt        time.Time  `bun:"updated_at"`
	// LastError says why a drafting proposal is still drafting (a code, e.g.
	// model_unreachable) or why its last approval was refused; empty otherwise.
	LastError string `bun:"last_error"`
	// Kinds is a JSON array of the personal-data kinds (never values) that failed it.
	Kinds string `bun:"kinds"`
	// Sealed is the title and body sealed under the proposal's own key
	// (noterows.ProposalKeyID; issue 29 §1), the title and body columns then empty; nil for a
	// row stored in clear. Readers unseal it into Title and Body.
	Sealed []byte `bun:"sealed"`
}

// NoteRequest remembers the first answer to a note write sent with an Idempotency-Key, per
// acting key: IdemKey is the keyed hash of the header (never the value itself), BodyHash the
// SHA-256 of the canonical request, Response the JSON answered.
type NoteRequest struct {
	bun.BaseModel `bun:"table:note_requests"`

	SpaceID   string    `bun:"space_id,pk"`
	KeyID     string    `bun:"key_id,pk"`
	IdemKey   string    `bun:"idem_key,pk"`
	BodyHash  string    `bun:"body_hash"`
	Status    int       `bun:"status"`
	Response  string    `bun:"response"`
	CreatedAt time.Time `bun:"created_at"`
}
