package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// mcpCall posts one JSON-RPC tools/call of tool with args to /mcp as c (Streamable HTTP,
// stateless) and returns the status and the raw answer (JSON or an event stream).
func (c client) mcpCall(ctx context.Context, tool string, args map[string]any) (int, string, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return res.StatusCode, string(data), err
}

// mcp: over /mcp, space B's agent and A's other-vendor agent search agent memory for the
// owner's marker and ask for the context: the answers (below 500) never hold the marker; space
// B's admin (a person key) is refused with the error shape.
func (w *world) mcp(ctx context.Context, rep *Report) {
	calls := []struct {
		tool string
		args map[string]any
	}{{"search_agent_memory", map[string]any{"query": w.marker}}, {"get_context", map[string]any{"task": w.marker}}}
	for _, who := range []struct {
		name string
		c    client
	}{{"space B agent", w.other}, {"vendor B agent", w.rival}} {
		for _, call := range calls {
			code, data, err := who.c.mcpCall(ctx, call.tool, call.args)
			ok := err == nil && code > 0 && code < 500 && !strings.Contains(data, w.marker)
			rep.add("mcp", "tools/call "+call.tool+" as "+who.name, ok, fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
		}
	}
	// The control: the owner's own search finds the note, so an answer without the marker
	// above means the tool looked and found nothing, not that it failed.
	code, data, err := w.owner.mcpCall(ctx, "search_agent_memory", map[string]any{"query": w.marker})
	rep.add("mcp", "the owner's search finds its note (control)", err == nil && code == http.StatusOK && strings.Contains(data, w.marker),
		fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
	w.mcpRemember(ctx, rep)
	code, data, err = w.b.mcpCall(ctx, "search_agent_memory", map[string]any{"query": w.marker})
	rep.add("mcp", "a person key is refused", err == nil && (code == http.StatusForbidden || code == http.StatusUnauthorized) && errorShape([]byte(data)),
		fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
}

// mcpRemember: space B's agent stores a note through MCP remember with a marker of its own.
// The call must store it (the control: the tool worked), and in space A nothing changes: its
// admin lists as many notes as before and the owner's search does not find the marker.
func (w *world) mcpRemember(ctx context.Context, rep *Report) {
	marker := w.marker + "remembered"
	code, data, err := w.other.mcpCall(ctx, "remember", map[string]any{"kind": "procedure",
		"title": "Conformance " + marker, "body": "Check " + marker + " stays in space B.", "tags": []string{"conformance"}})
	rep.add("mcp", "tools/call remember as space B agent stores in space B (control)", err == nil && code == http.StatusOK && strings.Contains(data, "stored") && strings.Contains(data, "note_id"),
		fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
	n, err := w.countNotes(ctx)
	rep.add("mcp", "space B's remember leaves space A's notes as they were", err == nil && n == w.notesBefore,
		fmt.Sprintf("space A lists %d notes, %d before %s", n, w.notesBefore, errOrNil(err)))
	code, data, err = w.owner.mcpCall(ctx, "search_agent_memory", map[string]any{"query": marker})
	rep.add("mcp", "the owner's search does not find space B's remembered note", err == nil && code == http.StatusOK && !strings.Contains(data, marker),
		fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
}
