package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// boardType is the board type the boards checks declare in space A (issue 31).
const boardType = "conformance_findings"

// boards (issue 31): in space A the owner's agent, granted read_write on boardType, writes a
// board; a stale write is settled by its field's rule (sum) and named in the answer; a stale
// write of a reject field is 412 board_conflict and changes nothing; A's agent of another
// vendor and B's agent of the same name and vendor, holding no grant, neither read nor
// write it, and their answers never hold the board's marker; a lease keeps writes without it
// out (409 lease_held) and, released, its holder's write with it is 409 lease_lost. The
// grant is revoked at the end.
func (w *world) boards(ctx context.Context, rep *Report) {
	grant, err := w.boardSetup(ctx)
	rep.add("boards", "declare a board type and grant the owner read_write", err == nil, errOrNil(err))
	if err != nil {
		return
	}
	defer func() {
		_, err := w.a.must(context.WithoutCancel(ctx), http.StatusOK, "DELETE", "/v1/boards/"+boardType+"/grants/"+grant, nil)
		rep.add("boards", "revoke the grant", err == nil, errOrNil(err))
	}()
	id := "inc-" + w.marker
	write := func(c client, ifVersion int, body map[string]any, lease map[string]any) (int, []byte) {
		req := map[string]any{"type": boardType, "id": id, "if_version": ifVersion, "body": body}
		if lease != nil {
			req["lease"] = lease
		}
		code, data, _, err := c.do(ctx, "PUT", "/v1/boards", req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		return code, data
	}
	code, data := write(w.owner, 0, map[string]any{"title": w.marker, "hits": 1}, nil)
	rep.add("boards", "the granted owner writes a board", code == http.StatusOK, fmt.Sprintf("answered %d: %.200s", code, data))
	code, data = write(w.owner, 0, map[string]any{"hits": 1}, nil)
	rep.add("boards", "a stale write is settled by its field's rule and says so", code == http.StatusOK && bytes.Contains(data, []byte(`"rule":"sum"`)),
		fmt.Sprintf("answered %d: %.200s", code, data))
	code, data = write(w.owner, 0, map[string]any{"title": "changed"}, nil)
	rep.add("boards", "a stale write of a reject field is 412 board_conflict", code == http.StatusPreconditionFailed && bytes.Contains(data, []byte("board_conflict")),
		fmt.Sprintf("answered %d: %.200s", code, data))
	body, err := w.boardBody(ctx, w.owner, id)
	rep.add("boards", "the board holds both sums and the first title", err == nil && fmt.Sprint(body["hits"]) == "2" && body["title"] == w.marker,
		fmt.Sprintf("read %v %s", body, errOrNil(err)))
	for _, who := range []struct {
		name string
		c    client
	}{{"vendor B agent in space A", w.rival}, {"space B agent", w.other}} {
		code, data, _, err := who.c.do(ctx, "POST", "/v1/boards/read", map[string]any{"type": boardType, "id": id})
		rep.add("boards", "no grant, no read: "+who.name, err == nil && code >= 400 && code < 500 && !strings.Contains(string(data), w.marker),
			fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
		code, data = write(who.c, 2, map[string]any{"hits": 5}, nil)
		rep.add("boards", "no grant, no write: "+who.name, code >= 400 && code < 500 && !strings.Contains(string(data), w.marker),
			fmt.Sprintf("answered %d: %.200s", code, data))
	}
	w.boardLease(ctx, rep, id, write)
}

// boardSetup declares boardType in space A and grants the owner read_write; it returns the
// grant's id.
func (w *world) boardSetup(ctx context.Context) (string, error) {
	if _, err := w.a.must(ctx, http.StatusOK, "PUT", "/v1/documents/object-types", map[string]any{"types": []any{map[string]any{
		"type": boardType, "ownership": "shared", "fields": map[string]any{
			"title": map[string]any{"type": "string"},
			"hits":  map[string]any{"type": "integer", "conflict": map[string]any{"rule": "sum"}},
		}}}}); err != nil {
		return "", err
	}
	g, err := w.a.must(ctx, http.StatusCreated, "POST", "/v1/boards/"+boardType+"/grants", map[string]any{"agent": "conformance-owner", "access": "read_write"})
	if err != nil {
		return "", err
	}
	grant, _ := g["grant"].(map[string]any)
	id, _ := grant["id"].(string)
	if id == "" {
		return "", fmt.Errorf("the grant's answer names no id: %v", g)
	}
	return id, nil
}

// boardBody reads board id of boardType as c and returns its body.
func (w *world) boardBody(ctx context.Context, c client, id string) (map[string]any, error) {
	_, data, _, err := c.do(ctx, "POST", "/v1/boards/read", map[string]any{"type": boardType, "id": id})
	if err != nil {
		return nil, err
	}
	var r struct {
		Body map[string]any `json:"body"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: %.200s", err, data)
	}
	return r.Body, nil
}

// boardLease: the owner takes a lease on board id; a write without it is 409 lease_held; the
// lease is released, and a write carrying it is then 409 lease_lost.
func (w *world) boardLease(ctx context.Context, rep *Report, id string, write func(client, int, map[string]any, map[string]any) (int, []byte)) {
	l, err := w.owner.must(ctx, http.StatusOK, "POST", "/v1/boards/lease", map[string]any{"type": boardType, "id": id, "ttl_seconds": 60})
	rep.add("boards", "the owner takes a lease with a fencing token", err == nil && l["token"] != nil, errOrNil(err))
	if err != nil {
		return
	}
	proof := map[string]any{"lease_id": l["lease_id"], "token": l["token"]}
	code, data := write(w.owner, 2, map[string]any{"hits": 1}, nil)
	rep.add("boards", "while a lease is held a write without it is 409 lease_held", code == http.StatusConflict && bytes.Contains(data, []byte("lease_held")),
		fmt.Sprintf("answered %d: %.200s", code, data))
	_, err = w.owner.must(ctx, http.StatusOK, "POST", "/v1/boards/lease/release", map[string]any{"type": boardType, "id": id, "lease_id": l["lease_id"], "token": l["token"]})
	rep.add("boards", "the lease is released", err == nil, errOrNil(err))
	code, data = write(w.owner, 2, map[string]any{"hits": 1}, proof)
	rep.add("boards", "a write with a released lease is 409 lease_lost", code == http.StatusConflict && bytes.Contains(data, []byte("lease_lost")),
		fmt.Sprintf("answered %d: %.200s", code, data))
}
