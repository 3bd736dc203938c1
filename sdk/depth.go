package sdk

import "fmt"

// maxBodyDepth is the nesting the service allows in a working-memory body (the body object is
// level 1). It mirrors the service's own limit; a test in the main module checks that the two
// agree.
const maxBodyDepth = 64

// MaxAnswerDepth is the nesting an answer of the service may hold (a working-memory body holds
// at most 64 levels; answers wrap it in a few more). A deeper answer is refused by a linear
// scan before it is parsed: the client's memory stays bounded whatever a server (or something
// posing as one) sends.
const MaxAnswerDepth = maxBodyDepth + 32

// checkAnswerDepth refuses an answer nested beyond MaxAnswerDepth (or holding a lone UTF-16
// surrogate escape) with an error that never repeats the answer's text.
func checkAnswerDepth(data []byte) error {
	if err := scanDepth(data, MaxAnswerDepth); err != nil {
		return fmt.Errorf("sdk: decode answer: %w", err)
	}
	return nil
}

// scanDepth walks data once, keeping only a depth counter and whether it is inside a string:
// an array or object opened beyond maxDepth is "json_too_deep", and a \u escape that encodes
// half of a UTF-16 surrogate pair without its other half is "invalid_json". Everything else
// (syntax, unbalanced brackets) is left to encoding/json, which then parses a value of bounded
// depth. Errors name a byte offset, never the text.
func scanDepth(data []byte, maxDepth int) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("json_too_deep: the JSON nests deeper than %d levels (at byte %d)", maxDepth, i)
			}
		case '}', ']':
			depth--
		case '"':
			end, err := skipString(data, i+1)
			if err != nil {
				return err
			}
			i = end
		}
	}
	return nil
}

// skipString returns the index of the quote closing the string whose first character is at
// data[from] (len(data) when it is unterminated), checking its \u escapes for lone surrogates.
func skipString(data []byte, from int) (int, error) {
	for j := from; j < len(data); j++ {
		switch data[j] {
		case '"':
			return j, nil
		case '\\':
			if j+1 >= len(data) || data[j+1] != 'u' {
				j++ // a one-character escape such as \" or \n
				continue
			}
			r, ok := hexRune(data, j+2)
			if !ok {
				j++ // a malformed \u: the parser reports it
				continue
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF: // a low half with no high half before it
				return 0, surrogateError(j)
			case r >= 0xD800 && r <= 0xDBFF: // a high half must be followed by \u and a low half
				if j+7 >= len(data) || data[j+6] != '\\' || data[j+7] != 'u' {
					return 0, surrogateError(j)
				}
				low, ok := hexRune(data, j+8)
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return 0, surrogateError(j)
				}
				j += 11 // both escapes, less the loop's step
			default:
				j += 5
			}
		}
	}
	return len(data), nil
}

// hexRune decodes the four hex digits at data[at:at+4].
func hexRune(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[at : at+4] {
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func surrogateError(at int) error {
	return fmt.Errorf("invalid_json: a \\u escape at byte %d is a lone UTF-16 surrogate (not valid UTF-8 text)", at)
}
