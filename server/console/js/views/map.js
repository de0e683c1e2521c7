// The map: zones drawn from their GeoJSON boundaries, coloured by connectivity, with the
// team members' and events' positions. No tiles: an SVG in an equirectangular
// projection, panned by dragging or the arrow keys and zoomed by the wheel, the buttons
// or + and -.

import { h, s, clear, time, cardify, typeName } from "/shared/dom.js";
import { get } from "/shared/api.js";
import { word } from "/shared/words.js";

let svg = null;
let view = null;
let fitted = false;
const drag = { on: false, x: 0, y: 0, pointers: new Map(), pinch: 0 };

// Map units are thousandths of a degree: Chrome's renderer drops shapes drawn in tiny
// user units (a zone a few hundredths of a unit wide vanished).
const S = 1000;

function project(lng, lat, k) {
  return [lng * k * S, -lat * S];
}

function scaleK(ctx) {
  const lats = [];
  for (const z of ctx.state.zones.values()) if (z.centroid) lats.push(z.centroid.lat);
  const lat = lats.length ? lats.reduce((a, b) => a + b, 0) / lats.length : 45;
  return Math.cos((lat * Math.PI) / 180);
}

function zonePoints(ctx, code, k) {
  const z = ctx.state.zones.get(code);
  const pts = [];
  for (const ring of (z && z.boundary && z.boundary.coordinates) || []) for (const [lng, lat] of ring) pts.push(project(lng, lat, k));
  return pts;
}

function points(ctx, k) {
  const pts = [];
  for (const z of ctx.state.zones.values()) {
    for (const ring of (z.boundary && z.boundary.coordinates) || []) for (const [lng, lat] of ring) pts.push(project(lng, lat, k));
  }
  for (const t of ctx.state.teams.values()) {
    for (const m of t.members || []) if (m.lat != null) pts.push(project(m.lng, m.lat, k));
  }
  for (const e of ctx.state.events.values()) if (e.lat != null) pts.push(project(e.lng, e.lat, k));
  return pts;
}

// fit frames every zone, member and event; fitZone frames one zone.
function fit(ctx, only) {
  const pts = only ? zonePoints(ctx, only, scaleK(ctx)) : points(ctx, scaleK(ctx));
  if (!pts.length) {
    view = { x: 2.8 * S, y: -46 * S, w: 2 * S, h: 1.2 * S };
    return;
  }
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, y] of pts) { x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y); }
  const pad = Math.max(x1 - x0, y1 - y0, 0.02 * S) * 0.08;
  view = { x: x0 - pad, y: y0 - pad, w: x1 - x0 + 2 * pad || 0.1 * S, h: y1 - y0 + 2 * pad || 0.1 * S };
  fitted = true;
}

function applyView() {
  svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].join(" "));
}

function zoom(f, cx, cy) {
  const x = cx === undefined ? view.x + view.w / 2 : cx;
  const y = cy === undefined ? view.y + view.h / 2 : cy;
  view = { x: x - (x - view.x) * f, y: y - (y - view.y) * f, w: view.w * f, h: view.h * f };
  draw(curCtx);
}

function pan(dx, dy) {
  view.x += dx * view.w;
  view.y += dy * view.h;
  applyView();
}

function toSvg(evt) {
  const r = svg.getBoundingClientRect();
  const sc = Math.max(view.w / r.width, view.h / r.height);
  const ox = view.x + view.w / 2 - (r.width * sc) / 2;
  const oy = view.y + view.h / 2 - (r.height * sc) / 2;
  return [ox + (evt.clientX - r.left) * sc, oy + (evt.clientY - r.top) * sc, sc];
}

let curCtx = null;

// openMarker opens what a marker stands for: an event's detail, or a team on the board.
function openMarker(ctx, el) {
  if (!el || !el.dataset) return;
  if (el.dataset.event) ctx.go("events", { eventId: el.dataset.event });
  else if (el.dataset.team && ctx.can("teams:read")) ctx.go("teams", { teamId: el.dataset.team });
}

// STALE_MS is how long a connectivity report holds on the node (ConnectivityStaleAfter):
// past it the zone is unknown there, and so here at once, without waiting for a reload.
const STALE_MS = 10 * 60000;

function state(z) {
  const c = z.connectivity || {};
  if (!c.state || !c.last_report_at || Date.now() - new Date(c.last_report_at).getTime() >= STALE_MS) return "unknown";
  return c.state;
}

function draw(ctx) {
  if (!svg) return;
  applyView();
  const k = scaleK(ctx);
  const r = svg.getBoundingClientRect();
  const unit = Math.max(view.w / (r.width || 800), view.h / (r.height || 500));
  const g = s("g", {});
  for (const z of ctx.state.zones.values()) {
    const ring = z.boundary && z.boundary.coordinates && z.boundary.coordinates[0];
    if (!ring) continue;
    const d = ring.map(([lng, lat], i) => (i ? "L" : "M") + project(lng, lat, k).join(",")).join(" ") + " Z";
    const st = state(z);
    g.append(s("path", { d, class: "zone " + st, "vector-effect": "non-scaling-stroke", "data-zone": z.code },
      s("title", {}, z.name + " (" + z.code + "): " + word("zone", st))));
    const [cx] = project(z.centroid.lng, z.centroid.lat, k);
    const top = Math.min(...ring.map(([lng, lat]) => project(lng, lat, k)[1]));
    g.append(s("text", { x: cx, y: top - 6 * unit, class: "zone-label", "text-anchor": "middle", "font-size": 15 * unit }, z.name + " · " + word("zone", st).replace(/ \(.*\)$/, "")));
  }
  // Members first: an event's marker is drawn over them, never hidden under one.
  for (const t of ctx.state.teams.values()) {
    for (const m of t.members || []) {
      if (m.lat == null) continue;
      const [x, y] = project(m.lng, m.lat, k);
      g.append(s("circle", { cx: x, cy: y, r: 7 * unit, class: "member " + t.status, "data-team": t.id, role: "button", tabindex: 0,
        "aria-label": m.name + ", " + t.name },
        s("title", {}, m.name + " — " + t.name + " (" + word("team", t.status) + ")" +
          (m.location_updated_at ? ", position " + time(m.location_updated_at) : ""))));
    }
  }
  // Events over members, and the most urgent events over the others.
  const rank = { critical: 3, high: 2, normal: 1, low: 0 };
  const events = [...ctx.state.events.values()].sort((a, b) => (rank[a.priority] ?? 0) - (rank[b.priority] ?? 0));
  for (const e of events) {
    if (e.lat == null) continue;
    const [x, y] = project(e.lng, e.lat, k);
    const rr = (e.priority === "critical" ? 9 : 7) * unit;
    g.append(s("rect", { x: x - rr, y: y - rr, width: 2 * rr, height: 2 * rr, transform: "rotate(45 " + x + " " + y + ")",
      class: "ev-mark " + (e.status === "closed" ? "closed" : e.priority), "data-event": e.event_id, role: "button", tabindex: 0,
      "aria-label": typeName(e.type) + ", " + word("priority", e.priority) },
    s("title", {}, typeName(e.type) + " · " + word("priority", e.priority) + " · " + word("event", e.status) + " · " + time(e.created_at))));
  }
  for (const m of ctx.state.missions.values()) {
    if (m.event_lat == null || ["COMPLETED", "FAILED"].includes(m.status)) continue;
    const t = ctx.state.teams.get(m.team_id);
    const mem = t && (t.members || []).find((x) => x.lat != null);
    if (!mem) continue;
    const [x1, y1] = project(mem.lng, mem.lat, k);
    const [x2, y2] = project(m.event_lng, m.event_lat, k);
    g.prepend(s("line", { x1, y1, x2, y2, stroke: "currentColor", "stroke-dasharray": "4 4", "vector-effect": "non-scaling-stroke" }));
  }
  clear(svg).append(g);
  keepLabelsIn(r);
}

// keepLabelsIn moves a zone's name back inside the part of the map on screen (r, the
// svg's box): a zone at the edge, or a narrow phone, must not clip its name.
function keepLabelsIn(r) {
  if (!r.width || !r.height) return;
  const sc = Math.max(view.w / r.width, view.h / r.height);
  const x0 = view.x + view.w / 2 - (r.width * sc) / 2;
  const y0 = view.y + view.h / 2 - (r.height * sc) / 2;
  const [x1, y1] = [x0 + r.width * sc, y0 + r.height * sc];
  for (const t of svg.querySelectorAll(".zone-label")) {
    const b = t.getBBox();
    const dx = b.x < x0 ? x0 - b.x : b.x + b.width > x1 ? Math.max(x1 - (b.x + b.width), x0 - b.x) : 0;
    const dy = b.y < y0 ? y0 - b.y : b.y + b.height > y1 ? y1 - (b.y + b.height) : 0;
    if (dx) t.setAttribute("x", Number(t.getAttribute("x")) + dx);
    if (dy) t.setAttribute("y", Number(t.getAttribute("y")) + dy);
  }
}

function table(ctx) {
  const rows = [...ctx.state.zones.values()].sort((a, b) => (a.code < b.code ? -1 : 1)).map((z) => h("tr", {},
    h("td", {}, h("span", { class: "sw " + state(z) }), h("button", { type: "button", class: "link", title: "Zoom to " + z.name,
      dataset: { zoomZone: z.code }, onclick: () => { fit(ctx, z.code); draw(ctx); } }, z.name)), h("td", {}, z.code), h("td", {}, word("zone", state(z))),
    h("td", {}, time(z.connectivity && z.connectivity.last_report_at) || "never")));
  return cardify(h("table", { class: "section" }, h("caption", { class: "muted" }, "Zone connectivity"),
    h("thead", {}, h("tr", {}, ["Zone", "Code", "Link", "Last report"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)));
}

let tableWrap = null;
let gatewayLine = null;

// smsGateway shows the SMS gateway's reachability from /readyz under the zones (nothing on
// a node without a gateway): a down gateway is skipped wherever another channel serves.
async function smsGateway() {
  const line = gatewayLine;
  let st = "";
  try {
    st = (await get("/readyz")).sms_gateway || "";
  } catch (_) {
    st = "";
  }
  if (!line || line !== gatewayLine || !st) return;
  line.dataset.state = st;
  clear(line).append(h("span", { class: "sw " + (st === "up" ? "online" : st === "down" ? "offline" : "unknown") }),
    "SMS gateway: " + st + (st === "down" ? " (the SMS channel is skipped where another channel serves)" : ""));
}

export const mapView = {
  id: "map",
  title: () => "Map",
  visible: (ctx) => ctx.can("zones:read"),
  mount(root, ctx) {
    curCtx = ctx;
    svg = s("svg", { class: "map", role: "group", "aria-label": "Map of zones, teams and events; arrow keys pan, plus and minus zoom, Enter opens a marker",
      tabindex: 0, preserveAspectRatio: "xMidYMid meet" });
    svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      const [x, y] = toSvg(e);
      zoom(e.deltaY > 0 ? 1.2 : 1 / 1.2, x, y);
    }, { passive: false });
    svg.addEventListener("pointerdown", (e) => {
      svg.setPointerCapture(e.pointerId);
      drag.pointers.set(e.pointerId, [e.clientX, e.clientY]);
      drag.from = [e.clientX, e.clientY];
      drag.on = true; drag.x = e.clientX; drag.y = e.clientY; drag.pinch = 0;
    });
    svg.addEventListener("pointermove", (e) => {
      if (!drag.on) return;
      drag.pointers.set(e.pointerId, [e.clientX, e.clientY]);
      const r = svg.getBoundingClientRect();
      if (drag.pointers.size === 2) {
        const [a, b] = [...drag.pointers.values()];
        const d = Math.hypot(a[0] - b[0], a[1] - b[1]);
        if (drag.pinch) zoom(drag.pinch / d);
        drag.pinch = d;
        return;
      }
      const sc = Math.max(view.w / r.width, view.h / r.height);
      view.x -= (e.clientX - drag.x) * sc;
      view.y -= (e.clientY - drag.y) * sc;
      drag.x = e.clientX; drag.y = e.clientY;
      applyView();
    });
    const up = (e) => { drag.pointers.delete(e.pointerId); drag.pinch = 0; drag.on = drag.pointers.size > 0; };
    // A tap that did not drag opens the marker under it (pointer capture keeps the marker
    // from receiving the click itself).
    svg.addEventListener("pointerup", (e) => {
      up(e);
      if (!drag.from || Math.hypot(e.clientX - drag.from[0], e.clientY - drag.from[1]) > 5) return;
      const hit = document.elementFromPoint(e.clientX, e.clientY);
      openMarker(ctx, hit && hit.closest("[data-event], [data-team]"));
    });
    svg.addEventListener("pointercancel", up);
    svg.addEventListener("keydown", (e) => {
      const step = { ArrowLeft: [-0.1, 0], ArrowRight: [0.1, 0], ArrowUp: [0, -0.1], ArrowDown: [0, 0.1] }[e.key];
      if (step) { e.preventDefault(); pan(step[0], step[1]); }
      if (e.key === "+" || e.key === "=") zoom(1 / 1.3);
      if (e.key === "-") zoom(1.3);
      if (e.key === "0") { fit(ctx); draw(ctx); }
      if (e.key === "Enter" || e.key === " ") openMarker(ctx, document.activeElement);
    });
    const controls = h("div", { class: "map-controls" },
      h("button", { type: "button", title: "Zoom in", "aria-label": "Zoom in", onclick: () => zoom(1 / 1.3) }, "+"),
      h("button", { type: "button", title: "Zoom out", "aria-label": "Zoom out", onclick: () => zoom(1.3) }, "−"),
      h("button", { type: "button", title: "Fit everything", "aria-label": "Fit everything", onclick: () => { fit(ctx); draw(ctx); } }, "⤢"));
    tableWrap = h("div", {});
    gatewayLine = h("p", { id: "sms-gateway", class: "muted" });
    root.append(h("div", { class: "split map-split" },
      h("div", {}, h("div", { class: "map-wrap" }, svg, controls),
        h("div", { class: "legend" }, ["online", "degraded", "offline", "unknown"].map((x) => h("span", {}, h("span", { class: "sw " + x }), x)),
          h("span", {}, h("span", { class: "sw team" }), "team member"), h("span", {}, h("span", { class: "sw event" }), "event"))),
      h("div", {}, tableWrap, gatewayLine)));
    smsGateway();
    fitted = false;
    fit(ctx);
    draw(ctx);
    tableWrap.append(table(ctx));
  },
  update(ctx) {
    if (!fitted) fit(ctx);
    draw(ctx);
    clear(tableWrap, table(ctx));
  },
  unmount() { svg = null; gatewayLine = null; },
};
