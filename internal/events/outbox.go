// Package events is the transactional outbox (GOV-4, AM-13): an event is written in the same
// transaction as the change it announces, so it exists if and only if that change committed;
// a relay delivers pending events at least once, each with a stable id for deduplication.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
)

// TypeNoteCreated is emitted for every created note and proposal (AM-13).
const TypeNoteCreated = "agent_memory.note_created"

// TypeNoteDeleted is emitted for every note version hard-deleted by an admin (issue 29 §3:
// DELETE /v1/agent-memory/notes/{id}), with the note id and its source_id.
const TypeNoteDeleted = "agent_memory.note_deleted"

// Event is the JSON every consumer receives. It carries ids, kind and origin, never a note's
// title, body or tags. A change request's events (internal/changes) carry ChangeID, Document
// (the document's name) and Version (the version proposed against, or the one applied),
// never the document's text. A deleted working state's event (internal/state) carries StateID,
// the state's agent as SourceID and its last Version, never its scope, subject or body. A
// board's event (internal/boards, board.updated) carries BoardID (bd_...), the board's type as
// Kind, the writing agent as SourceID and the new Version, never its id or body.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	SpaceID    string    `json:"space_id"`
	NoteID     string    `json:"note_id,omitempty"`
	ProposalID string    `json:"proposal_id,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Origin     string    `json:"origin,omitempty"`
	SourceID   string    `json:"source_id,omitempty"`
	ChangeID   string    `json:"change_id,omitempty"`
	StateID    string    `json:"state_id,omitempty"`
	BoardID    string    `json:"board_id,omitempty"`
	Document   string    `json:"document,omitempty"`
	Version    int64     `json:"version,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
}

// Enqueue writes e to the outbox inside tx (the transaction of the change it announces), at
// the space's next position (EnqueueAll of one event). It fills ID and OccurredAt when empty
// and returns the stored event. Callers that also append a receipt append it first (one lock
// order per space).
func Enqueue(ctx context.Context, tx bun.IDB, e Event, now time.Time) (Event, error) {
	out, err := EnqueueAll(ctx, tx, []Event{e}, now)
	if err != nil {
		return e, err
	}
	return out[0], nil
}

// maxRowsPerInsert is the most events one outbox insert of EnqueueAll holds: a statement
// text is prepared per pool for each row count, so at most this many texts.
const maxRowsPerInsert = 64

// EnqueueAll writes es, events of one space, to the outbox inside tx (the transaction of the
// changes they announce) at the space's next len(es) positions, in the order of es: a batch
// of note writes enqueues its stored notes' events at its end in one call (issue 16). It
// fills each ID and OccurredAt left empty and returns the stored events. The positions are
// taken under the space's event head row (created the first time), held until tx ends, so
// positions follow commit order and never skip (MS-1: a cursor says nothing of other
// spaces), and the rows' seq follows their positions. Callers that also append a receipt
// append it first (one lock order per space). Inside a bun.Tx the statements are prepared
// once per pool, values bound (db.Exec): on PostgreSQL the positions and the rows are one
// statement (one round trip), on SQLite the head's move then multi-row inserts of at most
// maxRowsPerInsert events. No events write nothing; events of several spaces are an error.
func EnqueueAll(ctx context.Context, tx bun.IDB, es []Event, now time.Time) ([]Event, error) {
	if len(es) == 0 {
		return nil, nil
	}
	out, payloads, err := prepareEvents(es, now)
	if err != nil {
		return nil, err
	}
	d := tx.NewSelect().DB()
	if !db.IsSQLite(tx) {
		for from := 0; from < len(out); from += maxRowsPerInsert {
			to := min(from+maxRowsPerInsert, len(out))
			if err := enqueuePostgres(ctx, tx, d, out[from:to], payloads[from:to]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if err := enqueueSQLite(ctx, tx, d, out, payloads); err != nil {
		return nil, err
	}
	return out, nil
}

// prepareEvents returns es (non-empty) with each empty ID and OccurredAt filled (now in UTC,
// to the microsecond), and their JSON payloads. Events of several spaces are an error.
func prepareEvents(es []Event, now time.Time) ([]Event, []string, error) {
	out := make([]Event, len(es))
	payloads := make([]string, len(es))
	spaceID := es[0].SpaceID
	for i, e := range es {
		if e.SpaceID != spaceID {
			return nil, nil, fmt.Errorf("events: enqueue: events of spaces %s and %s in one call", spaceID, e.SpaceID)
		}
		if e.ID == "" {
			e.ID = auth.NewID("evt")
		}
		if e.OccurredAt.IsZero() {
			e.OccurredAt = now.UTC().Truncate(time.Microsecond)
		}
		payload, err := json.Marshal(e)
		if err != nil {
			return nil, nil, fmt.Errorf("events: encode: %w", err)
		}
		out[i], payloads[i] = e, string(payload)
	}
	return out, payloads, nil
}

// enqueueSQLite is EnqueueAll on SQLite for es (prepared, with their payloads, of one space):
// the space's head moves by len(es), then multi-row inserts of at most maxRowsPerInsert
// events take the positions below its new value, in the order of es.
func enqueueSQLite(ctx context.Context, tx bun.IDB, d *bun.DB, es []Event, payloads []string) error {
	spaceID := es[0].SpaceID
	rows, err := db.Query(ctx, tx, `INSERT INTO event_heads (space_id, position) VALUES (?, ?)
ON CONFLICT (space_id) DO UPDATE SET position = event_heads.position + excluded.position RETURNING position`,
		spaceID, len(es))
	var last int64
	if err == nil {
		err = db.ScanFirst(rows, &last)
	}
	if err != nil {
		return fmt.Errorf("events: position: %w", err)
	}
	next := last - int64(len(es)) + 1
	for from := 0; from < len(es); from += maxRowsPerInsert {
		to := min(from+maxRowsPerInsert, len(es))
		var q strings.Builder
		q.WriteString("INSERT INTO outbox (id, space_id, position, type, payload, created_at, attempts, last_error) VALUES ")
		args := make([]any, 0, 6*(to-from))
		for i := from; i < to; i++ {
			if i > from {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, 0, '')")
			e := es[i]
			args = append(args, e.ID, spaceID, next+int64(i), e.Type, payloads[i], db.TimeArg(d, e.OccurredAt))
		}
		if _, err := db.Exec(ctx, tx, q.String(), args...); err != nil {
			return fmt.Errorf("events: enqueue: %w", err)
		}
	}
	return nil
}

// enqueuePostgres is EnqueueAll's one statement on PostgreSQL for es (with their encoded
// payloads): the head moves by len(es) and the rows take the positions below its new value,
// inserted in the order of es (so their seq follows their positions).
func enqueuePostgres(ctx context.Context, tx bun.IDB, d *bun.DB, es []Event, payloads []string) error {
	n := len(es)
	var q strings.Builder
	q.WriteString(`WITH next AS (INSERT INTO event_heads (space_id, position) VALUES (?, ?)
ON CONFLICT (space_id) DO UPDATE SET position = event_heads.position + excluded.position RETURNING position)
INSERT INTO outbox (id, space_id, position, type, payload, created_at, attempts, last_error)
SELECT v.id, v.space_id, next.position - ` + strconv.Itoa(n) + ` + v.k, v.type, v.payload, v.created_at, 0, '' FROM next, (VALUES `)
	args := make([]any, 0, 2+5*n)
	args = append(args, es[0].SpaceID, n)
	for i, e := range es {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(" + strconv.Itoa(i+1) + ", ?, ?, ?, ?, CAST(? AS TIMESTAMPTZ))")
		args = append(args, e.ID, e.SpaceID, e.Type, payloads[i], db.TimeArg(d, e.OccurredAt))
	}
	q.WriteString(") AS v (k, id, space_id, type, payload, created_at) ORDER BY v.k")
	if _, err := db.Exec(ctx, tx, q.String(), args...); err != nil {
		return fmt.Errorf("events: enqueue: %w", err)
	}
	return nil
}
