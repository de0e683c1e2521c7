// The node's API. The access token is held in memory only (never in localStorage); what
// survives a reload is the console's session, in an HttpOnly cookie no script can read,
// that POST /v1/auth/refresh turns into a token
// (docs/decisions/0118-console-session.md). Every other request omits cookies.

let session = null;
const listeners = new Set();

export function getSession() {
  return session;
}

export function setSession(s) {
  session = s;
}

// onSessionEnd registers a callback for a session the node no longer accepts.
export function onSessionEnd(fn) {
  listeners.add(fn);
}

function endSession(err) {
  if (!session) return;
  session = null;
  for (const fn of listeners) fn(err);
}

export class ApiError extends Error {
  constructor(status, body, headers) {
    super(body && body.message ? body.message : "HTTP " + status);
    this.status = status;
    this.code = (body && body.error) || "http_" + status;
    this.body = body || {};
    this.retryAfter = Number(headers && headers.get("Retry-After")) || 0;
  }
  // plain tells the user what happened, in plain words.
  get plain() {
    return plainWords(this);
  }
}

function minutes(sec) {
  const m = Math.ceil(sec / 60);
  return m <= 1 ? "about a minute" : m + " minutes";
}

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
      return "The node failed to do this (error " + (e.body.request_id || "") + ").";
    default:
      return e.message;
  }
}

// request calls the API and answers the decoded body, or throws an ApiError.
// opts: signal (an AbortSignal), cookies (true: send and accept the session cookie).
export async function request(method, path, body, opts) {
  const headers = { Accept: "application/json" };
  if (session) headers.Authorization = "Bearer " + session.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, { method, headers, cache: "no-store", credentials: opts && opts.cookies ? "same-origin" : "omit",
      body: body === undefined ? undefined : JSON.stringify(body), signal: opts && opts.signal });
  } catch (err) {
    if (err && err.name === "AbortError") throw err;
    throw new ApiError(0, { error: "network", message: "network error" }, null);
  }
  let data = null;
  try {
    data = await res.json();
  } catch (_) {
    data = null;
  }
  if (!res.ok) {
    const e = new ApiError(res.status, data, res.headers);
    if (session && path !== "/v1/auth/login" &&
      ["token_expired", "unauthorized", "account_suspended"].includes(e.code)) {
      endSession(e);
    }
    throw e;
  }
  return data;
}

export const get = (p, o) => request("GET", p, undefined, o);
export const post = (p, b, o) => request("POST", p, b, o);

// keepSession puts the session in its cookie, so that a reload or a new tab resumes it.
export const keepSession = () => post("/v1/auth/session", undefined, { cookies: true });

// resume answers the session of the cookie (token, expires_in, user), or null.
export async function resume() {
  try {
    return await post("/v1/auth/refresh", undefined, { cookies: true });
  } catch (_) {
    return null;
  }
}

// logoutEverywhere ends every session of the user on the node and clears the cookie; it
// answers false when the node could not be told (the page logs out all the same).
export async function logoutEverywhere() {
  if (!session) return true;
  try {
    await post("/v1/auth/logout", undefined, { cookies: true });
    return true;
  } catch (e) {
    return e.code === "unauthorized" || e.code === "token_expired" || e.code === "account_suspended";
  }
}
export const patch = (p, b) => request("PATCH", p, b);

// all walks a list's cursor pages up to max items.
export async function all(path, max) {
  const out = [];
  let cursor = "";
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await get(path + sep + "limit=500" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    out.push(...page.data);
    if (!page.next_cursor || out.length >= (max || 2000)) return out;
    cursor = page.next_cursor;
  }
}

export { endSession };
