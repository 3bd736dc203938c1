package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// withSweepDefaults fills only what is missing; add counts each phase in its own total.
func TestSweepInputDefaultsAndTotals(t *testing.T) {
	for _, c := range []struct {
		in, want RetentionSweepInput
	}{
		{RetentionSweepInput{}, RetentionSweepInput{BatchSize: DefaultSweepBatch, MaxBatches: DefaultSweepMaxBatches, Phase: "states"}},
		{RetentionSweepInput{BatchSize: -1, MaxBatches: 0, Phase: "turns", Cursor: "c"},
			RetentionSweepInput{BatchSize: DefaultSweepBatch, MaxBatches: DefaultSweepMaxBatches, Phase: "turns", Cursor: "c"}},
		{RetentionSweepInput{SpaceID: "sp", BatchSize: 7, MaxBatches: 3, Phase: vacuumPhase},
			RetentionSweepInput{SpaceID: "sp", BatchSize: 7, MaxBatches: 3, Phase: vacuumPhase}},
	} {
		require.Equal(t, c.want, withSweepDefaults(c.in))
	}
	var tot SweepTotals
	for i, phase := range []string{"states", "fields", "turns", "exports", notesPhase, vacuumPhase} {
		tot.add(phase, i+1)
	}
	require.Equal(t, SweepTotals{States: 1, Fields: 2, Turns: 3, Exports: 4, Notes: 5}, tot)
}
