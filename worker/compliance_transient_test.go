package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A frontend that is still starting refuses with Unavailable or drops the stream (Canceled):
// those are retried; a refusal of the request itself is not.
func TestTransientRefusals(t *testing.T) {
	for _, err := range []error{
		serviceerror.NewUnavailable("starting"),
		status.Error(codes.Canceled, "stream terminated by RST_STREAM with error code: CANCEL"),
		fmt.Errorf("wrapped: %w", serviceerror.NewUnavailable("starting")),
		context.DeadlineExceeded,
	} {
		require.True(t, transient(err), "%v", err)
	}
	for _, err := range []error{
		serviceerror.NewInvalidArgument("bad schedule"),
		serviceerror.NewPermissionDenied("no", ""),
		errors.New("plain"),
	} {
		require.False(t, transient(err), "%v", err)
	}
}
