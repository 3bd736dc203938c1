package redact

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDbgNames(t *testing.T) {
	for _, s := range strings.Split(os.Getenv("NAMES"), "|") {
		m, k := Mask(s, Options{Names: true})
		fmt.Printf("%v %s\n", k, m)
	}
}
