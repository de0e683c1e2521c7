// The dispatch panel: pick an open event, see every team's score with its factors
// (POST /v1/teams/dispatch/score), and dispatch a team, or a backup team when the event
// already has an active mission (POST /v1/teams/dispatch).

import { h, clear, time, badge, cardify, typeName, RANK } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { word } from "/shared/words.js";
import { callerFacts } from "../caller.js";

let selected = null;
let scores = null;
let scoreErr = "";
// stale says why the scores shown could not be refreshed.
let stale = "";
let listEl = null;
let panel = null;
let notes = "";
let busy = false;
// confirming is the team whose dispatch waits for "Send anyway".
let confirming = null;
let rescore = null;
// asked is the event a deep link named that was read from the node.
let asked = null;
// focusConfirm: the confirmation just opened takes the focus (its "Send anyway").
let focusConfirm = false;
// focusBest: the event just chosen (a pick in the queue, the event detail's Dispatch, a
// deep link) hands the focus to its best team's Dispatch button once scored, and on a
// narrow screen brings the scores into view: Enter, Enter dispatches
// (docs/decisions/0270-keyboard-dispatch.md).
let focusBest = false;

// cancelConfirm closes the confirmation and gives the focus back to the team's button.
function cancelConfirm(ctx) {
  const team = confirming;
  confirming = null;
  ctx.rerender();
  requestAnimationFrame(() => requestAnimationFrame(() => {
    const b = panel && panel.querySelector('[data-dispatch-team="' + team + '"]');
    if (b) b.focus();
  }));
}

const active = (m) => !["COMPLETED", "FAILED"].includes(m.status);

// openEvents is the dispatch queue, every open event the node listed (state.open) and the
// stream brought since: critical first, then high, normal, low; the longest waiting first
// within a priority.
function openEvents(ctx) {
  return [...ctx.state.open].map((id) => ctx.state.events.get(id)).filter((e) => e && e.status !== "closed")
    .sort((a, b) => (RANK[a.priority] ?? 9) - (RANK[b.priority] ?? 9) || (a.created_at < b.created_at ? -1 : 1));
}

async function score(ctx) {
  if (!selected) return;
  const id = selected;
  try {
    const res = await api.post("/v1/teams/dispatch/score", { event_id: id });
    if (id === selected) { scores = res.data; scoreErr = ""; stale = ""; }
  } catch (e) {
    // A failed refresh keeps the scores already shown, marked stale.
    if (id === selected && scores) stale = e.plain;
    else if (id === selected) scoreErr = e.plain;
  }
  ctx.rerender();
}

function choose(ctx, id) {
  selected = id;
  confirming = null;
  focusBest = true;
  ctx.link("dispatch", { eventId: id });
  scores = null;
  scoreErr = "";
  stale = "";
  ctx.rerender();
  score(ctx);
}

// risks says why sending the team needs a second thought: a score below the tenant's
// threshold, equipment the event asks for and the team lacks.
function risks(ctx, ev, s) {
  const out = [];
  const thr = ctx.state.tenant && ctx.state.tenant.dispatch_threshold;
  if (thr != null && s.score < thr) out.push("its score " + s.score.toFixed(3) + " is below the threshold " + thr);
  const team = ctx.state.teams.get(s.team_id);
  const have = new Set((team && team.equipment) || []);
  const missing = (ev.required_equipment || []).filter((x) => !have.has(x));
  if (missing.length) out.push("it lacks " + missing.join(", "));
  else if (s.factors.equipment < 1) out.push("it lacks some of the equipment asked");
  return out;
}

// ask dispatches the team at once, or first asks for a confirmation when it is a risk.
function ask(ctx, ev, s, backup) {
  if (risks(ctx, ev, s).length && confirming !== s.team_id) {
    confirming = s.team_id;
    focusConfirm = true;
    ctx.rerender();
    return;
  }
  confirming = null;
  dispatch(ctx, ev, s, backup);
}

const hasActive = (ctx, id) => [...ctx.state.missions.values()].some((m) => m.event_id === id && active(m));

async function dispatch(ctx, ev, team, backup) {
  if (busy) return;
  busy = true;
  ctx.rerender();
  const body = { event_id: ev.event_id, team_id: team.team_id };
  if (notes.trim()) body.notes = notes.trim();
  if (ev.lat != null) { body.event_lat = ev.lat; body.event_lng = ev.lng; }
  try {
    const d = await api.post("/v1/teams/dispatch", body);
    notes = "";
    ctx.toast((backup ? "Backup: " : "Dispatched: ") + team.team_name + " → " + typeName(ev.type), "ok");
    await ctx.loadMission(d.mission_id);
    // On to the next open event that has no team yet.
    const next = openEvents(ctx).find((e) => e.event_id !== ev.event_id && !hasActive(ctx, e.event_id));
    if (next && selected === ev.event_id) {
      busy = false;
      choose(ctx, next.event_id);
      return;
    }
  } catch (e) {
    ctx.toast(e.plain, "warn", 8000);
  } finally {
    busy = false;
    score(ctx);
  }
}

function eventList(ctx) {
  const rows = openEvents(ctx).map((e) => {
    const n = [...ctx.state.missions.values()].filter((m) => m.event_id === e.event_id && active(m)).length;
    return h("tr", { class: (e.event_id === selected ? "selected " : "") + (e.priority === "critical" ? "critical" : ""), dataset: { eventId: e.event_id } },
      h("td", {}, h("button", { type: "button", class: "link", dataset: { key: "pick-" + e.event_id },
        "aria-pressed": String(e.event_id === selected), onclick: () => choose(ctx, e.event_id) }, typeName(e.type))),
      h("td", {}, badge(word("priority", e.priority), "p-" + e.priority)), h("td", {}, e.zone_code || "—"),
      h("td", { class: "small" }, time(e.created_at)), h("td", {}, n ? n + " active" : h("span", { class: "muted" }, "none")));
  });
  return cardify(h("table", { id: "queue" }, h("caption", { class: "muted" }, "Open events, critical first"),
    h("thead", {}, h("tr", {}, ["Event", "Priority", "Zone", "Received", "Missions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No open event.")))));
}

function pct(v) {
  return Math.round(v * 100) + "%";
}

function scorePanel(ctx) {
  const ev = selected && ctx.state.events.get(selected);
  if (!ev && selected && ctx.state.loadedAt && asked !== selected) {
    // A deep link to an event the loads did not bring (closed long ago) reads it.
    asked = selected;
    ctx.loadEvent(selected);
  }
  if (!ev) return h("div", { class: "card muted" }, "Choose an open event to see the teams' scores.");
  const missions = [...ctx.state.missions.values()].filter((m) => m.event_id === ev.event_id);
  const backup = missions.some(active);
  const head = h("div", {},
    h("h3", {}, typeName(ev.type), " ", badge(word("priority", ev.priority), "p-" + ev.priority)),
    h("dl", { class: "facts" },
      h("dt", {}, "Vertical"), h("dd", {}, ev.vertical),
      h("dt", {}, "Zone"), h("dd", {}, ev.zone_code || "—"),
      callerFacts(ev),
      h("dt", {}, "Position"), h("dd", {}, ev.lat != null ? ev.lat.toFixed(4) + ", " + ev.lng.toFixed(4) : "unknown"),
      h("dt", {}, "Equipment"), h("dd", {}, (ev.required_equipment || []).join(", ") || "none asked"),
      h("dt", {}, "Missions"), h("dd", {}, missions.length ? missions.map((m) => h("button", { type: "button", class: "link",
        onclick: () => ctx.go("missions", { missionId: m.id }) }, (ctx.state.teams.get(m.team_id) || {}).name || "team", " (", word("mission", m.status), ")")) : "none")));
  const notesEl = h("input", { id: "dispatch-notes", type: "text", maxlength: 2000, value: notes, placeholder: "visible to the team", dataset: { key: "dispatch-notes" },
    oninput: (e) => { notes = e.target.value; } });
  if (ev.status === "closed") {
    return h("div", {}, head, h("p", { class: "muted", id: "event-closed" }, "This event is closed" + (ev.closed_at ? " since " + time(ev.closed_at) : "") + ": there is nothing to dispatch."));
  }
  if (scoreErr) return h("div", {}, head, h("p", { class: "error" }, scoreErr));
  if (!scores) return h("div", {}, head, h("p", { class: "muted" }, "Scoring the teams…"));
  const best = scores.find((s) => s.eligible);
  const rows = scores.map((s) => {
    const f = s.factors;
    const canSend = f.availability === 1 && !busy;
    return h("tr", { dataset: { teamId: s.team_id }, class: best === s ? "selected" : "" },
      h("td", {}, h("strong", {}, s.team_name), best === s ? h("div", {}, badge("best", "s-COMPLETED")) : null,
        !s.eligible && s.reason ? h("div", { class: "muted small" }, s.reason) : null),
      h("td", { class: "num" }, h("span", { class: "bar-score", dataset: { w: pct(s.score) } }), s.score.toFixed(3)),
      h("td", { class: "num" }, f.vertical), h("td", { class: "num" }, f.availability ? "available" : "busy"),
      h("td", { class: "num" }, f.proximity.toFixed(2)), h("td", { class: "num" }, f.distance_km == null ? "?" : f.distance_km.toFixed(1) + " km"),
      h("td", { class: "num" }, pct(f.equipment)),
      h("td", {}, h("button", { type: "button", class: best === s ? "primary" : "", disabled: !canSend,
        dataset: { key: "send-" + s.team_id, dispatchTeam: s.team_id },
        onclick: () => ask(ctx, ev, s, backup) }, backup ? "Dispatch backup" : "Dispatch")));
  });
  const pending = confirming && scores.find((s) => s.team_id === confirming);
  const confirmBox = pending ? h("div", { class: "confirm", role: "alertdialog", "aria-labelledby": "confirm-text", id: "dispatch-confirm" },
    h("p", { id: "confirm-text" }, "Send ", h("strong", {}, pending.team_name), " anyway? ", risks(ctx, ev, pending).join("; "), "."),
    h("button", { type: "button", class: "danger", id: "confirm-send", dataset: { key: "confirm-send" }, disabled: busy,
      onclick: () => ask(ctx, ev, pending, backup) }, "Send anyway"), " ",
    h("button", { type: "button", id: "confirm-cancel", onclick: () => cancelConfirm(ctx) }, "Cancel")) : null;
  return h("div", {}, head,
    h("div", { class: "toolbar" }, h("div", { class: "grow" }, h("label", { for: "dispatch-notes" }, "Notes for the team"), notesEl)),
    stale ? h("p", { class: "error" }, "Scores not refreshed: ", stale) : null,
    confirmBox,
    cardify(h("table", { id: "score-table" }, h("caption", { class: "muted" }, "Score = vertical × availability × proximity × equipment; threshold " +
      ((ctx.state.tenant && ctx.state.tenant.dispatch_threshold) ?? "?")),
    h("thead", {}, h("tr", {}, ["Team", "Score", "Vertical", "Availability", "Proximity", "Distance", "Equipment", "Action"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows))));
}

// followChoice shows the chosen event's panel (below the queue on a narrow screen) and,
// once the teams are scored, puts the focus on the best team's Dispatch button (else the
// first one that can be sent, else the panel).
function followChoice() {
  if (matchMedia("(max-width: 900px)").matches) panel.scrollIntoView({ block: "start" });
  if (!scores && !scoreErr) return;
  focusBest = false;
  const b = panel.querySelector("#score-table button.primary:not([disabled])") || panel.querySelector("#score-table button[data-dispatch-team]:not([disabled])");
  if (b) b.focus({ preventScroll: true });
  else { panel.tabIndex = -1; panel.focus({ preventScroll: true }); }
}

function widthBars(root) {
  for (const el of root.querySelectorAll(".bar-score")) el.style.width = "calc(" + el.dataset.w + " * 0.6 + 2px)";
}

export const dispatchView = {
  id: "dispatch",
  title: () => "Dispatch",
  visible: (ctx) => ctx.can("dispatch:assign"),
  mount(root, ctx, opts) {
    if (opts.eventId) { selected = opts.eventId; scores = null; stale = ""; focusBest = true; }
    listEl = h("div", { class: "scroll" });
    panel = h("div", { class: "card", id: "score-panel" });
    root.append(h("h2", {}, "Dispatch"), h("div", { class: "split" }, listEl, panel));
    // Esc closes the confirmation, wherever the focus is in the panel.
    panel.addEventListener("keydown", (e) => { if (e.key === "Escape" && confirming) { e.preventDefault(); cancelConfirm(ctx); } });
    this.update(ctx);
    if (selected) score(ctx);
  },
  update(ctx) {
    if (!listEl) return;
    clear(listEl, eventList(ctx));
    clear(panel, scorePanel(ctx));
    widthBars(panel);
    const send = focusConfirm && panel.querySelector("#confirm-send");
    if (send) {
      focusConfirm = false;
      send.focus();
    }
    if (focusBest && selected) followChoice();
  },
  onChange(name, data, ctx) {
    if (!selected) return;
    if (name === "team.updated" || name === "team.dispatched" || (name === "mission.status_updated" && data.event_id === selected)) {
      clearTimeout(rescore);
      rescore = setTimeout(() => score(ctx), 300);
    }
  },
  unmount() { listEl = null; panel = null; },
};
