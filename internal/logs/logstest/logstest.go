// Package logstest holds what tests need to read the service's log lines.
package logstest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink safe for concurrent writers (the server's goroutines) and a reading
// test. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
