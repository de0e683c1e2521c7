// Administration: dispatch settings (settings:dispatch), users (tenant:admin) and API
// keys (apikeys:manage). A node without the API key endpoints answers 404: the section
// says so instead of failing.

import { h, clear, time, select, badge, cardify } from "/shared/dom.js";
import * as api from "/shared/api.js";

let root = null;
let keys = null;
let msg = {};

function note(section, text, kind) {
  msg[section] = { text, kind };
  render(curCtx);
}

let curCtx = null;

function settings(ctx) {
  const t = ctx.state.tenant || {};
  const mode = h("input", { type: "checkbox", id: "set-mode", checked: !!(t.feature_flags && t.feature_flags.dispatch_mode) });
  const thr = h("input", { type: "number", id: "set-threshold", min: 0, max: 1, step: 0.01, value: t.dispatch_threshold ?? 0.2 });
  const reinf = h("input", { type: "number", id: "set-reinforce", min: 0, max: 1440, step: 1, value: t.reinforcement_timeout_min ?? 0 });
  const save = async (e) => {
    e.preventDefault();
    try {
      await api.patch("/v1/tenant/dispatch-settings", { dispatch_mode: mode.checked, dispatch_threshold: Number(thr.value),
        reinforcement_timeout_min: Number(reinf.value) });
      ctx.state.tenant = await api.get("/v1/tenant/me");
      note("settings", "Saved.", "ok");
    } catch (err) {
      note("settings", err.plain, "error");
    }
  };
  return h("form", { class: "card section", onsubmit: save }, h("h3", {}, "Dispatch settings"),
    h("div", { class: "form-grid" },
      h("label", { class: "inline" }, mode, "Auto-dispatch new events"),
      h("div", {}, h("label", { for: "set-threshold" }, "Threshold (0–1)"), thr),
      h("div", {}, h("label", { for: "set-reinforce" }, "Reinforcement after (min, 0 = off)"), reinf),
      h("button", { type: "submit", class: "primary" }, "Save")), status("settings"));
}

function status(section) {
  const m = msg[section];
  return m ? h("p", { class: m.kind === "error" ? "error" : "muted", role: "status" }, m.text) : null;
}

function users(ctx) {
  const rows = [...ctx.state.users.values()].sort((a, b) => a.email.localeCompare(b.email)).map((u) => {
    const role = select(ctx.state.roleOrder, u.rbac_level, { "aria-label": "Role of " + u.email, disabled: u.id === ctx.state.me.id,
      onchange: (e) => change(ctx, u, { role: e.target.value }) });
    const toggle = u.status === "suspended"
      ? h("button", { type: "button", onclick: () => change(ctx, u, { status: "active" }) }, "Reactivate")
      : h("button", { type: "button", class: "danger", disabled: u.id === ctx.state.me.id || u.status !== "active",
        onclick: () => change(ctx, u, { status: "suspended" }) }, "Suspend");
    return h("tr", {}, h("td", {}, u.name), h("td", {}, u.email), h("td", {}, role),
      h("td", {}, badge(u.status, u.status === "active" ? "s-COMPLETED" : u.status === "suspended" ? "s-FAILED" : "")), h("td", {}, toggle));
  });
  const email = h("input", { type: "email", id: "nu-email", required: true });
  const name = h("input", { type: "text", id: "nu-name", required: true });
  const role = select(ctx.state.roleOrder, "field_operator", { id: "nu-role" });
  const pw = h("input", { type: "password", id: "nu-password", minlength: 10, autocomplete: "new-password", placeholder: "empty: the user verifies by email" });
  const create = async (e) => {
    e.preventDefault();
    const body = { email: email.value.trim(), name: name.value.trim(), role: role.value };
    if (pw.value) body.password = pw.value;
    try {
      const u = await api.post("/v1/tenant/users", body);
      ctx.state.users.set(u.id, u);
      note("users", "Created " + u.email + ".", "ok");
    } catch (err) {
      note("users", err.plain, "error");
    }
  };
  return h("div", { class: "card section" }, h("h3", {}, "Users"),
    cardify(h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Email", "Role", "Status", ""].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows))),
    h("form", { onsubmit: create }, h("h3", {}, "New user"), h("div", { class: "form-grid" },
      h("div", {}, h("label", { for: "nu-email" }, "Email"), email), h("div", {}, h("label", { for: "nu-name" }, "Name"), name),
      h("div", {}, h("label", { for: "nu-role" }, "Role"), role), h("div", {}, h("label", { for: "nu-password" }, "Password (10+)"), pw),
      h("button", { type: "submit", class: "primary" }, "Create"))), status("users"));
}

async function change(ctx, u, patch) {
  try {
    const res = await api.patch("/v1/tenant/users/" + u.id, patch);
    ctx.state.users.set(res.id, res);
    note("users", "Updated " + res.email + ".", "ok");
  } catch (err) {
    note("users", err.plain, "error");
  }
}

async function loadKeys() {
  try {
    keys = (await api.get("/v1/tenant/api-keys")).data;
  } catch (e) {
    keys = e.plain;
  }
  render(curCtx);
}

function apiKeys() {
  let body;
  if (keys === null) body = h("p", { class: "muted" }, "Loading…");
  else if (typeof keys === "string") body = h("p", { class: "error" }, keys);
  else {
    body = cardify(h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Prefix", "Scopes", "Created", "Last used", "Expires"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, keys.map((k) => h("tr", {}, h("td", {}, k.name || "—"), h("td", {}, h("code", {}, k.prefix + "…")),
        h("td", { class: "small" }, (k.scopes || []).join(", ")), h("td", { class: "small" }, time(k.created_at)),
        h("td", { class: "small" }, k.last_used_at ? time(k.last_used_at) : "never"), h("td", { class: "small" }, k.expires_at ? time(k.expires_at) : "—"))))));
  }
  return h("div", { class: "card section", id: "apikeys" }, h("h3", {}, "API keys"), body);
}

function render(ctx) {
  if (!root || !ctx) return;
  clear(root, h("h2", {}, "Administration"),
    ctx.can("settings:dispatch") ? settings(ctx) : null,
    ctx.can("tenant:admin") ? users(ctx) : null,
    ctx.can("apikeys:manage") ? apiKeys() : null);
}

export const adminView = {
  id: "admin",
  title: () => "Admin",
  visible: (ctx) => ctx.can("tenant:admin") || ctx.can("settings:dispatch") || ctx.can("apikeys:manage"),
  mount(r, ctx) {
    root = r;
    curCtx = ctx;
    msg = {};
    keys = null;
    render(ctx);
    if (ctx.can("apikeys:manage")) loadKeys();
  },
  unmount() { root = null; },
};
