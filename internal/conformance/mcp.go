package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
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
	w.mcpRememberAcrossVendors(ctx, rep)
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

// noteIDIn finds the note_id of a remember answer (JSON or an event stream).
var noteIDIn = regexp.MustCompile(`\\?"note_id\\?"\s*:\s*\\?"([A-Za-z0-9_]+)`)

// mcpRememberAcrossVendors: space A's agent of the other vendor stores a note through MCP
// remember. remember always writes visibility source (AM-1's default), so the right answer is
// that the note is stored in space A, where the key belongs (A's admin lists one note more),
// its writer finds it (the control), and nobody else does: neither space A's owner, an agent
// of another vendor (AM-2: a source note never crosses vendors, nor even agents), nor space
// B's agent; the owner's GET of its id is the not-found shape. Cleanup retires it.
func (w *world) mcpRememberAcrossVendors(ctx context.Context, rep *Report) {
	marker := w.marker + "rival"
	code, data, err := w.rival.mcpCall(ctx, "remember", map[string]any{"kind": "pitfall",
		"title": "Conformance " + marker, "body": "Check " + marker + " stays with its writer.", "tags": []string{"conformance"}})
	m := noteIDIn.FindStringSubmatch(data)
	stored := err == nil && code == http.StatusOK && strings.Contains(data, "stored") && m != nil
	rep.add("mcp", "tools/call remember as vendor B agent stores in space A (control)", stored,
		fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
	if !stored {
		return
	}
	w.rivalNoteID = m[1]
	n, err := w.countNotes(ctx)
	rep.add("mcp", "vendor B's remembered note is space A's", err == nil && n == w.notesBefore+1,
		fmt.Sprintf("space A lists %d notes, %d before %s", n, w.notesBefore, errOrNil(err)))
	if err == nil {
		w.notesBefore = n // bad_input's "nothing stored" counts from here
	}
	code, data, err = w.rival.mcpCall(ctx, "search_agent_memory", map[string]any{"query": marker})
	rep.add("mcp", "vendor B's search finds its remembered note (control)", err == nil && code == http.StatusOK && strings.Contains(data, marker),
		fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
	for _, who := range []struct {
		name string
		c    client
	}{{"the owner (vendor a)", w.owner}, {"space B agent", w.other}} {
		code, data, err = who.c.mcpCall(ctx, "search_agent_memory", map[string]any{"query": marker})
		rep.add("mcp", who.name+"'s search does not find vendor B's remembered note", err == nil && code == http.StatusOK && !strings.Contains(data, marker),
			fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
	}
	code, body, _, err := w.owner.do(ctx, "GET", "/v1/agent-memory/notes/"+w.rivalNoteID, nil)
	rep.add("mcp", "the owner's GET of vendor B's remembered note is refused", err == nil && isolated(code, body, marker, true),
		fmt.Sprintf("answered %d: %.200s %s", code, body, errOrNil(err)))
}
