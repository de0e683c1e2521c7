// The team board: every team with its status, its mission, its members and their last
// position fix with its age; sortable, the teams on a mission longest first.

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
    const fix = lastFix(t);
    return h("tr", { dataset: { teamId: t.id }, class: t.id === selected ? "selected" : "" },
      h("td", {}, h("strong", {}, t.name), t.zone_code ? h("div", { class: "muted small" }, t.zone_code) : null),
      h("td", {}, badge(word("team", t.status), t.status === "available" ? "s-COMPLETED" : t.status === "on_mission" ? "s-ACK" : "")),
      h("td", {}, m ? [h("button", { type: "button", class: "link", onclick: () => ctx.go("missions", { missionId: m.id }) }, eventLabel(ctx, m.event_id)),
        " ", badge(word("mission", m.status), "s-" + m.status), h("div", { class: "muted small" }, "dispatched ", ago(m.dispatched_at))]
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
