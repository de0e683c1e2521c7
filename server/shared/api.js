// The node's API client of both web apps: JSON in and out, the bearer token, and the
// error envelope ({error, message, request_id}) as an ApiError with its code, status,
// message and request id. The session's token is held in memory only (never in
// localStorage); what survives a reload is the console's session, in an HttpOnly cookie no
// script can read, that POST /v1/auth/refresh turns into a token
// (docs/decisions/0118-console-session.md); the field app keeps its device's credential
// instead (docs/decisions/0127-field-app.md). Every other request omits cookies.

import { plainWords } from "./words.js";

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
    this.requestId = this.body.request_id || "";
    this.retryAfter = Number(headers && headers.get("Retry-After")) || 0;
  }
  // plain tells the user what happened, in plain words.
  get plain() {
    return plainWords(this);
  }
}

// request calls the API and answers the decoded body, or throws an ApiError (code
// "network", status 0, when the node cannot be reached).
// opts: signal (an AbortSignal), cookies (true: send and accept the session cookie),
// token (a credential to send instead of the session's token, as the field app's device
// credential: its refusal ends no session).
export async function request(method, path, body, opts) {
  const token = (opts && opts.token) || (session && session.token);
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
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
    if (session && !(opts && opts.token) && path !== "/v1/auth/login" &&
      ["token_expired", "unauthorized", "account_suspended"].includes(e.code)) {
      endSession(e);
    }
    throw e;
  }
  return data;
}

export const get = (p, o) => request("GET", p, undefined, o);
export const post = (p, b, o) => request("POST", p, b, o);

// HELD marks, in this browser's storage, that a session cookie was set: the cookie is
// HttpOnly, so no script can see it, and a page without a session must not ask the node
// for one (a 401 in the console of every logged-out load). The mark holds no secret.
const HELD = "fieldrelay.session-held";

function held(on) {
  try {
    if (on === undefined) return localStorage.getItem(HELD) === "1";
    if (on) localStorage.setItem(HELD, "1");
    else localStorage.removeItem(HELD);
  } catch (_) {
    // Private mode without storage: always ask, as before the mark.
    return true;
  }
  return on;
}

// keepSession puts the session in its cookie, so that a reload or a new tab resumes it.
export async function keepSession() {
  const res = await post("/v1/auth/session", undefined, { cookies: true });
  held(true);
  return res;
}

// resume answers the session of the cookie (token, expires_in, user), or null; without
// the mark of a kept session it asks nothing.
export async function resume() {
  if (!held()) return null;
  try {
    return await post("/v1/auth/refresh", undefined, { cookies: true });
  } catch (_) {
    held(false);
    return null;
  }
}

// logoutEverywhere ends every session of the user on the node and clears the cookie; it
// answers false when the node could not be told (the page logs out all the same).
export async function logoutEverywhere() {
  held(false);
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
