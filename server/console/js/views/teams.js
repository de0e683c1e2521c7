// The team board: every team with its status and the time in it, its mission with its
// overdue timer, its members and their last position fix with its age; sortable, the
// teams on a mission longest first.

import { h, clear, time, badge, ago, short, cardify, sortHead, sortRows, typeName } from "/shared/dom.js";
import { word } from "/shared/words.js";

const FINISHED = ["COMPLETED", "FAILED"];
// sort: "mission" orders by the active mission's dispatch, oldest first; teams without one last.
const sort = { key: "mission", dir: 1 };
let root = null;
let selected = null;

// activeMission is the team's oldest unfinished mission, or null.
function activeMission(ctx, team) {
  let best = null;
  for (const m of ctx.state.missions.values()) {
    if (m.team_id !== team.id || FINISHED.includes(m.status)) continue;
    if (!best || m.dispatched_at < best.dispatched_at) best = m;
  }
  return best;
}

// lastFix is the team's most recent member position time, or "".
function lastFix(team) {
  let at = "";
  for (const m of team.members || []) if (m.location_updated_at && m.location_updated_at > at) at = m.location_updated_at;
  return at;
}

// overdue says how late a mission is, or null: not acknowledged past the tenant's
// reinforcement timeout (5 min when none), or acknowledged but not on site past its on-site
// timeout (30 min when unset, 0 off). The node raises the same as alerts
// (docs/decisions/0260-mission-timers.md); the board shows them as they run.
function overdue(ctx, m) {
  const t = ctx.state.tenant || {};
  let from = null;
  let min = 0;
  let what = "";
  if (m.status === "CREATED" || m.status === "SENT") {
    [from, min, what] = [m.dispatched_at, t.reinforcement_timeout_min || 5, "not acknowledged"];
  } else if ((m.status === "ACK" || m.status === "ON_ROUTE") && m.ack_at) {
    const set = t.on_site_timeout_min;
    [from, min, what] = [m.ack_at, set === undefined || set === null ? 30 : set, "not on site"];
  }
  if (!from || !min) return null;
  const late = Date.now() - new Date(from).getTime() - min * 60000;
  return late > 0 ? { what, min: Math.max(1, Math.round(late / 60000)) } : null;
}

function value(ctx, t, key) {
  switch (key) {
    case "name": return t.name.toLowerCase();
    case "status": return t.status;
    case "members": return (t.members || []).length;
    case "fix": return lastFix(t) || "~";
    default: {
      const m = activeMission(ctx, t);
      return m ? m.dispatched_at : "~" + t.name.toLowerCase();
    }
  }
}

function eventLabel(ctx, id) {
  const e = ctx.state.events.get(id);
  return e ? typeName(e.type) + (e.zone_code ? " · " + e.zone_code : "") : "event …" + short(id);
}

function render(ctx) {
  if (!root) return;
  const teams = sortRows([...ctx.state.teams.values()], sort, (t, key) => value(ctx, t, key));
  const rows = teams.map((t) => {
    const m = activeMission(ctx, t);
    const late = m && overdue(ctx, m);
    const fix = lastFix(t);
    return h("tr", { dataset: { teamId: t.id }, class: t.id === selected ? "selected" : "" },
      h("td", {}, h("strong", {}, t.name), t.zone_code ? h("div", { class: "muted small" }, t.zone_code) : null),
      h("td", {}, badge(word("team", t.status), t.status === "available" ? "s-COMPLETED" : t.status === "on_mission" ? "s-ACK" : ""),
        t.status_since ? h("div", { class: "muted small", dataset: { since: t.status_since } }, "since ", ago(t.status_since)) : null),
      h("td", {}, m ? [h("button", { type: "button", class: "link", onclick: () => ctx.go("missions", { missionId: m.id }) }, eventLabel(ctx, m.event_id)),
        " ", badge(word("mission", m.status), "s-" + m.status), h("div", { class: "muted small" }, "dispatched ", ago(m.dispatched_at)),
        late ? h("div", { class: "notice small", dataset: { overdue: late.what } }, "Overdue: " + late.what + ", " + late.min + " min past its time") : null]
        : h("span", { class: "muted" }, "none")),
      h("td", { class: "small" }, (t.members || []).map((x) => x.name).join(", ") || h("span", { class: "muted" }, "nobody")),
      h("td", { class: "small" }, fix ? [time(fix), h("div", { class: "muted" }, ago(fix))] : h("span", { class: "muted" }, "no fix")));
  });
  clear(root, h("h2", {}, "Teams"),
    h("div", { class: "scroll" }, cardify(h("table", { id: "teams-table" },
      sortHead([["Team", "name"], ["Status", "status"], ["Mission", "mission"], ["Members", "members"], ["Last position", "fix"]], sort, () => render(ctx)),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No team.")))))));
}

export const teamsView = {
  id: "teams",
  title: () => "Teams",
  visible: (ctx) => ctx.can("teams:read") && !ctx.restricted(),
  mount(r, ctx, opts) {
    root = r;
    selected = opts.teamId || null;
    render(ctx);
    const row = selected && root.querySelector('tr[data-team-id="' + CSS.escape(selected) + '"]');
    if (row) row.scrollIntoView({ block: "nearest" });
  },
  update(ctx) { render(ctx); },
  unmount() { root = null; },
};
