package redact

import (
	"bufio"
	"fmt"
	"os"
	"testing"
)

func TestScratchInst(t *testing.T) {
	f, _ := os.Open(os.Getenv("IN"))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fmt.Printf("%v\t%s\n", DetectInstructions(sc.Text()), sc.Text())
	}
}
