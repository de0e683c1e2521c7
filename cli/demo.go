package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// DemoCredentialsFile holds, inside the data directory, the credentials that --demo made.
const DemoCredentialsFile = "demo-credentials.json"

// demoCredentials are the secrets of the demo tenant, saved with mode 0600.
type demoCredentials struct {
	Tenant string     `json:"tenant"`
	APIKey string     `json:"api_key"`
	Users  []demoUser `json:"users"`
}

type demoUser struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Role     string `json:"role"`
}

// demoUserNames gives a role of the demo its login name and display name.
func demoUserNames(role model.Role) (login, name string) {
	switch role {
	case model.RoleCompanyAdmin:
		return "admin", "Alice Admin"
	case model.RoleCompanyTech:
		return "tech", "Theo Tech"
	case model.RoleOperationalSupervisor:
		return "supervisor", "Sofia Supervisor"
	case model.RoleFieldOperator:
		return "operator", "Camille Martin"
	case model.RoleCorporateClient:
		return "client", "Claire Client"
	default:
		return "api", "Ada API"
	}
}

const demoDomain = "demo.fieldrelay.local"

// demoZones returns two zones around Lyon and Grenoble (GeoJSON, [lng, lat], outer rings
// counter-clockwise).
func demoZones() []model.ZoneInput {
	return []model.ZoneInput{
		{Code: "lyon", Name: "Lyon centre", Boundary: &model.Polygon{Type: "Polygon", Coordinates: [][][]float64{{
			{4.79, 45.73}, {4.86, 45.72}, {4.89, 45.76}, {4.87, 45.80}, {4.81, 45.80}, {4.78, 45.77}, {4.79, 45.73},
		}}}},
		{Code: "grenoble", Name: "Grenoble", Boundary: &model.Polygon{Type: "Polygon", Coordinates: [][][]float64{{
			{5.69, 45.16}, {5.76, 45.16}, {5.77, 45.19}, {5.75, 45.21}, {5.70, 45.21}, {5.68, 45.19}, {5.69, 45.16},
		}}}},
	}
}

func ptr(f float64) *float64 { return &f }

// demoTeams returns the three demo teams; the first member of the first team is the
// field_operator user.
func demoTeams(operatorID string) []model.TeamInput {
	return []model.TeamInput{
		{Name: "SAMU Lyon 1", ZoneCode: "lyon", Verticals: []string{"healthcare", "emergency"},
			Equipment: []string{"defibrillator", "stretcher", "oxygen"},
			Members: []model.MemberInput{
				{Name: "Camille Martin", UserID: operatorID, Phone: "+33612345601", Lat: ptr(45.7597), Lng: ptr(4.8422)},
				{Name: "Lucas Bernard", Phone: "+33612345602", Lat: ptr(45.7640), Lng: ptr(4.8357)},
			}},
		{Name: "Pompiers Lyon Nord", ZoneCode: "lyon", Verticals: []string{"emergency"},
			Equipment: []string{"fire_extinguisher", "ladder", "first_aid_kit"},
			Members: []model.MemberInput{
				{Name: "Hugo Petit", Phone: "+33612345603", Lat: ptr(45.7830), Lng: ptr(4.8270)},
				{Name: "Manon Durand", Phone: "+33612345604", Lat: ptr(45.7795), Lng: ptr(4.8310)},
			}},
		{Name: "Logistique Grenoble", ZoneCode: "grenoble", Verticals: []string{"logistics", "healthcare"},
			Equipment: []string{"van", "cold_chain_box"},
			Members: []model.MemberInput{
				{Name: "Nina Roux", Phone: "+33612345605", Lat: ptr(45.1885), Lng: ptr(5.7245)},
				{Name: "Jules Moreau", Phone: "+33612345606", Lat: ptr(45.1920), Lng: ptr(5.7310)},
			}},
	}
}

// ensureDemo creates the demo tenant on a node without tenants and saves its credentials
// in the data directory; on a node that has tenants it reads the saved credentials back
// (nil when there are none).
func ensureDemo(ctx context.Context, eng *engine.Engine, dataDir string) (*demoCredentials, error) {
	tenants, err := eng.AdminTenants(ctx)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, DemoCredentialsFile)
	if len(tenants) > 0 {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var c demoCredentials
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return &c, nil
	}
	c, err := seedDemo(ctx, eng)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	err = admin.WriteFileAtomic(path, 0o600, func(f *os.File) error {
		_, err := f.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return c, fmt.Errorf("saving the demo credentials: %w", err)
	}
	return c, nil
}

// seedDemo creates, in one transaction, the demo tenant, one user per role with a random
// password, two zones reported online and three teams.
func seedDemo(ctx context.Context, eng *engine.Engine) (*demoCredentials, error) {
	c := &demoCredentials{Tenant: "demo"}
	in := model.SeedTenantInput{Tenant: model.CreateTenantInput{Name: "Demo Field Ops", Slug: c.Tenant,
		Email: "ops@" + demoDomain, Country: "FR", Plan: engine.PlanCore,
		Verticals: []string{"emergency", "healthcare", "logistics"}}, Zones: demoZones()}
	// A first report of each zone, so that the console's map starts in colour, not grey
	// (online delivers as unknown does: docs/rules.md, Delivery).
	for _, z := range in.Zones {
		in.Connectivity = append(in.Connectivity, model.ConnectivityReport{ZoneCode: z.Code, State: model.ConnOnline, Network: "demo"})
	}
	for _, role := range model.Roles {
		login, name := demoUserNames(role)
		u := demoUser{Email: login + "@" + demoDomain, Password: model.RandomToken(12), Role: role}
		in.Users = append(in.Users, model.CreateUserInput{Email: u.Email, Name: name, Role: role, Password: u.Password})
		c.Users = append(c.Users, u)
	}
	in.Teams = func(users []*model.User) []model.TeamInput {
		var operatorID string
		for _, u := range users {
			if u.RBACLevel == model.RoleFieldOperator {
				operatorID = u.ID
			}
		}
		return demoTeams(operatorID)
	}
	created, _, err := eng.AdminSeedTenant(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("creating the demo data: %w", err)
	}
	c.APIKey = created.APIKey
	return c, nil
}

// printDemo prints the demo credentials and a first request that works as printed.
// baseURL is where the node listens; caFile, when set, is the self-signed certificate.
func printDemo(w io.Writer, dataDir string, c *demoCredentials, baseURL, caFile, internalSecret string) {
	path := filepath.Join(dataDir, DemoCredentialsFile)
	if c == nil {
		fmt.Fprintf(w, "\nDemo: the data directory already holds tenants and no %s; nothing was created.\n", path)
		return
	}
	curl := "curl"
	if caFile != "" {
		curl += " --cacert " + shellQuote(caFile)
	}
	fmt.Fprintf(w, "\nDemo tenant %q (credentials saved in %s):\n", c.Tenant, path)
	fmt.Fprintf(w, "  API key: %s\n", c.APIKey)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ROLE\tEMAIL\tPASSWORD")
	for _, u := range c.Users {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", u.Role, u.Email, u.Password)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nConsole: %s/console/ (log in as one of the users above)\n", baseURL)
	fmt.Fprintf(w, "\nTry it:\n  %s %s/v1/tenant/me -H \"x-svc-api-key: %s\"\n", curl, baseURL, c.APIKey)
	if len(c.Users) > 0 {
		u := c.Users[0]
		body := fmt.Sprintf(`{"email":"%s","password":"%s"}`, u.Email, u.Password)
		fmt.Fprintf(w, "  %s %s/v1/auth/login -H \"content-type: application/json\" -d %s\n", curl, baseURL, shellQuote(body))
	}
	fmt.Fprintf(w, "  %s %s/v1/events -H \"x-svc-api-key: %s\" -H \"content-type: application/json\" -d %s\n",
		curl, baseURL, c.APIKey, shellQuote(demoEventBody))
	fmt.Fprintf(w, "  %s %s/v1/events -H \"x-svc-api-key: %s\"\n", curl, baseURL, c.APIKey)
	if internalSecret != "" {
		fmt.Fprintf(w, "  %s %s/metrics -H \"x-svc-internal: %s\"\n", curl, baseURL, internalSecret)
	}
}

// demoEventBody is the event of the demo's curl: a cardiac arrest in the lyon zone.
const demoEventBody = `{"type":"CARDIAC_ARREST","priority":"critical","vertical":"healthcare","idempotency_key":"demo-1",` +
	`"payload":{"lat":45.7640,"lng":4.8357,"severity":"red","required_equipment":["defibrillator"]}}`

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
