package sdk

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// ExportFeedRequest asks for a page of the space's continuous export feed (GET
// /v1/export/feed, issue 33; the key needs scope export, or a person key role admin):
// Tables (feed table names such as "notes", "agent_states"; empty: every table), After (a
// cursor, the NextAfter of the previous page; 0 from the start) and Limit (1..1000; 0: the
// service's 100).
type ExportFeedRequest struct {
	Tables []string
	After  int64
	Limit  int
}

// FeedRecord is one change of the export feed: Cursor is 1, 2, 3... per space, never
// skipping or repeating a committed change; Key is the row's primary key; Op is "upsert"
// (Row is the row as the API shows it) or "delete" (a tombstone: Row is empty). ChangedAt is
// RFC 3339 in UTC.
type FeedRecord struct {
	Cursor    int64           `json:"cursor"`
	Table     string          `json:"table"`
	Key       string          `json:"key"`
	Op        string          `json:"op"`
	Row       json.RawMessage `json:"row,omitempty"`
	ChangedAt string          `json:"changed_at"`
}

// FeedPage is one page of ExportFeed, oldest first; NextAfter is the After of the next page
// (the last Cursor returned, or the request's After when the page is empty: poll again with
// it).
type FeedPage struct {
	Records   []FeedRecord `json:"records"`
	NextAfter int64        `json:"next_after"`
}

// ExportFeed reads a page of the space's export feed. Errors are *Error: 400 invalid_query
// (an unknown table; the member in the message), 410 cursor_expired (After is below what
// retention pruned; the error's oldest_cursor is where to resume), 403 scope_required or
// role_required.
func (c *Client) ExportFeed(ctx context.Context, req ExportFeedRequest) (FeedPage, error) {
	q := url.Values{}
	if len(req.Tables) > 0 {
		q.Set("tables", strings.Join(req.Tables, ","))
	}
	if req.After > 0 {
		q.Set("after", strconv.FormatInt(req.After, 10))
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	path := "/v1/export/feed"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out FeedPage
	if _, _, err := c.do(ctx, "GET", path, nil, &out); err != nil {
		return FeedPage{}, err
	}
	if out.Records == nil {
		out.Records = []FeedRecord{}
	}
	return out, nil
}

// AgentMemoryExportStatus is the state of an agent-memory export file (GET
// /v1/agent-memory/exports/{id}): Status is "running", "completed" or "failed"; CreatedAt,
// CompletedAt ("" until completed) and ExpiresAt are RFC 3339 UTC; Counts ({"notes",
// "proposals"}) is nil until completed.
type AgentMemoryExportStatus struct {
	ExportID    string         `json:"export_id"`
	SourceID    string         `json:"source_id"`
	Status      string         `json:"status"`
	CreatedAt   string         `json:"created_at"`
	CompletedAt string         `json:"completed_at"`
	ExpiresAt   string         `json:"expires_at"`
	Counts      map[string]int `json:"counts"`
}

// RequestAgentMemoryExport asks for agent sourceID's export file (POST
// /v1/agent-memory/exports, issue 33 §4; a person key with role admin): the service's
// AgentMemoryExportWorkflow builds it (every note version and proposal, sealed, expiring
// after 7 days). It returns the export's id; poll AgentMemoryExport until Status is
// "completed", then read AgentMemoryExportFile. Errors are *Error: 400 invalid_member, 403
// role_required.
func (c *Client) RequestAgentMemoryExport(ctx context.Context, sourceID string) (string, error) {
	var out struct {
		ExportID string `json:"export_id"`
	}
	if _, _, err := c.do(ctx, "POST", "/v1/agent-memory/exports", map[string]string{"source_id": sourceID}, &out); err != nil {
		return "", err
	}
	return out.ExportID, nil
}

// AgentMemoryExport reads the state of export file id (GET /v1/agent-memory/exports/{id}).
// Errors are *Error: 404 (an unknown or expired file), 403 role_required.
func (c *Client) AgentMemoryExport(ctx context.Context, id string) (AgentMemoryExportStatus, error) {
	var out AgentMemoryExportStatus
	if _, _, err := c.do(ctx, "GET", "/v1/agent-memory/exports/"+url.PathEscape(id), nil, &out); err != nil {
		return AgentMemoryExportStatus{}, err
	}
	return out, nil
}

// AgentMemoryExportFile downloads completed export file id (GET
// /v1/agent-memory/exports/{id}/file): the JSON document {"export_id", "source_id",
// "space_id", "exported_at", "expires_at", "notes", "proposals"} as the service sent it (the
// download leaves a receipt). Errors are *Error: 409 export_not_ready (running or failed),
// 404 (unknown or expired), 403 role_required.
func (c *Client) AgentMemoryExportFile(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	if _, _, err := c.do(ctx, "GET", "/v1/agent-memory/exports/"+url.PathEscape(id)+"/file", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}
