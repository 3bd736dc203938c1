package quotas

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Used returns the count of quota under scope key key ("" for a space-wide quota) in space
// spaceID, read through idb; 0 when nothing was ever counted.
func Used(ctx context.Context, idb bun.IDB, spaceID, quota, key string) (int64, error) {
	var n int64
	err := idb.NewRaw(`SELECT used FROM quota_usage WHERE space_id = ? AND quota = ? AND scope_key = ?`, spaceID, quota, key).Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("quotas: used: %w", err)
	}
	return n, nil
}

// Line is one row of a space's usage: Quota (its name), Scope (what it is counted over: the
// space, a scope kind, "largest conversation or task", or a knowledge base's name), Used and
// Limit (the same unit: a count, bytes for StateBytesPerSpace).
type Line struct {
	Quota string `json:"quota"`
	Scope string `json:"scope"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
}

// Percent is Used as a whole percentage of Limit (0 to 100, rounded down; 100 at or past it).
func (l Line) Percent() int {
	if l.Limit <= 0 || l.Used >= l.Limit {
		return 100
	}
	if l.Used <= 0 {
		return 0
	}
	return int(l.Used * 100 / l.Limit)
}

// Usage returns every quota of space spaceID with its use and its limit under features f, in
// Names order: one line per scope kind for StatesPerScopeKind, the largest conversation or task
// for TurnsPerConversation, one line per knowledge base for the per-base quotas (none without
// bases).
func Usage(ctx context.Context, idb bun.IDB, spaceID string, f spaces.Features) ([]Line, error) {
	var rows []struct {
		Quota    string `bun:"quota"`
		ScopeKey string `bun:"scope_key"`
		Used     int64  `bun:"used"`
	}
	if err := idb.NewRaw(`SELECT quota, scope_key, used FROM quota_usage WHERE space_id = ?`, spaceID).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("quotas: usage: %w", err)
	}
	used := map[string]map[string]int64{}
	for _, r := range rows {
		if used[r.Quota] == nil {
			used[r.Quota] = map[string]int64{}
		}
		used[r.Quota][r.ScopeKey] = r.Used
	}
	bases, err := baseNames(ctx, idb, spaceID)
	if err != nil {
		return nil, err
	}
	var out []Line
	for _, q := range Names {
		switch q {
		case StatesPerScopeKind:
			for _, k := range spaces.ScopeKinds {
				out = append(out, Line{Quota: q, Scope: k, Used: used[q][k], Limit: Limit(f, q, k)})
			}
		case TurnsPerConversation:
			var top int64
			for _, n := range used[q] {
				top = max(top, n)
			}
			out = append(out, Line{Quota: q, Scope: "largest conversation or task", Used: top, Limit: Limit(f, q, "")})
		case DocumentsPerBase, ChunksPerBase:
			for _, b := range bases {
				out = append(out, Line{Quota: q, Scope: b.name, Used: used[q][b.id], Limit: Limit(f, q, "")})
			}
		default:
			out = append(out, Line{Quota: q, Scope: "space", Used: used[q][""], Limit: Limit(f, q, "")})
		}
	}
	return out, nil
}

type base struct{ id, name string }

// baseNames returns the space's knowledge bases by name.
func baseNames(ctx context.Context, idb bun.IDB, spaceID string) ([]base, error) {
	var rows []struct {
		ID   string `bun:"id"`
		Name string `bun:"name"`
	}
	if err := idb.NewRaw(`SELECT id, name FROM knowledge_bases WHERE space_id = ? ORDER BY name`, spaceID).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("quotas: bases: %w", err)
	}
	out := make([]base, len(rows))
	for i, r := range rows {
		out[i] = base{r.ID, r.Name}
	}
	return out, nil
}

// Sampled are the series of the daily samples, each a space-wide total: the three space-wide
// quotas and the documents and chunks of all the space's bases together.
var Sampled = []string{StatesPerSpace, StateBytesPerSpace, TurnsPerSpace, DocumentsPerBase, ChunksPerBase}

// SampleKeep is how long daily samples are kept (the Console charts the last 30 days).
const SampleKeep = 90 * 24 * time.Hour

// Day is the sample day of t: its UTC date as YYYY-MM-DD.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Sample records, for every space (or only spaceID when set), the day of now's sample of each
// Sampled series from the current counts (a second sample the same day replaces the first),
// and deletes samples older than SampleKeep, inside idb. The retention sweep calls it.
func Sample(ctx context.Context, idb bun.IDB, spaceID string, now time.Time) error {
	day := Day(now)
	where, args := "", []any{day, bun.In(Sampled)}
	if spaceID != "" {
		where, args = " AND space_id = ?", append(args, spaceID)
	}
	q := `INSERT INTO usage_samples (space_id, day, quota, used)
SELECT space_id, ?, quota, SUM(used) FROM quota_usage WHERE quota IN (?)` + where + ` GROUP BY space_id, quota
ON CONFLICT (space_id, day, quota) DO UPDATE SET used = excluded.used`
	if _, err := idb.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("quotas: sample: %w", err)
	}
	if _, err := idb.ExecContext(ctx, `DELETE FROM usage_samples WHERE day < ?`, Day(now.Add(-SampleKeep))); err != nil {
		return fmt.Errorf("quotas: prune samples: %w", err)
	}
	return nil
}

// Point is one day of a series: Day (YYYY-MM-DD) and the total Used that day.
type Point struct {
	Day  string
	Used int64
}

// History returns per Sampled series the last days days of space spaceID up to and including
// now's day, one point per day, oldest first: the recorded sample, today the current count,
// a day without a sample the one before it (0 before the first).
func History(ctx context.Context, idb bun.IDB, spaceID string, days int, now time.Time) (map[string][]Point, error) {
	first := now.UTC().AddDate(0, 0, -(days - 1))
	var rows []struct {
		Day   string `bun:"day"`
		Quota string `bun:"quota"`
		Used  int64  `bun:"used"`
	}
	if err := idb.NewRaw(`SELECT day, quota, used FROM usage_samples WHERE space_id = ? AND day >= ? ORDER BY day`, spaceID, Day(first)).
		Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("quotas: history: %w", err)
	}
	byDay := map[string]map[string]int64{}
	for _, r := range rows {
		if byDay[r.Quota] == nil {
			byDay[r.Quota] = map[string]int64{}
		}
		byDay[r.Quota][r.Day] = r.Used
	}
	current, err := totals(ctx, idb, spaceID)
	if err != nil {
		return nil, err
	}
	out := map[string][]Point{}
	for _, q := range Sampled {
		var last int64
		for i := 0; i < days; i++ {
			d := Day(first.AddDate(0, 0, i))
			if n, ok := byDay[q][d]; ok {
				last = n
			}
			if i == days-1 {
				last = current[q]
			}
			out[q] = append(out[q], Point{Day: d, Used: last})
		}
	}
	return out, nil
}

// totals returns the current space-wide total of each Sampled series.
func totals(ctx context.Context, idb bun.IDB, spaceID string) (map[string]int64, error) {
	var rows []struct {
		Quota string `bun:"quota"`
		Used  int64  `bun:"used"`
	}
	if err := idb.NewRaw(`SELECT quota, SUM(used) AS used FROM quota_usage WHERE space_id = ? AND quota IN (?) GROUP BY quota`, spaceID, bun.In(Sampled)).
		Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("quotas: totals: %w", err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Quota] = r.Used
	}
	return out, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
