package model

import (
	"context"
	"io"
	"time"
)

// Store is the durable state of a node. The bbolt implementation lives in package store;
// nothing in engine assumes bbolt.
type Store interface {
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction, committed (and fsynced) when fn returns
	// nil and rolled back otherwise; the error of fn is returned as it is.
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update for hot writes (event ingest, device sync): fn may share one
	// transaction and one fsync with other concurrent calls, and may run more than once,
	// so it must have no effect outside the transaction. A failing fn fails alone. fn
	// writes the records of tenantID only ("": of any tenant, or none): a store may group
	// the calls of one tenant together (on PostgreSQL, a transaction touches one tenant).
	Batch(ctx context.Context, tenantID string, fn func(Tx) error) error
	// Version returns the directory version of a tenant ("" for all tenants): a number
	// that changes after every commit that changes the tenant record, its API keys,
	// users, zones, webhooks or teams. Caches of those compare it.
	Version(tenantID string) uint64
	// Backup writes a consistent snapshot of the whole store to w.
	Backup(ctx context.Context, w io.Writer) (int64, error)
	// Close releases the store.
	Close() error
}

// Page asks for one page of a list: at most Limit items after the opaque Cursor, and,
// when MaxBytes is positive, no more items than that many bytes of their JSON hold (see
// Full). A zero Limit sets no count.
type Page struct {
	Limit  int
	Cursor string
	// MaxBytes caps the JSON of a page's items: MaxPageBytes for every list of the API.
	MaxBytes int
}

// MaxPageBytes is the most JSON the items of one page of an API list may hold
// (docs/decisions/0078-list-byte-cap.md).
const MaxPageBytes = 4 << 20

// Full is the one rule that ends a page, for every list: a page that holds n items of size
// bytes of JSON in all takes no next item of next bytes when it has Limit items, or when
// the next would take it past MaxBytes. The first item is always taken, so that a list
// never stalls on a record larger than MaxBytes. The page then ends with a next cursor
// after its last item, as at Limit.
func (p Page) Full(n, size, next int) bool {
	if p.Limit > 0 && n >= p.Limit {
		return true
	}
	return p.MaxBytes > 0 && n > 0 && size+next > p.MaxBytes
}

// Tx is one transaction. Getters return a KindNotFound *Error when the record does not
// exist; Put methods that maintain a unique index return KindConflict when it is taken.
// Byte slices and records returned are the caller's to keep.
type Tx interface {
	// OnCommit and Local (ports_txlocal.go).
	TxCommit

	// Meta returns an installation-wide value, or nil when it is not set.
	Meta(key string) ([]byte, error)
	PutMeta(key string, value []byte) error

	Tenant(id string) (*Tenant, error)
	TenantBySlug(slug string) (*Tenant, error)
	// PutTenant stores t and its slug index (KindConflict when another tenant has the slug).
	PutTenant(t *Tenant) error
	// Tenants lists every tenant, oldest first.
	Tenants() ([]Tenant, error)

	UserAccount(tenantID, id string) (*UserAccount, error)
	UserAccountByEmail(email string) (*UserAccount, error)
	// PutUserAccount stores u and its email index (KindConflict when another user has the email).
	PutUserAccount(u *UserAccount) error
	// Users lists a tenant's users, newest first; the string is the next cursor ("" at the end).
	Users(tenantID string, p Page) ([]User, string, error)

	// LoginGuard returns the failure record of an email (zero when there is none).
	LoginGuard(email string) (LoginGuard, error)
	// PutLoginGuard stores g; a zero guard deletes the record.
	PutLoginGuard(email string, g LoginGuard) error

	APIKeyByHash(hash string) (*APIKeyRecord, error)
	APIKey(tenantID, id string) (*APIKeyRecord, error)
	PutAPIKey(k *APIKeyRecord) error
	// TouchAPIKey records that the key of hash was used at at, when its recorded last use
	// is unset or at least every before at; it reports whether it wrote. It is not a change
	// of the directory: Version does not move and no process's cache is invalidated
	// (docs/decisions/0222-api-key-last-use.md). A key that does not exist is KindNotFound.
	TouchAPIKey(hash string, at time.Time, every time.Duration) (bool, error)
	DeleteAPIKey(tenantID, id string) error
	// APIKeys lists a tenant's keys, newest first.
	APIKeys(tenantID string) ([]APIKeyRecord, error)

	// AuthToken returns a reset or verify token by the hash of the token.
	AuthToken(hash string) (*AuthToken, error)
	PutAuthToken(hash string, t *AuthToken) error
	DeleteAuthToken(hash string) error

	// Idempotency returns the stored response of a write, or nil when the key is new.
	Idempotency(tenantID, key string) (*IdempotencyRecord, error)
	PutIdempotency(tenantID, key string, r *IdempotencyRecord) error
	// ExpireIdempotency deletes the stored replies of non-event writes made before a
	// time, in every tenant, and returns how many it deleted.
	ExpireIdempotency(before time.Time) (int, error)

	Zone(tenantID, code string) (*Zone, error)
	// PutZone stores z under its code.
	PutZone(tenantID string, z *Zone) error
	// Zones lists a tenant's zones ordered by code.
	Zones(tenantID string) ([]Zone, error)
	// DeleteZone removes a zone (KindNotFound when there is none).
	DeleteZone(tenantID, code string) error

	Team(tenantID, id string) (*Team, error)
	PutTeam(tenantID string, t *Team) error
	// DeleteTeam removes a team (KindNotFound when there is none): a site's copy of a
	// central team that left it (docs/decisions/0203-removals-down.md).
	DeleteTeam(tenantID, id string) error
	// Teams lists a tenant's teams, oldest first.
	Teams(tenantID string) ([]Team, error)

	Event(tenantID, id string) (*Event, error)
	// PutEvent stores an event (new or changed).
	PutEvent(tenantID string, ev *Event) error
	// Events lists a tenant's events matching f, newest first.
	Events(tenantID string, f EventFilter, p Page) ([]Event, string, error)
	// EventReply returns the stored answer to the event named by an idempotency_key, or
	// nil when the key is new (and for an empty key).
	EventReply(tenantID, key string) (*IdempotencyRecord, error)
	PutEventReply(tenantID, key string, r *IdempotencyRecord) error

	// ParkEvent files an event that waits for a way out (its zone offline, or no target).
	ParkEvent(tenantID, zoneCode, eventID string) error
	UnparkEvent(tenantID, zoneCode, eventID string) error
	// ParkedEvents lists the parked events of one zone ("" for events with no zone), or
	// of every zone when zoneCode is nil, oldest first.
	ParkedEvents(tenantID string, zoneCode *string) ([]ParkedRef, error)

	Webhook(tenantID, id string) (*Webhook, error)
	PutWebhook(tenantID string, w *Webhook) error
	DeleteWebhook(tenantID, id string) error
	// Webhooks lists a tenant's subscriptions, oldest first.
	Webhooks(tenantID string) ([]Webhook, error)
	// PutDeliveryAttempt appends to a subscription's attempt log.
	PutDeliveryAttempt(tenantID string, a *DeliveryAttempt) error
	// DeliveryAttempts lists a subscription's attempts, newest first.
	DeliveryAttempts(tenantID, webhookID string, p Page) ([]DeliveryAttempt, string, error)

	OutboxEntry(tenantID, id string) (*OutboxEntry, error)
	// PutOutboxEntry stores a pending entry and indexes it at its due time.
	PutOutboxEntry(o *OutboxEntry) error
	// DeleteOutboxEntry removes a settled entry and its index.
	DeleteOutboxEntry(tenantID, id string) error
	// DueOutbox lists every pending entry of every tenant, soonest first.
	DueOutbox() ([]OutboxRef, error)
	// DueOutboxBefore lists at most limit pending entries of every tenant due at or
	// before until, soonest first (ties by tenant and id): the bounded read with which a
	// process on a shared store finds the entries other processes left due.
	DueOutboxBefore(until time.Time, limit int) ([]OutboxRef, error)

	Mission(tenantID, id string) (*Mission, error)
	// PutMission stores a mission (new or changed) and its indexes by event and by team.
	PutMission(tenantID string, m *Mission) error
	// Missions lists a tenant's missions matching f, newest first.
	Missions(tenantID string, f MissionFilter, p Page) ([]Mission, string, error)
	// MissionsOfEvent lists the missions of one event, oldest first.
	MissionsOfEvent(tenantID, eventID string) ([]Mission, error)
	PutDispatch(tenantID string, d *Dispatch) error
	Dispatch(tenantID, id string) (*Dispatch, error)
	// PutLedgerEntry appends a billable operation.
	PutLedgerEntry(tenantID string, e *LedgerEntry) error

	// The transaction methods of each further area are declared beside it.
	EventRepliesTx
	SyncTx
	RetentionTx
	DeviceTx
	SMSTx
	UsageTx
	UpstreamTx
	DownstreamTx
	DispatchRequestTx
	BackfillTx
	AlertsTx
}

// ParkedRef names a parked event.
type ParkedRef struct {
	ZoneCode string
	EventID  string
}
