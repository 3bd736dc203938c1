package boardrules

import (
	"encoding/json"
	"errors"
	"sort"
)

// Outcome says how one field a write and the stored board both changed was settled: Rule is
// the rule that settled it (Names); Rejected is true when the rule rejected the write (then
// Reason may say why: a cel rule's failure); nothing is settled silently (issue 31).
type Outcome struct {
	Field    string `json:"field"`
	Rule     string `json:"rule"`
	Rejected bool   `json:"rejected,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Conflict is the error of a merge one or more fields' rules rejected: Outcomes lists every
// field both sides changed, the rejected ones with Rejected set.
type Conflict struct {
	Outcomes []Outcome
}

func (c *Conflict) Error() string { return "boardrules: the write conflicts with the stored board" }

// Merge is the three-way merge of a write (fields ours sets, on the board as the writer read
// it, base) with the board as stored (theirs), field by field. A field the write does not set
// keeps theirs; one only the write changed (theirs equals base) or that both set alike takes
// ours; one only theirs changed (ours equals base) keeps theirs; one both changed differently
// is settled by its rule (rules by field name; a field without one is reject). It returns the
// merged fields and the outcome of every field a rule settled, sorted by field; when any rule
// rejected, the error is a *Conflict and nothing is merged.
func Merge(rules map[string]Rule, base, theirs, ours map[string]json.RawMessage) (map[string]json.RawMessage, []Outcome, error) {
	next := make(map[string]json.RawMessage, len(theirs)+len(ours))
	for k, v := range theirs {
		next[k] = v
	}
	names := make([]string, 0, len(ours))
	for k := range ours {
		names = append(names, k)
	}
	sort.Strings(names)
	outcomes := []Outcome{}
	rejected := false
	for _, name := range names {
		o, b, t := Present(ours[name]), member(base, name), member(theirs, name)
		switch {
		case Same(o, t), Same(b, t):
			next[name] = o.Raw
			continue
		case Same(b, o):
			continue // only theirs changed it: theirs stands
		}
		rule := rules[name]
		if rule.Name == "" {
			rule.Name = Reject
		}
		v, err := rule.Settle(b, o, t)
		out := Outcome{Field: name, Rule: rule.Name}
		if err != nil {
			out.Rejected, rejected = true, true
			if !errors.Is(err, ErrReject) || err.Error() != ErrReject.Error() {
				out.Reason = err.Error()
			}
		} else if v.Absent {
			delete(next, name)
		} else {
			next[name] = v.Raw
		}
		outcomes = append(outcomes, out)
	}
	if rejected {
		return nil, outcomes, &Conflict{Outcomes: outcomes}
	}
	return next, outcomes, nil
}
