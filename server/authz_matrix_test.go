package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/server/servertest"
)

// This file holds the authorization matrix: every route of the router × every role
// (logged in by JWT) × every API-key scope (a key holding exactly that scope) ×
// no credentials, against what the permission table of docs/rules.md implies. Its expectations come
// from the tables below, written from docs/rules.md ("Roles and permissions"),
// docs/openapi.yaml (x-permission) and docs/decisions/0063-authorization-matrix.md, never
// from the permission field of
// the route table: the table here is the single source, and a route of the router with
// no entry in it fails the test.

// The permissions of docs/rules.md, spelled out here rather than taken from the engine.
const (
	mTenantAdmin   = "tenant:admin"
	mEventsRead    = "events:read"
	mEventsWrite   = "events:write"
	mWebhooks      = "webhooks:manage"
	mZonesManage   = "zones:manage"
	mZonesRead     = "zones:read"
	mAPIKeys       = "apikeys:manage"
	mDevicesManage = "devices:manage"
	mDevicesSync   = "devices:sync"
	mSyncWrite     = "sync:write"
	mMissionsView  = "missions:view"
	mMissionsMgr   = "missions:manage"
	mMissionsRecv  = "missions:receive"
	mDispatch      = "dispatch:assign"
	mTeamsRead     = "teams:read"
	mTeamsManage   = "teams:manage"
	mSettings      = "settings:dispatch"
	mUsage         = "usage:read"
	mConnReport    = "connectivity:report"
	mLocationSelf  = "location:self"
	mSMSInbound    = "sms:inbound" // a key scope that no role holds
)

// matrixAllPerms is every permission a role can hold ("company_admin: everything").
var matrixAllPerms = []string{mTenantAdmin, mEventsRead, mEventsWrite, mWebhooks, mZonesManage, mZonesRead,
	mAPIKeys, mDevicesManage, mDevicesSync, mSyncWrite, mMissionsView, mMissionsMgr, mMissionsRecv, mDispatch,
	mTeamsRead, mTeamsManage, mSettings, mUsage, mConnReport, mLocationSelf}

// matrixRolePerms is the role → permission table (docs/rules.md, Roles and permissions).
var matrixRolePerms = map[string][]string{
	"company_admin": matrixAllPerms,
	"company_tech": {mEventsRead, mEventsWrite, mWebhooks, mZonesManage, mZonesRead, mAPIKeys, mDevicesManage,
		mSyncWrite, mMissionsView, mTeamsRead, mSettings, mUsage},
	"operational_supervisor": {mEventsRead, mEventsWrite, mZonesRead, mDispatch, mMissionsView, mMissionsMgr,
		mTeamsRead, mTeamsManage, mConnReport},
	"field_operator": {mEventsRead, mEventsWrite, mZonesRead, mMissionsView, mMissionsRecv, mDevicesSync,
		mConnReport, mLocationSelf},
	"corporate_client": {mEventsRead, mMissionsView, mTeamsRead, mZonesRead, mUsage},
	"api_user":         {mEventsRead, mEventsWrite, mZonesRead, mMissionsView, mTeamsRead},
}

// matrixScopes are the key scopes: the permissions but tenant:admin, plus sms:inbound.
func matrixScopes() []string {
	var out []string
	for _, p := range matrixAllPerms {
		if p != mTenantAdmin {
			out = append(out, p)
		}
	}
	return append(out, mSMSInbound)
}

// caller is one column of the matrix.
type caller struct {
	name   string
	role   string // a user's role; "" for a key or nobody
	key    bool
	perms  map[string]bool
	header []string
	// teamA: a member of team A, the team of the probes' mission, member and device.
	teamA bool
}

func (c caller) has(p string) bool { return c.perms[p] }
func (c caller) user() bool        { return c.role != "" }

// outcome is what a caller should get: allowed (anything but 401/403), or an error.
type outcome struct {
	allow  bool
	status int
	code   string
}

var (
	allowed   = outcome{allow: true}
	forbidden = outcome{status: http.StatusForbidden, code: "forbidden"}
	hidden    = outcome{status: http.StatusNotFound, code: "not_found"}
)

// access is a route's rule: public, or a check of an authenticated caller (a caller
// without credentials gets 401 unauthorized on every route that is not public).
type access struct {
	public bool
	check  func(c caller) outcome
	// perms are the permissions of need, one of which admits a caller.
	perms []string
}

var open = access{public: true}

// anyone admits every authenticated caller.
var anyone = access{check: func(caller) outcome { return allowed }}

// need admits a caller holding any of perms.
func need(perms ...string) access {
	return access{perms: perms, check: func(c caller) outcome {
		for _, p := range perms {
			if c.has(p) {
				return allowed
			}
		}
		return forbidden
	}}
}

// matrixRoutes is the route → required permission table, written from docs/rules.md,
// docs/openapi.yaml and docs/decisions/0063-authorization-matrix.md.
var matrixRoutes = map[string]access{
	"GET /healthz":         open,
	"GET /readyz":          open,
	"GET /metrics":         open, // guarded by x-svc-internal (a 404 without it), not by credentials
	"GET /v1/openapi.json": open,
	// The SMS gateways' webhooks: their signature is the credential (a 404 on a node whose
	// gateway is another driver, as here).
	"POST /v1/sms/android/:tenant_id":       open,
	"POST /v1/sms/twilio/:tenant_id":        open,
	"POST /v1/sms/twilio/:tenant_id/status": open,
	"GET /v1/sms/outbound":                  need(mEventsRead),
	"GET /":                                 open, // a redirect to the console
	"GET /console":                          open,
	"GET /console/*file":                    open, // the console logs in
	"GET /field":                            open,
	"GET /field/*file":                      open, // the field app signs in
	"GET /shared/:file":                     open, // what the two apps share
	"POST /v1/auth/login":                   open,
	"POST /v1/auth/forgot-password":         open,
	"POST /v1/auth/reset-password":          open,
	"POST /v1/auth/verify":                  open,
	// Change password (authenticated): a user's own password; an API key has none.
	"POST /v1/auth/change-password": {check: func(c caller) outcome {
		if c.user() {
			return allowed
		}
		return forbidden
	}},

	// The console's session (a user's; an API key has none); refresh reads its cookie.
	"POST /v1/auth/session": {check: func(c caller) outcome {
		if c.user() {
			return allowed
		}
		return forbidden
	}},
	"POST /v1/auth/refresh": open,
	"POST /v1/auth/logout": {check: func(c caller) outcome {
		if c.user() {
			return allowed
		}
		return forbidden
	}},

	"GET /v1/tenant/me":                  anyone,
	"PATCH /v1/tenant/dispatch-settings": need(mSettings),
	"POST /v1/tenant/users":              need(mTenantAdmin),
	"GET /v1/tenant/users":               need(mTenantAdmin),
	"PATCH /v1/tenant/users/:id":         need(mTenantAdmin),
	"GET /v1/tenant/retention":           need(mTenantAdmin),
	"PATCH /v1/tenant/retention":         need(mTenantAdmin),
	"GET /v1/tenant/usage":               need(mUsage),
	"GET /v1/tenant/billing":             need(mTenantAdmin),
	"GET /v1/tenant/api-keys":            need(mAPIKeys),
	"POST /v1/tenant/api-keys":           need(mAPIKeys),
	"POST /v1/tenant/api-keys/rotate":    need(mAPIKeys),
	"DELETE /v1/tenant/api-keys/:id":     need(mAPIKeys),
	"PUT /v1/tenant/upstream":            {check: need(mTenantAdmin).check},
	"GET /v1/tenant/upstream":            {check: need(mTenantAdmin).check},
	"GET /v1/tenant/upstream/status":     {check: need(mTenantAdmin).check},

	"POST /v1/events":    need(mEventsWrite),
	"GET /v1/events":     need(mEventsRead),
	"GET /v1/events/:id": need(mEventsRead),
	// Closing an incident by hand: a supervisor's (missions:manage).
	"POST /v1/events/:id/close": need(mMissionsMgr),
	// Parsers describe how events are read: events:read (the contract names no permission).
	"GET /v1/parsers": need(mEventsRead),
	"GET /v1/stream":  need(mEventsRead),

	"POST /v1/zones":               need(mZonesManage),
	"GET /v1/zones":                need(mZonesRead),
	"GET /v1/tenant/zones":         need(mZonesRead),
	"GET /v1/zones/:code":          need(mZonesRead),
	"PATCH /v1/zones/:code":        need(mZonesManage),
	"DELETE /v1/zones/:code":       need(mZonesManage),
	"POST /v1/connectivity/report": need(mConnReport),
	// Zone status: every role that reads zones.
	"GET /v1/connectivity/status": need(mZonesRead),

	"POST /v1/teams/dispatch":       need(mDispatch),
	"POST /v1/teams/dispatch/score": need(mDispatch),
	"POST /v1/teams":                need(mTeamsManage),
	"GET /v1/teams":                 need(mTeamsRead),
	"GET /v1/teams/:id":             need(mTeamsRead),
	"PATCH /v1/teams/:id":           need(mTeamsManage),
	"POST /v1/teams/:id/members":    need(mTeamsManage),
	// teams:manage moves any member; location:self a user's own member record (an API
	// key owns none). The probe moves the field operator's own member.
	"PATCH /v1/teams/:id/members/:memberId/location": {check: func(c caller) outcome {
		if c.has(mTeamsManage) || (c.user() && c.has(mLocationSelf)) {
			return allowed
		}
		return forbidden
	}},

	"POST /v1/webhooks":               need(mWebhooks),
	"GET /v1/webhooks":                need(mWebhooks),
	"GET /v1/webhooks/:id":            need(mWebhooks),
	"PATCH /v1/webhooks/:id":          need(mWebhooks),
	"DELETE /v1/webhooks/:id":         need(mWebhooks),
	"POST /v1/webhooks/:id/test":      need(mWebhooks),
	"GET /v1/webhooks/:id/deliveries": need(mWebhooks),
	"GET /v1/missions":                need(mMissionsView),
	"GET /v1/missions/:id":            need(mMissionsView),
	"PATCH /v1/missions/:id/status":   need(mMissionsMgr, mMissionsRecv),
	// Alerts: read with the events, taken by those who dispatch.
	"GET /v1/alerts":                 need(mEventsRead),
	"POST /v1/alerts/:id/ack":        need(mDispatch),
	"POST /v1/missions/:id/messages": need(mMissionsMgr, mMissionsRecv),
	"GET /v1/missions/:id/messages":  need(mMissionsView),
	"GET /v1/missions/:id/crew":      need(mMissionsView),

	// Sync batch: an API key holding sync:write; a user token is api_key_required.
	"POST /v1/sync/batch": {check: func(c caller) outcome {
		switch {
		case !c.key:
			return outcome{status: http.StatusForbidden, code: "api_key_required"}
		case c.has(mSyncWrite):
			return allowed
		}
		return forbidden
	}},
	"GET /v1/sync/status": need(mSyncWrite, mEventsRead),

	// Devices: devices:manage registers any device; a user with devices:sync one of its
	// own team (an API key needs devices:manage).
	"POST /v1/devices/register": {check: func(c caller) outcome {
		if c.has(mDevicesManage) || (c.user() && c.has(mDevicesSync)) {
			return allowed
		}
		return forbidden
	}},
	"POST /v1/devices/sync": need(mDevicesSync, mDevicesManage),
	// A queue is read by devices:manage, a key with devices:sync, and the members of the
	// device's team; anyone else does not learn that the device exists (404).
	"GET /v1/devices/:id/queue": {check: func(c caller) outcome {
		if c.has(mDevicesManage) || (c.key && c.has(mDevicesSync)) || (c.user() && c.teamA) {
			return allowed
		}
		return hidden
	}},

	// A device credential is issued to a user who may sync the device (a key: forbidden;
	// a user who may not: the device is not found); devices:manage revokes it.
	"POST /v1/devices/:id/credential": {check: func(c caller) outcome {
		switch {
		case c.key:
			return forbidden
		case c.has(mDevicesManage) || (c.has(mDevicesSync) && c.teamA):
			return allowed
		}
		return hidden
	}},
	"DELETE /v1/devices/:id/credential": need(mDevicesManage),
	"GET /v1/devices":                   need(mDevicesManage),
	"POST /v1/devices/downstream":       need(mDevicesManage),
	"GET /v1/dispatch-requests/:id":     need(mEventsRead),

	// The SMS gateway's key: sms:inbound, which no role holds.
	"POST /v1/sms/inbound": {check: func(c caller) outcome {
		if c.key && c.has(mSMSInbound) {
			return allowed
		}
		return forbidden
	}},
}

// matrixEngineChecked are the routes whose permission the route table leaves to the use
// case (any authenticated caller), though the matrix wants one of some permissions:
// which one depends on the device named in the request.
var matrixEngineChecked = map[string]bool{
	"GET /v1/sync/status":   true, // sync:write or events:read, the batch's device's rules
	"POST /v1/devices/sync": true, // devices:sync for a device of the user's team, or devices:manage
}

// TestAuthzMatrix_RouteTableHoldsThePermission checks that a route which one of some
// permissions opens holds them in the route table, the one place that checks them
// (docs/decisions/0146-one-way-through-request.md): the same permissions as the matrix
// wants, PATCH /v1/missions/:id/status's missions:manage or missions:receive included.
// Only the routes of matrixEngineChecked leave the check to their use case.
func TestAuthzMatrix_RouteTableHoldsThePermission(t *testing.T) {
	n := newNode(t)
	for _, r := range server.Routes(n.srv) {
		name := r.Method + " " + r.Path
		want := matrixRoutes[name].perms
		if len(want) == 0 {
			continue
		}
		got := slices.Sorted(slices.Values(r.Perms))
		want = slices.Sorted(slices.Values(want))
		switch {
		case len(got) == 0 && !matrixEngineChecked[name]:
			t.Errorf("%s: the route table admits any authenticated caller; want one of %v there", name, want)
		case len(got) > 0 && !slices.Equal(got, want):
			t.Errorf("%s: the route table wants one of %v, the matrix %v", name, got, want)
		}
	}
	for _, r := range server.Routes(n.srv) {
		if r.Method == "PATCH" && r.Path == "/v1/missions/:id/status" {
			if !slices.Contains(r.Perms, mMissionsMgr) || !slices.Contains(r.Perms, mMissionsRecv) || len(r.Perms) != 2 {
				t.Fatalf("PATCH /v1/missions/:id/status wants %v in the route table, want missions:manage or missions:receive", r.Perms)
			}
			return
		}
	}
	t.Fatal("no route PATCH /v1/missions/:id/status")
}

// matrixFix holds the ids the probes use, all of tenant A.
type matrixFix struct {
	alert                            string
	event, missionA, missionB, codeA string
	teamA, teamB, memberOp, memberB  string
	zone, webhook, deviceA, deviceB  string
	batch, user, keyID               string
}

// probe is the request sent to a route.
type probe struct {
	path string
	body any
}

// matrixProbes gives each route a request that an allowed caller may answer with a 2xx,
// 400 or 404 but that changes nothing: bodies fail validation, deletions name nothing.
func matrixProbes(fx *matrixFix) map[string]probe {
	none := "0190a000-0000-7000-8000-000000000001"
	return map[string]probe{
		"GET /healthz":                  {path: "/healthz"},
		"GET /readyz":                   {path: "/readyz"},
		"GET /metrics":                  {path: "/metrics"},
		"GET /v1/openapi.json":          {path: "/v1/openapi.json"},
		"GET /":                         {path: "/"},
		"GET /console":                  {path: "/console"},
		"GET /console/*file":            {path: "/console/"},
		"GET /field":                    {path: "/field"},
		"GET /field/*file":              {path: "/field/"},
		"GET /shared/:file":             {path: "/shared/roles.json"},
		"POST /v1/auth/login":           {path: "/v1/auth/login", body: map[string]any{}},
		"POST /v1/auth/forgot-password": {path: "/v1/auth/forgot-password", body: map[string]any{}},
		"POST /v1/auth/reset-password":  {path: "/v1/auth/reset-password", body: map[string]any{}},
		"POST /v1/auth/verify":          {path: "/v1/auth/verify", body: map[string]any{}},
		"POST /v1/auth/change-password": {path: "/v1/auth/change-password", body: map[string]any{}},
		// refresh and logout get a body that is no object: a 400 that proves the caller got
		// past the authorization, and a logout that does not end the caller's token for the
		// rest of the matrix.
		"POST /v1/auth/session":                 {path: "/v1/auth/session", body: map[string]any{}},
		"POST /v1/auth/refresh":                 {path: "/v1/auth/refresh", body: []any{}},
		"POST /v1/auth/logout":                  {path: "/v1/auth/logout", body: []any{}},
		"POST /v1/sms/android/:tenant_id":       {path: "/v1/sms/android/" + none, body: map[string]any{}},
		"POST /v1/sms/twilio/:tenant_id":        {path: "/v1/sms/twilio/" + none, body: map[string]any{}},
		"POST /v1/sms/twilio/:tenant_id/status": {path: "/v1/sms/twilio/" + none + "/status", body: map[string]any{}},
		"GET /v1/sms/outbound":                  {path: "/v1/sms/outbound"},

		"GET /v1/tenant/me":                  {path: "/v1/tenant/me"},
		"PATCH /v1/tenant/dispatch-settings": {path: "/v1/tenant/dispatch-settings", body: map[string]any{}},
		"POST /v1/tenant/users":              {path: "/v1/tenant/users", body: map[string]any{}},
		"GET /v1/tenant/users":               {path: "/v1/tenant/users"},
		"PATCH /v1/tenant/users/:id":         {path: "/v1/tenant/users/" + fx.user, body: map[string]any{}},
		"GET /v1/tenant/retention":           {path: "/v1/tenant/retention"},
		"PATCH /v1/tenant/retention":         {path: "/v1/tenant/retention", body: map[string]any{}},
		"GET /v1/tenant/usage":               {path: "/v1/tenant/usage"},
		"GET /v1/tenant/billing":             {path: "/v1/tenant/billing"},
		"GET /v1/tenant/api-keys":            {path: "/v1/tenant/api-keys"},
		"POST /v1/tenant/api-keys":           {path: "/v1/tenant/api-keys", body: map[string]any{"scopes": []string{"nope"}}},
		"POST /v1/tenant/api-keys/rotate":    {path: "/v1/tenant/api-keys/rotate", body: map[string]any{"grace_period_minutes": 0}},
		"DELETE /v1/tenant/api-keys/:id":     {path: "/v1/tenant/api-keys/" + none},
		"PUT /v1/tenant/upstream":            {path: "/v1/tenant/upstream", body: map[string]any{"url": "not a url"}},
		"GET /v1/tenant/upstream":            {path: "/v1/tenant/upstream"},
		"GET /v1/tenant/upstream/status":     {path: "/v1/tenant/upstream/status"},

		"POST /v1/events":           {path: "/v1/events", body: map[string]any{}},
		"GET /v1/events":            {path: "/v1/events"},
		"GET /v1/events/:id":        {path: "/v1/events/" + fx.event},
		"POST /v1/events/:id/close": {path: "/v1/events/" + none + "/close", body: map[string]any{"disposition": "resolved"}},
		"GET /v1/parsers":           {path: "/v1/parsers"},
		"GET /v1/stream":            {path: "/v1/stream"},

		"POST /v1/zones":               {path: "/v1/zones", body: map[string]any{}},
		"GET /v1/zones":                {path: "/v1/zones"},
		"GET /v1/tenant/zones":         {path: "/v1/tenant/zones"},
		"GET /v1/zones/:code":          {path: "/v1/zones/" + fx.zone},
		"PATCH /v1/zones/:code":        {path: "/v1/zones/" + fx.zone, body: map[string]any{}},
		"DELETE /v1/zones/:code":       {path: "/v1/zones/ghost"},
		"POST /v1/connectivity/report": {path: "/v1/connectivity/report", body: map[string]any{}},
		"GET /v1/connectivity/status":  {path: "/v1/connectivity/status?zone_code=" + fx.zone},

		"POST /v1/teams/dispatch":       {path: "/v1/teams/dispatch", body: map[string]any{}},
		"POST /v1/teams/dispatch/score": {path: "/v1/teams/dispatch/score", body: map[string]any{}},
		"POST /v1/teams":                {path: "/v1/teams", body: map[string]any{}},
		"GET /v1/teams":                 {path: "/v1/teams"},
		"GET /v1/teams/:id":             {path: "/v1/teams/" + fx.teamA},
		"PATCH /v1/teams/:id":           {path: "/v1/teams/" + fx.teamA, body: map[string]any{}},
		"POST /v1/teams/:id/members":    {path: "/v1/teams/" + fx.teamA + "/members", body: map[string]any{}},
		"PATCH /v1/teams/:id/members/:memberId/location": {
			path: "/v1/teams/" + fx.teamA + "/members/" + fx.memberOp + "/location", body: map[string]any{}},

		"POST /v1/webhooks":               {path: "/v1/webhooks", body: map[string]any{}},
		"GET /v1/webhooks":                {path: "/v1/webhooks"},
		"GET /v1/webhooks/:id":            {path: "/v1/webhooks/" + fx.webhook},
		"PATCH /v1/webhooks/:id":          {path: "/v1/webhooks/" + fx.webhook, body: map[string]any{"url": "not a url"}},
		"DELETE /v1/webhooks/:id":         {path: "/v1/webhooks/" + none},
		"POST /v1/webhooks/:id/test":      {path: "/v1/webhooks/" + none + "/test"},
		"GET /v1/webhooks/:id/deliveries": {path: "/v1/webhooks/" + fx.webhook + "/deliveries"},
		"GET /v1/missions":                {path: "/v1/missions"},
		"GET /v1/missions/:id":            {path: "/v1/missions/" + fx.missionA},
		"PATCH /v1/missions/:id/status":   {path: "/v1/missions/" + fx.missionA + "/status", body: map[string]any{}},
		"GET /v1/alerts":                  {path: "/v1/alerts"},
		"POST /v1/alerts/:id/ack":         {path: "/v1/alerts/" + none + "/ack"},
		"POST /v1/missions/:id/messages":  {path: "/v1/missions/" + fx.missionA + "/messages", body: map[string]any{}},
		"GET /v1/missions/:id/messages":   {path: "/v1/missions/" + fx.missionA + "/messages"},
		"GET /v1/missions/:id/crew":       {path: "/v1/missions/" + fx.missionA + "/crew"},

		"POST /v1/sync/batch":               {path: "/v1/sync/batch", body: map[string]any{}},
		"GET /v1/sync/status":               {path: "/v1/sync/status?batch_id=" + fx.batch},
		"POST /v1/devices/register":         {path: "/v1/devices/register", body: map[string]any{}},
		"POST /v1/devices/sync":             {path: "/v1/devices/sync", body: map[string]any{"device_id": fx.deviceA}},
		"GET /v1/devices/:id/queue":         {path: "/v1/devices/" + fx.deviceA + "/queue"},
		"POST /v1/devices/:id/credential":   {path: "/v1/devices/" + fx.deviceA + "/credential"},
		"DELETE /v1/devices/:id/credential": {path: "/v1/devices/" + fx.deviceA + "/credential"},
		"GET /v1/devices":                   {path: "/v1/devices"},
		"POST /v1/devices/downstream":       {path: "/v1/devices/downstream", body: map[string]any{"device_id": none}},
		"GET /v1/dispatch-requests/:id":     {path: "/v1/dispatch-requests/" + none},
		"POST /v1/sms/inbound":              {path: "/v1/sms/inbound", body: map[string]any{}},
	}
}

// answer is what a probe got.
type answer struct {
	status        int
	code, message string
	contentType   string
	header        http.Header
	raw           []byte
}

// call sends one request and reads the error envelope of a JSON answer; a stream or a
// page is closed once its headers are in.
func call(t testing.TB, n *node, method, path string, body any, headers ...string) answer {
	t.Helper()
	return callRaw(t, n, method, path, body, headers...)
}

// callRaw is call keeping the body of a JSON answer. A string body is sent as it is.
func callRaw(t testing.TB, n *node, method, path string, body any, headers ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := servertest.NewRequest(t, ctx, method, n.url+path, body, headers...)
	client := *n.client // redirects are answers here, not followed
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), header: resp.Header}
	if strings.HasPrefix(a.contentType, "application/json") {
		var env struct{ Error, Message string }
		a.raw, _ = io.ReadAll(resp.Body)
		_ = json.Unmarshal(a.raw, &env)
		a.code, a.message = env.Error, env.Message
	}
	return a
}

// routeKey names a route as the tables do.
func routeKey(method, path string) string { return method + " " + path }

// matrixWorld is one node with tenants A and B, every caller of A and the fixtures.
type matrixWorld struct {
	n        *node
	a, b     *tenantFix
	fx       *matrixFix
	callers  []caller
	bAdmin   []string
	bKey     []string
	bSMSKey  []string
	opHeader []string
}

// caller returns the caller of that name.
func (w *matrixWorld) caller(name string) caller {
	for _, c := range w.callers {
		if c.name == name {
			return c
		}
	}
	w.n.t.Fatalf("no caller %q", name)
	return caller{}
}

func newMatrixWorld(t *testing.T) *matrixWorld {
	n := newNode(t)
	w := &matrixWorld{n: n, a: n.addTenant("acme", "mission-critical"), b: n.addTenant("other", "mission-critical"),
		fx: &matrixFix{zone: "north"}}
	a, fx := w.a, w.fx
	key := []string{"x-svc-api-key", a.key}

	// A user of each role, logged in.
	userIDs := map[string]string{}
	for _, role := range slices.Sorted(mapKeys(matrixRolePerms)) {
		res := n.do("POST", "/v1/auth/login", map[string]any{"email": a.emails[role], "password": testPassword}).want(http.StatusOK)
		userIDs[role] = res.obj("user")["id"].(string)
		perms := map[string]bool{}
		for _, p := range matrixRolePerms[role] {
			perms[p] = true
		}
		c := caller{name: "role " + role, role: role, perms: perms,
			header: []string{"Authorization", "Bearer " + res.str("token")}, teamA: role == "field_operator"}
		w.callers = append(w.callers, c)
		if role == "field_operator" {
			w.opHeader = c.header
		}
	}
	fx.user = userIDs["corporate_client"]
	// A key of each scope.
	for _, s := range matrixScopes() {
		w.callers = append(w.callers, caller{name: "key " + s, key: true, perms: map[string]bool{s: true},
			header: []string{"x-svc-api-key", n.keyWith(a, s)}})
	}
	w.callers = append(w.callers, caller{name: "nobody", perms: map[string]bool{}})

	// Fixtures, made through the API with the tenant's first key.
	n.do("POST", "/v1/zones", zoneBody(fx.zone), key...).want(http.StatusCreated)
	teamA := n.do("POST", "/v1/teams", map[string]any{"name": "Alpha", "verticals": []string{"emergency"},
		"members": []any{map[string]any{"name": "Ann", "user_id": userIDs["field_operator"], "phone": "+33600000001"}}},
		key...).want(http.StatusCreated)
	fx.teamA = teamA.str("id")
	fx.memberOp = teamA.body["members"].([]any)[0].(map[string]any)["id"].(string)
	teamB := n.do("POST", "/v1/teams", map[string]any{"name": "Bravo", "verticals": []string{"emergency"},
		"members": []any{map[string]any{"name": "Bob", "phone": "+33600000002"}}}, key...).want(http.StatusCreated)
	fx.teamB = teamB.str("id")
	fx.memberB = teamB.body["members"].([]any)[0].(map[string]any)["id"].(string)
	fx.event = n.do("POST", "/v1/events", eventBody("matrix-1"), key...).want(http.StatusCreated).str("event_id")
	other := n.do("POST", "/v1/events", eventBody("matrix-2"), key...).want(http.StatusCreated).str("event_id")
	fx.missionA = n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": fx.event, "team_id": fx.teamA},
		key...).want(http.StatusCreated).str("mission_id")
	fx.missionB = n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": other, "team_id": fx.teamB},
		key...).want(http.StatusCreated).str("mission_id")
	fx.codeA = n.do("GET", "/v1/missions/"+fx.missionA, nil, key...).want(http.StatusOK).str("code")
	fx.webhook = n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/hook"}, key...).
		want(http.StatusCreated).str("id")
	fx.deviceA = n.do("POST", "/v1/devices/register", map[string]any{"name": "tablet A", "platform": "android",
		"team_id": fx.teamA}, key...).want(http.StatusCreated).str("device_id")
	fx.deviceB = n.do("POST", "/v1/devices/register", map[string]any{"name": "tablet B", "platform": "android",
		"team_id": fx.teamB}, key...).want(http.StatusCreated).str("device_id")
	fx.batch = n.do("POST", "/v1/sync/batch", syncBatch(syncItem("matrix-3")), key...).want(http.StatusOK).str("batch_id")
	fx.alert = n.do("GET", "/v1/alerts?status=all", nil, key...).want(http.StatusOK).items()[0]["id"].(string)
	keys := n.do("GET", "/v1/tenant/api-keys", nil, key...).want(http.StatusOK).items()
	fx.keyID = keys[len(keys)-1]["id"].(string)

	w.bAdmin = []string{"Authorization", n.login(w.b.emails["company_admin"])}
	w.bKey = []string{"x-svc-api-key", w.b.key}
	w.bSMSKey = []string{"x-svc-api-key", n.keyWith(w.b, mSMSInbound)}
	return w
}

// jsonOf encodes v.
func jsonOf(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mapKeys[M ~map[K]V, K comparable, V any](m M) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestAuthzMatrix_TableCoversRouter: every route of the router has an entry in the test's
// table and a probe, and every entry (but those pending on another branch) names a route
// of the router.
func TestAuthzMatrix_TableCoversRouter(t *testing.T) {
	n := newNode(t)
	missing, stale := matrixCoverage(server.Routes(n.srv), matrixRoutes, matrixProbes(&matrixFix{}))
	for _, m := range missing {
		t.Errorf("%s: a route without an entry in the authorization table or a probe (matrixRoutes, matrixProbes)", m)
	}
	for _, s := range stale {
		t.Errorf("%s: in the authorization table but not in the router", s)
	}
}

// matrixCoverage compares the router's routes with the table and the probes.
func matrixCoverage(routes []server.RouteInfo, table map[string]access, probes map[string]probe) (missing, stale []string) {
	inRouter := map[string]bool{}
	for _, r := range routes {
		k := routeKey(r.Method, r.Path)
		inRouter[k] = true
		_, ok := table[k]
		_, probed := probes[k]
		if !ok || !probed {
			missing = append(missing, k)
		}
	}
	for k := range table {
		if !inRouter[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	return missing, stale
}

// TestAuthzMatrix_CoverageFailsOnANewRoute holds the rule that the table is the single
// source: a route added to the router without an entry is reported.
func TestAuthzMatrix_CoverageFailsOnANewRoute(t *testing.T) {
	routes := []server.RouteInfo{{Method: "GET", Path: "/v1/tenant/me"}, {Method: "POST", Path: "/v1/brand-new"}}
	missing, stale := matrixCoverage(routes, map[string]access{"GET /v1/tenant/me": anyone, "GET /v1/gone": anyone},
		map[string]probe{"GET /v1/tenant/me": {path: "/v1/tenant/me"}})
	if !slices.Equal(missing, []string{"POST /v1/brand-new"}) || !slices.Equal(stale, []string{"GET /v1/gone"}) {
		t.Fatalf("missing %v, stale %v", missing, stale)
	}
}

// TestAuthzMatrix runs every route of the router for every caller.
func TestAuthzMatrix(t *testing.T) {
	w := newMatrixWorld(t)
	n, doc := w.n, mustDoc(t)
	kin, kinSeen := loadKinDoc(t, n), map[string]bool{}
	probes := matrixProbes(w.fx)
	routes := server.Routes(n.srv)
	cells := 0
	for _, r := range routes {
		k := routeKey(r.Method, r.Path)
		rule, ok := matrixRoutes[k]
		pr, probed := probes[k]
		if !ok || !probed {
			t.Errorf("%s: no entry in the authorization table (see TestAuthzMatrix_TableCoversRouter)", k)
			continue
		}
		for _, c := range w.callers {
			want := allowed
			switch {
			case rule.public:
			case c.header == nil:
				want = outcome{status: http.StatusUnauthorized, code: "unauthorized"}
			default:
				want = rule.check(c)
			}
			got := call(t, n, r.Method, pr.path, pr.body, c.header...)
			cells++
			// Every answer is one the API reference documents for the route (its status
			// and, for JSON, its schema; the document itself is validated once by
			// TestOpenAPI_Served: 27 times costs seconds under -race).
			ct := got.contentType
			if k == "GET /v1/openapi.json" {
				ct = ""
			}
			if err := doc.checkAnswer(r.Method, r.Path, got.status, ct, got.raw); err != nil {
				t.Errorf("as %s: %v", c.name, err)
			}
			// kin-openapi checks each kind of answer of a route once (route, status and
			// code; it compiles the schema on each call, which costs seconds under -race).
			if kk := k + " " + strconv.Itoa(got.status) + " " + got.code; !kinSeen[kk] {
				kinSeen[kk] = true
				if err := kin.checkAnswer(t, kinRequest(t, r.Method, pr.path, pr.body, c.header), got); err != nil {
					t.Errorf("as %s: kin-openapi: %v", c.name, err)
				}
			}
			if want.allow {
				if !allowedAnswer(k, got) {
					t.Errorf("%s as %s: %d %s (%s), want it allowed", k, c.name, got.status, got.code, got.message)
				}
				continue
			}
			if got.status != want.status || got.code != want.code {
				t.Errorf("%s as %s: %d %s (%s), want %d %s", k, c.name, got.status, got.code, got.message, want.status, want.code)
			}
		}
	}
	t.Logf("authorization matrix: %d routes × %d callers (6 roles, %d key scopes, no credentials) = %d requests",
		len(routes), len(w.callers), len(matrixScopes()), cells)
}

// allowedAnswer reports whether an answer shows the caller was let through: no 401,
// 403, 405 or 5xx (but the readiness probe's 503 on a node without a scheduler), and no
// 404 from the router itself.
func allowedAnswer(route string, a answer) bool {
	switch {
	case a.status == http.StatusUnauthorized, a.status == http.StatusForbidden,
		a.status == http.StatusMethodNotAllowed, a.status == http.StatusTooManyRequests:
		return false
	case a.status >= 500:
		return route == "GET /readyz" && a.status == http.StatusServiceUnavailable
	case a.status == http.StatusNotFound && strings.HasPrefix(a.message, "no such route"):
		return route == "GET /metrics" // without x-svc-internal, the 404 of an unknown route
	}
	return true
}

// TestAuthzMatrix_SpecialRules holds the rules that depend on the resource rather than
// on the permission alone.
func TestAuthzMatrix_SpecialRules(t *testing.T) {
	w := newMatrixWorld(t)
	n, fx, op := w.n, w.fx, w.opHeader
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"AnotherTeamsMissionIsHidden", "GET", "/v1/missions/" + fx.missionB, nil, 404, "not_found"},
		{"AnotherTeamsMissionCannotMove", "PATCH", "/v1/missions/" + fx.missionB + "/status",
			map[string]any{"status": "ACK"}, 404, "not_found"},
		{"OwnMissionMoves", "PATCH", "/v1/missions/" + fx.missionA + "/status", map[string]any{"status": "NOPE"}, 400, "validation_error"},
		{"LocationOfAnotherMember", "PATCH", "/v1/teams/" + fx.teamB + "/members/" + fx.memberB + "/location",
			map[string]any{"lat": 45.0, "lng": 4.0}, 403, "forbidden"},
		{"AnotherTeamsDeviceQueue", "GET", "/v1/devices/" + fx.deviceB + "/queue", nil, 404, "not_found"},
		{"AnotherTeamsDeviceSync", "POST", "/v1/devices/sync", map[string]any{"device_id": fx.deviceB, "items": []any{}}, 404, "not_found"},
		{"RegisterForAnotherTeam", "POST", "/v1/devices/register",
			map[string]any{"name": "x", "platform": "android", "team_id": fx.teamB}, 403, "forbidden"},
	}
	for _, tc := range cases {
		t.Run("FieldOperator/"+tc.name, func(t *testing.T) {
			got := call(t, n, tc.method, tc.path, tc.body, op...)
			if got.status != tc.status || got.code != tc.code {
				t.Fatalf("%d %s (%s), want %d %s", got.status, got.code, got.message, tc.status, tc.code)
			}
		})
	}
	t.Run("FieldOperator/ListFilteredToAnotherTeamIsEmpty", func(t *testing.T) {
		n := n.on(t)
		if c := n.do("GET", "/v1/missions?team_id="+fx.teamB, nil, op...).want(http.StatusOK).num("count"); c != 0 {
			t.Fatalf("a field operator lists %v missions of another team", c)
		}
		if c := n.do("GET", "/v1/missions", nil, op...).want(http.StatusOK).num("count"); c != 1 {
			t.Fatalf("a field operator lists %v missions, want its team's one", c)
		}
	})
	t.Run("KeyWithMissionsReceiveIsNotHeldToTeams", func(t *testing.T) {
		got := call(t, n, "PATCH", "/v1/missions/"+fx.missionB+"/status", map[string]any{"status": "NOPE"},
			"x-svc-api-key", n.keyWith(w.a, mMissionsRecv))
		if got.status != http.StatusBadRequest {
			t.Fatalf("%d %s, want 400 (past the permission and the team)", got.status, got.code)
		}
	})
}

// crossProbe is a request naming tenant A's resources.
type crossProbe struct {
	method, path string
	body         any
	// adminOnly: the route needs tenant:admin, which no key holds.
	adminOnly bool
	// sms: sent with tenant B's SMS gateway key.
	sms bool
}

// TestAuthzMatrix_OtherTenantsIDs calls every route that names a resource with tenant A's
// ids, as tenant B's admin and B's first key: 404 not_found, never a hint that it exists.
func TestAuthzMatrix_OtherTenantsIDs(t *testing.T) {
	w := newMatrixWorld(t)
	n, fx := w.n, w.fx
	probes := map[string]crossProbe{
		"GET /v1/events/:id":              {"GET", "/v1/events/" + fx.event, nil, false, false},
		"POST /v1/events/:id/close":       {"POST", "/v1/events/" + fx.event + "/close", map[string]any{"disposition": "resolved"}, false, false},
		"GET /v1/zones/:code":             {"GET", "/v1/zones/" + fx.zone, nil, false, false},
		"PATCH /v1/zones/:code":           {"PATCH", "/v1/zones/" + fx.zone, map[string]any{"name": "mine"}, false, false},
		"DELETE /v1/zones/:code":          {"DELETE", "/v1/zones/" + fx.zone, nil, false, false},
		"GET /v1/connectivity/status":     {"GET", "/v1/connectivity/status?zone_code=" + fx.zone, nil, false, false},
		"GET /v1/webhooks/:id":            {"GET", "/v1/webhooks/" + fx.webhook, nil, false, false},
		"PATCH /v1/webhooks/:id":          {"PATCH", "/v1/webhooks/" + fx.webhook, map[string]any{"enabled": false}, false, false},
		"DELETE /v1/webhooks/:id":         {"DELETE", "/v1/webhooks/" + fx.webhook, nil, false, false},
		"POST /v1/webhooks/:id/test":      {"POST", "/v1/webhooks/" + fx.webhook + "/test", nil, false, false},
		"GET /v1/webhooks/:id/deliveries": {"GET", "/v1/webhooks/" + fx.webhook + "/deliveries", nil, false, false},
		"GET /v1/missions/:id":            {"GET", "/v1/missions/" + fx.missionA, nil, false, false},
		"PATCH /v1/missions/:id/status":   {"PATCH", "/v1/missions/" + fx.missionA + "/status", map[string]any{"status": "ACK"}, false, false},
		"POST /v1/alerts/:id/ack":         {"POST", "/v1/alerts/" + fx.alert + "/ack", nil, false, false},
		"POST /v1/missions/:id/messages":  {"POST", "/v1/missions/" + fx.missionA + "/messages", map[string]any{"text": "mine"}, false, false},
		"GET /v1/missions/:id/messages":   {"GET", "/v1/missions/" + fx.missionA + "/messages", nil, false, false},
		"GET /v1/missions/:id/crew":       {"GET", "/v1/missions/" + fx.missionA + "/crew", nil, false, false},
		"GET /v1/teams/:id":               {"GET", "/v1/teams/" + fx.teamA, nil, false, false},
		"PATCH /v1/teams/:id":             {"PATCH", "/v1/teams/" + fx.teamA, map[string]any{"name": "mine"}, false, false},
		"POST /v1/teams/:id/members":      {"POST", "/v1/teams/" + fx.teamA + "/members", map[string]any{"name": "Eve"}, false, false},
		"PATCH /v1/teams/:id/members/:memberId/location": {"PATCH", "/v1/teams/" + fx.teamA + "/members/" + fx.memberOp + "/location",
			map[string]any{"lat": 45.0, "lng": 4.0}, false, false},
		"POST /v1/teams/dispatch":           {"POST", "/v1/teams/dispatch", map[string]any{"event_id": fx.event, "team_id": fx.teamA}, false, false},
		"POST /v1/teams/dispatch/score":     {"POST", "/v1/teams/dispatch/score", map[string]any{"event_id": fx.event}, false, false},
		"GET /v1/dispatch-requests/:id":     {"GET", "/v1/dispatch-requests/" + fx.event, nil, false, false},
		"GET /v1/devices/:id/queue":         {"GET", "/v1/devices/" + fx.deviceA + "/queue", nil, false, false},
		"POST /v1/devices/sync":             {"POST", "/v1/devices/sync", map[string]any{"device_id": fx.deviceA, "items": []any{}}, false, false},
		"POST /v1/devices/:id/credential":   {"POST", "/v1/devices/" + fx.deviceA + "/credential", nil, true, false},
		"DELETE /v1/devices/:id/credential": {"DELETE", "/v1/devices/" + fx.deviceA + "/credential", nil, false, false},
		"GET /v1/sync/status":               {"GET", "/v1/sync/status?batch_id=" + fx.batch, nil, false, false},
		"PATCH /v1/tenant/users/:id":        {"PATCH", "/v1/tenant/users/" + fx.user, map[string]any{"name": "mine"}, true, false},
		"DELETE /v1/tenant/api-keys/:id":    {"DELETE", "/v1/tenant/api-keys/" + fx.keyID, nil, false, false},
		"POST /v1/tenant/api-keys/rotate":   {"POST", "/v1/tenant/api-keys/rotate", map[string]any{"key_id": fx.keyID}, false, false},
		"POST /v1/sms/inbound": {"POST", "/v1/sms/inbound", map[string]any{"from": "+33600000001", "body": "FR1 ACK " + fx.codeA},
			false, true},
		"POST /v1/sms/android/:tenant_id":       {"POST", "/v1/sms/android/" + w.a.tenant.ID, map[string]any{}, false, false},
		"POST /v1/sms/twilio/:tenant_id":        {"POST", "/v1/sms/twilio/" + w.a.tenant.ID, map[string]any{}, false, false},
		"POST /v1/sms/twilio/:tenant_id/status": {"POST", "/v1/sms/twilio/" + w.a.tenant.ID + "/status", map[string]any{}, false, false},
		// The web apps' shared files belong to no tenant: a tenant's id names none.
		"GET /shared/:file": {"GET", "/shared/" + w.a.tenant.ID, nil, false, false},
	}
	// Every route with a parameter in its path has a probe here.
	for _, r := range server.Routes(n.srv) {
		k := routeKey(r.Method, r.Path)
		if strings.Contains(r.Path, "/:") && probes[k].path == "" {
			t.Errorf("%s names a resource but has no cross-tenant probe", k)
		}
	}
	count := 0
	for _, k := range slices.Sorted(mapKeys(probes)) {
		p := probes[k]
		as := map[string][]string{"admin": w.bAdmin, "key": w.bKey}
		if p.adminOnly {
			delete(as, "key")
		}
		if p.sms {
			as = map[string][]string{"sms key": w.bSMSKey}
		}
		for who, h := range as {
			got := call(t, n, p.method, p.path, p.body, h...)
			count++
			if got.status != http.StatusNotFound || got.code != "not_found" {
				t.Errorf("%s with tenant A's ids as tenant B's %s: %d %s (%s), want 404 not_found",
					k, who, got.status, got.code, got.message)
			}
		}
	}
	// Nothing of A moved.
	key := []string{"x-svc-api-key", w.a.key}
	if m := n.do("GET", "/v1/missions/"+fx.missionA, nil, key...).want(http.StatusOK); m.str("status") != model.MissionCreated {
		t.Fatalf("tenant A's mission moved: %s", m.raw)
	}
	n.do("GET", "/v1/zones/"+fx.zone, nil, key...).want(http.StatusOK)
	if wh := n.do("GET", "/v1/webhooks/"+fx.webhook, nil, key...).want(http.StatusOK); wh.str("status") != engine.WebhookActive {
		t.Fatalf("tenant A's webhook changed: %s", wh.raw)
	}
	t.Logf("cross-tenant: %d requests with another tenant's ids", count)
}
