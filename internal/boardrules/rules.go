// Package boardrules settles a board field both sides changed (issue 31): the three-way merge of
// the version a writer read (base), the stored one (theirs) and the write (ours), by the
// field's conflict rule. It is pure: values in, a value or a rejection out, no I/O. The
// rules are the ones a space writes in object-types (spaces.ConflictRule): reject, ours,
// theirs, merge_by_key (keys touched by one side merge, a key both changed falls to the
// rule's "then"), union, max, min, sum, and cel (a CEL expression over base, ours and theirs,
// sandboxed and cost-limited, that returns the value or calls reject()).
package boardrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Rule names (spaces.ConflictRule.Rule).
const (
	Reject     = "reject"
	Ours       = "ours"
	Theirs     = "theirs"
	MergeByKey = "merge_by_key"
	Union      = "union"
	Max        = "max"
	Min        = "min"
	Sum        = "sum"
	CEL        = "cel"
)

// Names lists every rule, in the order docs/boards.md explains them.
var Names = []string{Reject, Ours, Theirs, MergeByKey, Union, Max, Min, Sum, CEL}

// ThenNames are the rules merge_by_key may fall to for a key both sides changed.
var ThenNames = []string{Reject, Ours, Theirs, Max, Min, Sum}

// ErrReject is the answer of a field its rule rejected: the write is a conflict (412
// board_conflict), nothing changes.
var ErrReject = errors.New("boardrules: rejected")

// Rule is one field's conflict rule, checked (Check): Name is one of Names; Then is
// merge_by_key's fallback (one of ThenNames, default reject); Expr is a cel rule's
// expression, compiled into Program.
type Rule struct {
	Name    string
	Then    string
	Program *Program
}

// Value is a field's value in a merge: Raw is its JSON text; Absent marks a field the side
// does not hold (then Raw is nil).
type Value struct {
	Raw    json.RawMessage
	Absent bool
}

// Present returns the Value of raw.
func Present(raw json.RawMessage) Value { return Value{Raw: raw} }

// Missing is the Value of a field a side does not hold.
var Missing = Value{Absent: true}

// Check validates a rule as object-types declares it for a field of fieldType (a spaces field
// type): a known name, a then only on merge_by_key, an expression only (and always) on cel,
// and a rule that fits the type (union: array or json; max, min, sum: integer, number or
// json; merge_by_key: object or json). It returns the rule ready to settle with (cel
// compiled). Errors name what is wrong, for the document's invalid_document answer.
func Check(name, then, expr, fieldType string) (Rule, error) {
	r := Rule{Name: name, Then: then}
	if !slices.Contains(Names, name) {
		return r, fmt.Errorf("rule must be one of %v", Names)
	}
	if then != "" && name != MergeByKey {
		return r, errors.New("only merge_by_key takes then")
	}
	if name == MergeByKey && then != "" && !slices.Contains(ThenNames, then) {
		return r, fmt.Errorf("then must be one of %v", ThenNames)
	}
	if (expr != "") != (name == CEL) {
		return r, errors.New("a cel rule needs expr, and only a cel rule takes it")
	}
	if err := fits(name, fieldType); err != nil {
		return r, err
	}
	if name == CEL {
		p, err := Compile(expr)
		if err != nil {
			return r, err
		}
		r.Program = p
	}
	return r, nil
}

// fits refuses a rule that cannot apply to a field of fieldType.
func fits(name, fieldType string) error {
	ok := true
	switch name {
	case Union:
		ok = fieldType == "array" || fieldType == "json"
	case Max, Min, Sum:
		ok = fieldType == "integer" || fieldType == "number" || fieldType == "json"
	case MergeByKey:
		ok = fieldType == "object" || fieldType == "json"
	}
	if !ok {
		return fmt.Errorf("rule %s does not apply to a field of type %s", name, fieldType)
	}
	return nil
}

// Settle returns the value of a field both sides changed (ours and theirs differ, and each
// differs from base) by rule r: the merged value (Absent when the rule keeps the field out),
// or ErrReject. A value the rule cannot read (a max over a string) is ErrReject too: a rule
// never settles by guessing. Errors other than ErrReject come from a cel rule (its cost
// limit, a runtime error) and are rejections as well; callers report them as the rule's
// reason.
func (r Rule) Settle(base, ours, theirs Value) (Value, error) {
	switch r.Name {
	case Reject, "":
		return Value{}, ErrReject
	case Ours:
		return ours, nil
	case Theirs:
		return theirs, nil
	case MergeByKey:
		return mergeByKey(r.Then, base, ours, theirs)
	case Union:
		return union(ours, theirs)
	case Max, Min, Sum:
		return numeric(r.Name, base, ours, theirs)
	case CEL:
		return r.Program.Eval(base, ours, theirs)
	}
	return Value{}, ErrReject
}

// Same reports whether a and b hold the same JSON value (object members in any order, numbers
// by their decimal value).
func Same(a, b Value) bool {
	if a.Absent || b.Absent {
		return a.Absent == b.Absent
	}
	x, errA := normal(a.Raw)
	y, errB := normal(b.Raw)
	if errA != nil || errB != nil {
		return bytes.Equal(a.Raw, b.Raw)
	}
	return bytes.Equal(x, y)
}

// normal re-encodes raw with object members sorted (encoding/json sorts map keys).
func normal(raw json.RawMessage) ([]byte, error) {
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return encode(v)
}

func decode(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// mergeByKey merges two objects key by key: a key only one side changed takes that side's
// value (a key a side removed stays removed); a key both changed differently falls to then
// (default reject). A side that is not an object is rejected.
func mergeByKey(then string, base, ours, theirs Value) (Value, error) {
	b, o, t, err := objects(base, ours, theirs)
	if err != nil {
		return Value{}, ErrReject
	}
	fallback := Rule{Name: then}
	if then == "" {
		fallback.Name = Reject
	}
	out := map[string]json.RawMessage{}
	for _, k := range keysOf(b, o, t) {
		bv, ov, tv := member(b, k), member(o, k), member(t, k)
		var v Value
		switch {
		case Same(bv, tv):
			v = ov // only ours changed it
		case Same(bv, ov):
			v = tv // only theirs changed it
		case Same(ov, tv) && fallback.convergent():
			v = ov // the same change on both sides
		default:
			if v, err = fallback.Settle(bv, ov, tv); err != nil {
				return Value{}, err
			}
		}
		if !v.Absent {
			out[k] = v.Raw
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return Value{}, fmt.Errorf("boardrules: merge_by_key: %w", err)
	}
	return Present(raw), nil
}

// objects decodes the three sides as JSON objects (an absent side or null is empty).
func objects(vals ...Value) (b, o, t map[string]json.RawMessage, err error) {
	out := make([]map[string]json.RawMessage, len(vals))
	for i, v := range vals {
		out[i] = map[string]json.RawMessage{}
		if v.Absent || string(bytes.TrimSpace(v.Raw)) == "null" {
			continue
		}
		if err := json.Unmarshal(v.Raw, &out[i]); err != nil {
			return nil, nil, nil, err
		}
	}
	return out[0], out[1], out[2], nil
}

func member(m map[string]json.RawMessage, k string) Value {
	if raw, ok := m[k]; ok {
		return Present(raw)
	}
	return Missing
}

func keysOf(ms ...map[string]json.RawMessage) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// union is theirs' elements, then ours' elements theirs lacks, without duplicates (by value),
// in that stable order. A side that is not an array (null and absent are empty) is rejected.
func union(ours, theirs Value) (Value, error) {
	var out []json.RawMessage
	for _, side := range []Value{theirs, ours} {
		var items []json.RawMessage
		if !side.Absent && string(bytes.TrimSpace(side.Raw)) != "null" {
			if err := json.Unmarshal(side.Raw, &items); err != nil {
				return Value{}, ErrReject
			}
		}
		for _, it := range items {
			if !slices.ContainsFunc(out, func(x json.RawMessage) bool { return Same(Present(x), Present(it)) }) {
				out = append(out, it)
			}
		}
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return Value{}, fmt.Errorf("boardrules: union: %w", err)
	}
	return Present(raw), nil
}
