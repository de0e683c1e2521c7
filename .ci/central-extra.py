#!/usr/bin/env python3
# central-extra (.ci/central-bench): the score over 1,000 teams (it creates them), sync
# batches of 1,000 items and device syncs of 500 against a node, sequential calls: latency
# figures. SKIP_TEAMS=1 skips the teams and the score. Usage: central-extra.py URL API_KEY (a mission-critical
# tenant, so that no rate limit applies).
import json, os, random, sys, time, urllib.request, uuid

base, key = sys.argv[1], sys.argv[2]


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"x-svc-api-key": key, "content-type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        r.read()
    return (time.perf_counter() - t) * 1000


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


if not os.environ.get("SKIP_TEAMS"):
    for i in range(1000):
        lat, lng = 45.7 + random.random() * 0.5, 4.8 + random.random() * 0.5
        call("POST", "/v1/teams", {"name": f"team {i}", "verticals": ["emergency", "healthcare"],
                                   "equipment": ["defibrillator"],
                                   "members": [{"name": "m", "phone": "+33600000000", "lat": lat, "lng": lng}]})
    score = [call("POST", "/v1/teams/dispatch/score", {"vertical": "emergency", "lat": 45.76, "lng": 4.83,
                                                        "required_equipment": ["defibrillator"]}) for _ in range(60)][10:]
    print(f"score over 1000 teams (50 calls after 10): p50 {pct(score, 50):.2f} ms  p99 {pct(score, 99):.2f} ms  "
          f"max {max(score):.2f} ms")

batch = []
for i in range(25):
    items = [{"type": "FIRE", "priority": "low", "vertical": "emergency", "idempotency_key": str(uuid.uuid4()),
              "payload": {"lat": 45.76, "lng": 4.83, "notes": "x" * 200}} for _ in range(1000)]
    ms = call("POST", "/v1/sync/batch", {"events": items,
                                         "captured_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())})
    if i >= 5:
        batch.append(ms)
print(f"sync batch of 1000 items (20 calls after 5): p50 {pct(batch, 50):.1f} ms  p99 {pct(batch, 99):.1f} ms  "
      f"max {max(batch):.1f} ms  = {20000 / sum(batch) * 1000:.0f} events/s")

# Device sync: a device of the tenant sends 500 event items a sync (one a sequence number,
# each with its idempotency key), as a field phone back online does.
req = urllib.request.Request(base + "/v1/devices/register", method="POST",
                             data=json.dumps({"name": "bench", "platform": "android"}).encode(),
                             headers={"x-svc-api-key": key, "content-type": "application/json"})
with urllib.request.urlopen(req) as r:
    device = json.load(r)["device_id"]
sync, seq = [], 0
for i in range(15):
    items = []
    for _ in range(500):
        seq += 1
        items.append({"sequence_number": seq, "kind": "event",
                      "captured_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                      "payload": {"type": "FIRE", "priority": "low", "vertical": "emergency",
                                  "idempotency_key": str(uuid.uuid4()), "payload": {"lat": 45.76, "lng": 4.83}}})
    ms = call("POST", "/v1/devices/sync", {"device_id": device, "items": items})
    if i >= 5:
        sync.append(ms)
print(f"device sync of 500 items (10 calls after 5): p50 {pct(sync, 50):.1f} ms  p99 {pct(sync, 99):.1f} ms  "
      f"max {max(sync):.1f} ms  = {5000 / sum(sync) * 1000:.0f} events/s")
