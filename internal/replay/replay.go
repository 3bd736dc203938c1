// Package replay plays ABCD customer-service conversations (the real input in
// testdata/abcd) through the working-memory REST API as an agent's code would: one state
// per conversation, written turn by turn (flow, subflow, the step reached, the turn, the order
// id, the customer's e-mail in a pii field), then read back and checked.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agentmemory/agentmemory/sdk"
)

// Conversation is one ABCD conversation, reduced to what the replay uses.
type Conversation struct {
	ID      int64
	Flow    string
	Subflow string
	Email   string // the customer's e-mail from the scenario ("" when none)
	OrderID string // from the scenario ("" when none)
	Turns   []Turn
}

// Turn is one turn: Speaker is agent, customer or action; Button is the action's step
// ("pull-up-account", "validate-purchase", ...) for action turns.
type Turn struct {
	Speaker string
	Text    string
	Button  string
}

// Load reads an ABCD dataset file (a JSON array of conversations with scenario, original and
// delexed).
func Load(path string) ([]Conversation, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ConvoID  int64 `json:"convo_id"`
		Scenario struct {
			Personal struct {
				Email string `json:"email"`
			} `json:"personal"`
			Order struct {
				OrderID string `json:"order_id"`
			} `json:"order"`
			Flow    string `json:"flow"`
			Subflow string `json:"subflow"`
		} `json:"scenario"`
		Original [][2]string `json:"original"`
		Delexed  []struct {
			Targets []any `json:"targets"`
		} `json:"delexed"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("replay: %s is not an ABCD dataset: %w", path, err)
	}
	out := make([]Conversation, 0, len(raw))
	for _, r := range raw {
		c := Conversation{ID: r.ConvoID, Flow: r.Scenario.Flow, Subflow: r.Scenario.Subflow,
			Email: r.Scenario.Personal.Email, OrderID: r.Scenario.Order.OrderID}
		for i, t := range r.Original {
			turn := Turn{Speaker: t[0], Text: t[1]}
			if turn.Speaker == "action" {
				turn.Button = fmt.Sprintf("action-%d", i+1)
				// delexed[i].targets = [subflow, "take_action", button, slots, ...]
				if len(r.Delexed) == len(r.Original) {
					if tg := r.Delexed[i].Targets; len(tg) > 2 && tg[1] == "take_action" {
						if b, ok := tg[2].(string); ok && b != "" {
							turn.Button = b
						}
					}
				}
			}
			c.Turns = append(c.Turns, turn)
		}
		out = append(out, c)
	}
	return out, nil
}

// ObjectTypes returns the object-types document the replay needs: one type named agent with
// ownership agent, scoped by conversation, declaring the fields it writes (customer_email is
// pii, so it is masked at write).
func ObjectTypes(agent string) map[string]any {
	return map[string]any{"types": []any{map[string]any{
		"type":        agent,
		"ownership":   "agent",
		"description": "ABCD customer-service agent: where the conversation stands",
		"fields": map[string]any{
			"flow":           map[string]any{"type": "string"},
			"subflow":        map[string]any{"type": "string"},
			"step":           map[string]any{"type": "string"},
			"turn":           map[string]any{"type": "integer"},
			"order_id":       map[string]any{"type": "string", "sensitivity": "medium"},
			"customer_email": map[string]any{"type": "string", "pii": true, "sensitivity": "high"},
		},
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 4096, "write": "both"},
		"retention":   map[string]any{"state": "30d", "customer_email": "7d"},
	}}}
}

// Features is the features document turning working memory on.
func Features() map[string]any {
	return map[string]any{"agent_state": map[string]any{"enabled": true}}
}

// Result is what happened to one conversation's state.
type Result struct {
	ConvoID      int64
	Flow         string
	Writes       int   // stored writes
	Refused      int   // stored:false answers (not_declared_field, over_cap)
	Conflicts    int   // 412 answers
	Version      int64 // the version read back
	Bytes        int   // the size of the body read back
	Step         string
	EmailMasked  string // "yes", "no" or "-" (no e-mail in the conversation)
	Match        bool   // the read-back state is what was written
	MismatchNote string
}

// Report is the outcome of a replay.
type Report struct {
	Results []Result
}

// Play replays convs through c, one state per conversation (scope conversation
// "abcd-<convo_id>"), stopping at the first transport or API error.
func Play(ctx context.Context, c *sdk.Client, convs []Conversation) (Report, error) {
	var rep Report
	for _, conv := range convs {
		res, err := playOne(ctx, c, conv)
		if err != nil {
			return rep, fmt.Errorf("replay: conversation %d: %w", conv.ID, err)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// playOne replays one conversation: a write per turn (turnBody), then the state read back
// and compared with what was written (checkReadBack).
func playOne(ctx context.Context, c *sdk.Client, conv Conversation) (Result, error) {
	res := Result{ConvoID: conv.ID, Flow: conv.Flow + "/" + conv.Subflow, EmailMasked: "-"}
	var opts []sdk.StateOption
	if conv.Email != "" {
		opts = append(opts, sdk.WithSubject("email:"+conv.Email))
	}
	state := c.AgentState(sdk.Conversation(fmt.Sprintf("abcd-%d", conv.ID)), opts...)
	want := map[string]any{}
	var version int64
	p := &turnPlay{conv: conv, step: "greeting"}
	for i, turn := range conv.Turns {
		body := p.turnBody(i, turn)
		// The first write creates the state: a cas at version 0 (it must not exist yet); the
		// others merge at the version this replay last wrote.
		out, err := writeTurn(ctx, state, body, i == 0, version, &res)
		if err != nil {
			return res, err
		}
		if !out.Stored {
			res.Refused++
			continue
		}
		res.Writes++
		version = out.Version
		if i == 0 {
			want = map[string]any{}
		}
		for k, v := range body {
			want[k] = v
		}
	}
	res.Step = p.step
	return res, checkReadBack(ctx, state, &res, want, version)
}

// turnPlay is what a replay remembers across one conversation's turns: the current step and
// whether the order id and the customer's e-mail were already written.
type turnPlay struct {
	conv               Conversation
	step               string
	sawEmail, sawOrder bool
}

// turnBody returns the merge body for turn i: its number; the flow, subflow and step on the
// first turn; the step an action turn moves to; the order id and e-mail the first time a
// customer's turn says them.
func (p *turnPlay) turnBody(i int, turn Turn) map[string]any {
	conv := p.conv
	body := map[string]any{"turn": i + 1}
	if i == 0 {
		body["flow"], body["subflow"], body["step"] = conv.Flow, conv.Subflow, p.step
	}
	if turn.Speaker == "action" {
		p.step = turn.Button
		body["step"] = p.step
	}
	if turn.Speaker != "customer" {
		return body
	}
	if conv.OrderID != "" && !p.sawOrder && strings.Contains(turn.Text, conv.OrderID) {
		p.sawOrder = true
		body["order_id"] = conv.OrderID
	}
	if conv.Email != "" && !p.sawEmail && strings.Contains(strings.ToLower(turn.Text), strings.ToLower(conv.Email)) {
		p.sawEmail = true
		body["customer_email"] = conv.Email
	}
	return body
}

// writeTurn writes body at version (a cas for the first write, else a merge at that version).
// On a conflict (someone else wrote this conversation's state, e.g. an earlier replay) it
// counts one in res.Conflicts and takes over from the current version with the same write.
func writeTurn(ctx context.Context, state *sdk.StateHandle, body map[string]any, cas bool, version int64, res *Result) (sdk.WriteResult, error) {
	at := func(v int64) sdk.PutOption {
		if cas {
			return sdk.CAS(v)
		}
		return sdk.IfVersion(v)
	}
	out, err := state.Put(ctx, body, at(version))
	var conflict *sdk.Error
	if errors.As(err, &conflict) && errors.Is(err, sdk.ErrConflict) {
		res.Conflicts++
		out, err = state.Put(ctx, body, at(conflict.Version))
	}
	return out, err
}

// checkReadBack reads the state back and fills res: its version and size, whether it matches
// what was written (want, at version), and whether the customer's e-mail came back masked.
func checkReadBack(ctx context.Context, state *sdk.StateHandle, res *Result, want map[string]any, version int64) error {
	st, err := state.Get(ctx)
	if err != nil {
		return err
	}
	res.Version = st.Version
	raw, err := json.Marshal(st.Body)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	res.Bytes = len(raw)
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	res.Match = st.Version == version && res.Writes > 0
	switch {
	case res.Writes == 0:
		res.MismatchNote = "no write was stored (is the replay agent's type declared? see replay --types)"
	case !res.Match:
		res.MismatchNote = fmt.Sprintf("version %d read back, %d written", st.Version, version)
	}
	for k, v := range want {
		g := got[k]
		if k == "customer_email" {
			res.EmailMasked = "yes"
			if g == v {
				res.EmailMasked = "no"
			}
			continue
		}
		if fmt.Sprint(g) != fmt.Sprint(v) {
			res.Match = false
			res.MismatchNote = fmt.Sprintf("field %s read back differs", k)
		}
	}
	return nil
}

// Totals sums a report.
func (r Report) Totals() (states, writes, refused, conflicts, bytes int, allMatch bool) {
	allMatch = true
	for _, x := range r.Results {
		if x.Writes > 0 {
			states++
		}
		writes += x.Writes
		refused += x.Refused
		conflicts += x.Conflicts
		bytes += x.Bytes
		allMatch = allMatch && x.Match && x.EmailMasked != "no"
	}
	return
}

// Print writes the report as a short table and a totals line.
func (r Report) Print(w io.Writer) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "convo\tflow/subflow\twrites\trefused\tconflicts\tversion\tbytes\tstep reached\temail masked\tread back")
	for _, x := range r.Results {
		ok := "ok"
		if !x.Match {
			ok = "MISMATCH: " + x.MismatchNote
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", x.ConvoID, x.Flow, x.Writes, x.Refused, x.Conflicts, x.Version, x.Bytes, x.Step, x.EmailMasked, ok)
	}
	_ = tw.Flush() // into a bytes.Buffer, which never fails
	states, writes, refused, conflicts, bytes, _ := r.Totals()
	fmt.Fprintf(&b, "states written: %d, writes stored: %d, refused: %d, conflicts: %d, bytes stored: %d\n", states, writes, refused, conflicts, bytes)
	_, _ = w.Write(b.Bytes()) // a report to the terminal: a failed write leaves nowhere to report it
}
