// The console's shell: log-in, the role's views, the shared state and the live stream.

import { h, clear, tickAgo, typeName, ago, badge } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { loadMoves } from "/shared/moves.js";
import { plainWords, word } from "/shared/words.js";
import { LiveStream } from "./stream.js";
import { eventsView } from "./views/events.js";
import { mapView } from "./views/map.js";
import { dispatchView } from "./views/dispatch.js";
import { missionsView } from "./views/missions.js";
import { webhooksView } from "./views/webhooks.js";
import { adminView } from "./views/admin.js";
import { teamsView } from "./views/teams.js";
import { devicesView } from "./views/devices.js";
import { upstreamView } from "./views/upstream.js";

const NIL = "00000000-0000-0000-0000-000000000000";
const VIEWS = [eventsView, mapView, dispatchView, teamsView, missionsView, webhooksView, adminView, devicesView, upstreamView];

const $ = (id) => document.getElementById(id);

// state is what every view reads; the stream and the loads write it.
const state = {
  me: null, perms: new Set(), tenant: null, roles: null, roleOrder: [],
  events: new Map(), missions: new Map(), teams: new Map(), zones: new Map(), users: new Map(),
  fresh: new Set(), live: "off", active: null, loadedAt: 0, eventsCursor: "", missionsCursor: "",
  // open holds the ids of every open event, whatever its age (GET /v1/events?open=true):
  // the dispatch queue, the map and the alerts read it; each (re)load takes it whole.
  open: new Set(),
  // alerts holds the tenant's open alerts by id (GET /v1/alerts and the stream's alert.*).
  alerts: new Map(),
};

const ctx = {
  state,
  can: (p) => state.perms.has(p),
  // restricted: a field operator, held to its own teams' missions.
  restricted: () => state.perms.has("missions:receive") && !state.perms.has("missions:manage"),
  readOnly: () => !["events:write", "dispatch:assign", "missions:manage", "missions:receive",
    "tenant:admin", "webhooks:manage", "settings:dispatch", "teams:manage"].some((p) => state.perms.has(p)),
  go, link, toast, rerender, loadMission, loadEvent, loadMore, reload,
  actorName(id) {
    if (!id) return "";
    if (id === NIL) return "system";
    if (state.me && id === state.me.id) return state.me.name + " (you)";
    const u = state.users.get(id);
    if (u) return u.name;
    for (const t of state.teams.values()) {
      for (const m of t.members || []) if (m.user_id === id) return m.name;
    }
    return "user …" + id.slice(-6);
  },
};

// ---- theme

function applyTheme(sun) {
  document.documentElement.classList.toggle("sun", sun);
  document.documentElement.classList.toggle("dim", !sun);
  $("theme-toggle").setAttribute("aria-pressed", String(sun));
  try { localStorage.setItem("fieldrelay.theme", sun ? "sun" : "dim"); } catch (_) { /* private mode */ }
}

function initTheme() {
  let saved = null;
  try { saved = localStorage.getItem("fieldrelay.theme"); } catch (_) { saved = null; }
  const sun = saved ? saved === "sun" : matchMedia("(prefers-contrast: more)").matches;
  applyTheme(sun);
  $("theme-toggle").addEventListener("click", () => applyTheme(!document.documentElement.classList.contains("sun")));
}

// ---- alerts: sound, title count, toasts and banner

// An alert is a new critical or high event, or a mission not acknowledged within the
// tenant's reinforcement timeout: a toast that stays until acknowledged, a count in the
// tab's title, and a tone when the user turned the sound on.
const TITLE = document.title;
let audio = null;

function soundOn() {
  return $("sound-toggle").getAttribute("aria-pressed") === "true";
}

function applySound(on) {
  $("sound-toggle").setAttribute("aria-pressed", String(on));
  $("sound-toggle").textContent = on ? "Sound on" : "Sound off";
  try { localStorage.setItem("fieldrelay.sound", on ? "on" : "off"); } catch (_) { /* private mode */ }
}

function initSound() {
  let saved = null;
  try { saved = localStorage.getItem("fieldrelay.sound"); } catch (_) { saved = null; }
  applySound(saved === "on");
  $("sound-toggle").addEventListener("click", () => {
    applySound(!soundOn());
    // The click is the gesture that lets the page play sound.
    if (soundOn()) beep();
  });
}

// beep plays a short two-tone alert, made by Web Audio: no sound file to fetch.
function beep() {
  if (!soundOn()) return;
  try {
    audio = audio || new AudioContext();
    if (audio.state === "suspended") audio.resume();
    for (const [f, at] of [[880, 0], [660, 0.18]]) {
      const o = audio.createOscillator();
      const g = audio.createGain();
      o.frequency.value = f;
      g.gain.value = 0.2;
      o.connect(g).connect(audio.destination);
      o.start(audio.currentTime + at);
      o.stop(audio.currentTime + at + 0.15);
    }
  } catch (_) {
    // No audio device: the toast and the title still say it.
  }
}

function countTitle() {
  const n = $("alerts").querySelectorAll(".toast.alarm").length + [...state.alerts.values()].filter((a) => !a.acked_at).length;
  document.title = n ? "(" + n + ") " + TITLE : TITLE;
}

// ---- the alert tray: the node's alerts, shared by every console (docs/decisions/0172-shared-alerts.md)

// TRAY_ROWS alerts show; the rest are counted, and shown on demand.
const TRAY_ROWS = 3;
let trayOpen = false;

function alertLink(a) {
  if (a.mission_id && ctx.can("missions:view")) return () => go("missions", { missionId: a.mission_id });
  if (a.event_id && ctx.can("dispatch:assign") && state.open.has(a.event_id)) return () => go("dispatch", { eventId: a.event_id });
  if (a.event_id) return () => go("events", { eventId: a.event_id });
  return null;
}

async function ackAlerts(ids) {
  const results = await Promise.allSettled(ids.map((id) => api.post("/v1/alerts/" + encodeURIComponent(id) + "/ack", {})));
  for (const r of results) {
    if (r.status === "fulfilled") state.alerts.set(r.value.id, r.value);
    else toast(r.reason.plain || String(r.reason), "warn");
  }
  renderTray();
}

// renderTray shows the open alerts, the ones nobody took first, newest first within.
function renderTray() {
  const tray = $("alert-tray");
  const list = [...state.alerts.values()].filter((a) => a.status === "open")
    .sort((a, b) => (!!a.acked_at - !!b.acked_at) || (a.raised_at < b.raised_at ? 1 : -1));
  tray.hidden = !state.me || !list.length;
  const untaken = list.filter((a) => !a.acked_at);
  tray.classList.toggle("quiet", !untaken.length);
  $("alert-count").textContent = untaken.length ? untaken.length + " to take" : "all taken";
  const canAck = ctx.can("dispatch:assign");
  const all = $("alert-ack-all");
  all.hidden = !canAck || untaken.length < 2;
  all.onclick = () => ackAlerts(untaken.map((a) => a.id));
  const more = $("alert-more");
  more.hidden = list.length <= TRAY_ROWS;
  more.setAttribute("aria-expanded", String(trayOpen));
  more.textContent = trayOpen ? "Show fewer" : (list.length - TRAY_ROWS) + " more";
  more.onclick = () => { trayOpen = !trayOpen; renderTray(); };
  clear($("alert-list"), (trayOpen ? list : list.slice(0, TRAY_ROWS)).map((a) => {
    const open = alertLink(a);
    return h("li", { class: a.acked_at ? "acked" : "", dataset: { alertId: a.id, kind: a.kind } },
      badge(word("priority", a.priority) || "Alert", "p-" + (a.priority || "high")),
      h("span", { class: "small kind" }, word("alert", a.kind)),
      h("span", { class: "grow" }, a.message, " ", h("span", { class: "muted small" }, ago(a.raised_at)),
        a.acked_at ? h("span", { class: "muted small" }, " · taken by " + ctx.actorName(a.acked_by)) : null),
      open ? h("button", { type: "button", class: "link", onclick: open }, "Open") : null,
      canAck && !a.acked_at ? h("button", { type: "button", class: "ack", onclick: () => ackAlerts([a.id]) }, "Acknowledge") : null);
  }));
  countTitle();
}

async function loadAlerts() {
  const list = await api.all("/v1/alerts", 1e9);
  state.alerts.clear();
  put(state.alerts, list);
  renderTray();
}

// toast shows a message in the corner. The same message again while it shows adds to its
// count ("×4") instead of piling up; a critical one stays until acknowledged.
function toast(text, kind, ms) {
  const key = (kind || "") + "|" + text;
  let el = [...$("alerts").children].find((x) => x.dataset.key === key);
  if (el) {
    el.dataset.count = String(Number(el.dataset.count) + 1);
    el.querySelector(".count").textContent = "×" + el.dataset.count;
  } else {
    el = h("div", { class: "toast " + (kind || "") + (kind === "critical" ? " alarm" : ""), role: kind === "critical" ? "alert" : "status",
      dataset: { key, count: "1" } }, h("span", { class: "grow" }, text), h("span", { class: "count" }));
    if (kind === "critical") {
      const box = el;
      el.append(h("button", { type: "button", class: "ack", onclick: () => { box.remove(); countTitle(); } }, "Acknowledge"));
    }
    $("alerts").append(el);
    countTitle();
  }
  clearTimeout(toastTimers.get(el));
  if (kind !== "critical") {
    const box = el;
    toastTimers.set(el, setTimeout(() => box.remove(), ms || 5000));
  }
}

const toastTimers = new WeakMap();

function banner(text, info) {
  const b = $("banner");
  b.textContent = text || "";
  b.classList.toggle("info", !!info);
  b.hidden = !text;
}

// staleSince is when the stream went down (0 while it is up): the stale banner says so
// until it is back.
let staleSince = 0;

function staleBanner(st) {
  const b = $("stale");
  if (st === "reconnecting" || st === "polling") {
    if (!staleSince) staleSince = Date.now();
    const at = new Date(staleSince).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
    b.textContent = "Disconnected since " + at + " — data may be stale";
    b.hidden = false;
  } else {
    staleSince = 0;
    b.hidden = true;
  }
}

// ---- log-in and log-out

// loadRoles reads the node's role table once (GET /shared/roles.json, written from the
// engine's): each role's permissions, and the roles, most privileged first.
async function loadRoles() {
  if (!state.roles) {
    const table = await api.get("/shared/roles.json");
    state.roles = table.roles;
    state.roleOrder = table.order;
  }
  return state.roles;
}

// begin holds a login's or a resumed session's token and opens the console.
async function begin(res) {
  const [roles] = await Promise.all([loadRoles(), loadMoves()]);
  api.setSession({ token: res.token, user: res.user, expiresAt: Date.now() + res.expires_in * 1000 });
  state.me = res.user;
  state.perms = new Set(roles[res.user.rbac_level] || []);
  await start(res.expires_in);
}

async function login(ev) {
  ev.preventDefault();
  const err = $("login-error");
  err.textContent = "";
  $("login-submit").disabled = true;
  try {
    const res = await api.post("/v1/auth/login", { email: $("login-email").value.trim(), password: $("login-password").value });
    $("login-password").value = "";
    await begin(res);
    try {
      await api.keepSession();
      sessions.postMessage("login");
    } catch (e) {
      toast("This session will not survive a reload: " + e.plain, "warn");
    }
  } catch (e) {
    err.textContent = e.plain || String(e);
  } finally {
    $("login-submit").disabled = false;
  }
}

let expiryTimer = null;

async function start(expiresIn) {
  $("login").hidden = true;
  $("bar").hidden = false;
  $("who").textContent = state.me.name + " · " + state.me.rbac_level.replace(/_/g, " ");
  clearTimeout(expiryTimer);
  expiryTimer = setTimeout(() => logout("Your session has expired (8 hours). Please log in again."), expiresIn * 1000);
  try {
    state.tenant = await api.get("/v1/tenant/me");
    $("tenant-name").textContent = state.tenant.name;
    if (state.tenant.status !== "active") banner(plainWords({ code: "tenant_suspended" }));
  } catch (e) {
    if (!api.getSession()) return;
    banner(e.plain);
  }
  if (state.me.rbac_level === "api_user") {
    $("view").hidden = false;
    clear($("view")).append(h("div", { class: "card" }, h("h2", {}, "API access only"),
      h("p", {}, "This account is for API clients: the console has no view for it. Use an API key or ask an administrator for a console role.")));
    return;
  }
  buildNav();
  route(true);
  reload();
  stream.start();
}

// sessions tells the console's other tabs of a log-in (they resume it) and a log-out
// (they end too).
const sessions = typeof BroadcastChannel === "function" ? new BroadcastChannel("fieldrelay.session") : { postMessage() {} };
sessions.onmessage = async (e) => {
  if (e.data === "logout" && state.me) logout("You logged out in another tab.");
  if (e.data === "login" && !state.me) {
    const res = await api.resume();
    if (res && !state.me) await begin(res);
  }
};

// logoutClicked ends the session on the node (every tab and device of the user), then here
// and in the other tabs at once.
async function logoutClicked() {
  const told = await api.logoutEverywhere();
  logout(told ? "You are logged out." : "Logged out in this page only: the node could not be reached, so the session " +
    "may resume on a reload. Log in and out again once the node is back.");
  sessions.postMessage("logout");
}

function logout(message) {
  clearTimeout(expiryTimer);
  stream.stop();
  api.setSession(null);
  state.me = null; state.perms = new Set(); state.tenant = null; state.active = null;
  for (const m of [state.events, state.missions, state.teams, state.zones, state.users, state.open, state.alerts]) m.clear();
  renderTray();
  clear($("alerts"));
  countTitle();
  banner("");
  $("bar").hidden = true;
  $("nav").hidden = true;
  $("view").hidden = true;
  clear($("view"));
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("login-email").focus();
}

api.onSessionEnd((e) => logout(e.plain));

// ---- navigation

function buildNav() {
  const nav = clear($("nav"));
  for (const v of VIEWS) {
    if (!v.visible(ctx)) continue;
    nav.append(h("button", { type: "button", role: "tab", id: "tab-" + v.id, dataset: { view: v.id },
      "aria-selected": "false", onclick: () => go(v.id) }, v.title(ctx)));
  }
  nav.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const tabs = [...nav.querySelectorAll("button")];
    const i = tabs.indexOf(document.activeElement);
    if (i < 0) return;
    const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
    next.focus();
    next.click();
  });
  nav.hidden = false;
}

// Every view and selection has a URL (#/view or #/view/id): a deep link a dispatcher can
// paste to a colleague; back and forward move between them.
function hashOf(id, opts) {
  const sel = opts && (opts.eventId || opts.missionId || opts.teamId);
  return "#/" + id + (sel ? "/" + encodeURIComponent(sel) : "");
}

// link records the URL of what the active view shows, as a step of the history.
function link(id, opts) {
  const hash = hashOf(id, opts);
  if (location.hash !== hash) history.pushState(null, "", hash);
}

// route opens the view of the URL (the first view the role has when it names none).
function route(first) {
  const [, id, sel] = location.hash.match(/^#\/([a-z]+)(?:\/([^/]+))?$/) || [];
  const v = VIEWS.find((x) => x.id === id && x.visible(ctx)) || VIEWS.find((x) => x.visible(ctx));
  const param = sel ? decodeURIComponent(sel) : undefined;
  go(v.id, { eventId: param, missionId: param, teamId: param }, first);
}

window.addEventListener("popstate", () => { if (state.me && state.active) route(false); });

function go(id, opts, replace) {
  const v = VIEWS.find((x) => x.id === id && x.visible(ctx));
  if (!v) return;
  const hash = hashOf(id, { eventId: ["dispatch", "events"].includes(id) && opts && opts.eventId,
    missionId: id === "missions" && opts && opts.missionId, teamId: id === "teams" && opts && opts.teamId });
  if (replace) history.replaceState(null, "", hash);
  else if (location.hash !== hash) history.pushState(null, "", hash);
  if (state.active && state.active.unmount) state.active.unmount();
  state.active = v;
  for (const b of $("nav").querySelectorAll("button")) b.setAttribute("aria-selected", String(b.dataset.view === id));
  const root = clear($("view"));
  root.hidden = false;
  root.setAttribute("role", "tabpanel");
  root.setAttribute("aria-labelledby", "tab-" + id);
  v.mount(root, ctx, opts || {});
}

let pending = false;

// rerender updates the active view once per frame, keeping the focus (and, in a text
// field, the caret) on the element with the same data-key: a live update must not take
// the keyboard away from someone typing.
function rerender() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    const v = state.active;
    if (!v || !v.update) return;
    const was = document.activeElement;
    const key = was && was.dataset && was.dataset.key;
    const caret = key && typeof was.selectionStart === "number" ? [was.selectionStart, was.selectionEnd] : null;
    v.update(ctx);
    if (key) {
      const el = $("view").querySelector('[data-key="' + CSS.escape(key) + '"]');
      // Only a focus the update lost (it was on a replaced element) is given back: a view
      // that moved it on purpose (dispatch.js hands it to the best team) keeps its choice.
      const lost = !document.activeElement || document.activeElement === document.body;
      if (el && lost) {
        el.focus({ preventScroll: true });
        if (caret && typeof el.setSelectionRange === "function") el.setSelectionRange(caret[0], caret[1]);
      }
    }
  });
}

// ---- data

function put(map, items, key) {
  for (const it of items) map.set(it[key || "id"], it);
}

// The lists loaded a page of 300 at a time: the first page by reload, the next ones by
// loadMore, which keeps a record already held (the stream may have brought a newer one).
const PAGED = {
  events: { path: "/v1/events", key: "event_id", cursor: "eventsCursor" },
  missions: { path: "/v1/missions", key: "id", cursor: "missionsCursor" },
};

function firstPage(kind) {
  const p = PAGED[kind];
  return api.get(p.path + "?limit=300").then((r) => {
    state[kind].clear();
    put(state[kind], r.data, p.key);
    state[p.cursor] = r.next_cursor || "";
  });
}

async function loadMore(kind) {
  const p = PAGED[kind];
  try {
    const r = await api.get(p.path + "?limit=300&cursor=" + encodeURIComponent(state[p.cursor]));
    for (const it of r.data) if (!state[kind].has(it[p.key])) state[kind].set(it[p.key], it);
    state[p.cursor] = r.next_cursor || "";
  } catch (e) {
    toast(e.plain, "warn");
  }
}

// openLoads holds, for each loadOpen in flight, the events the stream opened (true) or
// closed (false) meanwhile: they are newer than the list the load brings back.
const openLoads = new Set();

// loadOpen takes every open event from the node, in pages of 500, after the newest page:
// an open incident is in the queue whatever its age (docs/decisions/0170-open-events.md).
// What the stream told while it ran wins over the list (an event created between the
// list's read and its arrival stays in the queue).
async function loadOpen() {
  const touched = new Map();
  openLoads.add(touched);
  try {
    const evs = await api.all("/v1/events?open=true", 1e9);
    const open = new Set(evs.map((e) => e.event_id));
    for (const [id, isOpen] of touched) {
      if (isOpen) open.add(id);
      else open.delete(id);
    }
    state.open = open;
    put(state.events, evs.filter((e) => !touched.has(e.event_id)), "event_id");
  } finally {
    openLoads.delete(touched);
  }
}

async function reload() {
  const jobs = [];
  if (ctx.can("events:read")) jobs.push(firstPage("events").then(loadOpen), loadAlerts());
  if (ctx.can("zones:read")) jobs.push(api.all("/v1/zones").then((z) => { state.zones.clear(); put(state.zones, z, "code"); }));
  if (ctx.can("teams:read")) jobs.push(api.all("/v1/teams").then((t) => { state.teams.clear(); put(state.teams, t); }));
  if (ctx.can("missions:view")) jobs.push(firstPage("missions"));
  if (ctx.can("tenant:admin")) jobs.push(api.all("/v1/tenant/users").then((u) => { state.users.clear(); put(state.users, u); }));
  const results = await Promise.allSettled(jobs);
  const failed = results.find((r) => r.status === "rejected");
  if (failed && api.getSession()) {
    const e = failed.reason;
    if (e.code === "tenant_suspended") banner(e.plain);
    else toast(e.plain || String(e), "warn");
  }
  state.loadedAt = Date.now();
  rerender();
}

// loadEvent reads one event (a deep link to one not loaded: an old closed one).
async function loadEvent(id) {
  try {
    const e = await api.get("/v1/events/" + encodeURIComponent(id));
    delete e.payload_warnings;
    state.events.set(e.event_id, e);
    if (e.status !== "closed") state.open.add(e.event_id);
    rerender();
    return e;
  } catch (e) {
    if (e.code !== "not_found") toast(e.plain, "warn");
    return null;
  }
}

async function loadMission(id) {
  try {
    const m = await api.get("/v1/missions/" + id);
    state.missions.set(m.id, m);
    rerender();
    return m;
  } catch (e) {
    if (e.code !== "not_found") toast(e.plain, "warn");
    return null;
  }
}

// ---- live changes

// announceAuto tells the room that the node dispatched a team by itself (auto-dispatch):
// nobody clicked, so nobody would know otherwise. Once a mission: the answer to the
// console's own new event and the stream both tell it.
const announced = new Set();
function announceAuto(missionId, teamId, eventId, type) {
  if (announced.has(missionId)) return;
  announced.add(missionId);
  const team = state.teams.get(teamId);
  const ev = state.events.get(eventId);
  const what = type || (ev ? ev.type : "");
  toast("Auto-dispatched: " + (team ? team.name : "team …" + teamId.slice(-6)) + " → " + (what ? typeName(what) : "event …" + eventId.slice(-6)), "ok", 10000);
}
ctx.announceAuto = announceAuto;

function onChange(name, data) {
  switch (name) {
    case "ready":
      if (!data.resumed) reload();
      return;
    case "reset":
      reload();
      return;
    case "event.created":
    case "event.delivered":
    case "event.failed":
    case "event.closed": {
      const isNew = !state.events.has(data.event_id);
      state.events.set(data.event_id, data);
      if (data.status === "closed") state.open.delete(data.event_id);
      else state.open.add(data.event_id);
      for (const touched of openLoads) touched.set(data.event_id, data.status !== "closed");
      if (name === "event.created" && isNew) {
        state.fresh.add(data.event_id);
        setTimeout(() => state.fresh.delete(data.event_id), 5000);
      }
      break;
    }
    case "alert.raised":
      state.alerts.set(data.id, data);
      renderTray();
      beep();
      break;
    case "alert.acked":
      state.alerts.set(data.id, data);
      renderTray();
      break;
    case "alert.closed":
      state.alerts.delete(data.id);
      renderTray();
      break;
    case "team.updated":
      state.teams.set(data.id, data);
      break;
    case "team.dispatched":
      loadMission(data.mission_id);
      if (data.dispatched_by === NIL) announceAuto(data.mission_id, data.team_id, data.event_id);
      break;
    case "mission.status_updated":
      loadMission(data.mission_id);
      break;
    case "mission.reinforced":
      loadMission(data.reinforcement_mission_id);
      toast("Backup team sent: mission …" + data.mission_id.slice(-6) + " was not acknowledged in time.", "warn");
      break;
    case "zone.connectivity": {
      const z = state.zones.get(data.zone_code);
      if (z) {
        z.connectivity = Object.assign({}, z.connectivity, { state: data.state, last_report_at: data.last_report_at, since: data.since });
        z.live_state = data.state;
      }
      break;
    }
    default:
      break;
  }
  if (state.active && state.active.onChange) state.active.onChange(name, data, ctx);
  rerender();
}

const stream = new LiveStream({
  onEvent: onChange,
  onState(st) {
    state.live = st;
    const el = $("live-status");
    el.dataset.state = st;
    el.textContent = { live: "live", reconnecting: "reconnecting…", polling: "polling every 10 s", off: "offline" }[st] || st;
    staleBanner(st);
  },
  poll: reload,
  onAuth(e) {
    logout(e.plain || "Please log in again.");
  },
});

// ---- start

initTheme();
initSound();
$("login-form").addEventListener("submit", login);
$("logout").addEventListener("click", logoutClicked);
$("login-email").focus();
// A reload or a new tab resumes the session of the cookie, if there is one.
api.resume().then((res) => (res && !state.me ? begin(res) : null)).catch((e) => { $("login-error").textContent = e.plain || String(e); });
// "3 min ago" stays true while nothing else re-renders.
// The map redraws too: a zone whose last report grew stale turns unknown as the node's does.
setInterval(() => { tickAgo($("view")); if (state.active && (state.active.id === "map" || state.active.id === "teams")) rerender(); }, 5000);
