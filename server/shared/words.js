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
