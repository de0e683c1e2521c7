package model

import (
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"
)

// NormalizeEmail lowercases and checks an email address (net/mail takes any character
// above ASCII, so CheckText's too).
func NormalizeEmail(field, s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", Invalid(field, "%s is required", field)
	}
	if len(s) > 254 {
		return "", Invalid(field, "%s is longer than 254 characters", field)
	}
	if err := CheckText(field, s); err != nil {
		return "", err
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return "", Invalid(field, "%s is not a valid email address", field)
	}
	return s, nil
}

// RequireText trims a required name and checks it: 1 to max characters, and text
// CheckText accepts.
func RequireText(field, s string, max int) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Invalid(field, "%s is required", field)
	}
	return s, CheckName(field, s, max)
}

// checkLength checks that s has at most max characters.
func CheckLength(field, s string, max int) error {
	if utf8.RuneCountInString(s) > max {
		return Invalid(field, "%s is longer than %d characters", field, max)
	}
	return nil
}

var slugRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// validSlug reports whether s is a URL-safe identifier: lowercase letters, digits and
// inner hyphens, 1 to 63 characters.
func ValidSlug(s string) bool { return slugRE.MatchString(s) }

var VerticalRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{1,31}$`)

// isoCountries holds the ISO 3166-1 alpha-2 codes.
var isoCountries = func() map[string]bool {
	const codes = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ " +
		"CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR " +
		"GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP " +
		"KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT " +
		"MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW " +
		"SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG " +
		"UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW"
	m := map[string]bool{}
	for _, c := range strings.Fields(codes) {
		m[c] = true
	}
	return m
}()

// normalizeCountry uppercases s and checks it is an ISO 3166-1 alpha-2 code.
func NormalizeCountry(s string) (string, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" {
		return "", Invalid("country", "country is required")
	}
	if !isoCountries[s] {
		return "", Invalid("country", "country must be an ISO 3166-1 alpha-2 code")
	}
	return s, nil
}
