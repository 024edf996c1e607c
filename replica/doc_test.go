package replica_test

import (
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// docFiles returns the file names doc.go's "# Files" section lists: the
// first word of each of its indented lines.
func docFiles(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	_, section, ok := strings.Cut(f.Doc.Text(), "\n# Files\n")
	if !ok {
		t.Fatal(`doc.go has no "# Files" section`)
	}
	var names []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "# ") {
			break // the next section
		}
		if fields := strings.Fields(line); len(fields) > 0 && strings.HasPrefix(line, "\t") {
			names = append(names, fields[0])
		}
	}
	return names
}

// The package comment lists every non-test Go file of the package, once,
// and no file that does not exist: the list cannot drift from the code.
func TestDocListsEveryFile(t *testing.T) {
	listed := docFiles(t)
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			files = append(files, n)
		}
	}
	if len(files) == 0 {
		t.Fatal("no Go files found in the package directory")
	}
	for _, f := range files {
		if !slices.Contains(listed, f) {
			t.Errorf("doc.go's # Files does not list %s", f)
		}
	}
	seen := map[string]bool{}
	for _, n := range listed {
		if seen[n] {
			t.Errorf("doc.go's # Files lists %s twice", n)
		}
		seen[n] = true
		if !slices.Contains(files, n) {
			t.Errorf("doc.go's # Files lists %s, which is not a non-test Go file of the package", n)
		}
	}
}
