package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/agentmemory/agentmemory/internal/notes"
)

// Chunk is one piece of a document (KN-2): [Start, End) is its byte range in the document's
// stored body, Text is body[Start:End], Tokens its cl100k count, ID its deterministic id.
type Chunk struct {
	ID     string
	Ord    int
	Start  int
	End    int
	Tokens int
	Text   string
}

// ChunkID is the id of the chunk of document docID at version over bytes [start, end):
// "kc_" and 32 hex digits of SHA-256 over them (KN-2: deterministic).
func ChunkID(docID, version string, start, end int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("knowledge-chunk/v1\x00%s\x00%s\x00%d\x00%d", docID, version, start, end)))
	return "kc_" + hex.EncodeToString(h[:16])
}

// ChunkText splits body into chunks of about size tokens, each repeating about overlap
// tokens of the previous one (KN-2). The rule is deterministic: body is read as words (runs
// without white space, by byte offset); a chunk takes whole words while the sum of their
// token counts (each word counted with a leading space, cl100k_base) stays within size (a
// word longer than size tokens is cut at UTF-8 boundaries into pieces of at most size bytes,
// so no chunk exceeds size tokens by more than its leading space); the next chunk starts at the latest word whose
// trailing words up to the end of the previous chunk hold at least overlap tokens, always
// after the previous chunk's start. A chunk never cuts a word that fits in a chunk, nor a UTF-8 sequence. Tokens is
// the exact cl100k count of the chunk's text. A body without words has no chunks.
func ChunkText(docID, version, body string, size, overlap int) ([]Chunk, error) {
	words, err := chunkWords(body, size)
	if err != nil {
		return nil, err
	}
	var out []Chunk
	for i := 0; i < len(words); {
		j, sum := i, 0
		for j < len(words) && (j == i || sum+words[j].tokens <= size) {
			sum += words[j].tokens
			j++
		}
		start, end := words[i].start, words[j-1].end
		text := body[start:end]
		n, err := notes.CountTokens(text)
		if err != nil {
			return nil, err
		}
		out = append(out, Chunk{ID: ChunkID(docID, version, start, end), Ord: len(out), Start: start, End: end, Tokens: n, Text: text})
		if j == len(words) {
			break
		}
		next, back := j, 0
		for next-1 > i && back < overlap {
			next--
			back += words[next].tokens
		}
		i = next
	}
	return out, nil
}

// chunkWord is a word of a body ChunkText reads: [start, end) in bytes, and its cl100k token
// count with a leading space.
type chunkWord struct{ start, end, tokens int }

// chunkWords reads body as ChunkText's words: runs without white space, in order, each with
// its token count; a word of more than size tokens comes as pieces of at most size bytes
// (cutWord).
func chunkWords(body string, size int) ([]chunkWord, error) {
	var words []chunkWord
	cache := map[string]int{}
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRuneInString(body[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		j := wordEnd(body, i)
		w := body[i:j]
		t, ok := cache[w]
		if !ok {
			c, err := notes.CountTokens(" " + w)
			if err != nil {
				return nil, err
			}
			t, cache[w] = c, c
		}
		if t <= size {
			words = append(words, chunkWord{i, j, t})
		} else {
			pieces, err := cutWord(body, i, j, size)
			if err != nil {
				return nil, err
			}
			words = append(words, pieces...)
		}
		i = j
	}
	return words, nil
}

// wordEnd returns the byte offset of the first white space in body at or after i, or
// len(body).
func wordEnd(body string, i int) int {
	for i < len(body) {
		r, n := utf8.DecodeRuneInString(body[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}

// cutWord cuts the word body[i:j], longer than a chunk (a run of hundreds of kilobytes without
// white space), at UTF-8 boundaries into pieces of at most max(size, utf8.UTFMax) bytes: a
// token covers at least one byte, so a piece never exceeds size tokens.
func cutWord(body string, i, j, size int) ([]chunkWord, error) {
	var out []chunkWord
	for i < j {
		k := min(i+max(size, utf8.UTFMax), j)
		for k < j && !utf8.RuneStart(body[k]) {
			k--
		}
		c, err := notes.CountTokens(" " + body[i:k])
		if err != nil {
			return nil, err
		}
		out = append(out, chunkWord{i, k, c})
		i = k
	}
	return out, nil
}
