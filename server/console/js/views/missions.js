// Missions and their timeline: every move (from, to, at, actor, source, feedback) of the
// chosen mission, updated live. Field operators see their own teams' missions and move
// them along the field path; supervisors may too; everyone else reads. For the chosen
// mission: whether the crew's phones have its latest change (GET /v1/missions/:id/crew),
// its messages with an answer box, and for supervisors a stand-down with a reason and a
// confirmation; an active mission whose event another mission closed is offered for
// stand-down, never ended silently (docs/decisions/0149-stand-down.md).

import { h, clear, time, badge, short, cardify, typeName, sortHead, sortRows, RANK } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { movesFrom, missionStates } from "/shared/moves.js";
import { MOVE_WORDS, STATE_WORDS, word } from "/shared/words.js";

let selected = null;
let statusFilter = "";
let query = "";
let more = false;
const sort = { key: "dispatched", dir: -1 };
let listEl = null;
let detail = null;
let note = "";
let busy = false;
// crew holds the last answer of GET /v1/missions/:id/crew by mission; crewTimer refreshes
// the chosen mission's (a phone's acknowledgement comes with its sync: no stream change).
const crew = new Map();
let crewTimer = null;
let message = "";
// standing is the mission whose stand-down form is open; reason its text; confirming
// whether the confirmation is asked.
let standing = null;
let reason = "";
let confirming = false;
// ending is the terminal move (COMPLETED or FAILED) of the chosen mission that waits for
// its confirmation: a mission ended by a slip of the finger cannot be reopened.
let ending = null;

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

// TERMINAL are the moves that end a mission: asked twice.
const TERMINAL = ["COMPLETED", "FAILED"];

async function move(ctx, m, to) {
  if (busy) return;
  if (TERMINAL.includes(to) && !(ending && ending.id === m.id && ending.to === to)) {
    ending = { id: m.id, to };
    ctx.rerender();
    requestAnimationFrame(() => requestAnimationFrame(() => { const b = document.getElementById("end-confirm"); if (b) b.focus(); }));
    return;
  }
  ending = null;
  busy = true;
  ctx.rerender();
  const body = { status: to };
  if (note.trim()) body.feedback = { note: note.trim() };
  try {
    const res = await api.patch("/v1/missions/" + m.id + "/status", body);
    note = "";
    ctx.state.missions.set(res.id, res);
    ctx.toast(eventLabel(ctx, m.event_id) + ": " + word("mission", to), "ok");
  } catch (e) {
    ctx.toast(e.plain, "warn", 8000);
    ctx.loadMission(m.id);
  } finally {
    busy = false;
    ctx.rerender();
  }
}

// loadCrew reads whether the crew's devices have the mission's latest change.
async function loadCrew(ctx, id) {
  try {
    crew.set(id, await api.get("/v1/missions/" + id + "/crew"));
  } catch (e) {
    if (e.code !== "not_found") crew.delete(id);
  }
  ctx.rerender();
}

// watchCrew refreshes the chosen mission's crew now and every 10 s while it is chosen.
function watchCrew(ctx) {
  clearInterval(crewTimer);
  crewTimer = null;
  if (!selected) return;
  loadCrew(ctx, selected);
  crewTimer = setInterval(() => { if (selected) loadCrew(ctx, selected); }, 10000);
}

// sendMessage writes a message to the mission's team.
async function sendMessage(ctx, m) {
  const text = message.trim();
  if (!text || busy) return;
  busy = true;
  ctx.rerender();
  try {
    await api.post("/v1/missions/" + m.id + "/messages", { text });
    message = "";
    await ctx.loadMission(m.id);
    loadCrew(ctx, m.id);
  } catch (e) {
    ctx.toast(e.plain, "warn", 8000);
  } finally {
    busy = false;
    ctx.rerender();
  }
}

// standDown ends the mission FAILED with feedback.stood_down and the reason.
async function standDown(ctx, m) {
  const why = reason.trim();
  if (!why || busy) return;
  busy = true;
  ctx.rerender();
  try {
    const res = await api.patch("/v1/missions/" + m.id + "/status", { status: "FAILED", feedback: { stood_down: true, reason: why } });
    ctx.state.missions.set(res.id, res);
    standing = null;
    reason = "";
    confirming = false;
    ctx.toast(teamName(ctx, m.team_id) + " stood down", "ok");
    loadCrew(ctx, m.id);
  } catch (e) {
    ctx.toast(e.plain, "warn", 8000);
    ctx.loadMission(m.id);
  } finally {
    busy = false;
    ctx.rerender();
  }
}

// eventClosed reports whether an active mission's event is closed: another mission ended
// it, and this one is offered for stand-down.
function eventClosed(ctx, m) {
  const ev = ctx.state.events.get(m.event_id);
  return !!ev && ev.status === "closed" && !["COMPLETED", "FAILED"].includes(m.status);
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
      onclick: () => { selected = m.id; ctx.link("missions", { missionId: m.id }); ctx.rerender(); ctx.loadMission(m.id); watchCrew(ctx); } }, eventLabel(ctx, m.event_id))),
    h("td", {}, badge(word("priority", m.priority), "p-" + m.priority)),
    h("td", {}, teamName(ctx, m.team_id)),
    h("td", {}, badge(word("mission", m.status), "s-" + m.status), eventClosed(ctx, m) ? [" ", badge("event closed: stand down?", "warn")] : null),
    h("td", { class: "small hide-narrow" }, time(m.dispatched_at))));
  const sel = h("select", { id: "m-status", onchange: (e) => { statusFilter = e.target.value; ctx.rerender(); } },
    ["", ...missionStates()].map((s) => h("option", { value: s, selected: s === statusFilter }, s ? word("mission", s) : "any")));
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
      h("div", { class: "move" }, mv.from ? word("mission", mv.from) + " → " + word("mission", mv.to) : "Dispatched: " + word("mission", mv.to)),
      h("div", { class: "small" }, time(mv.at), " · ", mv.to === "SENT" ? sentWords(mv) : [ctx.actorName(mv.actor), SOURCE[mv.source] ? " · " + SOURCE[mv.source] : ""]),
      feedback(mv.feedback))));
}

// SOURCE says in words how a move came in; "api" (the console, the field app or an API
// client: all the same to the node) says nothing.
const SOURCE = { device: "from a device's offline queue", sms: "by SMS", system: "by the node" };

// sentWords says who made a move to SENT: the node, when the notification reached the
// team (a phone that took the mission from its queue, an SMS the gateway accepted, a
// webhook's 2xx), never the user whose acknowledgement recorded it at the same instant.
function sentWords(mv) {
  const how = { device: "a team phone received it", sms: "the SMS gateway accepted it" }[mv.source] || "the notification reached the team";
  return "the node · " + how;
}

// feedback shows a move's feedback as text: the note, then any other field as "name: value".
function feedback(fb) {
  if (fb == null) return null;
  if (typeof fb !== "object") return h("p", { class: "feedback" }, String(fb));
  const rest = Object.entries(fb).filter(([k]) => k !== "note");
  return h("div", { class: "feedback" }, fb.note != null ? h("p", {}, String(fb.note)) : null,
    rest.length ? h("dl", { class: "facts small" }, rest.map(([k, v]) => [h("dt", {}, k.replace(/_/g, " ")),
      h("dd", {}, v !== null && typeof v === "object" ? (Array.isArray(v) ? v.join(", ") : JSON.stringify(v)) : String(v))])) : null);
}

// crewView says whether every device of the team has the mission's latest change.
function crewView(ctx, m) {
  const c = crew.get(m.id);
  if (!c) return h("p", { class: "muted", id: "crew" }, "Checking the crew's phones…");
  if (!c.devices.length) return h("p", { class: "muted", id: "crew", dataset: { all: "false" } }, "The team has no phone registered: SMS and webhooks only.");
  const latest = c.devices.reduce((t, d) => (d.acknowledged_at && d.acknowledged_at > t ? d.acknowledged_at : t), "");
  return h("div", { id: "crew", dataset: { all: String(c.all_acknowledged) } },
    h("p", { class: c.all_acknowledged ? "ok" : "warn" }, c.all_acknowledged ?
      ["The crew knows: every phone received the latest change (last at ", time(latest), ")."] :
      "Not every phone has received the latest change yet."),
    h("ul", { class: "small" }, c.devices.map((d) => h("li", { dataset: { deviceId: d.device_id, state: d.state } }, d.name, ": ",
      d.state === "acknowledged" ? ["received ", time(d.acknowledged_at)] :
        d.state === "not_yet_received" ? ["not yet received (waiting since ", time(d.pending_since), ")"] : "nothing sent to it",
      d.last_sync_at ? [" · last sync ", time(d.last_sync_at)] : " · never synced"))));
}

// messagesView lists the mission's messages with the box to answer the team.
function messagesView(ctx, m) {
  const msgs = m.messages || [];
  const canWrite = ctx.can("missions:manage") || ctx.can("missions:receive");
  return h("div", {},
    msgs.length ? h("ol", { class: "messages", id: "mission-messages" }, msgs.map((x) => h("li", { dataset: { messageId: x.id, channel: x.channel } },
      h("div", { class: "small" }, h("strong", {}, x.author_name || x.role), " · ", x.role, " · ", time(x.captured_at || x.written_at),
        x.channel !== "api" ? " · " + (SOURCE[x.channel] || x.channel) : ""),
      h("p", {}, x.text)))) : h("p", { class: "muted", id: "mission-messages" }, "No message yet."),
    canWrite ? h("form", { id: "message-form", onsubmit: (e) => { e.preventDefault(); sendMessage(ctx, m); } },
      h("label", { for: "crew-message" }, ctx.restricted() ? "Message to the control room" : "Message to the team"),
      h("textarea", { id: "crew-message", rows: 2, maxlength: 1000, dataset: { key: "crew-message" }, oninput: (e) => { message = e.target.value; } }, message),
      h("button", { type: "submit", id: "crew-message-send", disabled: busy }, "Send")) : null);
}

// standDownView offers a supervisor the stand-down of an active mission: a reason, then a
// confirmation.
function standDownView(ctx, m) {
  if (!ctx.can("missions:manage") || ["COMPLETED", "FAILED"].includes(m.status)) return null;
  const closed = eventClosed(ctx, m);
  const offer = closed ? h("p", { class: "warn", id: "stand-down-offer" }, "Another mission closed this event: this team is still out. Stand it down?") : null;
  if (standing !== m.id) {
    return h("div", {}, offer, h("button", { type: "button", class: "danger", id: "stand-down", onclick: () => { standing = m.id; confirming = false; ctx.rerender(); } }, "Stand down…"));
  }
  return h("form", { class: "card", id: "stand-down-form", onsubmit: (e) => { e.preventDefault(); if (reason.trim()) { confirming = true; ctx.rerender(); } } },
    offer,
    h("label", { for: "stand-down-reason" }, "Why is the team stood down? (required, told to the crew)"),
    h("textarea", { id: "stand-down-reason", rows: 2, maxlength: 500, required: true, dataset: { key: "stand-down-reason" },
      oninput: (e) => { reason = e.target.value; confirming = false; } }, reason),
    confirming ? h("p", { class: "warn" }, "Stand ", teamName(ctx, m.team_id), " down? The mission ends failed and the crew is told.") : null,
    h("div", { class: "moves" },
      confirming ? h("button", { type: "button", class: "danger", id: "stand-down-confirm", disabled: busy, dataset: { key: "stand-down-go" }, onclick: () => standDown(ctx, m) }, "Confirm: stand down") :
        h("button", { type: "submit", class: "danger", id: "stand-down-next", dataset: { key: "stand-down-go" } }, "Stand down"),
      h("button", { type: "button", onclick: () => { standing = null; confirming = false; ctx.rerender(); } }, "Cancel")));
}

// endConfirm asks before a move that ends the mission; Esc or Cancel keeps it open.
function endConfirm(ctx, m) {
  if (!ending || ending.id !== m.id || !movesFrom(m.status).includes(ending.to)) return null;
  const to = ending.to;
  const cancel = () => {
    ending = null;
    ctx.rerender();
    requestAnimationFrame(() => requestAnimationFrame(() => { const b = document.querySelector('button[data-move="' + to + '"]'); if (b) b.focus(); }));
  };
  return h("div", { class: "confirm", role: "alertdialog", id: "end-confirm-box", "aria-labelledby": "end-confirm-text",
    onkeydown: (e) => { if (e.key === "Escape") { e.preventDefault(); cancel(); } } },
  h("p", { id: "end-confirm-text" }, "Mark the mission of ", teamName(ctx, m.team_id), " on ", eventLabel(ctx, m.event_id), " ",
    STATE_WORDS[to], "? It cannot be reopened."),
  h("button", { type: "button", class: to === "FAILED" ? "danger" : "primary", id: "end-confirm", disabled: busy,
    dataset: { key: "end-confirm" }, onclick: () => move(ctx, m, to) }, "Confirm: " + MOVE_WORDS[to]), " ",
  h("button", { type: "button", id: "end-cancel", dataset: { key: "end-cancel" }, onclick: cancel }, "Cancel"));
}

function details(ctx) {
  const m = selected && ctx.state.missions.get(selected);
  if (!m) return h("div", { class: "muted" }, "Choose a mission to see its timeline.");
  const next = movesFrom(m.status);
  const moves = canMove(ctx) && next.length ? h("div", {},
    h("label", { for: "move-note" }, "Note with the move (optional)"),
    h("input", { id: "move-note", type: "text", value: note, dataset: { key: "move-note" }, oninput: (e) => { note = e.target.value; }, placeholder: "e.g. patient handed over" }),
    h("div", { class: "moves" }, next.map((to) => h("button", { type: "button", class: to === "FAILED" ? "danger" : "primary",
      disabled: busy, dataset: { key: "move-" + to, move: to }, onclick: () => move(ctx, m, to) }, MOVE_WORDS[to]))),
    endConfirm(ctx, m)) : null;
  return h("div", { dataset: { missionId: m.id } },
    h("h3", {}, eventLabel(ctx, m.event_id), " ", badge(word("mission", m.status), "s-" + m.status)),
    h("dl", { class: "facts" },
      h("dt", {}, "Team"), h("dd", {}, teamName(ctx, m.team_id)),
      h("dt", {}, "Priority"), h("dd", {}, word("priority", m.priority) + " · " + m.vertical),
      m.notes ? [h("dt", {}, "Notes"), h("dd", {}, m.notes)] : null,
      h("dt", {}, "Channel"), h("dd", {}, m.channel_used || (["CREATED", "SENT"].includes(m.status) ? "not yet delivered" : "none recorded")),
      m.reinforcement_of ? [h("dt", {}, "Backup of"), h("dd", {}, "mission …" + short(m.reinforcement_of))] : null,
      h("dt", {}, "Dispatched"), h("dd", {}, time(m.dispatched_at), " by ", ctx.actorName(m.dispatched_by))),
    moves, standDownView(ctx, m),
    h("h3", {}, "Crew"), crewView(ctx, m),
    h("h3", {}, "Messages"), messagesView(ctx, m),
    h("h3", {}, "Timeline"), timeline(ctx, m));
}

export const missionsView = {
  id: "missions",
  title: (ctx) => (ctx.restricted() ? "My missions" : "Missions"),
  visible: (ctx) => ctx.can("missions:view"),
  mount(root, ctx, opts) {
    if (opts.missionId) { selected = opts.missionId; ctx.loadMission(selected); }
    watchCrew(ctx);
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
  // onChange follows the stream: a message reloads its mission (the record holds the
  // messages); a change of the chosen mission reads its crew again.
  onChange(name, data, ctx) {
    if (name === "mission.message") ctx.loadMission(data.mission_id);
    if (selected && data && data.mission_id === selected && name.startsWith("mission.")) loadCrew(ctx, selected);
  },
  unmount() { listEl = null; detail = null; clearInterval(crewTimer); crewTimer = null; },
};
