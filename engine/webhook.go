package engine

import (
	"github.com/fieldrelay/fieldrelay/engine/delivery"
)

// The use cases of webhook subscriptions are delivery.Webhooks', embedded in the Engine.

// Webhook subscription statuses.
const (
	WebhookActive   = delivery.WebhookActive
	WebhookDisabled = delivery.WebhookDisabled
)

// WebhookNames lists every webhook event name a subscription can ask for (docs/rules.md, Webhooks).
var WebhookNames = []string{HookEventCreated, HookEventDelivered, HookEventFailed,
	HookTeamDispatched, missionStatusHook, HookMissionReinforced,
	HookDispatchRequiresMn, HookSyncBatchProcessed, HookMissionMessage}

// HookWebhookTest names the message of POST /v1/webhooks/:id/test. It goes to the one
// subscription asked, whatever its events filter, so it is no name to subscribe to.
const HookWebhookTest = delivery.HookWebhookTest
