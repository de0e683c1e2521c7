package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/docs"
	"github.com/getkin/kin-openapi/openapi3"
)

func TestYAMLToJSON(t *testing.T) {
	got, err := docs.YAMLToJSON([]byte("b: 1\na:\n  200: {x: [1, 'on', null]}\n  c: 2026-06-09T10:11:12.345Z\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":1,"a":{"200":{"x":[1,"on",null]},"c":"2026-06-09T10:11:12.345Z"}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	for _, bad := range []string{"on: 1\n", "a: [\n", "1.5: x\n"} {
		if _, err := docs.YAMLToJSON([]byte(bad)); err == nil {
			t.Errorf("%q converted", bad)
		}
	}
}

func TestOpenAPIJSON(t *testing.T) {
	raw, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.OpenAPI != "3.1.0" || len(doc.Paths) < 40 {
		t.Fatalf("openapi %q, %d paths, %v", doc.OpenAPI, len(doc.Paths), err)
	}
	// The node answers these bytes as they are, to concurrent requests: an append must copy.
	if cap(raw) != len(raw) {
		t.Fatalf("the shared document has room for an append (len %d, cap %d)", len(raw), cap(raw))
	}
}

// TestOpenAPIValid: docs/openapi.yaml is a valid OpenAPI document for kin-openapi
// (github.com/getkin/kin-openapi: its loader, then Validate with every error reported,
// examples and formats included), read both by kin-openapi's own YAML parser and from the
// JSON the node serves, and the two readings are the same document.
func TestOpenAPIValid(t *testing.T) {
	served, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var read [2][]byte
	for i, src := range []struct {
		name string
		raw  []byte
	}{{"docs/openapi.yaml", docs.OpenAPIYAML}, {"docs/openapi.yaml as JSON", served}} {
		doc, err := openapi3.NewLoader().LoadFromData(src.raw)
		if err != nil {
			t.Fatalf("%s: %v", src.name, err)
		}
		if err := doc.Validate(context.Background(), openapi3.EnableMultiError(), openapi3.EnableSchemaFormatValidation()); err != nil {
			var me openapi3.MultiError
			if !errors.As(err, &me) {
				me = openapi3.MultiError{err}
			}
			for _, e := range me {
				t.Errorf("%s: %v", src.name, e)
			}
		}
		if read[i], err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(read[0], read[1]) {
		t.Error("kin-openapi reads docs/openapi.yaml and its JSON conversion as two different documents")
	}
}

// TestOpenAPINumberFormats: every number of the document says its size, so that a
// generated client keeps it whole (docs/decisions/0136-openapi-number-formats.md):
// `type: number` has `format: double` (a float32 rounds a latitude such as
// 52.5200066 to 52.520008), `type: integer` has `format: int32` or `int64`, and an int32
// documents no bound past its range.
func TestOpenAPINumberFormats(t *testing.T) {
	raw, err := docs.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	numbers := 0
	for _, p := range numberSchemas(doc, "") {
		numbers++
		format, _ := p.schema["format"].(string)
		switch p.kind {
		case "number":
			if format != "double" {
				t.Errorf("%s: type number with format %q, want double", p.ptr, format)
			}
		case "integer":
			if format != "int32" && format != "int64" {
				t.Errorf("%s: type integer with format %q, want int32 or int64", p.ptr, format)
				continue
			}
			for _, k := range []string{"minimum", "maximum", "const", "default"} {
				if v, ok := p.schema[k].(float64); ok && format == "int32" && (v > math.MaxInt32 || v < math.MinInt32) {
					t.Errorf("%s: %s %v does not fit its format int32", p.ptr, k, v)
				}
			}
		}
	}
	if numbers < 100 {
		t.Fatalf("only %d number schemas found: the walk misses some", numbers)
	}
	// The walk itself finds a number without a format.
	if got := numberSchemas(map[string]any{"a": map[string]any{"type": []any{"number", "null"}}}, ""); len(got) != 1 || got[0].kind != "number" {
		t.Fatalf("the walk finds %v in a nullable number", got)
	}
}

// numberSchema is a schema of type number or integer (alone or with null) at ptr.
type numberSchema struct {
	ptr, kind string
	schema    map[string]any
}

// numberSchemas walks the document for schemas of type number or integer. Examples are
// data, not schemas, and are left out.
func numberSchemas(v any, ptr string) []numberSchema {
	var out []numberSchema
	switch v := v.(type) {
	case map[string]any:
		types := []any{v["type"]}
		if list, ok := v["type"].([]any); ok {
			types = list
		}
		for _, ty := range types {
			if ty == "number" || ty == "integer" {
				out = append(out, numberSchema{ptr: ptr, kind: ty.(string), schema: v})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k != "example" && k != "examples" {
				out = append(out, numberSchemas(v[k], ptr+"/"+k)...)
			}
		}
	case []any:
		for i, x := range v {
			out = append(out, numberSchemas(x, ptr+"/"+strconv.Itoa(i))...)
		}
	}
	return out
}

// The decisions: docs/decisions/NNNN-short-title.md, one a file, indexed by area in
// docs/decisions/README.md (docs/decisions/0140-decisions-one-per-file.md).

var (
	decisionName  = regexp.MustCompile(`^(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$`)
	decisionTitle = regexp.MustCompile(`^# (\d{4})\. (\S.*)$`)
	decisionState = regexp.MustCompile(`^Status: (?:current|superseded by (\d{4}))$`)
	decisionDate  = regexp.MustCompile(`^Date: (\d{4}-\d{2}-\d{2})$`)
	decisionArea  = regexp.MustCompile(`^Area: (\S.*)$`)
	indexEntry    = regexp.MustCompile(`^- \[(\d{4}\. .+?)\]\(([^)]+)\): \S`)
	// A path to a decision, as code, tests and documents cite it.
	decisionPath = regexp.MustCompile(`docs/decisions/(\d{4}-[a-z0-9]+(?:-[a-z0-9]+)*\.md)`)
	// What no file may cite: the single file the decisions were before they were split,
	// and the contract's files, which the repository does not hold. The dots are written
	// [.] so that this file does not match.
	notHeld = regexp.MustCompile(`(?:\bdocs/|\b)decisions[.]md\b|\b(?:API|INTERFACE|DESIGN|STYLE)[.]md\b`)
)

// decision is the header of one decision file.
type decision struct {
	number, title, area string
	supersededBy        string
}

// readDecision checks the header of a decision file: `# NNNN. Title` with the number of
// its name, a blank line, `Status: current` or `Status: superseded by NNNN`, `Date:` a
// real day, an optional `Area:`, a blank line and a body.
func readDecision(name, text string) (decision, error) {
	var d decision
	m := decisionName.FindStringSubmatch(name)
	if m == nil {
		return d, fmt.Errorf("%s: a decision's name is NNNN-short-title.md (lower case, digits, hyphens)", name)
	}
	lines := strings.Split(text, "\n")
	if len(lines) < 6 {
		return d, fmt.Errorf("%s: too short for a header and a body", name)
	}
	t := decisionTitle.FindStringSubmatch(lines[0])
	if t == nil || t[1] != m[1] {
		return d, fmt.Errorf("%s: the first line must be %q", name, "# "+m[1]+". Title")
	}
	d.number, d.title = t[1], t[2]
	if lines[1] != "" {
		return d, fmt.Errorf("%s: a blank line after the title", name)
	}
	s := decisionState.FindStringSubmatch(lines[2])
	if s == nil {
		return d, fmt.Errorf("%s: line 3 must be `Status: current` or `Status: superseded by NNNN`, not %q", name, lines[2])
	}
	if d.supersededBy = s[1]; d.supersededBy == d.number {
		return d, fmt.Errorf("%s: superseded by itself", name)
	}
	dt := decisionDate.FindStringSubmatch(lines[3])
	if dt == nil {
		return d, fmt.Errorf("%s: line 4 must be `Date: YYYY-MM-DD`, not %q", name, lines[3])
	}
	if _, err := time.Parse(time.DateOnly, dt[1]); err != nil {
		return d, fmt.Errorf("%s: %v", name, err)
	}
	rest := lines[4:]
	if a := decisionArea.FindStringSubmatch(rest[0]); a != nil {
		d.area, rest = a[1], rest[1:]
	}
	if len(rest) < 2 || rest[0] != "" || strings.TrimSpace(strings.Join(rest[1:], "")) == "" {
		return d, fmt.Errorf("%s: a blank line, then the body, after the header", name)
	}
	return d, nil
}

// readIndex reads the entries of docs/decisions/README.md: file → link text and the
// `### ` area it is listed under.
func readIndex(text string) (map[string][2]string, []error) {
	entries := map[string][2]string{}
	var errs []error
	area := ""
	for i, line := range strings.Split(text, "\n") {
		if a, ok := strings.CutPrefix(line, "### "); ok {
			area = a
			continue
		}
		if !strings.HasPrefix(line, "- [") {
			continue
		}
		m := indexEntry.FindStringSubmatch(line)
		if m == nil {
			errs = append(errs, fmt.Errorf("README.md:%d: an entry is `- [NNNN. Title](NNNN-short-title.md): gist`", i+1))
			continue
		}
		if _, dup := entries[m[2]]; dup {
			errs = append(errs, fmt.Errorf("README.md:%d: %s is listed twice", i+1, m[2]))
		}
		entries[m[2]] = [2]string{m[1], area}
	}
	return entries, errs
}

// TestDecisions: every file of docs/decisions/ has its header, and the index lists each
// decision once, with its title, under its area, and nothing else.
func TestDecisions(t *testing.T) {
	dir, err := os.ReadDir("decisions")
	if err != nil {
		t.Fatal(err)
	}
	decisions := map[string]decision{} // by file name
	numbers := map[string]string{}     // number → file name
	files := map[string]bool{}
	for _, e := range dir {
		name := e.Name()
		if files[name] = true; name == "README.md" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("decisions", name))
		if err != nil {
			t.Fatal(err)
		}
		d, err := readDecision(name, string(raw))
		if err != nil {
			t.Error(err)
			continue
		}
		if other, dup := numbers[d.number]; dup {
			t.Errorf("%s and %s have the same number", name, other)
		}
		numbers[d.number], decisions[name] = name, d
	}
	if len(dir) < 140 {
		t.Fatalf("%d files in docs/decisions: the walk misses some", len(dir))
	}
	for name, d := range decisions {
		if d.supersededBy != "" && numbers[d.supersededBy] == "" {
			t.Errorf("%s: superseded by %s, which does not exist", name, d.supersededBy)
		}
	}

	raw, err := os.ReadFile("decisions/README.md")
	if err != nil {
		t.Fatal(err)
	}
	index, errs := readIndex(string(raw))
	for _, err := range errs {
		t.Error(err)
	}
	for name, d := range decisions {
		e, ok := index[name]
		switch {
		case !ok:
			t.Errorf("README.md does not list %s", name)
		case e[0] != d.number+". "+d.title:
			t.Errorf("README.md lists %s as %q, its title is %q", name, e[0], d.number+". "+d.title)
		case d.area != "" && e[1] != d.area:
			t.Errorf("README.md lists %s under %q, its area is %q", name, e[1], d.area)
		}
	}
	for name := range index {
		if !files[name] || name == "README.md" {
			t.Errorf("README.md lists %s, which is no decision", name)
		}
	}

	// The checks refuse what they should.
	good := "# 0007. A title\n\nStatus: current\nDate: 2026-11-22\nArea: CLI and operations\n\nThe body.\n"
	if _, err := readDecision("0007-a-title.md", good); err != nil {
		t.Errorf("a good header refused: %v", err)
	}
	for name, text := range map[string]string{
		"0007-A-title.md": good,
		"0008-a-title.md": good,
		"0007-a-title.md": strings.Replace(good, "current", "done", 1),
	} {
		if _, err := readDecision(name, text); err == nil {
			t.Errorf("%s taken", name)
		}
	}
	for _, bad := range []string{
		strings.Replace(good, "current", "superseded by 0007", 1),
		strings.Replace(good, "2026-11-22", "2026-11-31", 1),
		strings.Replace(good, "\n\nThe body.\n", "\n", 1),
		strings.Replace(good, "# 0007. A title", "# A title", 1),
	} {
		if _, err := readDecision("0007-a-title.md", bad); err == nil {
			t.Errorf("taken: %q", bad)
		}
	}
	if _, errs := readIndex("### A\n\n- [0001. X](0001-x.md): y\n- [0001. X](0001-x.md): y\n- [0002 Y](0002-y.md)\n"); len(errs) != 2 {
		t.Errorf("readIndex found %v in a twice-listed and a malformed entry", errs)
	}
}

// TestCitations: no file of the repository (Go, JavaScript, the Makefile, Markdown, YAML,
// SQL, the CI scripts) cites the single file the decisions were in, nor the contract's
// files, which the repository does not hold; and every decision a file cites by its path
// exists.
func TestCitations(t *testing.T) {
	files, cited := 0, 0
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			switch name {
			case ".git", "node_modules", "bin", "data", ".demo", ".central":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".js", ".mjs", ".md", ".yaml", ".yml", ".sql", ".sh", ".py", ".css", ".html":
		default:
			if name != "Makefile" && filepath.Base(filepath.Dir(path)) != ".ci" {
				return nil
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(raw, 0) >= 0 {
			return err
		}
		files++
		for i, line := range strings.Split(string(raw), "\n") {
			for _, m := range notHeld.FindAllString(line, -1) {
				t.Errorf("%s:%d cites %s, which the repository does not hold", path, i+1, m)
			}
			for _, m := range decisionPath.FindAllStringSubmatch(line, -1) {
				cited++
				if _, err := os.Stat(filepath.Join("decisions", m[1])); err != nil {
					t.Errorf("%s:%d cites docs/decisions/%s, which does not exist", path, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 300 || cited < 100 {
		t.Fatalf("%d files read, %d citations of a decision found: the walk misses some", files, cited)
	}
	if !notHeld.MatchString("(see docs/decisions"+".md)") || !notHeld.MatchString("API"+".md: a replay") ||
		notHeld.MatchString("docs/openapi.yaml") || notHeld.MatchString("OPENAPI.md") {
		t.Fatal("the pattern of what no file may cite is wrong")
	}
}
