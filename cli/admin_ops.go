package cli

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

// adminOp is one administrative operation. The registry below is the single
// implementation of the admin commands: the command runs it on the store when no server
// holds the data directory, and the server runs it when the command arrives over the
// admin socket. Its result is what the command prints with --json.
type adminOp func(ctx context.Context, eng *engine.Engine, args json.RawMessage) (any, error)

// Names of the admin operations.
const (
	opTenantCreate   = "tenant.create"
	opTenantList     = "tenant.list"
	opTenantShow     = "tenant.show"
	opTenantSuspend  = "tenant.suspend"
	opTenantActivate = "tenant.activate"
	opUserCreate     = "user.create"
	opUserSuspend    = "user.suspend"
	opUserActivate   = "user.activate"
	opUserUnlock     = "user.unlock"
	opUserResetLink  = "user.reset_link"
	opAPIKeyCreate   = "apikey.create"
	opAPIKeyList     = "apikey.list"
	opAPIKeyRotate   = "apikey.rotate"
	opBackup         = "backup"
)

// adminOps returns the registry: operation name → implementation.
func adminOps() map[string]adminOp {
	return map[string]adminOp{
		opTenantCreate:   withArgs(tenantCreate),
		opTenantList:     withArgs(tenantList),
		opTenantShow:     withArgs(tenantShow),
		opTenantSuspend:  withArgs(tenantStatus(engine.TenantSuspended)),
		opTenantActivate: withArgs(tenantStatus(engine.TenantActive)),
		opUserCreate:     withArgs(userCreate),
		opUserSuspend:    withArgs(userStatus(engine.UserSuspended)),
		opUserActivate:   withArgs(userStatus(engine.UserActive)),
		opUserUnlock:     withArgs(userUnlock),
		opUserResetLink:  withArgs(userResetLink),
		opAPIKeyCreate:   withArgs(apikeyCreate),
		opAPIKeyList:     withArgs(apikeyList),
		opAPIKeyRotate:   withArgs(apikeyRotate),
		opBackup:         withArgs(backupTo),
		opUpstreamSet:    withArgs(upstreamSet),
		opUpstreamShow:   withArgs(upstreamShow),
		opUpstreamPause:  withArgs(upstreamPause(true)),
		opUpstreamResume: withArgs(upstreamPause(false)),
	}
}

// runAdminOp runs the named operation with its JSON arguments.
func runAdminOp(ctx context.Context, eng *engine.Engine, name string, args json.RawMessage) (any, error) {
	op, ok := adminOps()[name]
	if !ok {
		return nil, model.Errorf(model.KindNotFound, "unknown admin operation %s", model.Quote(name))
	}
	return op(ctx, eng, args)
}

// withArgs decodes an operation's arguments into A before calling fn.
func withArgs[A any, R any](fn func(context.Context, *engine.Engine, A) (R, error)) adminOp {
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

// tenantResult wraps one tenant.
type tenantResult struct {
	Tenant *model.Tenant `json:"tenant"`
}

// tenantListResult is a list of tenants, oldest first.
type tenantListResult struct {
	Data  []model.Tenant `json:"data"`
	Count int            `json:"count"`
}

// userResult wraps one user.
type userResult struct {
	User *model.User `json:"user"`
}

// apikeyListResult is a tenant's active keys, newest first.
type apikeyListResult struct {
	Data  []model.APIKey `json:"data"`
	Count int            `json:"count"`
}

// backupResult tells where a snapshot went.
type backupResult struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// Arguments of the operations.

type slugArgs struct {
	Slug string `json:"slug"`
}

type emailArgs struct {
	Email string `json:"email"`
}

type userCreateArgs struct {
	Tenant string `json:"tenant"`
	model.CreateUserInput
}

type apikeyCreateArgs struct {
	Tenant string `json:"tenant"`
	model.CreateAPIKeyInput
}

type apikeyListArgs struct {
	Tenant string `json:"tenant"`
}

type apikeyRotateArgs struct {
	Tenant string `json:"tenant"`
	model.RotateAPIKeyInput
}

type backupArgs struct {
	// Path is absolute: the server process that may write it has its own working directory.
	Path string `json:"path"`
}

func tenantCreate(ctx context.Context, eng *engine.Engine, in model.CreateTenantInput) (*model.CreatedTenant, error) {
	return eng.AdminCreateTenant(ctx, in)
}

func tenantList(ctx context.Context, eng *engine.Engine, _ struct{}) (*tenantListResult, error) {
	ts, err := eng.AdminTenants(ctx)
	if err != nil {
		return nil, err
	}
	if ts == nil {
		ts = []model.Tenant{}
	}
	// Newest first, like every list of the API (ids are UUIDv7).
	slices.SortFunc(ts, func(a, b model.Tenant) int { return strings.Compare(b.ID, a.ID) })
	return &tenantListResult{Data: ts, Count: len(ts)}, nil
}

func tenantShow(ctx context.Context, eng *engine.Engine, in slugArgs) (*tenantResult, error) {
	if in.Slug == "" {
		return nil, model.Invalid("slug", "slug is required")
	}
	t, err := eng.AdminTenant(ctx, in.Slug)
	if err != nil {
		return nil, err
	}
	return &tenantResult{t}, nil
}

func tenantStatus(status string) func(context.Context, *engine.Engine, slugArgs) (*tenantResult, error) {
	return func(ctx context.Context, eng *engine.Engine, in slugArgs) (*tenantResult, error) {
		if in.Slug == "" {
			return nil, model.Invalid("slug", "slug is required")
		}
		t, err := eng.AdminSetTenantStatus(ctx, in.Slug, status)
		if err != nil {
			return nil, err
		}
		return &tenantResult{t}, nil
	}
}

func userCreate(ctx context.Context, eng *engine.Engine, in userCreateArgs) (*userResult, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	u, err := eng.AdminCreateUser(ctx, in.Tenant, in.CreateUserInput)
	if err != nil {
		return nil, err
	}
	return &userResult{u}, nil
}

// normalizeEmail matches the engine's storage of emails: trimmed and lower case.
func normalizeEmail(in emailArgs) (string, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return "", model.Invalid("email", "email is required")
	}
	return email, nil
}

func userStatus(status string) func(context.Context, *engine.Engine, emailArgs) (*userResult, error) {
	return func(ctx context.Context, eng *engine.Engine, in emailArgs) (*userResult, error) {
		email, err := normalizeEmail(in)
		if err != nil {
			return nil, err
		}
		u, err := eng.AdminSetUserStatus(ctx, email, status)
		if err != nil {
			return nil, err
		}
		return &userResult{u}, nil
	}
}

func userUnlock(ctx context.Context, eng *engine.Engine, in emailArgs) (*userResult, error) {
	email, err := normalizeEmail(in)
	if err != nil {
		return nil, err
	}
	u, err := eng.AdminUnlockUser(ctx, email)
	if err != nil {
		return nil, err
	}
	return &userResult{u}, nil
}

func userResetLink(ctx context.Context, eng *engine.Engine, in emailArgs) (*model.IssuedToken, error) {
	email, err := normalizeEmail(in)
	if err != nil {
		return nil, err
	}
	return eng.AdminIssueAuthToken(ctx, email, engine.TokenReset)
}

func apikeyCreate(ctx context.Context, eng *engine.Engine, in apikeyCreateArgs) (*model.NewKey, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	return eng.AdminCreateAPIKey(ctx, in.Tenant, in.CreateAPIKeyInput)
}

func apikeyList(ctx context.Context, eng *engine.Engine, in apikeyListArgs) (*apikeyListResult, error) {
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
	return &apikeyListResult{Data: keys, Count: len(keys)}, nil
}

func apikeyRotate(ctx context.Context, eng *engine.Engine, in apikeyRotateArgs) (*model.NewKey, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	return eng.AdminRotateAPIKey(ctx, in.Tenant, in.RotateAPIKeyInput)
}

// backupTo writes a consistent snapshot of the store to an absolute path, through a
// temporary file in the same directory and a rename: a failed backup leaves no partial
// file behind, and an existing file at the path is replaced whole.
func backupTo(ctx context.Context, eng *engine.Engine, in backupArgs) (*backupResult, error) {
	if in.Path == "" || !filepath.IsAbs(in.Path) {
		return nil, model.Invalid("path", "the backup path must be absolute")
	}
	var n int64
	err := writeFileAtomic(in.Path, 0o600, func(f *os.File) (err error) {
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
	return &backupResult{Path: in.Path, Bytes: n}, nil
}
