package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/admin"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
	"github.com/spf13/cobra"
)

func (a *app) newSMSCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sms",
		Short: "Connect an SMS gateway (SMS Gateway for Android, Twilio) to a tenant",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.newSMSSetupCommand())
	return cmd
}

// smsSetupResult is what `sms setup` prints.
type smsSetupResult struct {
	TenantID   string `json:"tenant_id"`
	Driver     string `json:"driver"`
	Gateway    string `json:"gateway"`
	WebhookURL string `json:"webhook_url"`
	// AndroidSigningKey is the key to enter in the phone app (android only).
	AndroidSigningKey string `json:"android_signing_key,omitempty"`
	// Registered are the ids of the webhooks registered on the phone, by event (android
	// only).
	Registered map[string]string `json:"registered_webhooks,omitempty"`
	// StatusCallback: Twilio posts each message's delivery status (twilio only).
	StatusCallback bool `json:"status_callback,omitempty"`
}

func (a *app) newSMSSetupCommand() *cobra.Command {
	var f adminFlags
	var tenant, base, gateway string
	var noRegister bool
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Print (and, for Android, register) the webhook that brings a tenant its members' SMS replies",
		Long: "Print the webhook URL that the SMS gateway of --sms-gateway (the serve flag's value) must call\n" +
			"with the SMS it receives, for the tenant --tenant, on the node reached at --url.\n" +
			"SMS Gateway for Android: the webhook (event sms:received) is registered on the phone through its\n" +
			"local server (POST /webhooks), and the signing key printed must be entered in the app\n" +
			"(Settings → Webhooks → Signing Key): the node refuses webhooks it does not sign.\n" +
			"Twilio: set the URL as the number's \"A message comes in\" webhook (HTTP POST); Twilio signs\n" +
			"with the account's auth token.",
		Example: `  fieldrelay sms setup --tenant acme --url https://192.168.1.10:8443 --sms-gateway android+http://sms:PASS@192.168.1.20:8080
  FIELDRELAY_SMS_GATEWAY='twilio://AC…:TOKEN@api.twilio.com?from=%2B33…' fieldrelay sms setup --tenant acme --url https://relay.example.org`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			g, err := outbound.ParseSMSGateway(gateway)
			if err != nil {
				return err
			}
			if g == nil || g.Driver == outbound.DriverGeneric {
				return model.Invalid("sms-gateway", "--sms-gateway must name the android+http(s):// or twilio:// gateway "+
					"(a generic gateway posts to POST /v1/sms/inbound with a key made by `apikey create --scopes sms:inbound`)")
			}
			base = strings.TrimSuffix(base, "/")
			if !strings.HasPrefix(base, "https://") && !strings.HasPrefix(base, "http://") {
				return model.Invalid("url", "--url must be the node's base URL as the gateway reaches it (https://HOST:PORT)")
			}
			var setup model.SMSSetup
			if err := a.call(cmd.Context(), &f, admin.OpSMSSetup, admin.SMSSetupArgs{Tenant: tenant}, &setup); err != nil {
				return err
			}
			res := smsSetupResult{TenantID: setup.TenantID, Driver: g.Driver, Gateway: g.String(),
				WebhookURL: base + "/v1/sms/" + g.Driver + "/" + setup.TenantID, StatusCallback: g.StatusCallback != ""}
			if g.Driver == outbound.DriverAndroid {
				res.AndroidSigningKey = setup.AndroidSigningKey
				if !noRegister {
					res.Registered = map[string]string{}
					for _, event := range androidEvents {
						// A fixed id per tenant and event (at most 36 characters): setup run
						// again replaces the webhook instead of adding one.
						id := "fr" + strings.ToUpper(event[4:5]) + strings.ReplaceAll(setup.TenantID, "-", "")
						if err := outbound.RegisterAndroidWebhook(cmd.Context(), g, id, res.WebhookURL, event); err != nil {
							return err
						}
						res.Registered[event] = id
					}
				}
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			printSMSSetup(cmd.OutOrStdout(), &res)
			return nil
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "slug of the tenant (required)")
	cmd.Flags().StringVar(&base, "url", "", "the node's base URL as the gateway reaches it (required)")
	cmd.Flags().StringVar(&gateway, "sms-gateway", "none", "the SMS gateway, as given to serve")
	cmd.Flags().BoolVar(&noRegister, "no-register", false, "Android: print only, do not register the webhook on the phone")
	return cmd
}

// androidEvents are the webhooks of SMS Gateway for Android the node takes: the replies,
// and the delivery reports of the SMS it sends.
var androidEvents = []string{"sms:received", "sms:delivered", "sms:failed"}

func printSMSSetup(w io.Writer, r *smsSetupResult) {
	fmt.Fprintf(w, "gateway:      %s\n", r.Gateway)
	switch r.Driver {
	case outbound.DriverAndroid:
		fmt.Fprintf(w, "webhook URL:  %s (events %s)\n", r.WebhookURL, strings.Join(androidEvents, ", "))
		fmt.Fprintf(w, "signing key:  %s (enter it in the app: Settings → Webhooks → Signing Key)\n", r.AndroidSigningKey)
		if len(r.Registered) != 0 {
			for _, ev := range androidEvents {
				fmt.Fprintf(w, "registered on the phone: %s as webhook %s\n", ev, r.Registered[ev])
			}
		} else {
			fmt.Fprintf(w, "not registered: POST it to the phone's /webhooks once per event\n")
		}
	case outbound.DriverTwilio:
		fmt.Fprintf(w, "webhook URL:  %s\n", r.WebhookURL)
		fmt.Fprintf(w, "set it in the Twilio console: the number → Messaging → \"A message comes in\" → Webhook, HTTP POST\n")
		fmt.Fprintf(w, "Twilio signs its requests with the account's auth token: nothing else to enter\n")
		if r.StatusCallback {
			fmt.Fprintf(w, "delivery statuses: each message asks Twilio to post them to %s/status\n", r.WebhookURL)
		} else {
			fmt.Fprintf(w, "delivery statuses: add status_callback=<the node's base URL> to --sms-gateway to receive them\n")
		}
	}
}
