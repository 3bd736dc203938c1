package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Board is one board instance (issue 31): BoardHash is the keyed hash of its id within its
// type; Body the JSON of its fields; Writers a JSON array of its latest writers' agent names.
type Board struct {
	bun.BaseModel `bun:"table:boards"`

	ID         string    `bun:"id,pk"`
	SpaceID    string    `bun:"space_id"`
	Type       string    `bun:"type"`
	BoardHash  string    `bun:"board_hash"`
	Body       string    `bun:"body"`
	FieldTimes string    `bun:"field_times"`
	Version    int64     `bun:"version"`
	Bytes      int       `bun:"bytes"`
	Writers    string    `bun:"writers"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
	ExpiresAt  time.Time `bun:"expires_at"`
}

// BoardVersion is a past body of a board, kept as the base of later merges.
type BoardVersion struct {
	bun.BaseModel `bun:"table:board_versions"`

	BoardID   string    `bun:"board_id,pk"`
	Version   int64     `bun:"version,pk"`
	Body      string    `bun:"body"`
	CreatedAt time.Time `bun:"created_at"`
}

// BoardSubject links a board to a customer (the keyed hash of a handle) its subject fields
// name.
type BoardSubject struct {
	bun.BaseModel `bun:"table:board_subjects"`

	SpaceID     string `bun:"space_id"`
	BoardID     string `bun:"board_id,pk"`
	SubjectHash string `bun:"subject_hash,pk"`
}

// Lease is the lease state of one target (a board or a working state): Token is the last
// fencing token granted; LeaseID the current lease ("" once released); Holder the key id
// that holds it.
type Lease struct {
	bun.BaseModel `bun:"table:leases"`

	SpaceID   string    `bun:"space_id,pk"`
	Target    string    `bun:"target,pk"`
	Token     int64     `bun:"token"`
	LeaseID   string    `bun:"lease_id"`
	Holder    string    `bun:"holder"`
	ExpiresAt time.Time `bun:"expires_at"`
}
