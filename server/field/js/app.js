// The field app: a field operator signs in once; the browser becomes a device of the
// operator's team with its own credential (docs/decisions/0126-device-credentials.md); the
// team's missions live in IndexedDB and every change goes through the outbox, so the app
// works with no network and catches up when it returns.

import { h, clear, ago, time, tickAgo, RANK } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { MOVE_WORDS, STATE_WORDS, rejectWords, plainWords } from "/shared/words.js";
import { loadMoves, movesFrom } from "/shared/moves.js";
import { all, get, put, del, tx, result } from "./db.js";
import { enqueue, atLeast, syncOnce, SyncError, OUTBOX_WORDS } from "./outbox.js";

const $ = (id) => document.getElementById(id);
const NIL = "00000000-0000-0000-0000-000000000000";
const channel = "BroadcastChannel" in self ? new BroadcastChannel("fieldrelay-field") : null;

// The session token lives in memory only, in the shared API client (as the console's);
// the device credential, the device and the user are kept in IndexedDB (session), so a
// reload stays signed in.
let session = null;
let selected = null;
let failing = false;
// linkState is unknown, online, offline or revoked.
let linkState = "unknown";
let backoff = 0;
let timer = null;
let syncing = false;
let again = false;
// quiet holds the alert while a sign-in loads the team's missions: they are not news.
let quiet = false;

// ---- sign-in: the browser becomes a device of the operator's team ----

async function hardwareID() {
  let id = await get("kv", "hardware_id");
  if (!id) {
    id = "web-" + crypto.randomUUID();
    await put("kv", id, "hardware_id");
  }
  return id;
}

async function signIn(email, password) {
  const login = await api.request("POST", "/v1/auth/login", { email, password });
  api.setSession({ token: login.token });
  const device = await api.request("POST", "/v1/devices/register", { name: "Field app of " + (login.user.name || login.user.email),
    platform: "web", hardware_id: await hardwareID() });
  await atLeast(device.sync.highest_received);
  const cred = await api.request("POST", "/v1/devices/" + device.device_id + "/credential");
  session = { device_id: device.device_id, team_id: device.team_id, credential: cred.credential,
    expires_at: cred.expires_at, user: login.user };
  await put("kv", session, "session");
  try {
    const tenant = await api.request("GET", "/v1/tenant/me");
    await put("kv", tenant.verticals || [], "verticals");
  } catch (_) { /* the verticals only help to report an event */ }
  broadcast();
}

async function signOut() {
  // The outbox stays: what waits is sent after the next sign-in on this phone.
  api.setSession(null);
  session = null;
  selected = null;
  sharePosition(false);
  $("password").value = "";
  await del("kv", "session");
  broadcast();
  render();
}

// ---- the team's missions ----

async function refreshMissions() {
  if (!api.getSession()) return;
  try {
    const list = await api.request("GET", "/v1/missions?limit=100");
    await storeMissions(list.data || []);
    const events = new Set((await all("events")).map((e) => e.event_id));
    for (const m of list.data || []) {
      if (!events.has(m.event_id) && isActive(m.status)) {
        const ev = await api.request("GET", "/v1/events/" + m.event_id);
        delete ev.request_id;
        await put("events", ev);
      }
    }
  } catch (e) {
    // The session ended: the device credential goes on.
    if (e.status === 401) api.setSession(null);
  }
}

// storeMissions keeps missions as the node has them; a new active one alerts.
async function storeMissions(missions) {
  const fresh = [];
  await tx(["missions"], "readwrite", async (t) => {
    const store = t.objectStore("missions");
    for (const m of missions) {
      const old = await result(store.get(m.id));
      if (!old && isActive(m.status)) fresh.push(m);
      if (!old || old.updated_at <= m.updated_at) {
        delete m.request_id;
        // Names come with the queue only: a record read with the session keeps them.
        m.team_name = m.team_name || (old && old.team_name);
        m.dispatcher_name = m.dispatcher_name || (old && old.dispatcher_name);
        m.stored_at = new Date().toISOString();
        store.put(m);
      }
    }
  });
  if (fresh.length && !quiet) alertNew(fresh);
}

async function onQueue(entries) {
  const missions = entries.filter((q) => q.kind === "mission" && q.mission).map((q) =>
    Object.assign(q.mission, { team_name: q.team_name, dispatcher_name: q.dispatcher_name }));
  for (const q of entries) {
    // An event item, or a mission's event, which comes with it.
    if (q.event) await put("events", q.event);
  }
  await storeMissions(missions);
  const updates = entries.filter((q) => q.kind === "mission_update" && q.mission);
  if (updates.length) await applyUpdates(updates);
}

// applyUpdates applies mission_update items at once: the mission as the node has it
// replaces the phone's copy (a closed one leaves the active list), and the changes that
// need the crew's attention raise the alert and stay in a banner until tapped
// (docs/decisions/0151-field-app-crew-updates.md).
async function applyUpdates(updates) {
  const news = [];
  await tx(["missions", "kv"], "readwrite", async (t) => {
    const store = t.objectStore("missions");
    for (const q of updates) {
      const m = Object.assign(q.mission, { team_name: q.team_name, dispatcher_name: q.dispatcher_name });
      const old = await result(store.get(m.id));
      delete m.request_id;
      m.team_name = m.team_name || (old && old.team_name);
      m.dispatcher_name = m.dispatcher_name || (old && old.dispatcher_name);
      m.stored_at = new Date().toISOString();
      if (!old || old.updated_at <= m.updated_at || !isActive(m.status)) store.put(m);
      for (const c of q.changes || []) {
        const line = alertLine(c, typeWords(q.event && q.event.type));
        if (line) news.push({ mission_id: m.id, what: c.what, at: c.at, line, key: m.id + "|" + c.what + "|" + c.at + "|" + (c.message_id || "") });
      }
    }
    if (!news.length) return;
    const kv = t.objectStore("kv");
    const kept = (await result(kv.get("alerts"))) || [];
    const seen = new Set(kept.map((a) => a.key));
    kv.put(kept.concat(news.filter((a) => !seen.has(a.key))), "alerts");
  });
  if (news.length && !quiet) ring();
}

// alertLine says a change that needs the crew's attention in words naming who and why:
// a stand-down, a failure by someone else, a backup on the event, the event closed, a
// message from the control room. Other changes (SENT, a teammate's move) only update.
function alertLine(c, what) {
  const who = (c.by && (c.by.name || c.by.role)) || "someone";
  const mine = session && session.user && c.by && c.by.id === session.user.id;
  switch (c.what) {
    case "status":
      if (c.to !== "FAILED" || mine) return "";
      if (c.stood_down) return "Stood down from " + what + " by " + who + ": " + (c.reason || "no reason given");
      return what + " set Failed by " + who + (c.reason ? ": " + c.reason : "");
    case "backup":
    case "reinforcement":
      return (c.team_name || "Another team") + " sent to your event (" + what + ") by " + (c.what === "reinforcement" ? "the system" : who);
    case "event_closed":
      return "The event of " + what + " is closed: " + (c.team_name || "another team") + " finished it. Wait for the control room.";
    case "message":
      if (mine) return "";
      return "Message from " + who + " (" + what + "): " + c.text;
    default:
      return "";
  }
}

// isActive: a mission that may still move (the node's table, /shared/moves.json); not a
// finished one, nor one that a rejected move found closed on the node (CLOSED, the
// phone's own mark).
function isActive(s) {
  return movesFrom(s).length > 0;
}

// markClosed notes the missions that a rejected move found closed on the node: the phone
// cannot read them again without a session, and must not offer moves on them.
async function markClosed() {
  const closed = (await all("outbox")).filter((it) => it.kind === "mission_status" && it.state === "rejected" &&
    it.error === "mission_closed").map((it) => it.payload.mission_id);
  if (!closed.length) return;
  await tx(["missions"], "readwrite", async (t) => {
    const store = t.objectStore("missions");
    for (const id of closed) {
      const m = await result(store.get(id));
      if (m && isActive(m.status)) {
        m.status = "CLOSED";
        store.put(m);
      }
    }
  });
}

function alertNew(missions) {
  ring();
  document.body.dataset.alert = String(missions.length);
  render();
  setTimeout(() => {
    delete document.body.dataset.alert;
    render();
  }, 10000);
}

// ring sounds and vibrates, as far as the browser allows.
function ring() {
  // Browsers allow sound and vibration only once the person has used the page.
  const allowed = !navigator.userActivation || navigator.userActivation.hasBeenActive;
  try {
    if (allowed && navigator.vibrate) navigator.vibrate([300, 150, 300]);
  } catch (_) { /* not allowed */ }
  try {
    if (allowed) {
      const ctx = new AudioContext();
      const osc = ctx.createOscillator();
      osc.frequency.value = 880;
      osc.connect(ctx.destination);
      osc.start();
      osc.stop(ctx.currentTime + 0.4);
    }
  } catch (_) { /* no sound here */ }
}

async function updateBadge(missions, alerts) {
  const fresh = missions.filter((m) => m.status === "CREATED" || m.status === "SENT").length + alerts.length;
  try {
    if (navigator.setAppBadge) await (fresh ? navigator.setAppBadge(fresh) : navigator.clearAppBadge());
  } catch (_) { /* not installed */ }
}

// ---- sync: the outbox out, the queue in ----

function schedule(ms) {
  clearTimeout(timer);
  timer = setTimeout(runSync, ms);
}

async function runSync() {
  if (!session) return;
  if (syncing) {
    // A change made during a sync goes out right after it, not at the next tick.
    again = true;
    return;
  }
  syncing = true;
  again = false;
  try {
    let more = true;
    for (let i = 0; more && i < 50; i++) {
      more = await syncOnce(session, onQueue);
      await markClosed();
      linkState = "online";
      backoff = 0;
      broadcast();
      await render();
    }
    if (api.getSession()) await refreshMissions();
    schedule(again ? 0 : 15000);
  } catch (e) {
    if (e instanceof SyncError && e.kind === "revoked") {
      linkState = "revoked";
      session.revoked = true;
      await put("kv", session, "session");
    } else {
      linkState = "offline";
      backoff = Math.min(backoff ? backoff * 2 : 1000, 60000);
      schedule(backoff / 2 + Math.random() * backoff / 2);
    }
  } finally {
    syncing = false;
    await render();
  }
}

function broadcast() {
  if (channel) channel.postMessage("changed");
}

// ---- the member's position, while on a mission and when allowed ----

const ON_MISSION = ["ACK", "ON_ROUTE", "ON_SITE"];
let watchID = null;
let lastFix = 0;

// sharePosition starts or stops watching the position: a fix at most once a minute goes
// to the outbox as a location item without member_id (the node takes the sender's own).
function sharePosition(on) {
  if (!navigator.geolocation) return;
  if (on && watchID === null) {
    watchID = navigator.geolocation.watchPosition(async (g) => {
      if (Date.now() - lastFix < 60000) return;
      lastFix = Date.now();
      await enqueue("location", { lat: g.coords.latitude, lng: g.coords.longitude });
      afterChange();
    }, () => {}, { enableHighAccuracy: true, maximumAge: 30000 });
  } else if (!on && watchID !== null) {
    navigator.geolocation.clearWatch(watchID);
    watchID = null;
  }
}

// ---- changes made here ----

async function move(m, to, note) {
  const payload = { mission_id: m.id, status: to };
  if (note) payload.feedback = { note };
  await enqueue("mission_status", payload);
  for (const id of ["move-note", "fail-reason"]) {
    if ($(id)) $(id).value = "";
  }
  failing = false;
  afterChange();
}

// sendMessage writes a message to the control room into the outbox: it goes with the
// next sync, in order with the moves, online or not.
async function sendMessage(m) {
  const text = $("message-text").value.trim();
  if (!text) return;
  await enqueue("message", { mission_id: m.id, text });
  $("message-text").value = "";
  afterChange();
}

async function reportEvent(form) {
  const fd = new FormData(form);
  const missions = await all("missions");
  const verticals = (await get("kv", "verticals")) || [];
  const vertical = (missions[0] && missions[0].vertical) || verticals[0] || "emergency";
  const body = { type: String(fd.get("type") || "FIELD_REPORT").trim().toUpperCase().replace(/\s+/g, "_"),
    priority: String(fd.get("priority") || "normal"), vertical, idempotency_key: "field-" + crypto.randomUUID(),
    payload: { note: String(fd.get("note") || "") } };
  const pos = await position();
  if (pos) Object.assign(body.payload, pos);
  await enqueue("event", body);
  form.reset();
  afterChange();
}

function position() {
  return new Promise((resolve) => {
    if (!navigator.geolocation || !navigator.permissions) return resolve(null);
    navigator.permissions.query({ name: "geolocation" }).then((p) => {
      if (p.state === "denied") return resolve(null);
      navigator.geolocation.getCurrentPosition((g) => resolve({ lat: g.coords.latitude, lng: g.coords.longitude }),
        () => resolve(null), { timeout: 5000, maximumAge: 60000 });
    }, () => resolve(null));
  });
}

async function reportConnectivity(zone, state) {
  await enqueue("connectivity", { zone_code: zone, state });
  afterChange();
}

function afterChange() {
  broadcast();
  render();
  schedule(0);
}

// ---- rendering ----

// typeWords turns an event type (CARDIAC_ARREST) into words (Cardiac arrest).
function typeWords(type) {
  if (!type) return "Mission";
  const s = String(type).replace(/[_-]+/g, " ").toLowerCase().trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// effective is a mission as this phone sees it: the node's record, then the moves made
// here after the record was written (waiting, or applied since and not read back yet).
function effective(m, box) {
  let status = m.status;
  const local = [];
  // A mission the node has finished stays finished whatever waits here (the node will
  // refuse it): its buttons go away at once.
  if (!isActive(m.status)) return { status, local, waiting: local };
  for (const it of box) {
    // On the phone's own clock (a phone minutes slow or fast compares nothing with the
    // node's times): what the node has not yet applied, or applied after this copy.
    const unread = it.state === "waiting" || it.state === "pending" || (it.answered_at && m.stored_at && it.answered_at > m.stored_at);
    if (it.kind === "mission_status" && it.payload.mission_id === m.id && it.state !== "rejected" && unread) {
      status = it.payload.status;
      local.push(it);
    }
  }
  return { status, local, waiting: local.filter((it) => it.state === "waiting" || it.state === "pending") };
}

function order(a, b) {
  const p = (RANK[a.priority] ?? 9) - (RANK[b.priority] ?? 9);
  return p || String(b.dispatched_at).localeCompare(String(a.dispatched_at));
}

// CLOCK_SHOWN is the clock offset from which the phone shows the node's correction.
const CLOCK_SHOWN = 60000;

async function renderStatus(box, clock) {
  const el = $("status");
  const waiting = box.filter((i) => i.state === "waiting").length;
  const last = await get("kv", "last_sync");
  const online = linkState === "online";
  const pill = $("link");
  pill.dataset.state = online ? "live" : "off";
  pill.textContent = online ? "online" : linkState === "revoked" ? "refused" : "offline";
  el.dataset.online = String(online || linkState === "unknown");
  el.dataset.state = linkState;
  const parts = [linkState === "revoked" ? "This phone's access has ended (revoked or expired): sign out, then sign in again." :
    online ? "Online." : linkState === "unknown" ? "Connecting…" : "Offline: changes are kept on this phone."];
  parts.push(waiting === 1 ? "1 change waiting." : waiting + " changes waiting.");
  // The last sync's age is an element (ago), kept true by the tick in start: the line is
  // text and elements, never an element concatenated into a string.
  const synced = last ? [" Last sync " + time(last) + " (", ago(last), ")."] : [" Never synced."];
  const after = [];
  // A sign-out may have ended the session while this render awaited IndexedDB.
  if (session && session.expires_at && new Date(session.expires_at) - Date.now() < 3 * 86400000 && linkState !== "revoked") {
    after.push(" This phone's access ends " + time(session.expires_at) + ": sign out and in again with a network before then.");
  }
  if (clock && (clock.flagged || Math.abs(clock.ms) >= CLOCK_SHOWN)) {
    // clock_offset_ms is how far the node is ahead of this phone.
    const min = Math.round(Math.abs(clock.ms) / 60000);
    after.push(h("span", { id: "clock-offset", dataset: { offsetMs: String(clock.ms) } }, " This phone's clock is " +
      (clock.flagged ? "wrong by more than a day: times are taken as they come. Set the date and time." :
        min + " min " + (clock.ms < 0 ? "ahead of" : "behind") + " the node's: your changes are recorded on the node's time.")));
  }
  el.replaceChildren(parts.join(" "), ...synced, ...after);
  el.dataset.waiting = String(waiting);
}

async function render() {
  // The move table is cached with the app; without it no mission shows as active.
  await loadMoves().catch(() => {});
  const app = $("app");
  $("signin").hidden = !!session;
  app.hidden = !session;
  $("signout").hidden = !session;
  if (!session) return;
  document.body.dataset.device = session.device_id;
  const [missions, events, boxAll, share, alertsKept, clock] = await Promise.all([all("missions"), all("events"), all("outbox"),
    get("kv", "share_position"), get("kv", "alerts"), get("kv", "clock_offset")]);
  const alerts = alertsKept || [];
  // Signed out while the reads above were awaited.
  if (!session) return;
  const box = boxAll.sort((a, b) => a.sequence_number - b.sequence_number);
  await renderStatus(box, clock);
  await updateBadge(missions, alerts);
  const byEvent = new Map(events.map((e) => [e.event_id, e]));
  const active = missions.filter((m) => isActive(effective(m, box).status)).sort(order);
  const done = missions.filter((m) => !isActive(effective(m, box).status)).sort(order).slice(0, 10);
  sharePosition(!!share && active.some((m) => ON_MISSION.includes(effective(m, box).status)));
  // What is being typed survives a re-render (a sync every 15 s redraws the view).
  const focused = document.activeElement && document.activeElement.id;
  const typed = new Map([...app.querySelectorAll("input[id], textarea[id], select[id]")].map((el) => [el.id, el.value]));
  clear(app);
  if (alerts.length) {
    // The crew's alert stays until the operator taps it, across reloads (kept in kv).
    app.append(h("div", { class: "crewalert", role: "alert", id: "crew-alert" },
      h("ul", {}, alerts.map((a) => h("li", { dataset: { what: a.what, missionId: a.mission_id } }, a.line))),
      h("button", { type: "button", id: "crew-alert-ok", onclick: async () => {
        await put("kv", [], "alerts");
        broadcast();
        render();
      } }, "Seen")));
  }
  if (document.body.dataset.alert) {
    const n = Number(document.body.dataset.alert);
    app.append(h("p", { class: "newmission", role: "alert", id: "new-mission" }, n === 1 ? "New mission for your team" : n + " new missions for your team"));
  }
  const sel = selected && missions.find((m) => m.id === selected);
  if (sel) {
    app.append(missionView(sel, byEvent.get(sel.event_id), box));
  } else {
    app.append(h("section", { "aria-labelledby": "missions-h" },
      h("h2", { id: "missions-h" }, "My team's missions"),
      active.length ? h("ul", { class: "mlist", id: "missions" }, active.map((m) => missionCard(m, byEvent.get(m.event_id), box))) :
        h("p", { class: "muted" }, "No active mission."),
      done.length ? h("details", {}, h("summary", {}, "Finished (" + done.length + ")"),
        h("ul", { class: "mlist" }, done.map((m) => missionCard(m, byEvent.get(m.event_id), box)))) : null));
    app.append(h("label", { class: "inline", for: "share-position" },
      h("input", { type: "checkbox", id: "share-position", checked: !!share, onchange: async (e) => {
        await put("kv", e.target.checked, "share_position");
        render();
      } }), " Share my position with the team while on a mission"));
    app.append(reportForm());
  }
  app.append(outboxView(box));
  for (const [id, value] of typed) {
    if ($(id)) $(id).value = value;
  }
  if (focused && $(focused)) $(focused).focus();
}

function missionCard(m, ev, box) {
  const eff = effective(m, box);
  return h("li", {}, h("button", { type: "button", class: "mcard " + (m.priority || ""), dataset: { missionId: m.id },
    onclick: () => { selected = m.id; failing = false; render(); } },
  h("span", { class: "mtitle" }, typeWords(ev && ev.type), " · ", m.priority),
  h("span", {}, STATE_WORDS[eff.status] || eff.status, eff.waiting.length ? " (waiting to send)" : "",
    " · dispatched ", ago(m.dispatched_at)),
  h("span", { class: "muted small" }, " · data from ", ago(m.stored_at))));
}

function missionView(m, ev, box) {
  const eff = effective(m, box);
  const lat = ev && ev.lat != null ? ev.lat : m.event_lat;
  const lng = ev && ev.lng != null ? ev.lng : m.event_lng;
  const payload = (ev && ev.payload) || {};
  const address = payload.address || payload.location || "";
  const equipment = (ev && ev.required_equipment) || payload.required_equipment || [];
  // The next step forward; FAILED has a button of its own, with a reason.
  const next = movesFrom(eff.status).find((to) => to !== "FAILED");
  const note = h("textarea", { id: "move-note", "rows": 2, placeholder: "What you found (optional)" });
  const moves = h("div", { class: "moves" });
  if (isActive(eff.status)) {
    if (next) {
      moves.append(h("button", { type: "button", class: "primary", dataset: { move: next },
        onclick: () => move(m, next, $("move-note").value.trim()) }, MOVE_WORDS[next]));
    }
    moves.append(h("button", { type: "button", class: "danger", dataset: { move: "FAILED" },
      onclick: () => { failing = true; render(); } }, "Failed…"));
  }
  const fail = failing ? h("form", { class: "card", id: "fail-form", onsubmit: (e) => {
    e.preventDefault();
    const reason = $("fail-reason").value.trim();
    if (reason) move(m, "FAILED", reason);
  } },
  h("label", { for: "fail-reason" }, "Why did the mission fail? (required)"),
  h("textarea", { id: "fail-reason", "rows": 2, required: true }),
  h("div", { class: "row" }, h("button", { type: "submit", class: "danger", id: "fail-confirm" }, "Confirm: mission failed"),
    h("button", { type: "button", onclick: () => { failing = false; render(); } }, "Cancel"))) : null;
  const timeline = h("ol", { class: "timeline", id: "timeline" },
    (m.history || []).map((mv) => h("li", { dataset: { to: mv.to } }, STATE_WORDS[mv.to] || mv.to, " · ", time(mv.at))),
    eff.local.map((it) => h("li", { dataset: { to: it.payload.status, local: it.state } },
      STATE_WORDS[it.payload.status], " · ", time(it.captured_at), " (", OUTBOX_WORDS[it.state], ")")));
  const rejected = box.filter((it) => (it.kind === "mission_status" || it.kind === "message") && it.payload.mission_id === m.id &&
    it.state === "rejected");
  const me = session && session.user && session.user.id;
  const fromNode = m.messages || [];
  // This phone's own messages: the node's copy once it is read back, else the outbox's.
  const local = box.filter((it) => it.kind === "message" && it.payload.mission_id === m.id && it.state !== "rejected" &&
    !fromNode.some((x) => x.author_id === me && x.channel === "device" && x.text === it.payload.text));
  const thread = h("ol", { class: "messages", id: "messages" },
    fromNode.map((x) => h("li", { dataset: { messageId: x.id, mine: String(x.author_id === me) } },
      h("span", { class: "who" }, x.author_name || x.role), " · ", time(x.captured_at || x.written_at),
      h("p", { class: "text" }, x.text))),
    local.map((it) => h("li", { dataset: { local: it.state, mine: "true" } },
      h("span", { class: "who" }, "You"), " · ", time(it.captured_at), " (", OUTBOX_WORDS[it.state], ")",
      h("p", { class: "text" }, it.payload.text))));
  const answer = h("form", { class: "row", id: "message-form", onsubmit: (e) => { e.preventDefault(); sendMessage(m); } },
    h("label", { for: "message-text" }, "Message to the control room"),
    h("textarea", { id: "message-text", "rows": 2, maxlength: 1000, placeholder: "Message to the control room" }),
    h("button", { type: "submit", id: "message-send" }, "Send"));
  return h("section", { class: "card", "aria-labelledby": "mission-h", id: "mission", dataset: { missionId: m.id } },
    h("button", { type: "button", id: "back", onclick: () => { selected = null; failing = false; render(); } }, "← Missions"),
    h("h2", { id: "mission-h" }, typeWords(ev && ev.type)),
    h("dl", { class: "kv" },
      h("dt", {}, "Priority"), h("dd", {}, m.priority),
      h("dt", {}, "State"), h("dd", { id: "mission-state" }, STATE_WORDS[eff.status] || eff.status),
      address ? [h("dt", {}, "Address"), h("dd", {}, String(address))] : null,
      lat != null && lng != null ? [h("dt", {}, "Place"), h("dd", {}, h("a", { class: "maplink", id: "maplink",
        href: "geo:" + lat + "," + lng + "?q=" + lat + "," + lng }, lat.toFixed(5) + ", " + lng.toFixed(5) + " · open in maps"))] : null,
      equipment.length ? [h("dt", {}, "Equipment"), h("dd", {}, equipment.join(", "))] : null,
      h("dt", {}, "Notes"), h("dd", {}, m.notes || "none"),
      h("dt", {}, "Dispatched"), h("dd", {}, time(m.dispatched_at), " by ",
        m.dispatcher_name || (m.dispatched_by === NIL ? "automatic dispatch" : "the dispatcher")),
      h("dt", {}, "Team"), h("dd", {}, m.team_name || "your team"),
      h("dt", {}, "Data"), h("dd", {}, "as of ", ago(m.stored_at))),
    rejected.map((it) => h("p", { class: "error", role: "alert" }, it.kind === "message" ? "A message" : MOVE_WORDS[it.payload.status], " was rejected: ",
      rejectWords(it.error, it.message))),
    isActive(eff.status) ? h("label", { for: "move-note" }, "Feedback") : null,
    isActive(eff.status) ? note : null,
    moves, fail,
    h("h3", {}, "Timeline"), timeline,
    h("h3", {}, "Messages"), fromNode.length || local.length ? thread : h("p", { class: "muted", id: "messages" }, "No message yet."),
    answer,
    ev && ev.zone_code ? h("div", { class: "row" }, h("span", {}, "Signal here:"),
      ["online", "degraded", "offline"].map((s) => h("button", { type: "button", dataset: { connectivity: s },
        onclick: () => reportConnectivity(ev.zone_code, s) }, s))) : null);
}

function reportForm() {
  return h("form", { class: "card", id: "report-form", "aria-labelledby": "report-h",
    onsubmit: (e) => { e.preventDefault(); reportEvent(e.target); } },
  h("h2", { id: "report-h" }, "Report an event"),
  h("label", { for: "report-type" }, "What"),
  h("input", { id: "report-type", name: "type", required: true, placeholder: "e.g. gas leak", autocomplete: "off" }),
  h("label", { for: "report-priority" }, "Priority"),
  h("select", { id: "report-priority", name: "priority" }, ["critical", "high", "normal", "low"].map((p) =>
    h("option", { value: p, selected: p === "normal" }, p))),
  h("label", { for: "report-note" }, "Details"),
  h("textarea", { id: "report-note", name: "note", "rows": 2 }),
  h("p", { class: "muted small" }, "Your position is added when the browser allows it."),
  h("button", { type: "submit", class: "primary", id: "report-submit" }, "Report"));
}

function outboxView(box) {
  const recent = box.slice(-30).reverse();
  return h("section", { "aria-labelledby": "outbox-h" }, h("h2", { id: "outbox-h" }, "Changes from this phone"),
    recent.length ? h("ul", { class: "outbox", id: "outbox" }, recent.map((it) => h("li", { dataset: { seq: it.sequence_number, state: it.state, captured: it.captured_at } },
      "#", it.sequence_number, " ", describe(it), " · ", time(it.captured_at), " · ",
      h("span", { class: "state", dataset: { state: it.state } }, OUTBOX_WORDS[it.state] || it.state),
      it.state === "rejected" ? h("span", {}, ": ", rejectWords(it.error, it.message)) : null))) :
      h("p", { class: "muted" }, "Nothing yet."));
}

function describe(it) {
  switch (it.kind) {
    case "mission_status":
      return MOVE_WORDS[it.payload.status] || it.payload.status;
    case "event":
      return "Event " + typeWords(it.payload.type);
    case "connectivity":
      return "Signal " + it.payload.state;
    case "location":
      return "Position";
    case "message":
      return "Message";
    default:
      return it.kind;
  }
}

// ---- start ----

function theme() {
  const on = localStorage.getItem("fieldrelay.theme") === "sun" ||
    (localStorage.getItem("fieldrelay.theme") === null && matchMedia("(prefers-contrast: more)").matches);
  document.documentElement.classList.toggle("sun", on);
  $("theme-toggle").setAttribute("aria-pressed", String(on));
}

async function start() {
  theme();
  $("theme-toggle").addEventListener("click", () => {
    localStorage.setItem("fieldrelay.theme", document.documentElement.classList.contains("sun") ? "dark" : "sun");
    theme();
  });
  $("signout").addEventListener("click", signOut);
  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("signin-error").textContent = "";
    $("signin-submit").disabled = true;
    try {
      await signIn($("email").value.trim(), $("password").value);
      linkState = "online";
      quiet = true;
      await refreshMissions();
      quiet = false;
      await render();
      schedule(0);
    } catch (err) {
      quiet = false;
      $("signin-error").textContent = err.code === "invalid_credentials" ? plainWords(err) :
        err.status ? err.message : "No network: signing in needs one, once.";
    } finally {
      $("signin-submit").disabled = false;
    }
  });
  if (channel) channel.onmessage = async () => {
    session = (await get("kv", "session")) || null;
    render();
  };
  addEventListener("online", () => schedule(0));
  addEventListener("offline", () => { linkState = "offline"; render(); });
  if ("serviceWorker" in navigator) {
    const had = !!navigator.serviceWorker.controller;
    navigator.serviceWorker.addEventListener("controllerchange", () => {
      // A new version took over.
      if (had) location.reload();
    });
    // The browser looks for a new worker on its own only when it chooses (Chromium defers
    // that check while the worker is busy, so a slow phone may keep an old app for a long
    // time): the app asks at every start, when the network returns and when it is shown
    // again, at most once a minute.
    let checked = 0;
    const update = (reg) => {
      if (Date.now() - checked < 60000) return;
      checked = Date.now();
      reg.update().catch(() => {});
    };
    navigator.serviceWorker.register("/field/sw.js", { scope: "/field/" }).then((reg) => {
      update(reg);
      addEventListener("online", () => update(reg));
      document.addEventListener("visibilitychange", () => { if (!document.hidden) update(reg); });
    }).catch(() => {});
  }
  await loadMoves().catch(() => {});
  session = (await get("kv", "session")) || null;
  if (session && session.revoked) linkState = "revoked";
  setInterval(() => tickAgo(document.body), 10000);
  await render();
  if (session && !session.revoked) schedule(0);
}

start();
