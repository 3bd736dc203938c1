package sdktest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/sdk"
)

// The SDK keeps its own copy of the service's body depth limit (it imports nothing of the main
// module): its answer limit must still be the service's body limit plus the answers' wrapping.
func TestAnswerDepthFollowsTheService(t *testing.T) {
	require.Equal(t, strictjson.MaxBodyDepth+32, sdk.MaxAnswerDepth)
}
