// Webhook subscriptions and their delivery log.

import { h, clear, time, badge, short, cardify } from "/shared/dom.js";
import * as api from "/shared/api.js";

let hooks = [];
let selected = null;
let deliveries = null;
let err = "";
let root = null;

async function load(ctx) {
  try {
    hooks = await api.all("/v1/webhooks");
    err = "";
  } catch (e) {
    err = e.plain;
  }
  render(ctx);
  if (selected) loadDeliveries(ctx, selected);
}

async function loadDeliveries(ctx, id) {
  selected = id;
  deliveries = null;
  render(ctx);
  try {
    const res = await api.get("/v1/webhooks/" + id + "/deliveries?limit=100");
    if (selected === id) deliveries = res.data;
  } catch (e) {
    if (selected === id) deliveries = e.plain;
  }
  render(ctx);
}

// act runs one change of a subscription (enable, disable, test) and shows the list again;
// a test's attempt shows in the delivery log once the node has made it (Refresh).
async function act(ctx, w, call) {
  try {
    await call();
    err = "";
  } catch (e) {
    err = e.plain;
  }
  selected = w.id;
  load(ctx);
}

function render(ctx) {
  if (!root) return;
  const rows = hooks.map((w) => h("tr", { class: w.id === selected ? "selected" : "" },
    h("td", {}, h("button", { type: "button", class: "link", onclick: () => loadDeliveries(ctx, w.id) }, w.url)),
    h("td", {}, (w.events || []).join(", ") || "all"),
    h("td", {}, badge(w.status, w.status === "active" ? "s-COMPLETED" : "s-FAILED"), w.disabled_reason ? h("div", { class: "small" }, reasonWords(w.disabled_reason)) : null),
    h("td", { class: "small" }, time(w.created_at)),
    h("td", {},
      h("button", { type: "button", onclick: () => act(ctx, w, () => api.patch("/v1/webhooks/" + w.id, { enabled: w.status !== "active" })) },
        w.status === "active" ? "Disable" : "Enable"), " ",
      h("button", { type: "button", onclick: () => act(ctx, w, () => api.post("/v1/webhooks/" + w.id + "/test", {})) }, "Send test"))));
  let log;
  if (!selected) log = h("p", { class: "muted" }, "Choose a subscription to see its deliveries.");
  else if (deliveries === null) log = h("p", { class: "muted" }, "Loading…");
  else if (typeof deliveries === "string") log = h("p", { class: "error" }, deliveries);
  else {
    log = cardify(h("table", { id: "deliveries" }, h("thead", {}, h("tr", {}, ["At", "Event", "Attempt", "Result", "HTTP", "Time", "Next try"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, deliveries.length ? deliveries.map((d) => h("tr", {},
        h("td", { class: "small" }, time(d.at)), h("td", {}, d.event, h("div", { class: "muted small" }, "msg …" + short(d.message_id))),
        h("td", { class: "num" }, d.attempt), h("td", {}, badge(d.status, d.status === "succeeded" ? "s-COMPLETED" : "s-FAILED"), d.error ? h("div", { class: "small" }, d.error) : null),
        h("td", { class: "num" }, d.status_code || "—"), h("td", { class: "num" }, d.duration_ms + " ms"),
        h("td", { class: "small" }, d.next_attempt_at ? time(d.next_attempt_at) : "—"))) : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No delivery yet.")))));
  }
  clear(root, h("h2", {}, "Webhooks ", h("button", { type: "button", onclick: () => load(ctx) }, "Refresh")), err ? h("p", { class: "error" }, err) : null,
    h("div", { class: "split" },
      h("div", { class: "scroll" }, cardify(h("table", {}, h("thead", {}, h("tr", {}, ["URL", "Events", "Status", "Created", ""].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No subscription.")))))),
      h("div", { class: "scroll" }, h("h3", {}, "Delivery log"), log)));
}

// reasonWords says why a subscription is off in a dispatcher's words, not the API's.
function reasonWords(reason) {
  return /^disabled on request/.test(reason) ? "Turned off by an administrator" : reason;
}

export const webhooksView = {
  id: "webhooks",
  title: () => "Webhooks",
  visible: (ctx) => ctx.can("webhooks:manage"),
  mount(r, ctx) {
    root = r;
    render(ctx);
    load(ctx);
  },
  unmount() { root = null; },
};
