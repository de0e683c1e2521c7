// Webhook subscriptions and their delivery log: subscribe an endpoint (its signing secret
// shown this once), edit a subscription's URL and events, turn it off and on, test it.

import { h, clear, time, badge, short, cardify } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { word } from "/shared/words.js";

let hooks = [];
let selected = null;
let deliveries = null;
let err = "";
let root = null;
// secret is the signing secret of the subscription just made, shown this once; editing
// the subscription whose form is open.
let secret = null;
let editing = null;
// formEl is the new subscription's form, made once per visit: a reload of the list must
// not wipe what is being typed.
let formEl = null;

// eventList reads "mission.*, team.dispatched" as the API's list (empty: every event).
function eventList(text) {
  return text.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
}

async function create(ctx, form) {
  const body = { url: form.querySelector("#wh-url").value.trim() };
  const evs = eventList(form.querySelector("#wh-events").value);
  if (evs.length) body.events = evs;
  try {
    const w = await api.post("/v1/webhooks", body);
    secret = { id: w.id, url: w.url, value: w.secret };
    err = "";
    form.reset();
  } catch (e) {
    err = e.plain;
  }
  await load(ctx);
  const box = root && root.querySelector("#wh-secret");
  if (box) box.focus();
}

async function save(ctx, w, form) {
  const body = { url: form.querySelector("#wh-edit-url").value.trim(), events: eventList(form.querySelector("#wh-edit-events").value) };
  try {
    await api.patch("/v1/webhooks/" + w.id, body);
    editing = null;
    err = "";
  } catch (e) {
    err = e.plain;
  }
  load(ctx);
}

function editForm(ctx, w) {
  return h("form", { id: "wh-edit", onsubmit: (e) => { e.preventDefault(); save(ctx, w, e.target); } },
    h("label", { for: "wh-edit-url" }, "URL (https)"), h("input", { id: "wh-edit-url", type: "url", required: true, value: w.url }),
    h("label", { for: "wh-edit-events" }, "Events (comma-separated, wildcards such as mission.*; empty: every event)"),
    h("input", { id: "wh-edit-events", type: "text", value: (w.events || []).join(", ") }),
    h("button", { type: "submit", class: "primary", id: "wh-edit-save" }, "Save"), " ",
    h("button", { type: "button", onclick: () => { editing = null; render(ctx); } }, "Cancel"));
}

function newForm(ctx) {
  return h("form", { class: "card section", id: "wh-new", onsubmit: (e) => { e.preventDefault(); create(ctx, e.target); } },
    h("h3", {}, "New subscription"),
    h("label", { for: "wh-url" }, "URL (https)"), h("input", { id: "wh-url", type: "url", required: true, placeholder: "the https address of your endpoint" }),
    h("label", { for: "wh-events" }, "Events (comma-separated, wildcards such as mission.*; empty: every event)"),
    h("input", { id: "wh-events", type: "text", placeholder: "mission.*, team.dispatched" }),
    h("button", { type: "submit", class: "primary", id: "wh-create" }, "Subscribe"));
}

function secretBox(ctx) {
  if (!secret) return null;
  return h("div", { class: "card notice", id: "wh-secret", tabindex: -1, role: "status" },
    h("p", {}, h("strong", {}, "Signing secret of " + secret.url), ": copy it now, it is shown this once."),
    h("p", {}, h("code", { id: "wh-secret-value" }, secret.value)),
    h("button", { type: "button", id: "wh-secret-done", onclick: () => { secret = null; render(ctx); } }, "Done: I have copied it"));
}

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
    h("td", {}, badge(word("webhook", w.status), w.status === "active" ? "s-COMPLETED" : "s-FAILED"), w.disabled_reason ? h("div", { class: "small" }, reasonWords(w.disabled_reason)) : null),
    h("td", { class: "small" }, time(w.created_at)),
    h("td", {},
      h("button", { type: "button", onclick: () => act(ctx, w, () => api.patch("/v1/webhooks/" + w.id, { enabled: w.status !== "active" })) },
        w.status === "active" ? "Disable" : "Enable"), " ",
      h("button", { type: "button", onclick: () => act(ctx, w, () => api.post("/v1/webhooks/" + w.id + "/test", {})) }, "Send test"), " ",
      h("button", { type: "button", dataset: { edit: w.id }, onclick: () => { editing = w.id; render(ctx); const u = root.querySelector("#wh-edit-url"); if (u) u.focus(); } }, "Edit…"),
      editing === w.id ? editForm(ctx, w) : null)));
  let log;
  if (!selected) log = h("p", { class: "muted" }, "Choose a subscription to see its deliveries.");
  else if (deliveries === null) log = h("p", { class: "muted" }, "Loading…");
  else if (typeof deliveries === "string") log = h("p", { class: "error" }, deliveries);
  else {
    log = cardify(h("table", { id: "deliveries" }, h("thead", {}, h("tr", {}, ["At", "Event", "Attempt", "Result", "HTTP", "Time", "Next try"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, deliveries.length ? deliveries.map((d) => h("tr", {},
        h("td", { class: "small" }, time(d.at)), h("td", {}, d.event, h("div", { class: "muted small" }, "msg …" + short(d.message_id))),
        h("td", { class: "num" }, d.attempt), h("td", {}, badge(word("delivery", d.status), d.status === "succeeded" ? "s-COMPLETED" : "s-FAILED"), d.error ? h("div", { class: "small" }, d.error) : null),
        h("td", { class: "num" }, d.status_code || "—"), h("td", { class: "num" }, d.duration_ms + " ms"),
        h("td", { class: "small" }, d.next_attempt_at ? time(d.next_attempt_at) : "—"))) : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No delivery yet.")))));
  }
  clear(root, h("h2", {}, "Webhooks ", h("button", { type: "button", onclick: () => load(ctx) }, "Refresh")), err ? h("p", { class: "error", id: "wh-error" }, err) : null,
    secretBox(ctx),
    h("div", { class: "split" },
      h("div", { class: "scroll" }, cardify(h("table", {}, h("thead", {}, h("tr", {}, ["URL", "Events", "Status", "Created", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No subscription.")))))),
      h("div", { class: "scroll" }, h("h3", {}, "Delivery log"), log)),
    formEl);
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
    secret = null;
    editing = null;
    formEl = newForm(ctx);
    render(ctx);
    load(ctx);
  },
  unmount() { root = null; secret = null; },
};
