// Package docs holds the API reference, docs/openapi.yaml, embedded so that the node serves
// it (GET /v1/openapi.json) and the tests read the same bytes.
package docs

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"go.yaml.in/yaml/v2"
)

// OpenAPIYAML is docs/openapi.yaml, the OpenAPI 3.1 document of the HTTP API.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// OpenAPIJSON returns the document converted to JSON once, keys in the order the YAML
// gives them. Every caller shares the slice: its capacity is its length, so that an
// append (a newline after an answer's body) copies it instead of writing into it.
var OpenAPIJSON = sync.OnceValues(func() ([]byte, error) {
	b, err := YAMLToJSON(OpenAPIYAML)
	return slices.Clip(b), err
})

// YAMLToJSON converts a YAML document to JSON, keeping the order of mapping keys. Keys
// that are not strings (a response status such as 200) are written as strings.
func YAMLToJSON(src []byte) ([]byte, error) {
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := appendJSON(&b, doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func appendJSON(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case yaml.MapSlice:
		b.WriteByte('{')
		for i, it := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			// YAML 1.1 reads on, off, yes, no as booleans: a key that is neither a string
			// nor an integer (a status code) is a mistake in the document.
			switch it.Key.(type) {
			case string, int:
			default:
				return fmt.Errorf("docs: mapping key %v (%T) is not a string: quote it", it.Key, it.Key)
			}
			k, err := json.Marshal(fmt.Sprint(it.Key))
			if err != nil {
				return err
			}
			b.Write(k)
			b.WriteByte(':')
			if err := appendJSON(b, it.Value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, it := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendJSON(b, it); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[any]any:
		return fmt.Errorf("docs: unordered mapping %v", v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("docs: %v: %w", v, err)
		}
		b.Write(raw)
	}
	return nil
}
