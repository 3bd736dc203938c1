package sdk_test

import (
	"os"
	"testing"

	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// TestMain stops the real binary the cache and context tests share (devserver.Shared).
func TestMain(m *testing.M) { os.Exit(devserver.Main(m)) }
