package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// TestExportFeed: against the real binary, ExportFeed pages the space's notes feed with
// strictly increasing cursors and finds a note just written as an upsert with its row; an
// empty page answers NextAfter = After; an unknown table is *Error 400 invalid_query; a key
// without scope export is refused.
func TestExportFeed(t *testing.T) {
	srv := devserver.Shared(t)
	key := srv.Key(t, "feed-reader-bot", append([]string{"export"}, devserver.AllScopes...)...)
	var note map[string]any
	srv.MustDo(t, "POST", "/v1/agent-memory/notes", key, map[string]any{
		"kind": "procedure", "title": fmt.Sprintf("Feed note %p", t), "body": "Exported by the feed."}, &note)
	id, _ := note["id"].(string)
	c := directClient(t, srv, key)
	ctx := context.Background()
	var found *sdk.FeedRecord
	req := sdk.ExportFeedRequest{Tables: []string{"notes"}, Limit: 50}
	for range 1000 {
		p, err := c.ExportFeed(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) == 0 {
			if p.NextAfter != req.After {
				t.Fatalf("an empty page moved the cursor: %d after %d", p.NextAfter, req.After)
			}
			break
		}
		for i, r := range p.Records {
			if r.Cursor <= req.After || r.Table != "notes" {
				t.Fatalf("record %d after cursor %d: %+v", i, req.After, r)
			}
			if r.Key == id {
				found = &p.Records[i]
			}
			req.After = r.Cursor
		}
		if p.NextAfter != req.After {
			t.Fatalf("next_after %d, last cursor %d", p.NextAfter, req.After)
		}
	}
	if found == nil || found.Op != "upsert" || len(found.Row) == 0 || found.ChangedAt == "" {
		t.Fatalf("the note %s in the feed: %+v", id, found)
	}
	var ae *sdk.Error
	if _, err := c.ExportFeed(ctx, sdk.ExportFeedRequest{Tables: []string{"nope"}}); !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "invalid_query" {
		t.Fatalf("an unknown table: got %v, want 400 invalid_query", err)
	}
	other := directClient(t, srv, srv.Key(t, "feed-less-bot", devserver.AllScopes...))
	if _, err := other.ExportFeed(ctx, sdk.ExportFeedRequest{}); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("a key without scope export: got %v, want 403", err)
	}
}

// TestAgentMemoryExportFile: against the real binary (its worker runs
// AgentMemoryExportWorkflow), an admin requests an agent's export file, polls it to completed
// with its counts, and downloads it with the agent's note; an agent key is refused (403), a
// file still unknown is 404.
func TestAgentMemoryExportFile(t *testing.T) {
	srv := devserver.Shared(t)
	key := srv.Key(t, "export-file-bot", devserver.AllScopes...)
	var note map[string]any
	srv.MustDo(t, "POST", "/v1/agent-memory/notes", key, map[string]any{
		"kind": "procedure", "title": fmt.Sprintf("Export note %p", t), "body": "Goes out in the file."}, &note)
	source, _ := note["source_id"].(string)
	if source == "" {
		t.Fatalf("the note names no source_id: %v", note)
	}
	ctx := context.Background()
	var ae *sdk.Error
	if _, err := directClient(t, srv, key).RequestAgentMemoryExport(ctx, source); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("an agent key: got %v, want 403", err)
	}
	admin := directClient(t, srv, srv.Admin)
	id, err := admin.RequestAgentMemoryExport(ctx, source)
	if err != nil || id == "" {
		t.Fatalf("request: %q %v", id, err)
	}
	var st sdk.AgentMemoryExportStatus
	for deadline := time.Now().Add(time.Minute); st.Status != "completed"; time.Sleep(50 * time.Millisecond) {
		if st, err = admin.AgentMemoryExport(ctx, id); err != nil || st.Status == "failed" || time.Now().After(deadline) {
			t.Fatalf("export %s: %+v %v", id, st, err)
		}
	}
	if st.SourceID != source || st.Counts["notes"] != 1 || st.ExpiresAt == "" {
		t.Fatalf("completed export: %+v", st)
	}
	file, err := admin.AgentMemoryExportFile(ctx, id)
	if err != nil || !strings.Contains(string(file), note["id"].(string)) {
		t.Fatalf("file: %v %s", err, file)
	}
	if _, err := admin.AgentMemoryExport(ctx, "amx_unknown"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("an unknown export: got %v, want 404", err)
	}
}
