package state

import (
	"sync"
	"time"

	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/models"
)

// lastSeen keeps, per replica, the last version of each state this replica read or stored, so
// a write can compute its new state and send its conditional update without reading the row
// first (issue 16). It is a hint, never an answer: reads always go to the store, the update
// applies only at the remembered version (a stale entry costs one miss, then the row is read),
// and a write decided on a remembered row other than a successful update (a 412, a refusal,
// over_cap) is decided again on the stored row. States tied to a customer (SubjectHash set,
// sealed under their key) are never kept, so an erasure leaves nothing of them in memory, and
// an entry older than lastSeenTTL is ignored. At most lastSeenMax entries; emptied when full.
type lastSeen struct {
	mu       sync.Mutex
	m        map[seenKey]seenRow
	sweeping bool // a sweep of entries past lastSeenTTL is scheduled
}

type seenKey struct{ space, scope, agent string }

type seenRow struct {
	row models.AgentState // opened: Body and FieldTimes in clear
	// fields and times are row's Body and FieldTimes parsed (parseRow), nil when not parsed
	// yet: read only, shared by every write that starts from this row.
	fields strictjson.Object
	times  map[string]time.Time
	at     time.Time
}

const (
	lastSeenMax = 8192
	lastSeenTTL = 10 * time.Second
)

func keyOf(t target) seenKey { return seenKey{t.spaceID, t.scopeHash, t.agent} }

// get returns a copy of t's remembered entry, if one is fresh enough.
func (c *lastSeen) get(t target) (*seenRow, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[keyOf(t)]
	if !ok || time.Since(e.at) > lastSeenTTL {
		return nil, false
	}
	return &e, true
}

// put remembers row (opened) as t's current state, with its fields and times parsed when the
// caller has them (nil otherwise); a customer's state is not kept.
func (c *lastSeen) put(t target, row models.AgentState, fields strictjson.Object, times map[string]time.Time) {
	if row.SubjectHash != "" {
		c.drop(t)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= lastSeenMax {
		c.m = make(map[seenKey]seenRow)
	}
	c.m[keyOf(t)] = seenRow{row: row, fields: fields, times: times, at: time.Now()}
	if !c.sweeping {
		// Entries past lastSeenTTL are forgotten, not only ignored: a state deleted in the
		// store (a conversation's erasure, retention) leaves its body in no replica's memory
		// for more than about twice lastSeenTTL.
		c.sweeping = true
		time.AfterFunc(lastSeenTTL, c.sweep)
	}
}

// sweep forgets the entries older than lastSeenTTL, and schedules itself again while any
// remain.
func (c *lastSeen) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if time.Since(e.at) > lastSeenTTL {
			delete(c.m, k)
		}
	}
	if len(c.m) > 0 {
		time.AfterFunc(lastSeenTTL, c.sweep)
		return
	}
	c.sweeping = false
}

// drop forgets t's state.
func (c *lastSeen) drop(t target) {
	c.mu.Lock()
	delete(c.m, keyOf(t))
	c.mu.Unlock()
}
