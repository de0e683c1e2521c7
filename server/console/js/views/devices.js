// Devices (devices:manage): the tenant's field devices, when each last synced, and the
// state of its credential, which an admin revokes here (a lost phone). The field app
// issues the credentials (docs/decisions/0126-device-credentials.md).

import { h, clear, time, badge } from "/shared/dom.js";
import * as api from "/shared/api.js";

let root = null;
let devices = null;
let message = null;

function credential(d) {
  const c = d.credential;
  if (!c) return badge("none", "");
  if (c.revoked_at) return badge("revoked " + time(c.revoked_at), "s-FAILED");
  if (new Date(c.expires_at) <= new Date()) return badge("expired", "");
  return badge("valid until " + time(c.expires_at), "s-COMPLETED");
}

// revoking is the device whose Revoke waits for its confirmation: a revoked credential
// cannot come back (the phone signs in again).
let revoking = null;

function askRevoke(ctx, d) {
  revoking = d.device_id;
  render(ctx);
  const b = root && root.querySelector("#revoke-confirm");
  if (b) b.focus();
}

function cancelRevoke(ctx) {
  const id = revoking;
  revoking = null;
  render(ctx);
  const b = root && root.querySelector('[data-revoke="' + id + '"]');
  if (b) b.focus();
}

async function revoke(ctx, d) {
  revoking = null;
  try {
    await api.request("DELETE", "/v1/devices/" + d.device_id + "/credential");
    message = { text: "Revoked the credential of " + d.name + ": its next sync is refused.", kind: "ok" };
  } catch (err) {
    message = { text: err.plain, kind: "error" };
  }
  load(ctx);
}

async function load(ctx) {
  try {
    devices = await api.all("/v1/devices", 500);
  } catch (err) {
    devices = err.plain;
  }
  render(ctx);
}

function render(ctx) {
  if (!root) return;
  let body;
  if (devices === null) body = h("p", { class: "muted" }, "Loading…");
  else if (typeof devices === "string") body = h("p", { class: "error" }, devices);
  else if (!devices.length) body = h("p", { class: "muted" }, "No device yet: field operators register theirs by signing in to the field app at /field/.");
  else {
    body = h("table", { id: "devices-table" }, h("thead", {}, h("tr", {}, ["Name", "Platform", "Team", "Last sync", "Credential", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, devices.map((d) => {
        const team = d.team_id ? (ctx.state.teams.get(d.team_id) || {}).name || "…" + d.team_id.slice(-8) : "—";
        const live = d.credential && !d.credential.revoked_at;
        return h("tr", { dataset: { deviceId: d.device_id } }, h("td", {}, d.name), h("td", {}, d.platform), h("td", {}, team),
          h("td", { class: "small" }, d.sync.last_sync_at ? time(d.sync.last_sync_at) : "never"), h("td", {}, credential(d)),
          h("td", {}, !live ? null : revoking === d.device_id ? h("span", { class: "confirm", role: "group", "aria-label": "Confirm the revoke",
            onkeydown: (e) => { if (e.key === "Escape") { e.preventDefault(); cancelRevoke(ctx); } } },
          "Revoke " + d.name + "? Its next sync is refused. ",
          h("button", { type: "button", class: "danger", id: "revoke-confirm", onclick: () => revoke(ctx, d) }, "Revoke"), " ",
          h("button", { type: "button", id: "revoke-cancel", onclick: () => cancelRevoke(ctx) }, "Cancel"))
            : h("button", { type: "button", class: "danger", dataset: { revoke: d.device_id }, onclick: () => askRevoke(ctx, d) }, "Revoke…")));
      })));
  }
  clear(root, h("h2", {}, "Devices"),
    message ? h("p", { class: message.kind === "error" ? "error" : "muted", role: "status" }, message.text) : null,
    h("div", { class: "card section" }, body));
}

export const devicesView = {
  id: "devices",
  title: () => "Devices",
  visible: (ctx) => ctx.can("devices:manage"),
  mount(r, ctx) {
    root = r;
    devices = null;
    message = null;
    revoking = null;
    render(ctx);
    load(ctx);
  },
  unmount() { root = null; },
};
