// The outbox: every change made in the field (a mission's move, a message, a new event, a
// connectivity report) is first written here with the device's next sequence number and
// the time it happened (captured_at), then sent through POST /v1/devices/sync in sequence
// order. The node applies each (device, sequence number) once, so a change sent twice (a
// killed tab, two tabs, a lost answer) is answered "duplicate" and never applied twice.

import { request, ApiError } from "/shared/api.js";
import { all, get, result, tx } from "./db.js";

// OUTBOX_WORDS names the states of a change in the outbox.
export const OUTBOX_WORDS = {
  waiting: "waiting to send",
  pending: "received, waiting for an earlier change",
  applied: "applied",
  done: "already applied (duplicate)",
  rejected: "rejected",
};

// BATCH is how many changes go in one sync request.
export const BATCH = 500;

// enqueue writes a change with the next sequence number, in one transaction: two tabs
// never give the same number.
export function enqueue(kind, payload) {
  const capturedAt = new Date().toISOString();
  return tx(["kv", "outbox"], "readwrite", async (t) => {
    const kv = t.objectStore("kv");
    const seq = ((await result(kv.get("seq"))) || 0) + 1;
    kv.put(seq, "seq");
    const item = { sequence_number: seq, kind, payload, captured_at: capturedAt, state: "waiting" };
    t.objectStore("outbox").put(item);
    return item;
  });
}

// atLeast moves the next sequence number past the node's highest received: an outbox
// wiped with the browser's storage never reuses a number the node holds.
export function atLeast(seq) {
  return tx(["kv"], "readwrite", async (t) => {
    const kv = t.objectStore("kv");
    if (((await result(kv.get("seq"))) || 0) < seq) kv.put(seq, "seq");
  });
}

// unsent are the changes still to send, in sequence order.
export async function unsent() {
  const items = await all("outbox");
  return items.filter((i) => i.state === "waiting").sort((a, b) => a.sequence_number - b.sequence_number);
}

// stateOf reads a sync result: applied, done (a duplicate whose first was applied),
// rejected (with its reason), pending (held above a gap).
export function stateOf(r) {
  switch (r.status) {
    case "applied":
      return { state: "applied" };
    case "pending":
      return { state: "pending" };
    case "duplicate":
      if (r.outcome === "rejected") return { state: "rejected", error: r.error, message: r.message };
      if (r.outcome === "pending") return { state: "pending" };
      return { state: "done" };
    default:
      return { state: "rejected", error: r.error, message: r.message };
  }
}

// record writes the outcomes of a sync answer on the outbox items.
async function record(results, released) {
  const now = new Date().toISOString();
  await tx(["outbox"], "readwrite", async (t) => {
    const box = t.objectStore("outbox");
    const answered = [...(results || []), ...(released || [])].filter((r) => Number.isInteger(r.sequence_number));
    if (!answered.length) return;
    const seqs = answered.map((r) => r.sequence_number);
    const range = IDBKeyRange.bound(Math.min(...seqs), Math.max(...seqs));
    const items = new Map((await result(box.getAll(range))).map((i) => [i.sequence_number, i]));
    for (const r of answered) {
      const item = items.get(r.sequence_number);
      if (!item) continue;
      Object.assign(item, stateOf(r), { answered_at: now });
      box.put(item);
    }
  });
}

export class SyncError extends Error {
  constructor(kind, status, body) {
    super((body && body.message) || kind);
    // kind is offline, revoked or refused.
    this.kind = kind;
    this.status = status;
    this.code = body && body.error;
  }
}

// syncOnce sends the next batch of unsent changes (or none: it still acknowledges and
// fetches the queue) with the device's credential, records every outcome, and hands the
// queue to onQueue. One tab at a time syncs (Web Locks); it answers whether more waits.
export function syncOnce(session, onQueue) {
  const run = async () => {
    const batch = (await unsent()).slice(0, BATCH);
    const ack = (await get("kv", "ack_through")) || 0;
    // sent_at lets the node correct this phone's clock (docs/decisions/0115-clock-drift.md):
    // a phone minutes fast or slow still has its changes applied, on the node's time.
    const body = {
      device_id: session.device_id,
      sent_at: new Date().toISOString(),
      ack_through: ack,
      items: batch.map((i) => ({ sequence_number: i.sequence_number, kind: i.kind, payload: i.payload, captured_at: i.captured_at })),
    };
    let answer;
    try {
      // The device's credential, not the session's token: the app syncs without a session.
      answer = await request("POST", "/v1/devices/sync", body, { token: session.credential });
    } catch (e) {
      if (!(e instanceof ApiError) || e.status === 0) throw new SyncError("offline", 0, null);
      if (e.status === 401 || e.status === 403) throw new SyncError("revoked", e.status, e.body);
      throw new SyncError(e.status >= 500 || e.status === 429 ? "offline" : "refused", e.status, e.body);
    }
    await record(answer.results, answer.released);
    await tx(["kv"], "readwrite", (t) => result(t.objectStore("kv").put(
      { ms: answer.clock_offset_ms ?? 0, flagged: !!answer.clock_flagged, at: new Date().toISOString() }, "clock_offset")));
    const queue = answer.queue || [];
    if (queue.length) {
      await onQueue(queue);
      const last = Math.max(...queue.map((q) => q.queue_sequence));
      if (last > ack) await tx(["kv"], "readwrite", (t) => result(t.objectStore("kv").put(last, "ack_through")));
    }
    await tx(["kv"], "readwrite", (t) => result(t.objectStore("kv").put(new Date().toISOString(), "last_sync")));
    return batch.length === BATCH || (answer.queue_pending || 0) > queue.length || queue.length > 0;
  };
  if (navigator.locks) return navigator.locks.request("fieldrelay-field-sync", run);
  return run();
}
