// Package admin holds the administrative operations: the registry of operation names and
// their implementations over an engine. The command line runs them on the store when no
// server holds the data directory, and the server runs them when they arrive over its
// admin socket; both import this package, neither hands the other its handler.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// op is one administrative operation. The registry below is the single
// implementation of the admin commands: the command runs it on the store when no server
// holds the data directory, and the server runs it when the command arrives over the
// admin socket. Its result is what the command prints with --json.
type op func(ctx context.Context, eng *engine.Engine, args json.RawMessage) (any, error)

// Names of the admin operations.
const (
	OpTenantCreate   = "tenant.create"
	OpTenantList     = "tenant.list"
	OpTenantShow     = "tenant.show"
	OpTenantSuspend  = "tenant.suspend"
	OpTenantActivate = "tenant.activate"
	OpUserCreate     = "user.create"
	OpUserSuspend    = "user.suspend"
	OpUserActivate   = "user.activate"
	OpUserUnlock     = "user.unlock"
	OpUserResetLink  = "user.reset_link"
	OpAPIKeyCreate   = "apikey.create"
	OpAPIKeyList     = "apikey.list"
	OpAPIKeyRotate   = "apikey.rotate"
	OpBackup         = "backup"
)

// ops returns the registry: operation name → implementation.
func ops() map[string]op {
	return map[string]op{
		OpTenantCreate:   withArgs(tenantCreate),
		OpTenantList:     withArgs(tenantList),
		OpTenantShow:     withArgs(tenantShow),
		OpTenantSuspend:  withArgs(tenantStatus(engine.TenantSuspended)),
		OpTenantActivate: withArgs(tenantStatus(engine.TenantActive)),
		OpUserCreate:     withArgs(userCreate),
		OpUserSuspend:    withArgs(userStatus(engine.UserSuspended)),
		OpUserActivate:   withArgs(userStatus(engine.UserActive)),
		OpUserUnlock:     withArgs(userUnlock),
		OpUserResetLink:  withArgs(userResetLink),
		OpAPIKeyCreate:   withArgs(apikeyCreate),
		OpAPIKeyList:     withArgs(apikeyList),
		OpAPIKeyRotate:   withArgs(apikeyRotate),
		OpBackup:         withArgs(BackupTo),
		OpUpstreamSet:    withArgs(upstreamSet),
		OpUpstreamShow:   withArgs(upstreamShow),
		OpUpstreamPause:  withArgs(upstreamPause(true)),
		OpUpstreamResume: withArgs(upstreamPause(false)),
		OpSMSSetup:       withArgs(smsSetup),
		OpDeviceRevoke:   withArgs(deviceRevoke),
		OpDeviceList:     withArgs(deviceList),
	}
}

// Run runs the named operation with its JSON arguments.
func Run(ctx context.Context, eng *engine.Engine, name string, args json.RawMessage) (any, error) {
	op, ok := ops()[name]
	if !ok {
		return nil, model.Errorf(model.KindNotFound, "unknown admin operation %s", model.Quote(name))
	}
	return op(ctx, eng, args)
}

// withArgs decodes an operation's arguments into A before calling fn.
func withArgs[A any, R any](fn func(context.Context, *engine.Engine, A) (R, error)) op {
	return func(ctx context.Context, eng *engine.Engine, raw json.RawMessage) (any, error) {
		var args A
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, model.Errorf(model.KindInvalidJSON, "invalid arguments: %v", err)
			}
		}
		return fn(ctx, eng, args)
	}
}

// Results of the operations: the JSON the commands print.

// TenantResult wraps one tenant.
type TenantResult struct {
	Tenant *model.Tenant `json:"tenant"`
}

// TenantListResult is a list of tenants, oldest first.
type TenantListResult struct {
	Data  []model.Tenant `json:"data"`
	Count int            `json:"count"`
}

// UserResult wraps one user.
type UserResult struct {
	User *model.User `json:"user"`
}

// APIKeyListResult is a tenant's active keys, newest first.
type APIKeyListResult struct {
	Data  []model.APIKey `json:"data"`
	Count int            `json:"count"`
}

// BackupResult tells where a snapshot went.
type BackupResult struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// Arguments of the operations.

type SlugArgs struct {
	Slug string `json:"slug"`
}

type EmailArgs struct {
	Email string `json:"email"`
}

type UserCreateArgs struct {
	Tenant string `json:"tenant"`
	model.CreateUserInput
}

type APIKeyCreateArgs struct {
	Tenant string `json:"tenant"`
	model.CreateAPIKeyInput
}

type APIKeyListArgs struct {
	Tenant string `json:"tenant"`
}

type APIKeyRotateArgs struct {
	Tenant string `json:"tenant"`
	model.RotateAPIKeyInput
}

type BackupArgs struct {
	// Path is absolute: the server process that may write it has its own working directory.
	Path string `json:"path"`
}

func tenantCreate(ctx context.Context, eng *engine.Engine, in model.CreateTenantInput) (*model.CreatedTenant, error) {
	return eng.AdminCreateTenant(ctx, in)
}

func tenantList(ctx context.Context, eng *engine.Engine, _ struct{}) (*TenantListResult, error) {
	ts, err := eng.AdminTenants(ctx)
	if err != nil {
		return nil, err
	}
	if ts == nil {
		ts = []model.Tenant{}
	}
	// Newest first, like every list of the API (ids are UUIDv7).
	slices.SortFunc(ts, func(a, b model.Tenant) int { return strings.Compare(b.ID, a.ID) })
	return &TenantListResult{Data: ts, Count: len(ts)}, nil
}

func tenantShow(ctx context.Context, eng *engine.Engine, in SlugArgs) (*TenantResult, error) {
	if in.Slug == "" {
		return nil, model.Invalid("slug", "slug is required")
	}
	t, err := eng.AdminTenant(ctx, in.Slug)
	if err != nil {
		return nil, err
	}
	return &TenantResult{t}, nil
}

func tenantStatus(status string) func(context.Context, *engine.Engine, SlugArgs) (*TenantResult, error) {
	return func(ctx context.Context, eng *engine.Engine, in SlugArgs) (*TenantResult, error) {
		if in.Slug == "" {
			return nil, model.Invalid("slug", "slug is required")
		}
		t, err := eng.AdminSetTenantStatus(ctx, in.Slug, status)
		if err != nil {
			return nil, err
		}
		return &TenantResult{t}, nil
	}
}

func userCreate(ctx context.Context, eng *engine.Engine, in UserCreateArgs) (*UserResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	u, err := eng.AdminCreateUser(ctx, in.Tenant, in.CreateUserInput)
	if err != nil {
		return nil, err
	}
	return &UserResult{u}, nil
}

// normalizeEmail matches the engine's storage of emails: trimmed and lower case.
func normalizeEmail(in EmailArgs) (string, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return "", model.Invalid("email", "email is required")
	}
	return email, nil
}

func userStatus(status string) func(context.Context, *engine.Engine, EmailArgs) (*UserResult, error) {
	return func(ctx context.Context, eng *engine.Engine, in EmailArgs) (*UserResult, error) {
		email, err := normalizeEmail(in)
		if err != nil {
			return nil, err
		}
		u, err := eng.AdminSetUserStatus(ctx, email, status)
		if err != nil {
			return nil, err
		}
		return &UserResult{u}, nil
	}
}

func userUnlock(ctx context.Context, eng *engine.Engine, in EmailArgs) (*UserResult, error) {
	email, err := normalizeEmail(in)
	if err != nil {
		return nil, err
	}
	u, err := eng.AdminUnlockUser(ctx, email)
	if err != nil {
		return nil, err
	}
	return &UserResult{u}, nil
}

func userResetLink(ctx context.Context, eng *engine.Engine, in EmailArgs) (*model.IssuedToken, error) {
	email, err := normalizeEmail(in)
	if err != nil {
		return nil, err
	}
	return eng.AdminIssueAuthToken(ctx, email, engine.TokenReset)
}

func apikeyCreate(ctx context.Context, eng *engine.Engine, in APIKeyCreateArgs) (*model.NewKey, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	return eng.AdminCreateAPIKey(ctx, in.Tenant, in.CreateAPIKeyInput)
}

func apikeyList(ctx context.Context, eng *engine.Engine, in APIKeyListArgs) (*APIKeyListResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	keys, err := eng.AdminAPIKeys(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []model.APIKey{}
	}
	return &APIKeyListResult{Data: keys, Count: len(keys)}, nil
}

func apikeyRotate(ctx context.Context, eng *engine.Engine, in APIKeyRotateArgs) (*model.NewKey, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	return eng.AdminRotateAPIKey(ctx, in.Tenant, in.RotateAPIKeyInput)
}

// BackupTo writes a consistent snapshot of the store to an absolute path, through a
// temporary file in the same directory and a rename: a failed backup leaves no partial
// file behind, and an existing file at the path is replaced whole.
func BackupTo(ctx context.Context, eng *engine.Engine, in BackupArgs) (*BackupResult, error) {
	if in.Path == "" || !filepath.IsAbs(in.Path) {
		return nil, model.Invalid("path", "the backup path must be absolute")
	}
	var n int64
	err := WriteFileAtomic(in.Path, 0o600, func(f *os.File) (err error) {
		n, err = eng.Backup(ctx, f)
		return err
	})
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, model.Invalid("out", "cannot write the backup to %s: %v", in.Path, pe.Err)
	}
	if err != nil {
		return nil, err
	}
	return &BackupResult{Path: in.Path, Bytes: n}, nil
}

// Admin operations of upstream sync.
const (
	OpUpstreamSet    = "upstream.set"
	OpUpstreamShow   = "upstream.show"
	OpUpstreamPause  = "upstream.pause"
	OpUpstreamResume = "upstream.resume"
)

// UpstreamSetArgs are the arguments of upstream.set. The CA travels as PEM text: the
// server that runs the operation may not see the command's files.
type UpstreamSetArgs struct {
	Tenant string `json:"tenant"`
	model.UpstreamInput
}

// UpstreamResult is what the upstream commands print: the settings (never the key) and
// the link's state.
type UpstreamResult struct {
	Upstream *model.UpstreamSettings `json:"upstream"`
	Status   *model.UpstreamStatus   `json:"status"`
}

func upstreamSet(ctx context.Context, eng *engine.Engine, in UpstreamSetArgs) (*UpstreamResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	s, err := eng.AdminSetUpstream(ctx, in.Tenant, in.UpstreamInput)
	if err != nil {
		return nil, err
	}
	return upstreamWithStatus(ctx, eng, in.Tenant, s)
}

func upstreamShow(ctx context.Context, eng *engine.Engine, in APIKeyListArgs) (*UpstreamResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	s, err := eng.AdminUpstream(ctx, in.Tenant)
	if err != nil && !model.IsKind(err, model.KindNotFound) {
		return nil, err
	}
	if s == nil {
		// No upstream, or no such tenant: the status read says which.
		if _, terr := eng.AdminTenant(ctx, in.Tenant); terr != nil {
			return nil, terr
		}
	}
	return upstreamWithStatus(ctx, eng, in.Tenant, s)
}

func upstreamPause(paused bool) func(context.Context, *engine.Engine, APIKeyListArgs) (*UpstreamResult, error) {
	return func(ctx context.Context, eng *engine.Engine, in APIKeyListArgs) (*UpstreamResult, error) {
		if in.Tenant == "" {
			return nil, model.Invalid("tenant", "tenant is required")
		}
		s, err := eng.AdminPauseUpstream(ctx, in.Tenant, paused)
		if err != nil {
			return nil, err
		}
		return upstreamWithStatus(ctx, eng, in.Tenant, s)
	}
}

func upstreamWithStatus(ctx context.Context, eng *engine.Engine, slug string, s *model.UpstreamSettings) (*UpstreamResult, error) {
	st, err := eng.UpstreamStatusOf(ctx, slug)
	if err != nil {
		return nil, err
	}
	return &UpstreamResult{Upstream: s, Status: st}, nil
}

// WriteFileAtomic writes a file through fill into a temporary file beside path, syncs it
// and renames it over path, so that readers and crashes see the old file or the whole new
// one, never a part.
func WriteFileAtomic(path string, mode os.FileMode, fill func(*os.File) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Admin operations of field devices: `fieldrelay device revoke` and `device list`.
const (
	OpDeviceRevoke = "device.revoke"
	OpDeviceList   = "device.list"
)

// DeviceListResult is a tenant's devices, newest first (the first 500).
type DeviceListResult struct {
	Data  []model.Device `json:"data"`
	Count int            `json:"count"`
}

func deviceList(ctx context.Context, eng *engine.Engine, in APIKeyListArgs) (*DeviceListResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	ds, _, err := eng.AdminDevices(ctx, in.Tenant, model.Page{Limit: 500})
	if err != nil {
		return nil, err
	}
	return &DeviceListResult{Data: ds, Count: len(ds)}, nil
}

// DeviceArgs name a device of a tenant.
type DeviceArgs struct {
	Tenant string `json:"tenant"`
	Device string `json:"device"`
}

// DeviceResult wraps one device.
type DeviceResult struct {
	Device *model.Device `json:"device"`
}

func deviceRevoke(ctx context.Context, eng *engine.Engine, in DeviceArgs) (*DeviceResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	if in.Device == "" {
		return nil, model.Invalid("device", "device is required")
	}
	d, err := eng.AdminRevokeDeviceCredential(ctx, in.Tenant, in.Device)
	if err != nil {
		return nil, err
	}
	return &DeviceResult{Device: d}, nil
}
