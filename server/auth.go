package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/golang-jwt/jwt/v5"
)

// Authentication headers.
const (
	headerAPIKey = "x-svc-api-key"
	bearerPrefix = "Bearer "
)

// claims are a session token's claims.
type claims struct {
	jwt.RegisteredClaims
	TenantID string `json:"tid"`
	Role     string `json:"role"`
	Ver      int64  `json:"ver"`
	// Device and DeviceVer make a device credential: the user's token narrowed to one
	// device (docs/decisions.md, "Device credentials").
	Device    string `json:"dev,omitempty"`
	DeviceVer int64  `json:"dver,omitempty"`
}

// issueToken signs an 8-hour HS256 token for a user account.
func (s *Server) issueToken(u *model.UserAccount) (string, error) {
	now := s.eng.Clock().Now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   u.ID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(engine.TokenLifetime)),
			ID:        model.NewID(),
		},
		TenantID: u.TenantID, Role: u.RBACLevel, Ver: u.TokenVersion,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.jwtSecret)
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
	if key := r.Header.Get(headerAPIKey); key != "" {
		return s.eng.AuthenticateKey(r.Context(), key)
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return model.Principal{}, model.Errorf(model.KindUnauthorized, "authentication required: send an API key in x-svc-api-key or a bearer token")
	}
	if len(h) < len(bearerPrefix) || !strings.EqualFold(h[:len(bearerPrefix)], bearerPrefix) {
		return model.Principal{}, model.Errorf(model.KindUnauthorized, "the Authorization header must be a Bearer token")
	}
	var c claims
	_, err := jwt.ParseWithClaims(strings.TrimSpace(h[len(bearerPrefix):]), &c,
		func(*jwt.Token) (any, error) { return s.jwtSecret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(s.eng.Clock().Now),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return model.Principal{}, model.Errorf(model.KindTokenExpired, "the token has expired; log in again")
	case err != nil || !model.ValidID(c.Subject) || !model.ValidID(c.TenantID):
		return model.Principal{}, model.Errorf(model.KindUnauthorized, "invalid token")
	case c.Device != "":
		if !model.ValidID(c.Device) {
			return model.Principal{}, model.Errorf(model.KindUnauthorized, "invalid token")
		}
		return s.eng.AuthenticateDevice(r.Context(), model.DeviceGrant{TenantID: c.TenantID, UserID: c.Subject,
			UserVersion: c.Ver, DeviceID: c.Device, Version: c.DeviceVer})
	}
	return s.eng.AuthenticateUser(r.Context(), c.TenantID, c.Subject, c.Ver)
}
