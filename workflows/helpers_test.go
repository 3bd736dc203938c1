package workflows_test

import (
	"reflect"
	"runtime"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

func fmtName(fn any) string {
	n := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	return strings.TrimSuffix(n[strings.LastIndex(n, ".")+1:], "-fm")
}

func converterDecode(can *workflow.ContinueAsNewError, v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, v)
}
