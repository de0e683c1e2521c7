// IndexedDB, the field app's only storage: the session of this device (kv), the team's
// missions and their events, and the outbox of changes made here. Every tab of the app
// shares it; a transaction that reads and writes (the outbox's next sequence number) is
// atomic across tabs.

const NAME = "fieldrelay-field";
let opened = null;

export function open() {
  if (!opened) {
    opened = new Promise((resolve, reject) => {
      const req = indexedDB.open(NAME, 1);
      req.onupgradeneeded = () => {
        const db = req.result;
        db.createObjectStore("kv");
        db.createObjectStore("missions", { keyPath: "id" });
        db.createObjectStore("events", { keyPath: "event_id" });
        db.createObjectStore("outbox", { keyPath: "sequence_number" });
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  }
  return opened;
}

// result is the outcome of one request.
export function result(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

// tx runs fn(transaction) and answers its value once the transaction has committed.
export async function tx(stores, mode, fn) {
  const db = await open();
  const t = db.transaction(stores, mode);
  const committed = new Promise((resolve, reject) => {
    t.oncomplete = () => resolve();
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error || new Error("transaction aborted"));
  });
  const value = await fn(t);
  await committed;
  return value;
}

export const get = (store, key) => tx([store], "readonly", (t) => result(t.objectStore(store).get(key)));
export const all = (store) => tx([store], "readonly", (t) => result(t.objectStore(store).getAll()));
export const put = (store, value, key) => tx([store], "readwrite", (t) => result(t.objectStore(store).put(value, key)));
export const del = (store, key) => tx([store], "readwrite", (t) => result(t.objectStore(store).delete(key)));
