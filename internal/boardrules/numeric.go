package boardrules

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// number is a side's numeric value: integer when its text is one, else float; absent and
// null read as 0 with present false.
type number struct {
	i       int64
	f       float64
	isInt   bool
	present bool
}

// readNumber reads v as a number; ok is false for a value that is not one (a string, an
// object), which the numeric rules reject.
func readNumber(v Value) (number, bool) {
	if v.Absent || string(bytes.TrimSpace(v.Raw)) == "null" {
		return number{isInt: true}, true
	}
	var n json.Number
	if err := json.Unmarshal(v.Raw, &n); err != nil {
		return number{}, false
	}
	if i, err := n.Int64(); err == nil {
		return number{i: i, f: float64(i), isInt: true, present: true}, true
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return number{}, false
	}
	return number{f: f, present: true}, true
}

// numeric settles max, min and sum. max and min pick the larger or smaller of ours and
// theirs (a side without the field takes no part); sum adds both sides' changes to base
// (ours + theirs - base, absent as 0): counters incremented by both writers keep both
// increments. Integers stay integers unless they would overflow; any float makes the result
// a float.
func numeric(rule string, base, ours, theirs Value) (Value, error) {
	b, okB := readNumber(base)
	o, okO := readNumber(ours)
	t, okT := readNumber(theirs)
	if !okB || !okO || !okT {
		return Value{}, ErrReject
	}
	switch rule {
	case Max, Min:
		switch {
		case !o.present:
			return theirs, nil
		case !t.present:
			return ours, nil
		}
		oursWins := o.f > t.f || (o.f == t.f && o.isInt && t.isInt && o.i > t.i)
		if rule == Min {
			oursWins = o.f < t.f || (o.f == t.f && o.isInt && t.isInt && o.i < t.i)
		}
		if oursWins {
			return ours, nil
		}
		return theirs, nil
	}
	if o.isInt && t.isInt && b.isInt {
		if s, ok := addInts(o.i, t.i, -b.i); ok {
			return Present(json.RawMessage(strconv.FormatInt(s, 10))), nil
		}
	}
	s := o.f + t.f - b.f
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return Value{}, ErrReject
	}
	return Present(json.RawMessage(strconv.FormatFloat(s, 'g', -1, 64))), nil
}

// addInts adds xs, ok false on overflow.
func addInts(xs ...int64) (int64, bool) {
	var s int64
	for _, x := range xs {
		if (x > 0 && s > math.MaxInt64-x) || (x < 0 && s < math.MinInt64-x) {
			return 0, false
		}
		s += x
	}
	return s, true
}
