package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
