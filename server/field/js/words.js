// Plain words for what the node answers: a rejected change says why in terms of the
// mission, not an error code.

export const MOVE_WORDS = {
  ACK: "Acknowledge",
  ON_ROUTE: "On route",
  ON_SITE: "On site",
  COMPLETED: "Completed",
  FAILED: "Failed",
};

export const STATE_WORDS = {
  CREATED: "new", SENT: "new", ACK: "acknowledged", ON_ROUTE: "on route", ON_SITE: "on site",
  COMPLETED: "completed", FAILED: "failed", CLOSED: "closed on the node",
};

export const PRIORITY_RANK = { critical: 0, high: 1, normal: 2, low: 3 };

// typeWords turns an event type (CARDIAC_ARREST) into words (Cardiac arrest).
export function typeWords(type) {
  if (!type) return "Mission";
  const s = String(type).replace(/[_-]+/g, " ").toLowerCase().trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

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

export const OUTBOX_WORDS = {
  waiting: "waiting to send",
  pending: "received, waiting for an earlier change",
  applied: "applied",
  done: "already applied (duplicate)",
  rejected: "rejected",
};
