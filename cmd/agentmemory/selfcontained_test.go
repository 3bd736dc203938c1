package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A clone runs every test on its own (issue 13 §6): no Go source, script or Makefile of the
// repository reads the data set from outside it (the shared folder beside a work tree); the
// ABCD slices the tests need are in testdata/abcd, with their licence.
func TestTestsNeedNothingOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	outside := []string{"../" + "shared", "/work/" + "shared"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "bin" || name == "data" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".sh") && name != "Makefile" && name != "run" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, o := range outside {
			require.NotContains(t, string(data), o, "%s refers to a path outside the repository", path)
		}
		return nil
	})
	require.NoError(t, err)
	for _, f := range []string{"LICENSE", "README.md", "abcd_sample.json", "guidelines.json"} {
		_, err := os.Stat(filepath.Join(root, "testdata", "abcd", f))
		require.NoError(t, err, "testdata/abcd/%s", f)
	}
}
