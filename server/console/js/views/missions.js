// Missions and their timeline: every move (from, to, at, actor, source, feedback) of the
// chosen mission, updated live. Field operators see their own teams' missions and move
// them along the field path; supervisors may too; everyone else reads.

import { h, clear, time, badge, short, cardify, typeName, sortHead, sortRows, RANK } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { movesFrom, missionStates } from "/shared/moves.js";
import { MOVE_WORDS } from "/shared/words.js";

let selected = null;
let statusFilter = "";
let query = "";
let more = false;
const sort = { key: "dispatched", dir: -1 };
let listEl = null;
let detail = null;
let note = "";
let busy = false;

function teamName(ctx, id) {
  const t = ctx.state.teams.get(id);
  if (t) return t.name;
  return ctx.restricted() ? "your team" : "team …" + short(id);
}

function eventLabel(ctx, id) {
  const e = ctx.state.events.get(id);
  return e ? typeName(e.type) + (e.zone_code ? " · " + e.zone_code : "") : "event …" + short(id);
}

function canMove(ctx) {
  return ctx.can("missions:manage") || ctx.can("missions:receive");
}

async function move(ctx, m, to) {
  if (busy) return;
  busy = true;
  ctx.rerender();
  const body = { status: to };
  if (note.trim()) body.feedback = { note: note.trim() };
  try {
    const res = await api.patch("/v1/missions/" + m.id + "/status", body);
    note = "";
    ctx.state.missions.set(res.id, res);
    ctx.toast(eventLabel(ctx, m.event_id) + ": " + to.replace("_", " "), "ok");
  } catch (e) {
    ctx.toast(e.plain, "warn", 8000);
    ctx.loadMission(m.id);
  } finally {
    busy = false;
    ctx.rerender();
  }
}

function value(ctx, m, key) {
  switch (key) {
    case "event": return eventLabel(ctx, m.event_id);
    case "priority": return RANK[m.priority] ?? 9;
    case "team": return teamName(ctx, m.team_id);
    case "status": return m.status;
    default: return m.dispatched_at;
  }
}

function found(ctx, m) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  const text = [eventLabel(ctx, m.event_id), teamName(ctx, m.team_id), m.status, m.priority, m.code, m.id, m.notes].join(" ").toLowerCase();
  return q.split(/\s+/).every((w) => text.includes(w));
}

async function loadMore(ctx) {
  more = true;
  ctx.rerender();
  await ctx.loadMore("missions");
  more = false;
  ctx.rerender();
}

function list(ctx) {
  const ms = sortRows([...ctx.state.missions.values()].filter((m) => (!statusFilter || m.status === statusFilter) && found(ctx, m)),
    sort, (m, key) => value(ctx, m, key));
  const rows = ms.map((m) => h("tr", { class: m.id === selected ? "selected" : "", dataset: { missionId: m.id, status: m.status } },
    h("td", {}, h("button", { type: "button", class: "link", dataset: { key: "mis-" + m.id }, "aria-pressed": String(m.id === selected),
      onclick: () => { selected = m.id; ctx.link("missions", { missionId: m.id }); ctx.rerender(); ctx.loadMission(m.id); } }, eventLabel(ctx, m.event_id))),
    h("td", {}, badge(m.priority, "p-" + m.priority)),
    h("td", {}, teamName(ctx, m.team_id)),
    h("td", {}, badge(m.status, "s-" + m.status)),
    h("td", { class: "small hide-narrow" }, time(m.dispatched_at))));
  const sel = h("select", { id: "m-status", onchange: (e) => { statusFilter = e.target.value; ctx.rerender(); } },
    ["", ...missionStates()].map((s) => h("option", { value: s, selected: s === statusFilter }, s || "any")));
  const search = h("input", { id: "m-q", type: "search", value: query, placeholder: "event, team, code…", dataset: { key: "m-q" },
    oninput: (e) => { query = e.target.value; ctx.rerender(); } });
  return h("div", {}, h("div", { class: "toolbar" }, h("div", { class: "grow" }, h("label", { for: "m-q" }, "Search"), search),
    h("div", {}, h("label", { for: "m-status" }, "Status"), sel)),
  cardify(h("table", { id: "missions-table" }, sortHead([["Event", "event"], ["Priority", "priority"], ["Team", "team"], ["Status", "status"],
    ["Dispatched", "dispatched", "hide-narrow"]], sort, () => ctx.rerender()),
  h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, class: "muted" },
    ctx.restricted() ? "Your team has no mission." : "No mission."))))),
  ctx.state.missionsCursor ? h("button", { type: "button", id: "missions-more", disabled: more, onclick: () => loadMore(ctx) }, more ? "Loading more…" : "Load more") : null);
}

function timeline(ctx, m) {
  return h("ol", { class: "timeline", id: "timeline", "aria-label": "Moves of the mission" },
    (m.history || []).map((mv) => h("li", { dataset: { to: mv.to } },
      h("div", { class: "move" }, mv.from ? mv.from + " → " + mv.to : "dispatched: " + mv.to),
      h("div", { class: "small" }, time(mv.at), " · ", ctx.actorName(mv.actor), SOURCE[mv.source] ? " · " + SOURCE[mv.source] : ""),
      feedback(mv.feedback))));
}

// SOURCE says in words how a move came in; "api" (the console, the field app or an API
// client: all the same to the node) says nothing.
const SOURCE = { device: "from a device's offline queue", sms: "by SMS", system: "by the node" };

// feedback shows a move's feedback as text: the note, then any other field as "name: value".
function feedback(fb) {
  if (fb == null) return null;
  if (typeof fb !== "object") return h("p", { class: "feedback" }, String(fb));
  const rest = Object.entries(fb).filter(([k]) => k !== "note");
  return h("div", { class: "feedback" }, fb.note != null ? h("p", {}, String(fb.note)) : null,
    rest.length ? h("dl", { class: "facts small" }, rest.map(([k, v]) => [h("dt", {}, k.replace(/_/g, " ")),
      h("dd", {}, v !== null && typeof v === "object" ? (Array.isArray(v) ? v.join(", ") : JSON.stringify(v)) : String(v))])) : null);
}

function details(ctx) {
  const m = selected && ctx.state.missions.get(selected);
  if (!m) return h("div", { class: "muted" }, "Choose a mission to see its timeline.");
  const next = movesFrom(m.status);
  const moves = canMove(ctx) && next.length ? h("div", {},
    h("label", { for: "move-note" }, "Note with the move (optional)"),
    h("input", { id: "move-note", type: "text", value: note, dataset: { key: "move-note" }, oninput: (e) => { note = e.target.value; }, placeholder: "e.g. patient handed over" }),
    h("div", { class: "moves" }, next.map((to) => h("button", { type: "button", class: to === "FAILED" ? "danger" : "primary",
      disabled: busy, dataset: { key: "move-" + to, move: to }, onclick: () => move(ctx, m, to) }, MOVE_WORDS[to])))) : null;
  return h("div", { dataset: { missionId: m.id } },
    h("h3", {}, eventLabel(ctx, m.event_id), " ", badge(m.status, "s-" + m.status)),
    h("dl", { class: "facts" },
      h("dt", {}, "Team"), h("dd", {}, teamName(ctx, m.team_id)),
      h("dt", {}, "Priority"), h("dd", {}, m.priority + " · " + m.vertical),
      m.notes ? [h("dt", {}, "Notes"), h("dd", {}, m.notes)] : null,
      h("dt", {}, "Channel"), h("dd", {}, m.channel_used || (["CREATED", "SENT"].includes(m.status) ? "not yet delivered" : "none recorded")),
      m.reinforcement_of ? [h("dt", {}, "Backup of"), h("dd", {}, "mission …" + short(m.reinforcement_of))] : null,
      h("dt", {}, "Dispatched"), h("dd", {}, time(m.dispatched_at), " by ", ctx.actorName(m.dispatched_by))),
    moves, h("h3", {}, "Timeline"), timeline(ctx, m));
}

export const missionsView = {
  id: "missions",
  title: (ctx) => (ctx.restricted() ? "My missions" : "Missions"),
  visible: (ctx) => ctx.can("missions:view"),
  mount(root, ctx, opts) {
    if (opts.missionId) { selected = opts.missionId; ctx.loadMission(selected); }
    listEl = h("div", { class: "scroll", id: "mission-list" });
    detail = h("div", { class: "card", id: "mission-detail", "aria-live": "polite" });
    root.append(h("h2", {}, ctx.restricted() ? "My team's missions" : "Missions"), h("div", { class: "split" }, listEl, detail));
    this.update(ctx);
  },
  update(ctx) {
    if (!listEl) return;
    clear(listEl, list(ctx));
    clear(detail, details(ctx));
  },
  unmount() { listEl = null; detail = null; },
};
