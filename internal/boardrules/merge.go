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
// ours; one only theirs changed (ours equals base) keeps theirs; one both changed is settled by
// its rule (when both made the same change, only a sum or a cel rule is asked: a counter both
// incremented by one was incremented twice; any other rule takes the common value) (rules by field name; a field without one is reject). It returns the
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
		rule := rules[name]
		if rule.Name == "" {
			rule.Name = Reject
		}
		switch {
		case Same(b, t):
			next[name] = o.Raw // only ours changed it
			continue
		case Same(b, o):
			continue // only theirs changed it: theirs stands
		case Same(o, t) && rule.convergent():
			next[name] = o.Raw // both made the same change: one change
			continue
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

// convergent reports whether two equal changes of a field are one change under r: true but
// for sum (two increments to the same value are two increments), cel (the space's
// expression decides) and a merge_by_key whose then is one of them.
func (r Rule) convergent() bool {
	if r.Name == MergeByKey {
		return Rule{Name: r.Then}.convergent()
	}
	return r.Name != Sum && r.Name != CEL
}
