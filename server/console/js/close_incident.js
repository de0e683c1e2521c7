// The dialog that closes an incident by hand (POST /v1/events/{id}/close) with a
// disposition, and offers to stand down every team still on it (PATCH
// /v1/missions/{id}/status, FAILED with feedback stood_down), each checked by default
// (docs/decisions/0173-incident-disposition.md). A modal dialog: it takes the focus, keeps
// Tab inside, Esc or Cancel closes it, and the focus goes back to the button that opened it.

import { h, select, typeName } from "/shared/dom.js";
import * as api from "/shared/api.js";

export const DISPOSITIONS = [["resolved", "Resolved"], ["false_alarm", "False alarm"], ["duplicate", "Duplicate of another incident"],
  ["no_action_needed", "No action needed"], ["referred_elsewhere", "Referred elsewhere"], ["other", "Other (say what)"]];

export function dispositionWords(code) {
  const d = DISPOSITIONS.find(([c]) => c === code);
  return d ? d[1].replace(/ \(say what\)$/, "") : code;
}

const finished = (m) => ["COMPLETED", "FAILED"].includes(m.status);

export function closeIncident(ctx, e, opener) {
  const active = [...ctx.state.missions.values()].filter((m) => m.event_id === e.event_id && !finished(m));
  const code = select(DISPOSITIONS, "resolved", { id: "close-disposition" });
  const note = h("textarea", { id: "close-note", maxlength: 500, rows: 3 });
  const error = h("p", { class: "error", role: "alert", id: "close-error" });
  const stands = active.map((m) => h("input", { type: "checkbox", checked: true, id: "stand-" + m.id, dataset: { missionId: m.id } }));
  const submit = h("button", { type: "submit", class: "danger", id: "close-submit" }, "Close the incident");
  const cancel = h("button", { type: "button", id: "close-cancel" }, "Cancel");
  const form = h("form", { class: "card dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "close-title", id: "close-dialog" },
    h("h2", { id: "close-title" }, "Close the incident: " + typeName(e.type)),
    h("label", { for: "close-disposition" }, "Disposition"), code,
    h("label", { for: "close-note" }, "Note (kept on the event's record)"), note,
    active.length ? h("fieldset", {}, h("legend", {}, "Teams still on it"),
      active.map((m, i) => h("div", {}, stands[i], " ", h("label", { for: "stand-" + m.id },
        "Stand down " + ((ctx.state.teams.get(m.team_id) || {}).name || "team …" + m.team_id.slice(-6)) + " (" + m.status + ")")))) : null,
    error, h("div", { class: "moves" }, submit, cancel));
  const back = h("div", { class: "modal-back" }, form);
  // The view may have drawn the opener again meanwhile (a live update): found by its key.
  const key = opener && opener.dataset && opener.dataset.key;
  const done = () => {
    back.remove();
    document.removeEventListener("keydown", keys, true);
    const el = opener && opener.isConnected ? opener : key && document.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (el) el.focus();
  };
  function keys(ev) {
    if (ev.key === "Escape") {
      ev.preventDefault();
      done();
    } else if (ev.key === "Tab") {
      const f = [...form.querySelectorAll("select, textarea, input, button")].filter((x) => !x.disabled);
      const i = f.indexOf(document.activeElement);
      if (ev.shiftKey && i <= 0) { ev.preventDefault(); f[f.length - 1].focus(); }
      else if (!ev.shiftKey && i === f.length - 1) { ev.preventDefault(); f[0].focus(); }
    }
  }
  cancel.onclick = done;
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    submit.disabled = true;
    try {
      const closed = await api.post("/v1/events/" + encodeURIComponent(e.event_id) + "/close", { disposition: code.value, note: note.value });
      ctx.state.events.set(closed.event_id, closed);
      ctx.state.open.delete(closed.event_id);
      const reason = "Incident closed: " + dispositionWords(code.value) + (note.value.trim() ? " — " + note.value.trim() : "");
      const down = stands.filter((s) => s.checked).map((s) => s.dataset.missionId);
      const results = await Promise.allSettled(down.map((id) => api.patch("/v1/missions/" + encodeURIComponent(id) + "/status",
        { status: "FAILED", feedback: { stood_down: true, reason: reason.slice(0, 500) } })));
      const failed = results.filter((r) => r.status === "rejected");
      for (const r of results) if (r.status === "fulfilled") ctx.state.missions.set(r.value.id, r.value);
      ctx.toast("Incident closed" + (down.length ? "; " + (down.length - failed.length) + " of " + down.length + " teams stood down" : "") + ".", failed.length ? "warn" : "ok");
      for (const f of failed) ctx.toast(f.reason.plain || String(f.reason), "warn", 8000);
      done();
      ctx.rerender();
    } catch (err) {
      error.textContent = err.plain || String(err);
      submit.disabled = false;
    }
  };
  document.addEventListener("keydown", keys, true);
  document.body.append(back);
  code.focus();
}
