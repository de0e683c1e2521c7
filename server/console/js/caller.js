// The address and the caller of an event, read from its payload: `address` (text) and
// `caller` ({ name, phone }, or text), the fields the console's new-event form writes
// (docs/decisions/0272-address-and-caller.md). The node's parsers do not read them; its
// search (q) finds their words like any payload string.

import { h } from "/shared/dom.js";

export function addressOf(e) {
  const a = e && e.payload && e.payload.address;
  return typeof a === "string" ? a.trim() : "";
}

export function callerOf(e) {
  const c = e && e.payload && e.payload.caller;
  if (typeof c === "string") return c.trim();
  if (!c || typeof c !== "object") return "";
  return [c.name, c.phone].filter((x) => typeof x === "string" && x.trim()).map((x) => x.trim()).join(" · ");
}

// callerFacts answers the dt/dd pairs of the address and the caller ("not given" when the
// payload has none), for a facts list.
export function callerFacts(e) {
  return [h("dt", {}, "Address"), h("dd", { class: "address" }, addressOf(e) || h("span", { class: "muted" }, "not given")),
    h("dt", {}, "Caller"), h("dd", { class: "caller" }, callerOf(e) || h("span", { class: "muted" }, "not given"))];
}

// callerPayload adds the form's address and caller to a new event's payload.
export function callerPayload(payload, address, name, phone) {
  if (address.trim()) payload.address = address.trim();
  const caller = {};
  if (name.trim()) caller.name = name.trim();
  if (phone.trim()) caller.phone = phone.trim();
  if (Object.keys(caller).length) payload.caller = caller;
  return payload;
}
