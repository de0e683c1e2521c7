package store

// Root buckets. Every bucket name is declared here once and created at open.
var (
	bucketMeta         = []byte("meta")
	bucketTenants      = []byte("tenants")        // tenant id (16 bytes) → Tenant
	bucketSlugs        = []byte("slugs")          // slug → tenant id
	bucketAPIKeys      = []byte("apikeys")        // sha256(key) hex → APIKeyRecord
	bucketUsersByEmail = []byte("users_by_email") // email → tenant id | user id (32 bytes)
	bucketLoginGuards  = []byte("login_guards")   // email → LoginGuard
	bucketAuthTokens   = []byte("auth_tokens")    // sha256(token) hex → AuthToken
	bucketOutboxDue    = []byte("outbox_due")     // due ms | tenant id | entry id → 1 when leased
	bucketTenantRoot   = []byte("t")              // tenant id → the tenant's bucket
	// bucketUpstreams: tenant id (16 bytes) → UpstreamConfig, for the tenants that sync
	// upstream (a root bucket, so that the pusher lists them without opening every tenant).
	bucketUpstreams = []byte("upstreams")
)

var rootBuckets = [][]byte{bucketMeta, bucketTenants, bucketSlugs, bucketAPIKeys,
	bucketUsersByEmail, bucketLoginGuards, bucketAuthTokens, bucketOutboxDue, bucketTenantRoot, bucketUpstreams}

// Buckets nested in each tenant's bucket.
var (
	tbEvents          = []byte("events")
	tbEventsByIdem    = []byte("events_by_idem")
	tbMissions        = []byte("missions")
	tbMissionsByEvent = []byte("missions_by_event")
	tbMissionsByTeam  = []byte("missions_by_team")
	tbDispatches      = []byte("dispatches")
	tbTeams           = []byte("teams")    // team id → Team
	tbZones           = []byte("zones")    // zone code → Zone
	tbUsers           = []byte("users")    // user id → UserAccount
	tbAPIKeys         = []byte("apikeys")  // key id → sha256(key) hex
	tbWebhooks        = []byte("webhooks") //
	tbOutbox          = []byte("outbox")   //
	tbDevices         = []byte("devices")  //
	tbDeviceSeq       = []byte("device_seq")
	tbDeviceQueue     = []byte("device_queue")
	tbBatches         = []byte("batches")
	tbIdempotency     = []byte("idempotency") // route \n key → IdempotencyRecord
	tbLedger          = []byte("ledger")
	tbUsage           = []byte("usage")
	// tbEventsParked: zone code | 0 | event id → nil: events waiting for a way out.
	tbEventsParked = []byte("events_parked")
	// tbWebhookDeliveries: webhook id | attempt id → DeliveryAttempt.
	tbWebhookDeliveries = []byte("webhook_deliveries")
	// tbDevicesByHardware: hardware_id → device id.
	tbDevicesByHardware = []byte("devices_by_hardware")
	// tbMissionCodes: short mission code → mission id, for the tenant's active missions.
	tbMissionCodes = []byte("mission_codes")
	// tbSMSInbound: received SMS replies, in arrival order (the log of what came in).
	tbSMSInbound = []byte("sms_inbound")
	// tbSMSOutbound: the SMS the node sends, by id (the outbox message's UUIDv7);
	// tbSMSOutboundByGateway: the gateway's message id → the SMS's 16-byte id.
	tbSMSOutbound          = []byte("sms_outbound")
	tbSMSOutboundByGateway = []byte("sms_outbound_by_gateway")
	// tbSMSSentByTo: recipient | 0 | sent_at (8 bytes, big-endian Unix ns) | SMS id → nil,
	// the SMS the gateway accepted, for the recipients' rate limits.
	tbSMSSentByTo = []byte("sms_sent_by_to")
	// tbDevicesByTeam: team id | device id → nil; tbDevicesByZone: zone code | 0 | device
	// id → nil. The device queues an event or a mission goes to.
	tbDevicesByTeam = []byte("devices_by_team")
	tbDevicesByZone = []byte("devices_by_zone")
	// tbUpstreamLog: the change log of upstream sync, sequence (8 bytes, big-endian) →
	// kind (1 byte) | record id (16 bytes) | time of the change (8 bytes, Unix ms). The
	// bucket's own sequence is the last sequence given.
	tbUpstreamLog = []byte("upstream_log")
	// tbEventsOpen: open rank (1 byte, model.OpenRank) | event id → nil, for every event
	// that is not closed: GET /v1/events?open=true walks it in dispatcher order
	// (docs/decisions/0170-open-events.md). The open alerts' keys follow (tx_alerts.go).
	tbEventsOpen = []byte("events_open")
	// tbAlerts: alert id → Alert (packed JSON, tx_alerts.go) (docs/decisions/0172-shared-alerts.md). The
	// index of open alerts is in tbEventsOpen: 0xff | alert key → id (tx_alerts.go).
	tbAlerts = []byte("alerts")
	// tbAlertsOpenOld: the open alerts' index up to schema version 3, alert key → id,
	// moved into tbAlerts at open.
	tbAlertsOpenOld = []byte("alerts_open")
	// tbDownstreamLog: the downstream log of a central node, sequence (8 bytes,
	// big-endian) → {"k": kind, "r": key, "t": Unix ms}; the bucket's sequence is the last
	// given.
	tbDownstreamLog = []byte("downstream_log")
	// tbDispatchRequests: dispatch request id → DispatchRequest.
	tbDispatchRequests = []byte("dispatch_requests")
)

var tenantBuckets = [][]byte{tbEvents, tbEventsByIdem, tbMissions, tbMissionsByEvent,
	tbMissionsByTeam, tbDispatches, tbTeams, tbZones, tbUsers, tbAPIKeys, tbWebhooks, tbOutbox,
	tbDevices, tbDeviceSeq, tbDeviceQueue, tbBatches, tbIdempotency, tbLedger, tbUsage,
	tbEventsParked, tbWebhookDeliveries, tbDevicesByHardware, tbMissionCodes, tbSMSInbound,
	tbDevicesByTeam, tbDevicesByZone, tbUpstreamLog, tbSMSOutbound, tbSMSOutboundByGateway, tbSMSSentByTo, tbEventsOpen, tbAlerts,
	tbDownstreamLog, tbDispatchRequests}

// Meta keys kept by the store itself.
var metaSchemaVersion = []byte("schema_version")

// schemaVersion is the layout this code reads and writes. Version 2 writes events, event
// replies and sync batch records in compact forms (event_codec.go, packed.go) and reads
// version 1's JSON as well: opening a version 1 file only records the new version, so that
// an older binary refuses the file instead of failing on a record. Version 3 writes outbox
// entries and webhook subscriptions in binary forms (outbox_codec.go, webhook_codec.go)
// and reads their JSON as well, the same way. Version 4 keeps the index of open alerts
// inside the alerts bucket (tx_alerts.go): opening an older file moves it there, and an
// older binary, which would look for the index in a bucket of its own, refuses the file.
// Version 5 writes alerts packed (tx_alerts.go) and reads their JSON as well: opening an
// older file records the version only.
const schemaVersion = 5
