// The event board: the tenant's events, newest first, with filters; new critical events
// stand out (a flashing row, a red edge and an alert).

import { h, clear, time, badge, select, ago, cardify } from "../dom.js";

const PRIORITIES = ["", "critical", "high", "normal", "low"];
const STATUSES = ["", "pending", "delivered", "failed", "queued_offline", "closed"];

const filter = { zone: "", vertical: "", priority: "", status: "", open: false };
let body = null;
let count = null;
let bar = null;

function verticals(ctx) {
  const set = new Set((ctx.state.tenant && ctx.state.tenant.verticals) || []);
  for (const e of ctx.state.events.values()) set.add(e.vertical);
  return ["", ...[...set].sort()];
}

function toolbar(ctx) {
  const zones = ["", ...[...ctx.state.zones.keys()].sort()];
  const mk = (label, key, options) => {
    const el = select(options, filter[key], { id: "f-" + key, onchange: (e) => { filter[key] = e.target.value; update(ctx); } });
    return h("div", {}, h("label", { for: "f-" + key }, label), el);
  };
  return h("div", { class: "toolbar" },
    mk("Zone", "zone", zones), mk("Vertical", "vertical", verticals(ctx)),
    mk("Priority", "priority", PRIORITIES), mk("Status", "status", STATUSES),
    h("label", { class: "inline" }, h("input", { type: "checkbox", id: "f-open", checked: filter.open,
      onchange: (e) => { filter.open = e.target.checked; update(ctx); } }), "Open only"),
    count = h("span", { class: "muted", role: "status" }));
}

function matches(e) {
  return (!filter.zone || e.zone_code === filter.zone) && (!filter.vertical || e.vertical === filter.vertical) &&
    (!filter.priority || e.priority === filter.priority) && (!filter.status || e.status === filter.status) &&
    (!filter.open || e.status !== "closed");
}

function row(e, ctx) {
  const fresh = ctx.state.fresh.has(e.event_id);
  const missions = [...ctx.state.missions.values()].filter((m) => m.event_id === e.event_id);
  const cls = [e.priority === "critical" && e.status !== "closed" ? "critical" : "", fresh ? "fresh" : ""].join(" ");
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
    h("td", {}, badge(e.priority, "p-" + e.priority)),
    h("td", {}, h("strong", {}, e.type), e.severity ? h("div", { class: "muted small" }, "severity " + e.severity) : null),
    h("td", {}, e.vertical),
    h("td", {}, e.zone_code || h("span", { class: "muted" }, "—")),
    h("td", {}, badge(e.status.replace("_", " "), "s-" + e.status)),
    h("td", { class: "hide-narrow" }, e.channel_selected),
    h("td", {}, actions));
}

function update(ctx) {
  if (!body) return;
  const list = [...ctx.state.events.values()].filter(matches).sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
  clear(body);
  for (const e of list) body.append(row(e, ctx));
  if (!list.length) body.append(h("tr", {}, h("td", { colspan: 8, class: "muted" }, ctx.state.events.size ? "No event matches the filters." : "No events yet.")));
  cardify(body.parentElement);
  const critical = list.filter((e) => e.priority === "critical" && e.status !== "closed").length;
  count.textContent = list.length + " of " + ctx.state.events.size + " events" + (critical ? " · " + critical + " open critical" : "");
}

export const eventsView = {
  id: "events",
  title: () => "Events",
  visible: (ctx) => ctx.can("events:read"),
  mount(root, ctx) {
    bar = toolbar(ctx);
    body = h("tbody", { id: "events-body" });
    root.append(h("h2", {}, "Event board", ctx.readOnly() ? h("span", { class: "badge" }, " read-only") : null), bar,
      h("div", { class: "scroll" }, h("table", { id: "events-table" },
        h("thead", {}, h("tr", {}, ["Received", "Priority", "Type", "Vertical", "Zone", "Status"].map((t) => h("th", { scope: "col" }, t)),
          h("th", { scope: "col", class: "hide-narrow" }, "Channel"), h("th", { scope: "col" }, h("span", { class: "muted" }, "Actions")))),
        body)));
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
  unmount() { body = null; },
};
