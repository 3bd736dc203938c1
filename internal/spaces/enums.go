package spaces

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// Enum declarations (issue 27). An enum field lists the strings it accepts in "values"; a
// working-memory write of any other value is 400 invalid_field_value (internal/state).
const (
	// MaxEnumValues is how many values one enum field may declare.
	MaxEnumValues = 256
	// MaxEnumValueLen is the longest value, in characters.
	MaxEnumValueLen = 128
)

// requireEnumValues checks every enum field of t as a document is written (PUT, a proposed
// or applied change): "values" must be present with 1..MaxEnumValues distinct, non-empty
// values of at most MaxEnumValueLen characters. An enum without values would accept any
// string, which the declaration does not say, so it is refused: fault.Invalid
// "invalid_document" naming types[i].fields.NAME.values. Documents stored before this rule are
// still read as they are (their enums accept any string) until they are written again.
func requireEnumValues(t ObjectTypes) error {
	for i, typ := range t.Types {
		names := make([]string, 0, len(typ.Fields))
		for name := range typ.Fields {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			f := typ.Fields[name]
			if f.Type != "enum" {
				continue
			}
			if err := checkEnumValues(f.Values); err != nil {
				return invalidMember(fmt.Sprintf("types[%d].fields.%s.values", i, name), err.Error())
			}
		}
	}
	return nil
}

// checkEnumValues says what is wrong with one enum's values, nil when nothing is.
func checkEnumValues(values []string) error {
	if len(values) == 0 {
		return fmt.Errorf(`is required for an enum field: list the accepted strings, e.g. "values": ["sizes", "checkout"] (use type "string" for free text)`)
	}
	if len(values) > MaxEnumValues {
		return fmt.Errorf("holds at most %d values", MaxEnumValues)
	}
	seen := make(map[string]bool, len(values))
	for j, v := range values {
		if v == "" || utf8.RuneCountInString(v) > MaxEnumValueLen {
			return fmt.Errorf("[%d] must be 1 to %d characters", j, MaxEnumValueLen)
		}
		if seen[v] {
			return fmt.Errorf("[%d] repeats an earlier value", j)
		}
		seen[v] = true
	}
	return nil
}
