package server

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/golang-jwt/jwt/v5"
)

// Authentication headers.
const (
	// canonicalAPIKey is x-svc-api-key as net/http keys it: Header.Get of a name in
	// lower case allocates its canonical form on every request.
	canonicalAPIKey = "X-Svc-Api-Key"
	bearerPrefix    = "Bearer "
)

// claims are a session token's claims.
type claims struct {
	jwt.RegisteredClaims
	TenantID string `json:"tid"`
	Role     string `json:"role"`
	Ver      int64  `json:"ver"`
	// Device and DeviceVer make a device credential: the user's token narrowed to one
	// device (docs/decisions/0126-device-credentials.md).
	Device    string `json:"dev,omitempty"`
	DeviceVer int64  `json:"dver,omitempty"`
}

// issueToken signs an 8-hour HS256 token for a user account.
func (s *Server) issueToken(u *model.UserAccount) (string, error) {
	return s.signToken(u, s.eng.Clock().Now().Add(engine.TokenLifetime), "")
}

// signToken signs an HS256 token for a user account that expires at exp. A console
// session's cookie carries the audience sessionAudience; an access token has none.
func (s *Server) signToken(u *model.UserAccount, exp time.Time, audience string) (string, error) {
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   u.ID,
			IssuedAt:  jwt.NewNumericDate(s.eng.Clock().Now()),
			ExpiresAt: jwt.NewNumericDate(exp),
			ID:        model.NewID(),
		},
		TenantID: u.TenantID, Role: u.RBACLevel, Ver: u.TokenVersion,
	}
	if audience != "" {
		c.Audience = jwt.ClaimStrings{audience}
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.jwtSecret)
}

// parseToken checks a token's signature, algorithm, expiry and audience: a session
// token (audience sessionAudience) is no access token, nor the other way round.
func (s *Server) parseToken(raw, audience string) (claims, error) {
	var c claims
	_, err := jwt.ParseWithClaims(raw, &c,
		func(*jwt.Token) (any, error) { return s.jwtSecret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(s.eng.Clock().Now),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return c, model.Errorf(model.KindTokenExpired, "the token has expired; log in again")
	case err != nil || !model.ValidID(c.Subject) || !model.ValidID(c.TenantID):
		return c, model.Errorf(model.KindUnauthorized, "invalid token")
	case audience == "" && len(c.Audience) > 0, audience != "" && !slices.Equal(c.Audience, jwt.ClaimStrings{audience}):
		return c, model.Errorf(model.KindUnauthorized, "invalid token")
	}
	return c, nil
}

// issueDeviceToken signs the token of a device credential: HS256 like a session, valid
// until the credential expires, and only while the device holds its version.
func (s *Server) issueDeviceToken(g *model.DeviceGrant) (string, error) {
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   g.UserID,
			IssuedAt:  jwt.NewNumericDate(s.eng.Clock().Now()),
			ExpiresAt: jwt.NewNumericDate(g.ExpiresAt.Time),
			ID:        model.NewID(),
		},
		TenantID: g.TenantID, Ver: g.UserVersion, Device: g.DeviceID, DeviceVer: g.Version,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.jwtSecret)
}

// authenticate resolves the principal of a request: the API key header wins over a
// bearer token.
func (s *Server) authenticate(r *http.Request) (model.Principal, error) {
	if key := r.Header.Get(canonicalAPIKey); key != "" {
		return s.eng.AuthenticateKey(r.Context(), key)
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return model.Principal{}, model.Errorf(model.KindUnauthorized, "authentication required: send an API key in x-svc-api-key or a bearer token")
	}
	if len(h) < len(bearerPrefix) || !strings.EqualFold(h[:len(bearerPrefix)], bearerPrefix) {
		return model.Principal{}, model.Errorf(model.KindUnauthorized, "the Authorization header must be a Bearer token")
	}
	c, err := s.parseToken(bearer(r), "")
	if err != nil {
		return model.Principal{}, err
	}
	if c.Device != "" {
		if !model.ValidID(c.Device) {
			return model.Principal{}, model.Errorf(model.KindUnauthorized, "invalid token")
		}
		return s.eng.AuthenticateDevice(r.Context(), model.DeviceGrant{TenantID: c.TenantID, UserID: c.Subject,
			UserVersion: c.Ver, DeviceID: c.Device, Version: c.DeviceVer})
	}
	return s.eng.AuthenticateUser(r.Context(), c.TenantID, c.Subject, c.Ver)
}

// bearer answers the token of a request's "Authorization: Bearer" header ("" without one).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < len(bearerPrefix) || !strings.EqualFold(h[:len(bearerPrefix)], bearerPrefix) {
		return ""
	}
	return strings.TrimSpace(h[len(bearerPrefix):])
}
