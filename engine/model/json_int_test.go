package model_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestJSONInteger(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "-0": 0, "10": 10, "-3": -3, "10.0": 10, "10.000": 10, "1e1": 10, "1E1": 10, "1e+1": 10,
		"1.5e1": 15, "1000e-2": 10, "0.0": 0, "0e999999999999999999999": 0, "0.5e1": 5, "-2.50e1": -25,
		"9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808,
		"9223372036854775807.0": 9223372036854775807, "9.223372036854775807e18": 9223372036854775807,
		"9007199254740993.0":                   9007199254740993, // exact: float64 would give ...992
		"1" + strings.Repeat("0", 18) + "e-18": 1,
	} {
		if got, ok := model.JSONInteger([]byte(in)); !ok || got != want {
			t.Errorf("JSONInteger(%s) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"10.5", "1e-1", "1.05e1", "0.1", "-0.5", "1e400", "1e19", "9223372036854775808", "-9223372036854775809",
		"9.3e18", "1e999999999999999999999", "1e-999999999999999999999",
		`"10"`, "true", "null", "[]", "{}", "", "-", "+1", "01", "1.", ".5", "1e", "1e+", "1e1.5", "1ee1", "0x10", "1_0", " 1", "Infinity", "NaN",
	} {
		if got, ok := model.JSONInteger([]byte(in)); ok {
			t.Errorf("JSONInteger(%q) = %d, want no integer", in, got)
		}
	}
}

// TestInt_UnmarshalJSON: a field of type Int takes the integral numbers and refuses the
// rest with the type error encoding/json gives an int field, naming the field.
func TestInt_UnmarshalJSON(t *testing.T) {
	type body struct {
		N *model.Int `json:"n"`
		M model.Int  `json:"m"`
	}
	for in, want := range map[string]int64{`{"n": 10}`: 10, `{"n": 10.0}`: 10, `{"n": 1e1}`: 10, `{"n": -0.0}`: 0} {
		var b body
		if err := json.Unmarshal([]byte(in), &b); err != nil || b.N == nil || int64(*b.N) != want {
			t.Errorf("%s: %v, %v; want %d", in, b.N, err, want)
		}
	}
	var b body
	if err := json.Unmarshal([]byte(`{"n": null}`), &b); err != nil || b.N != nil {
		t.Errorf("null: %v, %v", b.N, err)
	}
	for in, value := range map[string]string{`{"n": 10.5}`: "number 10.5", `{"n": "10"}`: "string", `{"n": true}`: "bool",
		`{"n": [1]}`: "array", `{"n": {}}`: "object", `{"m": 1e19}`: "number 1e19"} {
		var b body
		err := json.Unmarshal([]byte(in), &b)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Value != value || (te.Field != "n" && te.Field != "m") {
			t.Errorf("%s: %#v, want a type error on the field for %s", in, err, value)
		}
	}
	if out, err := json.Marshal(body{N: new(model.Int(7)), M: 8}); err != nil || string(out) != `{"n":7,"m":8}` {
		t.Errorf("marshal: %s, %v", out, err)
	}
}

// FuzzJSONInteger: JSONInteger answers exactly the numbers whose value (computed with
// big.Rat) is an integer in int64, and that value.
func FuzzJSONInteger(f *testing.F) {
	for _, s := range []string{"10", "10.0", "1e1", "10.5", "-0", "1e400", "9223372036854775807.0", "1000e-2",
		"9.223372036854775808e18", "0e-99999", `"1"`, "01", "1.", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := model.JSONInteger([]byte(s))
		number := s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s)) &&
			strings.TrimSpace(s) == s
		if !number {
			if ok {
				t.Fatalf("JSONInteger(%q) = %d, not being a JSON number", s, got)
			}
			return
		}
		// big.Rat works out 10^exp: keep the exponent small enough for it.
		mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
		if e, err := strconv.Atoi(exp); exp != "" && (err != nil || e > 400 || e < -400) {
			// A short literal with a huge positive exponent is zero or out of int64.
			zero := strings.Trim(strings.ReplaceAll(strings.TrimPrefix(mant, "-"), ".", ""), "0") == ""
			if ok != zero && len(s) < 300 && !strings.Contains(exp, "-") {
				t.Fatalf("JSONInteger(%q) = %d, %v", s, got, ok)
			}
			return
		}
		r, valid := new(big.Rat).SetString(s)
		if !valid {
			t.Fatalf("big.Rat does not read %q", s)
		}
		want := r.IsInt() && r.Num().IsInt64()
		if ok != want || ok && r.Num().Int64() != got {
			t.Fatalf("JSONInteger(%q) = %d, %v; the value is %s", s, got, ok, r.RatString())
		}
	})
}
