// The live stream, read with fetch() and a ReadableStream: EventSource cannot send the
// Authorization header, and a token in the URL would land in logs and history. The
// reader speaks the Server-Sent Events format, resumes with Last-Event-ID, and falls
// back to polling while the stream cannot be held.

import { getSession, ApiError } from "/shared/api.js";

const WATCHDOG_MS = 40000;
const POLL_MS = 10000;

export class LiveStream {
  // onEvent(name, data, id) receives every message; onState(state) gets "live",
  // "reconnecting", "polling" or "off"; poll() reloads what the views show; onAuth(err)
  // gets an error that ends the session.
  constructor({ onEvent, onState, poll, onAuth }) {
    Object.assign(this, { onEvent, onState, poll, onAuth });
    this.lastId = "";
    this.failures = 0;
    this.stopped = true;
    this.pollTimer = null;
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop();
  }

  stop() {
    this.stopped = true;
    if (this.ctrl) this.ctrl.abort();
    this.stopPolling();
    this.onState("off");
  }

  startPolling() {
    if (this.pollTimer || this.stopped) return;
    this.onState("polling");
    this.poll();
    this.pollTimer = setInterval(() => { if (!this.stopped) this.poll(); }, POLL_MS);
  }

  stopPolling() {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
  }

  async loop() {
    while (!this.stopped) {
      const ok = await this.once();
      if (this.stopped || ok === "auth") return;
      this.failures++;
      if (this.failures >= 2) {
        this.startPolling();
      } else {
        this.onState("reconnecting");
      }
      const wait = Math.min(30000, 1000 * 2 ** Math.min(this.failures, 5)) * (0.75 + Math.random() / 2);
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  // once holds one connection until it ends; it answers "auth" when the session ended.
  async once() {
    const session = getSession();
    if (!session) return "auth";
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    let watchdog = null;
    const kick = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => ctrl.abort(), WATCHDOG_MS);
    };
    try {
      const headers = { Authorization: "Bearer " + session.token, Accept: "text/event-stream" };
      if (this.lastId) headers["Last-Event-ID"] = this.lastId;
      kick();
      const res = await fetch("/v1/stream", { headers, signal: ctrl.signal, cache: "no-store", credentials: "omit" });
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch (_) { body = null; }
        const err = new ApiError(res.status, body, res.headers);
        if (res.status === 401 || res.status === 403) {
          this.onAuth(err);
          return "auth";
        }
        throw err;
      }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        kick();
        buf += value;
        let at;
        while ((at = buf.search(/\r?\n\r?\n/)) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + (buf[at] === "\r" ? 4 : 2));
          if (this.dispatch(block) === "auth") return "auth";
        }
      }
    } catch (err) {
      if (this.stopped) return "stopped";
    } finally {
      clearTimeout(watchdog);
    }
    return "ended";
  }

  dispatch(block) {
    let id = null;
    let name = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const key = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (key === "id") id = val;
      else if (key === "event") name = val;
      else if (key === "data") data.push(val);
    }
    if (id !== null) this.lastId = id;
    if (data.length === 0) return null;
    let payload = null;
    try { payload = JSON.parse(data.join("\n")); } catch (_) { payload = data.join("\n"); }
    if (name === "ready") {
      this.failures = 0;
      this.stopPolling();
      this.onState("live");
    }
    if (name === "error") {
      this.onAuth(new ApiError(401, payload, null));
      return "auth";
    }
    this.onEvent(name, payload, id);
    return null;
  }
}
