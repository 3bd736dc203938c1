package compliance

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSweptSpaces: the spaces a sweep batch leaves a receipt in are those it removed
// something from, in order, whatever the map's order.
func TestSweptSpaces(t *testing.T) {
	cases := []struct {
		name     string
		perSpace map[string]int
		want     []string
	}{
		{"none", nil, []string{}},
		{"zero counts leave no receipt", map[string]int{"sp_a": 0, "sp_b": 0}, []string{}},
		{"sorted", map[string]int{"sp_c": 1, "sp_a": 3, "sp_b": 2}, []string{"sp_a", "sp_b", "sp_c"}},
		{"mixed", map[string]int{"sp_b": 0, "sp_a": 5}, []string{"sp_a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, sweptSpaces(tc.perSpace))
		})
	}
}
