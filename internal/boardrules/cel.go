package boardrules

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// CEL limits: MaxExprLen bounds an expression's text (characters); CostLimit bounds one
// evaluation's cost (CEL's cost units: roughly one per operation, more for list and string
// work), so an expression over large values stops instead of running long.
const (
	MaxExprLen = 2048
	CostLimit  = 100000
)

// rejectMarker is the error text reject() evaluates to; an evaluation ending in it is
// ErrReject.
const rejectMarker = "board rule called reject()"

// Program is a compiled cel rule. The environment has only CEL's standard functions (no
// extension reads files, clocks, the network or the environment) plus reject(), and
// declares three variables of dynamic type: base (the value the writer read), ours (the
// write) and theirs (the stored value), each the field's JSON value (null when the side does
// not hold the field; integers as int, other numbers as double).
type Program struct {
	Expr string
	prg  cel.Program
}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// celEnv is the one environment every rule compiles in.
func celEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			cel.Variable("base", cel.DynType),
			cel.Variable("ours", cel.DynType),
			cel.Variable("theirs", cel.DynType),
			cel.CrossTypeNumericComparisons(true),
			cel.ParserExpressionSizeLimit(MaxExprLen),
			cel.Function("reject", cel.Overload("reject_none", []*cel.Type{}, cel.DynType,
				cel.FunctionBinding(func(...ref.Val) ref.Val { return types.NewErr(rejectMarker) }))),
		)
	})
	return env, envErr
}

// Compile compiles expr as a cel rule (type-checked in the rule environment, cost-limited):
// a syntax or type error is an error naming it, for the document's invalid_document answer.
func Compile(expr string) (*Program, error) {
	if len(expr) > MaxExprLen {
		return nil, fmt.Errorf("expr is at most %d characters", MaxExprLen)
	}
	e, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("boardrules: cel environment: %w", err)
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("expr does not compile: %s", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	prg, err := e.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("expr does not compile: %w", err)
	}
	return &Program{Expr: expr, prg: prg}, nil
}

// Eval runs the rule on the three sides: the value it returns (null stores null), or
// ErrReject when it called reject(); any other failure (its cost limit, a runtime error such
// as a missing key, a result JSON cannot hold) is an error wrapping ErrReject, so the field
// is rejected, never settled silently.
func (p *Program) Eval(base, ours, theirs Value) (Value, error) {
	vars := map[string]any{}
	for name, v := range map[string]Value{"base": base, "ours": ours, "theirs": theirs} {
		native, err := toNative(v)
		if err != nil {
			return Value{}, fmt.Errorf("%w: %s is not JSON", ErrReject, name)
		}
		vars[name] = native
	}
	out, _, err := p.prg.Eval(vars)
	if err != nil {
		if strings.Contains(err.Error(), rejectMarker) {
			return Value{}, ErrReject
		}
		return Value{}, fmt.Errorf("%w: the cel rule failed: %v", ErrReject, err)
	}
	raw, err := fromCEL(out)
	if err != nil {
		return Value{}, fmt.Errorf("%w: %v", ErrReject, err)
	}
	return Present(raw), nil
}

// toNative decodes v for CEL: integers as int64, other numbers as float64, absent as null.
func toNative(v Value) (any, error) {
	if v.Absent {
		return types.NullValue, nil
	}
	x, err := decode(v.Raw)
	if err != nil {
		return nil, err
	}
	return numbersOf(x), nil
}

// numbersOf replaces every json.Number in x by an int64 or a float64.
func numbersOf(x any) any {
	switch y := x.(type) {
	case json.Number:
		if i, err := y.Int64(); err == nil {
			return i
		}
		f, _ := y.Float64() // decoded as a JSON number: it parses
		return f
	case []any:
		for i := range y {
			y[i] = numbersOf(y[i])
		}
	case map[string]any:
		for k := range y {
			y[k] = numbersOf(y[k])
		}
	case nil:
		return types.NullValue
	}
	return x
}

var structValueType = reflect.TypeOf(&structpb.Value{})

// fromCEL encodes a CEL result as JSON (through protobuf's JSON value: maps need string keys).
func fromCEL(v ref.Val) (json.RawMessage, error) {
	if types.IsError(v) {
		return nil, errors.New("the rule returned an error")
	}
	native, err := v.ConvertToNative(structValueType)
	if err != nil {
		return nil, fmt.Errorf("the rule's result is not a JSON value: %v", err)
	}
	b, err := protojson.Marshal(native.(*structpb.Value))
	if err != nil {
		return nil, fmt.Errorf("the rule's result is not a JSON value: %v", err)
	}
	return json.RawMessage(b), nil
}
