package tools_test

import (
	"os"
	"testing"

	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// TestMain stops the real binary the package's tests share.
func TestMain(m *testing.M) { os.Exit(devserver.Main(m)) }
