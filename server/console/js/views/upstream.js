// Upstream (tenant:admin): the link to the central node in both directions — what this
// node pushes up (backlog, last success, last error) and what comes down (the downstream
// cursor, how far behind, the newest central change applied and how old it is, when the
// site last caught up, records skipped) (docs/decisions/0196-downstream-log.md,
// docs/decisions/0210-downstream-lag-alert.md). Read again every 5 s while shown; a site
// that stops catching up also raises downstream_lagging in the alerts.

import { h, clear, time, badge, ago } from "/shared/dom.js";
import * as api from "/shared/api.js";

let root = null;
let status = null;
let timer = null;

// refreshEvery is how often the view reads the status again while it is shown.
const refreshEvery = 5000;

async function load(ctx) {
  try {
    status = await api.request("GET", "/v1/tenant/upstream/status");
  } catch (err) {
    status = err.plain;
  }
  render(ctx);
}

function row(label, value) {
  return h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, value));
}

function render() {
  if (!root) return;
  let body;
  if (status === null) body = h("p", { class: "muted" }, "Loading…");
  else if (typeof status === "string") body = h("p", { class: "error" }, status);
  else if (status.state === "unconfigured") body = h("p", { class: "muted" }, "This node has no upstream: it works alone.");
  else {
    const s = status;
    const d = s.downstream;
    const stateKind = s.state === "down" ? "s-FAILED" : s.state === "idle" ? "s-COMPLETED" : "";
    const up = h("table", { id: "upstream-up" }, h("caption", {}, "Up: this node's changes"), h("tbody", {},
      row("Central node", s.url || "—"), row("State", badge(s.state, stateKind)),
      row("Backlog", String(s.backlog) + (s.backlog_oldest_at ? ", oldest " + time(s.backlog_oldest_at) : "")),
      row("Last success", s.last_success_at ? time(s.last_success_at) : "never"),
      s.last_error ? row("Last error", s.last_error) : null,
      s.rejected ? row("Rejected", String(s.rejected) + " (" + (s.last_rejection || "") + ")") : null));
    const down = d ? h("table", { id: "upstream-down" }, h("caption", {}, "Down: the central node's changes"), h("tbody", {},
      row("Cursor", d.cursor + " of " + d.end + " (" + d.behind + " behind)"),
      row("Current", d.lagging ? badge("lagging", "s-FAILED") : badge("current", "s-COMPLETED")),
      row("Newest central change applied", d.newest_applied_at
        ? [time(d.newest_applied_at), " (", ago(d.newest_applied_at, { id: "upstream-newest-age" }), ")"] : "none"),
      row("Caught up", d.caught_up_at ? [time(d.caught_up_at), " (", ago(d.caught_up_at), ")"] : "never"),
      row("Last pull", d.last_pull_at ? time(d.last_pull_at) : "never"),
      d.skipped ? row("Central records skipped", d.skipped + " (" + (d.last_skip || "") + ")") : null)) : null;
    body = [up, down];
  }
  clear(root, h("h2", {}, "Upstream"), h("div", { class: "card section" }, body));
}

export const upstreamView = {
  id: "upstream",
  title: () => "Upstream",
  visible: (ctx) => ctx.can("tenant:admin"),
  mount(r, ctx) {
    root = r;
    status = null;
    render(ctx);
    load(ctx);
    clearInterval(timer);
    timer = setInterval(() => { if (root) load(ctx); }, refreshEvery);
  },
  unmount() { root = null; clearInterval(timer); timer = null; },
};
