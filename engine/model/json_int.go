package model

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Int is an integer field of a request body. JSON has a single number type and JSON
// Schema counts every number whose value is integral as an integer, so 10, 10.0, 1e1 and
// 1000e-2 all read as 10, where encoding/json takes only the first for a Go integer.
// 10.5, "10", true and a value outside int64 are refused with a *json.UnmarshalTypeError,
// which the decoder completes with the field's name (a validation_error naming it). JSON
// null leaves a *Int nil, as it does a *int.
type Int int64

// UnmarshalJSON reads an integral JSON number.
func (n *Int) UnmarshalJSON(b []byte) error {
	v, ok := JSONInteger(b)
	if !ok {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[int64]()}
	}
	*n = Int(v)
	return nil
}

// jsonKind names a JSON value as encoding/json's type errors do.
func jsonKind(b []byte) string {
	if len(b) == 0 {
		return "value"
	}
	switch b[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case '{':
		return "object"
	case '[':
		return "array"
	case 'n':
		return "null"
	}
	return "number " + string(b)
}

// maxInt64Digits is the number of decimal digits of the largest int64.
const maxInt64Digits = 19

// JSONInteger reads a JSON number literal whose value is an integer that fits in an
// int64, in any spelling JSON allows (10, -3, 10.0, 1e1, 1.5e1, 1000e-2). It works on the
// digits, exactly (no float64 rounding: 9007199254740993.0 is 9007199254740993) and in
// time bounded by the literal's length whatever its exponent. Anything else, a string
// holding a number included, is not one.
func JSONInteger(b []byte) (int64, bool) {
	n, integral, fits := ParseJSONInteger(b)
	return n, integral && fits
}

// ParseJSONInteger is JSONInteger telling a number that is not an integer (or not a
// number) from an integer outside int64.
func ParseJSONInteger(b []byte) (n int64, integral, fits bool) {
	s := string(b)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp, hasExp := strings.Cut(s, "e")
	if !hasExp {
		mant, exp, hasExp = strings.Cut(s, "E")
	}
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if !jsonDigits(intPart) || len(intPart) > 1 && intPart[0] == '0' || hasFrac && !jsonDigits(frac) {
		return 0, false, false
	}
	shift := 0 // the value is digits × 10^shift
	if hasExp {
		e := strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if !jsonDigits(e) || len(exp)-len(e) > 1 {
			return 0, false, false
		}
		e = strings.TrimLeft(e, "0")
		if len(e) > 15 {
			// No literal has this many digits to make up for it: the answer is the same
			// as for 10^15, and the arithmetic below cannot overflow.
			e = "1000000000000000"
		}
		shift, _ = strconv.Atoi(e)
		if strings.HasPrefix(exp, "-") {
			shift = -shift
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	shift -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	switch {
	case digits == "":
		return 0, true, true // zero, whatever its exponent
	case shift < 0:
		return 0, false, false // a fraction
	case len(digits)+shift > maxInt64Digits:
		return 0, true, false
	}
	digits += strings.Repeat("0", shift)
	if neg {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, true, err == nil
}

// jsonDigits reports whether s is one or more ASCII digits.
func jsonDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
