package docs_test

import (
	"encoding/json"
	"testing"

	"github.com/fieldrelay/fieldrelay/docs"
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
}
