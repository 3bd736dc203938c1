package api

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every relative link of the repository's Markdown (README.md, docs/, the packages' READMEs)
// and every file api/openapi.json names points to a file that exists, and a link's #anchor to
// a heading of that file (issue 27: openapi.json sent readers to a DESIGN.md that is not in
// the repository).
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	files := markdownFiles(t, root)
	require.Contains(t, files, filepath.Join(root, "README.md"))
	require.Contains(t, files, filepath.Join(root, "docs", "documents.md"))
	var broken []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, link := range markdownLink.FindAllStringSubmatch(stripCode(string(data)), -1) {
			if msg := checkLink(root, f, link[1]); msg != "" {
				broken = append(broken, rel(root, f)+": "+msg)
			}
		}
	}
	spec, err := os.ReadFile(filepath.Join(root, "api", "openapi.json"))
	require.NoError(t, err)
	named := namedFile.FindAllString(string(spec), -1)
	require.NotEmpty(t, named, "openapi.json names no file: the pattern is wrong")
	for _, name := range named {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			broken = append(broken, "api/openapi.json: "+name+" does not exist in the repository")
		}
	}
	require.Empty(t, broken, "broken links")
}

// The checker itself finds what it must: a missing file, a missing anchor, and passes the
// links that hold.
func TestDocLinksChecker(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	readme := filepath.Join(root, "README.md")
	require.Empty(t, checkLink(root, readme, "docs/sdk.md"))
	require.Empty(t, checkLink(root, readme, "#change-requests-of-the-space-documents"))
	require.Empty(t, checkLink(root, filepath.Join(root, "docs", "documents.md"), "../README.md#change-requests-of-the-space-documents"))
	require.Empty(t, checkLink(root, readme, "https://example.com/DESIGN.md"))
	require.NotEmpty(t, checkLink(root, readme, "DESIGN.md"))
	require.NotEmpty(t, checkLink(root, readme, "docs/sdk.md#no-such-heading"))
	require.Equal(t, []string{"DESIGN.md"}, namedFile.FindAllString("see DESIGN.md.", -1))
}

var (
	// markdownLink is [text](target) or ![alt](target); the target ends at white space or ")".
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// namedFile is a repository path ending in .md that a description names.
	namedFile = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b`)
	// fencedCode and inlineCode are left out: a link shown as code is not a link.
	fencedCode = regexp.MustCompile("(?s)```.*?```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

func stripCode(s string) string {
	return inlineCode.ReplaceAllString(fencedCode.ReplaceAllString(s, ""), "")
}

// checkLink returns why target, a link in file, does not resolve, "" when it does (or is not
// relative: a URL or a mail address).
func checkLink(root, file, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
	}
	if !strings.HasPrefix(dest, root) {
		return target + " leaves the repository"
	}
	info, err := os.Stat(dest)
	if err != nil {
		return target + " does not exist"
	}
	if anchor == "" || info.IsDir() || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	data, err := os.ReadFile(dest)
	if err != nil {
		return target + ": " + err.Error()
	}
	for _, h := range heading.FindAllStringSubmatch(fencedCode.ReplaceAllString(string(data), ""), -1) {
		if slug(h[1]) == anchor {
			return ""
		}
	}
	return target + ": no heading with that anchor"
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped but - and _, spaces
// as -.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownFiles lists the repository's Markdown files, leaving out dependencies and build output.
func markdownFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "build", "bin", "data", ".ci":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func rel(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}
