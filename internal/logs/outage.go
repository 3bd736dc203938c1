package logs

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultOutageEvery is how often an Outage logs its summary while the dependency stays down.
const DefaultOutageEvery = 5 * time.Minute

// Outage logs the failures of one dependency (the model server, the embedder) without
// repeating a line per retry (issue 27: an ERROR line every few seconds while no model
// answered). While it is down:
//
//   - the first failure logs one ERROR line: "<name> unreachable" with its attributes;
//   - later failures are counted, and the first failure at least Every after the last line
//     logs one WARN line "<name> still unreachable" with failures (the count since that
//     line), in (the duration it covers) and down_for (since the first failure);
//   - the first success after a failure logs one INFO line "<name> reachable again" with
//     failures (all of the outage) and down_for, and the next failure starts a new outage.
//
// So an outage of any length logs at most 2 + down_for/Every lines. The clock is Now
// (time.Now when nil), so tests drive it. Safe for concurrent use; a nil *Outage logs nothing.
type Outage struct {
	Log   *slog.Logger
	Name  string        // what is down, e.g. "model server"
	Every time.Duration // 0: DefaultOutageEvery
	Now   func() time.Time

	mu       sync.Mutex
	down     bool
	since    time.Time // first failure of the outage
	lastLine time.Time // when the outage last logged a line
	count    int       // failures since lastLine
	total    int       // failures of the outage
}

// Failure records one failed call; attrs (never a value from the data: codes, types, ids of
// workflows at most) go on the first line of an outage only.
func (o *Outage) Failure(attrs ...any) {
	if o == nil {
		return
	}
	o.mu.Lock()
	now := o.now()
	o.count++
	o.total++
	var line func()
	switch {
	case !o.down:
		o.down, o.since, o.lastLine, o.count, o.total = true, now, now, 0, 1
		line = func() { o.Log.Log(context.Background(), slog.LevelError, o.Name+" unreachable", attrs...) }
	case now.Sub(o.lastLine) >= o.every():
		n, in, downFor := o.count, now.Sub(o.lastLine), now.Sub(o.since)
		o.lastLine, o.count = now, 0
		line = func() {
			o.Log.Warn(o.Name+" still unreachable", "failures", n, "in", in.Round(time.Second).String(),
				"down_for", downFor.Round(time.Second).String())
		}
	}
	o.mu.Unlock()
	if line != nil {
		line()
	}
}

// Success records one call that answered; after failures it logs the recovery once.
func (o *Outage) Success() {
	if o == nil {
		return
	}
	o.mu.Lock()
	if !o.down {
		o.mu.Unlock()
		return
	}
	n, downFor := o.total, o.now().Sub(o.since)
	o.down, o.count, o.total = false, 0, 0
	o.mu.Unlock()
	o.Log.Info(o.Name+" reachable again", "failures", n, "down_for", downFor.Round(time.Second).String())
}

func (o *Outage) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *Outage) every() time.Duration {
	if o.Every <= 0 {
		return DefaultOutageEvery
	}
	return o.Every
}
