package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// handler is the shape of every operation: it returns an error instead of writing one.
type handler func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error

// Access of a route.
const (
	public        = "public"        // no credentials
	authenticated = "authenticated" // any valid credentials
)

// route is one operation: method, path, the permission it needs (or public /
// authenticated), and its handler.
type route struct {
	method, path string
	perm         string
	// orPerm are other permissions that admit a caller as perm does (any one will do):
	// a route that either of two permissions opens keeps its check in this table too,
	// not in its use case.
	orPerm []string
	h      handler
	// allowSuspended lets a suspended tenant through (GET /v1/tenant/me only).
	allowSuspended bool
	// fallback puts the route in a second router, tried when the first finds no route:
	// httprouter v1.3 refuses a parameter segment where a route of the same method has a
	// static one (POST /v1/teams/:id/members beside POST /v1/teams/dispatch).
	fallback bool
	// device admits a device credential (docs/decisions/0126-device-credentials.md): its
	// own sync and queue, nothing else.
	device bool
	// secret marks a route whose answer carries a secret (a token, an API key, a device
	// credential, a webhook's signing secret, the session cookie): wrap adds the headers
	// that keep it out of every cache (docs/decisions/0132-secret-answers.md).
	secret bool
}

// routeTable lists every route of the node in one place, the one list the router is built
// from. Only HEAD is not written here: routes serves it wherever GET is, by the same route.
func (s *Server) routeTable() []route {
	return []route{
		{method: "GET", path: "/healthz", perm: public, h: s.handleHealthz},
		{method: "GET", path: "/readyz", perm: public, h: s.handleReadyz},

		{method: "POST", path: "/v1/auth/login", perm: public, h: s.handleLogin, secret: true},
		{method: "POST", path: "/v1/auth/forgot-password", perm: public, h: s.handleForgotPassword},
		{method: "POST", path: "/v1/auth/reset-password", perm: public, h: s.handleResetPassword},
		{method: "POST", path: "/v1/auth/verify", perm: public, h: s.handleVerify},
		{method: "POST", path: "/v1/auth/change-password", perm: authenticated, h: s.handleChangePassword},
		{method: "POST", path: "/v1/auth/session", perm: authenticated, h: s.handleSession, secret: true},
		{method: "POST", path: "/v1/auth/refresh", perm: public, h: s.handleRefresh, secret: true},
		{method: "POST", path: "/v1/auth/logout", perm: authenticated, h: s.handleLogout, allowSuspended: true},

		{method: "GET", path: "/v1/tenant/me", perm: authenticated, h: s.handleTenantMe, allowSuspended: true},
		{method: "PATCH", path: "/v1/tenant/dispatch-settings", perm: model.PermSettingsDispatch, h: s.handleDispatchSettings},
		{method: "POST", path: "/v1/tenant/users", perm: model.PermTenantAdmin, h: s.handleCreateUser},
		{method: "GET", path: "/v1/tenant/users", perm: model.PermTenantAdmin, h: s.handleListUsers},
		{method: "PATCH", path: "/v1/tenant/users/:id", perm: model.PermTenantAdmin, h: s.handleUpdateUser},
		{method: "GET", path: "/v1/tenant/retention", perm: model.PermTenantAdmin, h: s.handleGetRetention},
		{method: "PATCH", path: "/v1/tenant/retention", perm: model.PermTenantAdmin, h: s.handleUpdateRetention},

		// events
		{method: "POST", path: "/v1/events", perm: model.PermEventsWrite, h: s.handleCreateEvent},
		{method: "GET", path: "/v1/events", perm: model.PermEventsRead, h: s.handleListEvents},
		{method: "POST", path: "/v1/events/:id/close", perm: model.PermMissionsManage, h: s.handleCloseEvent},
		{method: "GET", path: "/v1/events/:id", perm: model.PermEventsRead, h: s.handleGetEvent},

		// zones and connectivity
		{method: "POST", path: "/v1/zones", perm: model.PermZonesManage, h: s.handleCreateZone},
		{method: "GET", path: "/v1/zones", perm: model.PermZonesRead, h: s.handleListZones},
		{method: "GET", path: "/v1/tenant/zones", perm: model.PermZonesRead, h: s.handleListZones},
		{method: "GET", path: "/v1/zones/:code", perm: model.PermZonesRead, h: s.handleGetZone},
		{method: "PATCH", path: "/v1/zones/:code", perm: model.PermZonesManage, h: s.handleUpdateZone},
		{method: "DELETE", path: "/v1/zones/:code", perm: model.PermZonesManage, h: s.handleDeleteZone},
		{method: "POST", path: "/v1/connectivity/report", perm: model.PermConnectivityReport, h: s.handleReportConnectivity},
		{method: "GET", path: "/v1/connectivity/status", perm: model.PermZonesRead, h: s.handleConnectivityStatus},

		// dispatch
		{method: "POST", path: "/v1/teams/dispatch", perm: model.PermDispatchAssign, h: s.handleDispatch},
		{method: "GET", path: "/v1/dispatch-requests/:id", perm: model.PermEventsRead, h: s.handleDispatchRequest},

		// webhooks
		{method: "POST", path: "/v1/webhooks", perm: model.PermWebhooksManage, h: s.handleCreateWebhook, secret: true},
		{method: "GET", path: "/v1/webhooks", perm: model.PermWebhooksManage, h: s.handleListWebhooks},
		{method: "GET", path: "/v1/webhooks/:id", perm: model.PermWebhooksManage, h: s.handleGetWebhook},
		{method: "PATCH", path: "/v1/webhooks/:id", perm: model.PermWebhooksManage, h: s.handleUpdateWebhook},
		{method: "DELETE", path: "/v1/webhooks/:id", perm: model.PermWebhooksManage, h: s.handleDeleteWebhook},
		{method: "POST", path: "/v1/webhooks/:id/test", perm: model.PermWebhooksManage, h: s.handleTestWebhook},
		{method: "GET", path: "/v1/webhooks/:id/deliveries", perm: model.PermWebhooksManage, h: s.handleWebhookDeliveries},

		// missions
		{method: "GET", path: "/v1/missions", perm: model.PermMissionsView, h: s.handleListMissions},
		{method: "GET", path: "/v1/missions/:id", perm: model.PermMissionsView, h: s.handleGetMission},
		// That a field operator (missions:receive without missions:manage) moves only its
		// own teams' missions is a rule of the use case, kept in the engine.
		{method: "PATCH", path: "/v1/missions/:id/status", perm: model.PermMissionsManage, orPerm: []string{model.PermMissionsReceive},
			h: s.handleMissionStatus},
		{method: "POST", path: "/v1/missions/:id/messages", perm: model.PermMissionsManage, orPerm: []string{model.PermMissionsReceive},
			h: s.handlePostMissionMessage},
		{method: "GET", path: "/v1/missions/:id/messages", perm: model.PermMissionsView, h: s.handleListMissionMessages},
		{method: "GET", path: "/v1/missions/:id/crew", perm: model.PermMissionsView, h: s.handleMissionCrew},

		// alerts
		{method: "GET", path: "/v1/alerts", perm: model.PermEventsRead, h: s.handleListAlerts},
		{method: "POST", path: "/v1/alerts/:id/ack", perm: model.PermDispatchAssign, h: s.handleAckAlert},

		// dispatch score
		{method: "POST", path: "/v1/teams/dispatch/score", perm: model.PermDispatchAssign, h: s.handleScore},

		// parsers
		{method: "GET", path: "/v1/parsers", perm: model.PermEventsRead, h: s.handleParsers},

		// teams
		{method: "POST", path: "/v1/teams", perm: model.PermTeamsManage, h: s.handleCreateTeam},
		{method: "GET", path: "/v1/teams", perm: model.PermTeamsRead, h: s.handleListTeams},
		{method: "GET", path: "/v1/teams/:id", perm: model.PermTeamsRead, h: s.handleGetTeam},
		{method: "PATCH", path: "/v1/teams/:id", perm: model.PermTeamsManage, h: s.handleUpdateTeam},
		{method: "POST", path: "/v1/teams/:id/members", perm: model.PermTeamsManage, h: s.handleAddTeamMember, fallback: true},
		{method: "PATCH", path: "/v1/teams/:id/members/:memberId/location", perm: authenticated, h: s.handleUpdateMemberLocation},

		// device sync: each admits any authenticated caller; the engine asks for the
		// permission, which depends on the device (a field operator registers, syncs and
		// reads the devices of its own teams). The batch wants an API key (a user token is
		// api_key_required, not forbidden), the status either of two permissions.
		{method: "POST", path: "/v1/sync/batch", perm: authenticated, h: s.handleSyncBatch},
		{method: "GET", path: "/v1/sync/status", perm: authenticated, h: s.handleSyncStatus},
		{method: "POST", path: "/v1/devices/register", perm: authenticated, h: s.handleRegisterDevice},
		{method: "POST", path: "/v1/devices/sync", perm: authenticated, h: s.handleSyncDevice, device: true},
		{method: "GET", path: "/v1/devices/:id/queue", perm: authenticated, h: s.handleDeviceQueue, device: true},
		{method: "GET", path: "/v1/devices", perm: model.PermDevicesManage, h: s.handleListDevices},
		// a site node's pull of its central node's downstream log (users carry their hashes)
		{method: "POST", path: "/v1/devices/downstream", perm: model.PermDevicesManage, h: s.handleDownstream, secret: true},
		{method: "POST", path: "/v1/devices/:id/credential", perm: authenticated, h: s.handleIssueDeviceCredential, fallback: true, secret: true},
		{method: "DELETE", path: "/v1/devices/:id/credential", perm: model.PermDevicesManage, h: s.handleRevokeDeviceCredential, fallback: true},

		// SMS: the gateway's key only (sms:inbound is a key scope no role holds, so a JWT is
		// forbidden here whatever its role).
		{method: "POST", path: "/v1/sms/inbound", perm: model.PermSMSInbound, h: s.handleSMSInbound},
		// the gateways' own webhooks: their signature is the credential, the tenant is in the path
		{method: "POST", path: "/v1/sms/android/:tenant_id", perm: public, h: s.handleAndroidWebhook},
		{method: "POST", path: "/v1/sms/twilio/:tenant_id", perm: public, h: s.handleTwilioWebhook},
		{method: "POST", path: "/v1/sms/twilio/:tenant_id/status", perm: public, h: s.handleTwilioStatus},
		{method: "GET", path: "/v1/sms/outbound", perm: model.PermEventsRead, h: s.handleListSMSOutbound},

		// usage, billing, API keys and /metrics
		{method: "GET", path: "/metrics", perm: public, h: s.handleMetrics},
		{method: "GET", path: "/v1/tenant/usage", perm: model.PermUsageRead, h: s.handleUsage},
		{method: "GET", path: "/v1/tenant/billing", perm: model.PermTenantAdmin, h: s.handleBilling},
		{method: "GET", path: "/v1/tenant/api-keys", perm: model.PermAPIKeysManage, h: s.handleListAPIKeys},
		{method: "POST", path: "/v1/tenant/api-keys", perm: model.PermAPIKeysManage, h: s.handleCreateAPIKey, secret: true},
		{method: "POST", path: "/v1/tenant/api-keys/rotate", perm: model.PermAPIKeysManage, h: s.handleRotateAPIKey, secret: true},
		{method: "DELETE", path: "/v1/tenant/api-keys/:id", perm: model.PermAPIKeysManage, h: s.handleRevokeAPIKey},

		// the change stream, the embedded web apps (the console, the field app, what they
		// share) and the redirects to them
		{method: "GET", path: "/v1/stream", perm: model.PermEventsRead, h: s.handleStream},
		{method: "GET", path: "/", perm: public, h: s.handleRootRedirect},
		{method: "GET", path: "/console", perm: public, h: s.handleConsoleRedirect},
		{method: "GET", path: "/console/*file", perm: public, h: s.handleConsole},
		{method: "GET", path: "/field", perm: public, h: s.handleFieldRedirect},
		{method: "GET", path: "/field/*file", perm: public, h: s.handleField},
		{method: "GET", path: "/shared/:file", perm: public, h: s.handleShared},

		// upstream sync: the settings and the state of the caller's tenant's link
		{method: "PUT", path: "/v1/tenant/upstream", perm: model.PermTenantAdmin, h: s.handlePutUpstream},
		{method: "GET", path: "/v1/tenant/upstream", perm: model.PermTenantAdmin, h: s.handleGetUpstream},
		{method: "GET", path: "/v1/tenant/upstream/status", perm: model.PermTenantAdmin, h: s.handleUpstreamStatus},

		// the API reference
		{method: "GET", path: "/v1/openapi.json", perm: public, h: s.handleOpenAPI},
	}
}

// routes builds the router from routeTable: every route wrapped once (a GET route also
// serves HEAD), and 404, 405 and panics answered by the same error writer. Routes marked
// fallback live in a second router that serves what the first does not find.
func (s *Server) routes() http.Handler {
	rt, fb := httprouter.New(), httprouter.New()
	for _, router := range []*httprouter.Router{rt, fb} {
		router.RedirectTrailingSlash = false
		router.RedirectFixedPath = false
		router.HandleOPTIONS = false
		router.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// httprouter lists OPTIONS in Allow, but OPTIONS is answered 405 too.
			if allow := w.Header().Get("Allow"); allow != "" {
				w.Header().Set("Allow", strings.Join(slices.DeleteFunc(strings.Split(allow, ", "),
					func(m string) bool { return m == http.MethodOptions }), ", "))
			}
			s.unrouted(w, r, model.Errorf(model.KindMethodNotAllowed, "%s is not allowed on %s", model.Quote(r.Method), model.Quote(r.URL.Path)))
		})
		router.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
			s.log.Error("panic", "request_id", requestID(r), "panic", v)
			s.writeError(w, r, model.Internal(nil))
		}
	}
	for _, rte := range s.routeTable() {
		router := rt
		if rte.fallback {
			router = fb
		}
		router.Handle(rte.method, rte.path, s.wrap(rte))
		// HEAD is served wherever GET is, by the same route: the same credentials, rate
		// limit and status, and the headers without the body (net/http drops what the
		// handler writes). docs/decisions/0081-head.md.
		if rte.method == http.MethodGet {
			head := rte
			head.method = http.MethodHead
			router.Handle(head.method, head.path, s.wrap(head))
		}
	}
	rt.NotFound = fb
	fb.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.unrouted(w, r, noRoute(r))
	})
	return s.withRequest(rt)
}

// noRoute is the not_found of a request that no route serves.
func noRoute(r *http.Request) error {
	return model.Errorf(model.KindNotFound, "no such route: %s", model.Quote(r.Method+" "+r.URL.Path))
}

// unrouted answers a request that no route serves (404, 405). When its credentials name
// a tenant it counts in the tenant's rate-limit window and carries the rate-limit headers
// like every other answer (docs/rules.md, HTTP), and over the limit it is a 429 like any other request;
// it is not an API request of the usage report (no route served it). Bad or missing
// credentials change nothing: the answer is the route's error.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request, err error) {
	if hasCredentials(r) {
		if p, aerr := s.authenticate(r); aerr == nil {
			if st := state(r); st != nil {
				st.principal = &p
			}
			if lerr := s.limiter.allow(r.Context(), w, p); lerr != nil {
				err = lerr
			}
		}
	}
	s.writeError(w, r, err)
}

// wrap turns a route into an httprouter.Handle: authentication, rate limit, tenant status
// and permission, then the handler; any error goes to writeError.
func (s *Server) wrap(rte route) httprouter.Handle {
	rm := s.metrics.route(rte.method, rte.path)
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if st := state(r); st != nil {
			st.route = rm
		}
		if rte.secret {
			// Before anything is written, so that every answer of the route has them, its
			// errors too.
			noStore(w.Header())
		}
		if err := s.admit(w, r, rte); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := rte.h(w, r, ps); err != nil {
			s.writeError(w, r, err)
		}
	}
}

func (s *Server) admit(w http.ResponseWriter, r *http.Request, rte route) error {
	if rte.perm == public {
		// No credentials needed, none counted; but credentials that name a tenant get
		// its rate-limit headers, as on every answer (docs/rules.md, HTTP).
		if hasCredentials(r) {
			if p, err := s.authenticate(r); err == nil {
				s.limiter.peek(r.Context(), w, p)
			}
		}
		return nil
	}
	p, err := s.authenticate(r)
	if err != nil {
		return err
	}
	state(r).principal = &p
	s.eng.CountRequest(p.TenantID)
	if err := s.limiter.allow(r.Context(), w, p); err != nil {
		return err
	}
	if p.DeviceID != "" && !rte.device {
		return model.Errorf(model.KindForbidden, "a device credential may only sync its device and read its queue")
	}
	if !p.TenantActive && !rte.allowSuspended {
		return model.Errorf(model.KindTenantSuspended, "this tenant is suspended")
	}
	if rte.perm != authenticated {
		return requireAny(p, rte.perm, rte.orPerm)
	}
	return nil
}

// requireAny returns a forbidden error unless p holds perm or one of or; its message
// names them all ("… needs the missions:manage or missions:receive permission").
func requireAny(p model.Principal, perm string, or []string) error {
	if p.Can(perm) || slices.ContainsFunc(or, p.Can) {
		return nil
	}
	return model.Errorf(model.KindForbidden, "this operation needs the %s permission",
		strings.Join(append([]string{perm}, or...), " or "))
}

// hasCredentials reports whether a request carries an API key or an Authorization header.
func hasCredentials(r *http.Request) bool {
	return r.Header.Get(canonicalAPIKey) != "" || r.Header.Get("Authorization") != ""
}

// principal returns the authenticated caller of a request.
func principal(r *http.Request) model.Principal {
	if st := state(r); st != nil && st.principal != nil {
		return *st.principal
	}
	return model.Principal{}
}
