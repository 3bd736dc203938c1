package strictjson

import "github.com/agentmemory/agentmemory/internal/fault"

// Nesting limits. Depth counts open arrays and objects: `1` has depth 0, `[]` and `{}` depth 1,
// `{"a":[1]}` depth 2. A body nested deeper than its limit is refused with fault.Invalid
// "json_too_deep" (400) by a linear pre-scan, before any other parsing.
const (
	// MaxBodyDepth is the nesting a free-form JSON value may hold: a working-memory body
	// (counted from the body object itself, which is level 1), a stored document, the
	// arguments of an MCP tool call, a model's answer.
	MaxBodyDepth = 64
	// MaxEnvelopeDepth is the nesting of a request envelope that carries a free-form body
	// (the body's MaxBodyDepth plus room for the envelope around it). Decode uses it.
	MaxEnvelopeDepth = MaxBodyDepth + 8
	// MaxPlainDepth is the nesting of a request envelope without a free-form value (keys,
	// erasures, exports, identity links, proposal decisions): DecodeDepth callers use it.
	MaxPlainDepth = 16
)

// Scan checks data in one linear pass, without recursion and without allocating per level:
// nesting deeper than maxDepth is fault.Invalid "json_too_deep", and a \u escape holding a
// UTF-16 surrogate that is not part of a valid high+low pair is fault.Invalid "invalid_json"
// (the same as invalid UTF-8 sent raw). Syntax is not checked here: the parser that runs
// after Scan does that, on a value whose depth is now bounded. Messages never repeat the
// caller's text (only a byte offset).
func Scan(data []byte, maxDepth int) error {
	depth := 0
	inString := false
	for i := 0; i < len(data); i++ {
		ch := data[i]
		if inString {
			switch ch {
			case '"':
				inString = false
			case '\\':
				if i+1 < len(data) && data[i+1] == 'u' {
					r, ok := hex4(data, i+2)
					if ok && r >= 0xD800 && r <= 0xDFFF {
						if r >= 0xDC00 {
							return loneSurrogate(i)
						}
						low, ok := uint32(0), false
						if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
							low, ok = hex4(data, i+8)
						}
						if !ok || low < 0xDC00 || low > 0xDFFF {
							return loneSurrogate(i)
						}
						i += 11 // the pair \uD8xx\uDCxx, less the loop's own step
						continue
					}
				}
				i++ // skip the escaped character (a lone \u is left to the parser)
			}
			continue
		}
		switch ch {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > maxDepth {
				return fault.New(fault.Invalid, "json_too_deep", "the JSON nests deeper than %d levels (at byte %d)", maxDepth, i).With("max_depth", maxDepth)
			}
		case ']', '}':
			depth-- // unbalanced closers are the parser's to report
		}
	}
	return nil
}

// hex4 reads the four hex digits at data[at:at+4].
func hex4(data []byte, at int) (uint32, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var r uint32
	for _, c := range data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | uint32(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func loneSurrogate(at int) error {
	return fault.New(fault.Invalid, "invalid_json", "a \\u escape at byte %d is a lone UTF-16 surrogate (not valid UTF-8 text)", at)
}
