package workflows_test

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

func converterDecode(can *workflow.ContinueAsNewError, v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, v)
}
