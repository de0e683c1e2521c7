package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"testing"

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
