// The event board: the tenant's events with search and filters answered by the node
// (GET /v1/events?q=…&open=true…, kept in the page's URL), sortable columns, newest first; new critical events stand out (a flashing row, a red edge and an
// alert). An event's detail (#/events/<id>) shows its payload in words, its position on a
// small map, its delivery per channel and its missions.

import { h, s, clear, time, badge, select, ago, cardify, sortHead, sortRows, typeName, RANK, short } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { closeIncident, dispositionWords } from "../close_incident.js";
import { word } from "/shared/words.js";
import { callerFacts, callerPayload } from "../caller.js";

const PRIORITIES = ["", "critical", "high", "normal", "low"].map((v) => [v, v ? word("priority", v) : "any"]);
const STATUSES = ["", "pending", "delivered", "failed", "queued_offline", "closed"].map((v) => [v, v ? word("event", v) : "any"]);

const filter = { q: "", zone: "", vertical: "", priority: "", status: "", open: false };
const sort = { key: "created", dir: -1 };
let wrap = null;
let count = null;
let bar = null;
let detailEl = null;
let detailId = null;
let raw = false;
let more = false;
let fetching = "";
// warned holds each opened event's payload_warnings, which only GET /v1/events/<id> gives.
const warned = new Map();
const rowCache = new Map();
// creating holds the new-event form's idempotency key while the form is open: a second
// submit of the same form is the same event.
let creating = null;
let formEl = null;
// results is the node's answer to the search and filters (null while none is set); more
// of it follows resultsCursor.
let results = null;
let resultsCursor = "";
let searchSeq = 0;
let searchTimer = null;

// The filters as the URL's query (?q=gas&priority=high&open=true#/events) and as GET
// /v1/events's: a reload or a pasted link shows the same search.
const PARAMS = { q: "q", zone: "zone_code", vertical: "vertical", priority: "priority", status: "status", open: "open" };

function filtersOn() {
  return Object.keys(PARAMS).some((k) => (k === "q" ? hasWord(filter.q) : filter[k]));
}

// hasWord: the node searches words (letters or digits); a q without one is no search.
function hasWord(q) {
  return /[\p{L}\p{N}]/u.test(q || "");
}

function queryOf() {
  const p = new URLSearchParams();
  for (const [k, name] of Object.entries(PARAMS)) {
    if (k === "q" ? hasWord(filter.q) : filter[k]) p.set(name, k === "open" ? "true" : filter[k].trim ? filter[k].trim() : filter[k]);
  }
  return p;
}

function readURL() {
  const p = new URLSearchParams(location.search);
  for (const [k, name] of Object.entries(PARAMS)) filter[k] = k === "open" ? p.get(name) === "true" : p.get(name) || "";
}

function writeURL() {
  const q = queryOf().toString();
  const url = location.pathname + (q ? "?" + q : "") + location.hash;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(null, "", url);
}

// changed runs the search on the node a moment after the last keystroke or choice.
function changed(ctx) {
  writeURL();
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => search(ctx), 250);
  update(ctx);
}

async function search(ctx, next) {
  if (!filtersOn()) {
    results = null;
    resultsCursor = "";
    update(ctx);
    return;
  }
  const seq = ++searchSeq;
  const q = queryOf();
  q.set("limit", "300");
  if (next) q.set("cursor", resultsCursor);
  try {
    const r = await api.get("/v1/events?" + q.toString());
    if (seq !== searchSeq) return;
    for (const e of r.data) if (!ctx.state.events.has(e.event_id)) ctx.state.events.set(e.event_id, e);
    const ids = r.data.map((e) => e.event_id);
    results = next && results ? results.concat(ids) : ids;
    resultsCursor = r.next_cursor || "";
  } catch (e) {
    if (seq === searchSeq) ctx.toast(e.plain, "warn");
  }
  update(ctx);
}

function verticals(ctx) {
  const set = new Set((ctx.state.tenant && ctx.state.tenant.verticals) || []);
  for (const e of ctx.state.events.values()) set.add(e.vertical);
  return ["", ...[...set].sort()];
}

function toolbar(ctx) {
  const zones = ["", ...[...ctx.state.zones.keys()].sort()];
  const mk = (label, key, options) => {
    const el = select(options, filter[key], { id: "f-" + key, onchange: (e) => { filter[key] = e.target.value; changed(ctx); } });
    return h("div", {}, h("label", { for: "f-" + key }, label), el);
  };
  return h("div", { class: "toolbar" },
    h("div", { class: "grow" }, h("label", { for: "f-q" }, "Search"), h("input", { id: "f-q", type: "search", value: filter.q,
      placeholder: "words of the type, zone, address, caller…", dataset: { key: "f-q" }, oninput: (e) => { filter.q = e.target.value; changed(ctx); } })),
    mk("Zone", "zone", zones), mk("Vertical", "vertical", verticals(ctx)),
    mk("Priority", "priority", PRIORITIES), mk("Status", "status", STATUSES),
    h("label", { class: "inline" }, h("input", { type: "checkbox", id: "f-open", checked: filter.open,
      onchange: (e) => { filter.open = e.target.checked; changed(ctx); } }), "Open only"),
    count = h("span", { class: "muted", role: "status" }));
}

// matches keeps, of the node's answer, the events that still pass the filters after a live
// change (an event closed under "Open only"); the words of q are the node's to judge.
function matches(e) {
  return (!filter.zone || e.zone_code === filter.zone) && (!filter.vertical || e.vertical === filter.vertical) &&
    (!filter.priority || e.priority === filter.priority) && (!filter.status || e.status === filter.status) &&
    (!filter.open || e.status !== "closed");
}

function value(e, key) {
  switch (key) {
    case "priority": return RANK[e.priority] ?? 9;
    case "type": return typeName(e.type);
    case "vertical": return e.vertical;
    case "zone": return e.zone_code || "~";
    case "status": return e.status;
    default: return e.created_at;
  }
}

function open(ctx, id) {
  detailId = id;
  raw = false;
  ctx.link("events", { eventId: id });
  if (!warned.has(id)) fetchEvent(ctx, id);
  update(ctx);
  if (detailEl) detailEl.scrollIntoView({ block: "nearest" });
  // The keyboard follows the opened event to its first action: Dispatch when it may be
  // dispatched (docs/decisions/0270-keyboard-dispatch.md).
  const first = detailEl && (detailEl.querySelector("#detail-dispatch") || detailEl.querySelector("button"));
  if (first) first.focus({ preventScroll: true });
}

async function fetchEvent(ctx, id) {
  if (fetching === id) return;
  fetching = id;
  try {
    const e = await api.get("/v1/events/" + encodeURIComponent(id));
    warned.set(e.event_id, e.payload_warnings || []);
    delete e.payload_warnings;
    ctx.state.events.set(e.event_id, e);
  } catch (err) {
    ctx.toast(err.plain, "warn");
    detailId = null;
  }
  fetching = "";
  ctx.rerender();
}

// byEvent groups the missions by event, once per render (not once per row).
function byEvent(ctx) {
  const out = new Map();
  for (const m of ctx.state.missions.values()) {
    if (!out.has(m.event_id)) out.set(m.event_id, []);
    out.get(m.event_id).push(m);
  }
  return out;
}

function row(e, ctx, all) {
  const fresh = ctx.state.fresh.has(e.event_id);
  const missions = all.get(e.event_id) || [];
  const cls = [e.priority === "critical" && e.status !== "closed" ? "critical" : "", fresh ? "fresh" : "",
    e.event_id === detailId ? "selected" : ""].join(" ");
  const actions = [];
  if (ctx.can("dispatch:assign") && e.status !== "closed") {
    actions.push(h("button", { type: "button", dataset: { key: "d-" + e.event_id, dispatchEvent: e.event_id },
      onclick: () => ctx.go("dispatch", { eventId: e.event_id }) }, missions.some((m) => !["COMPLETED", "FAILED"].includes(m.status)) ? "Backup…" : "Dispatch…"));
  }
  if (missions.length && ctx.can("missions:view")) {
    const m = missions[missions.length - 1];
    actions.push(h("button", { type: "button", class: "link", dataset: { key: "m-" + e.event_id },
      onclick: () => ctx.go("missions", { missionId: m.id }) }, missions.length + (missions.length > 1 ? " missions" : " mission")));
  }
  return h("tr", { class: cls, dataset: { eventId: e.event_id, priority: e.priority } },
    h("td", { title: e.created_at }, time(e.created_at), h("div", { class: "muted small" }, ago(e.created_at))),
    h("td", {}, badge(word("priority", e.priority), "p-" + e.priority)),
    h("td", {}, h("button", { type: "button", class: "link", dataset: { key: "open-" + e.event_id, openEvent: e.event_id },
      "aria-pressed": String(e.event_id === detailId), onclick: () => open(ctx, e.event_id) }, h("strong", {}, typeName(e.type))),
    e.severity ? h("div", { class: "muted small" }, "severity " + e.severity) : null),
    h("td", {}, e.vertical),
    h("td", {}, e.zone_code || h("span", { class: "muted" }, "—")),
    h("td", {}, badge(word("event", e.status), "s-" + e.status)),
    h("td", { class: "hide-narrow" }, e.channel_selected),
    h("td", {}, actions));
}

// ---- the detail

// facts lays out a payload as "name: value" lines; nested objects name their path.
function facts(obj, prefix, out) {
  for (const [k, v] of Object.entries(obj || {})) {
    const name = (prefix ? prefix + " › " : "") + k.replace(/_/g, " ");
    if (v !== null && typeof v === "object" && !Array.isArray(v)) facts(v, name, out);
    else out.push(h("dt", {}, name), h("dd", {}, v === null ? "—" : Array.isArray(v) ? v.map((x) => (typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ") : String(v)));
  }
  return out;
}

// miniMap draws the event's zone and position (thousandths of a degree, as the map view).
function miniMap(ctx, e) {
  if (e.lat == null) return h("p", { class: "muted" }, "No position.");
  const k = Math.cos((e.lat * Math.PI) / 180);
  const p = (lng, lat) => [lng * k * 1000, -lat * 1000];
  const pts = [p(e.lng, e.lat)];
  const z = e.zone_code && ctx.state.zones.get(e.zone_code);
  const ring = z && z.boundary && z.boundary.coordinates && z.boundary.coordinates[0];
  if (ring) for (const [lng, lat] of ring) pts.push(p(lng, lat));
  const xs = pts.map((q) => q[0]);
  const ys = pts.map((q) => q[1]);
  const pad = Math.max(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys), 10) * 0.15;
  const box = [Math.min(...xs) - pad, Math.min(...ys) - pad, Math.max(...xs) - Math.min(...xs) + 2 * pad, Math.max(...ys) - Math.min(...ys) + 2 * pad];
  const unit = Math.max(box[2], box[3]) / 200;
  const [x, y] = pts[0];
  return s("svg", { class: "mini-map", viewBox: box.join(" "), role: "img", "aria-label": "Position " + e.lat.toFixed(4) + ", " + e.lng.toFixed(4) + (z ? " in " + z.name : "") },
    ring ? s("path", { d: ring.map(([lng, lat], i) => (i ? "L" : "M") + p(lng, lat).join(",")).join(" ") + " Z", class: "zone " + ((z.connectivity && z.connectivity.state) || "unknown"), "vector-effect": "non-scaling-stroke" }) : null,
    s("rect", { x: x - 6 * unit, y: y - 6 * unit, width: 12 * unit, height: 12 * unit, transform: "rotate(45 " + x + " " + y + ")", class: "ev-mark " + e.priority }));
}

// deliveries says, channel by channel of the event's plan, where its delivery stands.
function deliveries(e) {
  const plan = (e.delivery && e.delivery.plan && e.delivery.plan.length ? e.delivery.plan : [e.channel_selected]).filter(Boolean);
  const tried = e.channels_attempted || [];
  const last = tried[tried.length - 1];
  return h("ul", { class: "plain", id: "event-deliveries" }, plan.map((ch) => {
    let st = "not tried";
    if (ch === last && (e.status === "delivered" || e.status === "closed") && e.delivered_at) st = "delivered " + time(e.delivered_at);
    else if (ch === last && e.delivery && e.delivery.outstanding > 0) st = "in progress";
    else if (ch === last && e.status === "queued_offline") st = "queued: the zone is offline";
    else if (ch === last && e.status === "failed") st = "failed";
    else if (tried.includes(ch)) st = "tried, then the next channel";
    return h("li", {}, h("strong", {}, ch), " — ", st);
  }));
}

function detail(ctx) {
  const e = detailId && ctx.state.events.get(detailId);
  if (!detailId) return null;
  if (!warned.has(detailId) && ctx.state.loadedAt) fetchEvent(ctx, detailId);
  if (!e) return h("div", { class: "card section", id: "event-detail" }, h("p", { class: "muted" }, "Loading the event…"));
  const missions = [...ctx.state.missions.values()].filter((m) => m.event_id === e.event_id);
  const payload = e.payload && typeof e.payload === "object" ? e.payload : {};
  return h("div", { class: "card section", id: "event-detail", dataset: { eventId: e.event_id } },
    h("div", { class: "toolbar" }, h("h3", { class: "grow" }, typeName(e.type), " ", badge(word("priority", e.priority), "p-" + e.priority), " ",
      badge(word("event", e.status), "s-" + e.status)),
    ctx.can("dispatch:assign") && e.status !== "closed" ? h("button", { type: "button", class: "primary", id: "detail-dispatch",
      dataset: { key: "detail-dispatch" }, onclick: () => ctx.go("dispatch", { eventId: e.event_id }) },
      missions.some((m) => !["COMPLETED", "FAILED"].includes(m.status)) ? "Dispatch a backup…" : "Dispatch…") : null,
    ctx.can("missions:manage") && e.status !== "closed" ? h("button", { type: "button", class: "danger", id: "detail-close-incident",
      dataset: { key: "detail-close-incident" }, onclick: (ev) => closeIncident(ctx, e, ev.currentTarget) }, "Close the incident…") : null,
    h("button", { type: "button", onclick: () => { detailId = null; ctx.link("events", {}); update(ctx); } }, "Close")),
    e.disposition ? h("p", { class: "card notice", id: "event-disposition" }, h("strong", {}, "Closed by hand: " + dispositionWords(e.disposition.code)),
      e.disposition.note ? " — " + e.disposition.note : "", h("span", { class: "muted small" }, " · " + ctx.actorName(e.disposition.closed_by) + ", " + time(e.disposition.at))) : null,
    h("div", { class: "split" },
      h("div", {},
        h("dl", { class: "facts" },
          h("dt", {}, "Received"), h("dd", {}, time(e.created_at), " (", ago(e.created_at), ")"),
          h("dt", {}, "Vertical"), h("dd", {}, e.vertical),
          h("dt", {}, "Zone"), h("dd", {}, e.zone_code || "—"),
          callerFacts(e),
          h("dt", {}, "Source"), h("dd", {}, e.source + (e.device_id ? " (device …" + short(e.device_id) + ")" : "")),
          e.required_equipment ? [h("dt", {}, "Equipment"), h("dd", {}, e.required_equipment.join(", "))] : null,
          h("dt", {}, "Event id"), h("dd", {}, h("code", {}, e.event_id))),
        h("h4", {}, "Payload"),
        (warned.get(e.event_id) || []).length ? h("div", { class: "card notice", id: "event-warnings", role: "note" },
          h("strong", {}, "The parser ignored what it could not use:"),
          h("ul", { class: "plain" }, warned.get(e.event_id).map((w) => h("li", {}, w)))) : null,
        Object.keys(payload).length ? h("dl", { class: "facts", id: "event-payload" }, facts(payload, "", [])) : h("p", { class: "muted" }, "Empty."),
        h("button", { type: "button", class: "link", "aria-expanded": String(raw), onclick: () => { raw = !raw; update(ctx); } }, raw ? "Hide the raw JSON" : "Show the raw JSON"),
        raw ? h("pre", { class: "feedback" }, JSON.stringify(e.payload, null, 2)) : null),
      h("div", {}, miniMap(ctx, e),
        h("h4", {}, "Delivery"), deliveries(e),
        h("h4", {}, "Missions"), missions.length ? h("ul", { class: "plain" }, missions.map((m) => h("li", {},
          h("button", { type: "button", class: "link", onclick: () => ctx.go("missions", { missionId: m.id }) },
            (ctx.state.teams.get(m.team_id) || {}).name || "team …" + short(m.team_id)), " ", badge(word("mission", m.status), "s-" + m.status),
          " · ", time(m.dispatched_at)))) : h("p", { class: "muted" }, "None."))));
}

function newKey() {
  return typeof crypto.randomUUID === "function" ? crypto.randomUUID() : "console-" + Date.now() + "-" + Math.random().toString(36).slice(2);
}

// newEventForm takes a caller's report on the phone: POST /v1/events with the console's
// own idempotency key; the payload's warnings are shown; a dispatcher lands on the
// dispatch panel of the new event.
function newEventForm(ctx) {
  const types = [...new Set([...ctx.state.events.values()].map((e) => e.type))].sort();
  const v = verticals(ctx).filter(Boolean);
  const f = {
    type: h("input", { id: "ne-type", type: "text", required: true, maxlength: 100, list: "ne-types", autocomplete: "off", placeholder: "e.g. CARDIAC_ARREST" }),
    priority: select(["critical", "high", "normal", "low"], "high", { id: "ne-priority" }),
    vertical: select(v.length ? v : ["healthcare"], v[0], { id: "ne-vertical" }),
    zone: select([["", "none"], ...[...ctx.state.zones.keys()].sort().map((z) => [z, z])], "", { id: "ne-zone" }),
    lat: h("input", { id: "ne-lat", type: "text", inputmode: "decimal", placeholder: "45.7640" }),
    lng: h("input", { id: "ne-lng", type: "text", inputmode: "decimal", placeholder: "4.8357" }),
    note: h("textarea", { id: "ne-note", "rows": 2, maxlength: 2000 }),
    address: h("input", { id: "ne-address", type: "text", maxlength: 300, autocomplete: "off", placeholder: "4 quai de la Pêcherie, Lyon" }),
    caller: h("input", { id: "ne-caller", type: "text", maxlength: 200, autocomplete: "off" }),
    phone: h("input", { id: "ne-phone", type: "tel", maxlength: 40, autocomplete: "off" }),
    equipment: h("input", { id: "ne-equipment", type: "text", placeholder: "defibrillator, stretcher" }),
  };
  const submit = async (ev) => {
    ev.preventDefault();
    const payload = {};
    if (f.lat.value.trim() || f.lng.value.trim()) { payload.lat = Number(f.lat.value); payload.lng = Number(f.lng.value); }
    if (f.note.value.trim()) payload.caller_note = f.note.value.trim();
    callerPayload(payload, f.address.value, f.caller.value, f.phone.value);
    const eq = f.equipment.value.split(",").map((x) => x.trim()).filter(Boolean);
    if (eq.length) payload.required_equipment = eq;
    const body = { type: f.type.value.trim().toUpperCase().replace(/\s+/g, "_"), priority: f.priority.value, vertical: f.vertical.value,
      idempotency_key: creating, payload };
    if (f.zone.value) body.zone_code = f.zone.value;
    try {
      const res = await api.post("/v1/events", body);
      creating = null;
      clear(formEl);
      ctx.toast("Event created: " + typeName(body.type), "ok");
      if (res.dispatch) ctx.announceAuto(res.dispatch.mission_id, res.dispatch.team_id, res.event_id, body.type);
      if (res.payload_warnings && res.payload_warnings.length) ctx.toast("Check the payload: " + res.payload_warnings.join("; "), "warn", 15000);
      if (ctx.can("dispatch:assign") && !res.dispatch) ctx.go("dispatch", { eventId: res.event_id });
      else open(ctx, res.event_id);
    } catch (e) {
      ctx.toast(e.plain, "warn", 8000);
    }
  };
  return h("form", { class: "card section", id: "new-event", onsubmit: submit },
    h("h3", {}, "New event (a caller on the phone)"),
    h("datalist", { id: "ne-types" }, types.map((t) => h("option", { value: t }))),
    h("div", { class: "form-grid" },
      h("div", {}, h("label", { for: "ne-type" }, "Type"), f.type), h("div", {}, h("label", { for: "ne-priority" }, "Priority"), f.priority),
      h("div", {}, h("label", { for: "ne-vertical" }, "Vertical"), f.vertical), h("div", {}, h("label", { for: "ne-zone" }, "Zone"), f.zone),
      h("div", {}, h("label", { for: "ne-lat" }, "Latitude"), f.lat), h("div", {}, h("label", { for: "ne-lng" }, "Longitude"), f.lng),
      h("div", {}, h("label", { for: "ne-equipment" }, "Equipment needed"), f.equipment),
      h("div", {}, h("label", { for: "ne-address" }, "Address"), f.address),
      h("div", {}, h("label", { for: "ne-caller" }, "Caller's name"), f.caller), h("div", {}, h("label", { for: "ne-phone" }, "Caller's phone"), f.phone)),
    h("label", { for: "ne-note" }, "What the caller says"), f.note,
    h("div", { class: "moves" }, h("button", { type: "submit", class: "primary", id: "ne-submit" }, "Create the event"),
      h("button", { type: "button", onclick: () => { creating = null; clear(formEl); } }, "Cancel")));
}

async function loadMore(ctx) {
  more = true;
  update(ctx);
  if (results) await search(ctx, true);
  else await ctx.loadMore("events");
  more = false;
  ctx.rerender();
}

function update(ctx) {
  if (!wrap) return;
  const source = results ? results.map((id) => ctx.state.events.get(id)).filter(Boolean) : [...ctx.state.events.values()];
  const list = sortRows(source.filter(matches), sort, value);
  const all = byEvent(ctx);
  // A row is built again only when what it shows changed: a live update costs one row,
  // not the whole board.
  const rows = list.map((e) => {
    const ms = all.get(e.event_id) || [];
    const sig = [e.updated_at, e.status, ctx.state.fresh.has(e.event_id), e.event_id === detailId, ms.map((m) => m.id + m.status).join()].join("|");
    const hit = rowCache.get(e.event_id);
    if (hit && hit.sig === sig) return hit.el;
    const el = row(e, ctx, all);
    rowCache.set(e.event_id, { sig, el });
    return el;
  });
  if (!list.length) rows.push(h("tr", {}, h("td", { colspan: 8, class: "muted" }, results ? "No event matches the search." : ctx.state.events.size ? "No events loaded." : "No events yet.")));
  clear(detailEl, detail(ctx));
  clear(wrap, cardify(h("table", { id: "events-table" },
    sortHead([["Received", "created"], ["Priority", "priority"], ["Type", "type"], ["Vertical", "vertical"], ["Zone", "zone"], ["Status", "status"],
      ["Channel", null, "hide-narrow"], ["Actions", null]], sort, () => update(ctx)),
    h("tbody", { id: "events-body" }, rows))),
  (results ? resultsCursor : ctx.state.eventsCursor) ? h("button", { type: "button", id: "events-more", disabled: more, onclick: () => loadMore(ctx) }, more ? "Loading more…" : "Load more") : null);
  const critical = list.filter((e) => e.priority === "critical" && e.status !== "closed").length;
  count.textContent = (results ? list.length + (resultsCursor ? "+" : "") + " found" : list.length + " newest events") + (critical ? " · " + critical + " open critical" : "");
}

export const eventsView = {
  id: "events",
  title: () => "Events",
  visible: (ctx) => ctx.can("events:read"),
  mount(root, ctx, opts) {
    detailId = opts.eventId || null;
    rowCache.clear();
    readURL();
    results = null;
    search(ctx);
    bar = toolbar(ctx);
    detailEl = h("div", {});
    wrap = h("div", { class: "scroll" });
    formEl = h("div", {});
    const create = ctx.can("events:write") ? h("button", { type: "button", id: "new-event-open", onclick: () => {
      if (creating) return;
      creating = newKey();
      clear(formEl, newEventForm(ctx));
      formEl.querySelector("#ne-type").focus();
    } }, "New event…") : null;
    creating = null;
    root.append(h("div", { class: "toolbar" }, h("h2", { class: "grow" }, "Event board", ctx.readOnly() ? h("span", { class: "badge" }, " read-only") : null), create),
      formEl, bar, detailEl, wrap);
    update(ctx);
  },
  update(ctx) {
    if (bar && bar.querySelector("#f-zone").options.length !== ctx.state.zones.size + 1) {
      const fresh = toolbar(ctx);
      bar.replaceWith(fresh);
      bar = fresh;
    }
    update(ctx);
  },
  // A live change re-asks the node for the search shown: a new event may match it.
  onChange(name, data, ctx) {
    if (results && name.startsWith("event.")) {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => search(ctx), 1000);
    }
  },
  unmount() { wrap = null; detailEl = null; clearTimeout(searchTimer); },
};
