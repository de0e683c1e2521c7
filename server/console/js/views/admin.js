// Administration: dispatch settings (settings:dispatch), users (tenant:admin) and API
// keys (apikeys:manage). A node without the API key endpoints answers 404: the section
// says so instead of failing.

import { h, clear, time, select, badge, cardify } from "/shared/dom.js";
import * as api from "/shared/api.js";
import { word } from "/shared/words.js";

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
  // A value changed after a save makes its "Saved." stale: it goes at the first key.
  const edited = () => {
    msg.settings = null;
    const p = root && root.querySelector("#msg-settings");
    if (p) p.remove();
  };
  return h("form", { class: "card section", id: "settings-form", onsubmit: save, oninput: edited }, h("h3", {}, "Dispatch settings"),
    h("div", { class: "form-grid" },
      h("label", { class: "inline" }, mode, "Auto-dispatch new events"),
      h("div", {}, h("label", { for: "set-threshold" }, "Threshold (0–1)"), thr),
      h("div", {}, h("label", { for: "set-reinforce" }, "Reinforcement after (min, 0 = off)"), reinf),
      h("button", { type: "submit", class: "primary" }, "Save")), status("settings"));
}

function status(section) {
  const m = msg[section];
  return m ? h("p", { class: m.kind === "error" ? "error" : "muted", role: "status", id: "msg-" + section }, m.text) : null;
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
      h("td", {}, badge(word("user", u.status), u.status === "active" ? "s-COMPLETED" : u.status === "suspended" ? "s-FAILED" : "")), h("td", {}, toggle));
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
    cardify(h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Email", "Role", "Status", "Actions"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows))),
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
    keys = await api.all("/v1/tenant/api-keys");
  } catch (e) {
    keys = e.plain;
  }
  render(curCtx);
}

// SCOPES are the scopes a key may hold (docs/openapi.yaml, Scope); a new key without a
// choice gets every one its maker may give but sms:inbound.
const SCOPES = ["events:read", "events:write", "webhooks:manage", "zones:manage", "zones:read", "apikeys:manage",
  "devices:manage", "devices:sync", "sync:write", "missions:view", "missions:manage", "missions:receive",
  "dispatch:assign", "teams:read", "teams:manage", "settings:dispatch", "usage:read", "connectivity:report",
  "location:self", "sms:inbound"];

// shown is the key just made (created or rotated), shown this once: the node never shows
// it again, and the console forgets it when "Done" is pressed or the view is left.
let shown = null;
// keyAsk is the pending second step of a key's rotation or revocation: { id, what }.
let keyAsk = null;
let grace = 1440;
let keyForm = null;

async function keyAction(call, done) {
  try {
    const res = await call();
    keyAsk = null;
    if (done) done(res);
    msg.apikeys = null;
  } catch (err) {
    msg.apikeys = { text: err.plain, kind: "error" };
  }
  await loadKeys();
  const box = root && root.querySelector("#new-key");
  if (box) box.focus();
}

function createKey(form) {
  const name = form.querySelector("#key-name").value.trim();
  const scopes = [...form.querySelectorAll("input[name=scope]:checked")].map((x) => x.value);
  const body = { name };
  if (scopes.length) body.scopes = scopes;
  keyAction(() => api.post("/v1/tenant/api-keys", body), (res) => {
    shown = { key: res.api_key, name: res.key.name, prefix: res.key.prefix, what: "New key" };
    form.reset();
  });
}

function keyRow(k) {
  const asking = keyAsk && keyAsk.id === k.id ? keyAsk.what : "";
  let ask = null;
  if (asking === "rotate") {
    ask = h("form", { class: "confirm", id: "rotate-form", onsubmit: (e) => {
      e.preventDefault();
      grace = Number(e.target.querySelector("#rotate-grace").value);
      keyAction(() => api.post("/v1/tenant/api-keys/rotate", { key_id: k.id, grace_period_minutes: grace }), (res) => {
        shown = { key: res.api_key, name: res.key.name, prefix: res.key.prefix, what: "Rotated key", oldUntil: res.previous_key_expires_at };
      });
    } },
    h("label", { for: "rotate-grace" }, "The old key keeps working for (minutes, 1–10080)"),
    h("input", { id: "rotate-grace", type: "number", min: 1, max: 10080, step: 1, required: true, value: grace }),
    h("button", { type: "submit", class: "primary", id: "rotate-confirm" }, "Rotate"), " ",
    h("button", { type: "button", onclick: () => { keyAsk = null; render(curCtx); } }, "Cancel"));
  } else if (asking === "revoke") {
    ask = h("div", { class: "confirm", role: "alertdialog", "aria-labelledby": "revoke-text" },
      h("p", { id: "revoke-text" }, "Revoke ", h("code", {}, k.prefix + "…"), " now? Every client using it is refused at once."),
      h("button", { type: "button", class: "danger", id: "revoke-confirm",
        onclick: () => keyAction(() => api.request("DELETE", "/v1/tenant/api-keys/" + k.id)) }, "Revoke"), " ",
      h("button", { type: "button", onclick: () => { keyAsk = null; render(curCtx); } }, "Cancel"));
  }
  return [h("tr", { dataset: { keyId: k.id } }, h("td", {}, k.name || "—"), h("td", {}, h("code", {}, k.prefix + "…")),
    h("td", { class: "small" }, (k.scopes || []).join(", ")), h("td", { class: "small" }, time(k.created_at)),
    h("td", { class: "small" }, k.last_used_at ? time(k.last_used_at) : "never"), h("td", { class: "small" }, k.expires_at ? time(k.expires_at) : "—"),
    h("td", {}, h("button", { type: "button", dataset: { rotate: k.id }, onclick: () => { keyAsk = { id: k.id, what: "rotate" }; render(curCtx); focusIn("#rotate-grace"); } }, "Rotate…"), " ",
      h("button", { type: "button", class: "danger", dataset: { revoke: k.id }, onclick: () => { keyAsk = { id: k.id, what: "revoke" }; render(curCtx); focusIn("#revoke-confirm"); } }, "Revoke…"))),
  ask ? h("tr", {}, h("td", { colspan: 7 }, ask)) : null];
}

function focusIn(sel) {
  const el = root && root.querySelector(sel);
  if (el) el.focus();
}

function apiKeys() {
  let body;
  if (keys === null) body = h("p", { class: "muted" }, "Loading…");
  else if (typeof keys === "string") body = h("p", { class: "error" }, keys);
  else {
    body = cardify(h("table", { id: "apikey-table" }, h("thead", {}, h("tr", {}, ["Name", "Prefix", "Scopes", "Created", "Last used", "Expires", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, keys.map(keyRow))));
  }
  const once = shown ? h("div", { class: "card notice", id: "new-key", tabindex: -1, role: "status" },
    h("p", {}, h("strong", {}, shown.what + " " + (shown.name || shown.prefix)), ": copy it now, it is shown this once."),
    h("p", {}, h("code", { id: "new-key-value" }, shown.key)),
    shown.oldUntil ? h("p", { class: "small", id: "old-key-until" }, "The old key keeps working until " + time(shown.oldUntil) + ".") : null,
    h("button", { type: "button", id: "new-key-done", onclick: () => { shown = null; render(curCtx); } }, "Done: I have copied it")) : null;
  return h("div", { class: "card section", id: "apikeys" }, h("h3", {}, "API keys"), once, body, status("apikeys"), keyForm);
}

// newKeyForm is the new key's form, made once per visit: a reload of the list must not
// wipe what is being typed.
function newKeyForm() {
  return h("form", { id: "key-form", onsubmit: (e) => { e.preventDefault(); createKey(e.target); } },
    h("h3", {}, "New API key"),
    h("label", { for: "key-name" }, "Name"), h("input", { id: "key-name", type: "text", required: true, maxlength: 100, placeholder: "e.g. sms gateway" }),
    h("fieldset", { class: "scopes" }, h("legend", {}, "Scopes (none ticked: every scope you may give but sms:inbound)"),
      SCOPES.map((sc) => h("label", { class: "inline" }, h("input", { type: "checkbox", name: "scope", value: sc }), sc))),
    h("button", { type: "submit", class: "primary", id: "key-create" }, "Create key"));
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
    shown = null;
    keyAsk = null;
    keyForm = newKeyForm();
    render(ctx);
    if (ctx.can("apikeys:manage")) loadKeys();
  },
  unmount() { root = null; shown = null; },
};
