// The words of both web apps for what the node answers: its error codes, the mission
// states and moves. One table, so that an app never says something else than the other.

function minutes(sec) {
  const m = Math.ceil(sec / 60);
  return m <= 1 ? "about a minute" : m + " minutes";
}

// plainWords tells what an error of the node (an ApiError, or any { code }) means, in
// plain words: the code's words, else the node's message.
export function plainWords(e) {
  switch (e.code) {
    case "invalid_credentials":
      return "Wrong email or password.";
    case "account_locked":
      return "This account is locked after too many failed log-ins. Try again in " +
        minutes(e.retryAfter || 900) + ", or ask an administrator to unlock it.";
    case "token_expired":
      return "Your session has expired. Please log in again.";
    case "unauthorized":
      return "Your session is no longer valid (it was ended or your account changed). Please log in again.";
    case "account_suspended":
      return "This account is suspended. Ask your administrator to reactivate it.";
    case "tenant_suspended":
      return "Your organisation's access is suspended. Contact your fieldrelay provider.";
    case "forbidden":
      return "Your role does not allow this.";
    case "rate_limited":
      return "Too many requests right now. Try again in " + (e.retryAfter || 60) + " seconds.";
    case "not_found":
      return "Not found: it may have been removed, or belong to another team.";
    case "network":
      return "The node cannot be reached. Check the connection; the console keeps trying.";
    case "unavailable":
      return "The node is shutting down or busy. Try again in a moment.";
    case "internal_error":
      return "The node failed to do this (error " + (e.requestId || "") + ").";
    default:
      return e.message;
  }
}

// rejectWords says why the node refused a change to a mission (a move sent by the field
// app's outbox), in terms of the mission, not of an error code.
export function rejectWords(error, message) {
  switch (error) {
    case "invalid_transition":
      return "The node had already moved this mission past that step (a supervisor may have changed it).";
    case "mission_closed":
      return "The mission was already closed on the node (completed or failed) before this change arrived.";
    case "not_found":
      return "The mission is no longer your team's, or was removed.";
    case "forbidden":
      return "Your role does not allow this change.";
    case "validation_error":
      return "The node refused the change: " + (message || "invalid data") + ".";
    default:
      return (message || error || "refused") + ".";
  }
}

// MOVE_WORDS names the move to each state, on its button.
export const MOVE_WORDS = {
  ACK: "Acknowledge",
  ON_ROUTE: "On route",
  ON_SITE: "On site",
  COMPLETED: "Completed",
  FAILED: "Failed",
};

// STATE_WORDS names the mission states in a sentence (CLOSED: the field app's mark of a
// mission a rejected move found closed on the node).
export const STATE_WORDS = {
  CREATED: "new", SENT: "new", ACK: "acknowledged", ON_ROUTE: "on route", ON_SITE: "on site",
  COMPLETED: "completed", FAILED: "failed", CLOSED: "closed on the node",
};

// WORDS names every state the node answers, by what it is the state of: the one table
// both apps read for a badge, a filter's option or a sentence (docs/decisions/0271-state-words.md).
// A value the table lacks (a newer node) reads as its own words, "_" as spaces.
export const WORDS = {
  mission: {
    CREATED: "New", SENT: "Sent", ACK: "Acknowledged", ON_ROUTE: "On route", ON_SITE: "On site",
    COMPLETED: "Completed", FAILED: "Failed",
  },
  event: {
    pending: "Pending", delivered: "Delivered", failed: "Delivery failed", queued_offline: "Queued offline", closed: "Closed",
  },
  priority: { critical: "Critical", high: "High", normal: "Normal", low: "Low" },
  team: { available: "Available", on_mission: "On a mission", off_duty: "Off duty" },
  zone: { online: "Online", degraded: "Degraded", offline: "Offline", unknown: "Unknown (no recent report)" },
  // crew: whether a device of the team has the mission's latest change.
  crew: { acknowledged: "Received", not_yet_received: "Not yet received", nothing_sent: "Nothing sent" },
  credential: { valid: "Valid", expired: "Expired", revoked: "Revoked", none: "None" },
  alert: {
    event_undispatched: "Not dispatched yet", requires_manual: "Needs a dispatcher (auto-dispatch found no team)",
    mission_unacknowledged: "Mission not acknowledged", mission_overdue: "Not on site in time", crew_message: "Message from a crew",
    mission_terminal_conflict: "Completed on one node, failed on another",
    device_silent: "A crew's phone stopped syncing", sms_gateway_down: "SMS gateway down", upstream_down: "Upstream link down",
    downstream_lagging: "Central changes not reaching this site",
  },
  user: { active: "Active", suspended: "Suspended", pending: "Waiting for email verification", inactive: "Inactive" },
  webhook: { active: "Active", disabled: "Off" },
  delivery: { succeeded: "Delivered", failed: "Failed" },
};

// word answers the words of a state of kind (a key of WORDS).
export function word(kind, value) {
  if (value == null || value === "") return "";
  const w = WORDS[kind] && WORDS[kind][value];
  return w || String(value).replace(/_/g, " ");
}
