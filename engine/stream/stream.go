// Package stream is the change stream of GET /v1/stream: the broker that fans a
// tenant's committed changes out to its subscribers and keeps the last ones for resume
// (or, on a store shared by several processes, follows the store's change feed), and the
// Publisher through which the use cases hand it a change within their transaction.
package stream

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Defaults of the stream broker.
const (
	// RingSize is how many changes of a tenant are kept for Last-Event-ID resume.
	RingSize = 1000
	// streamSubBuffer is how many changes may wait for one subscriber; one more drops it.
	streamSubBuffer = 512
)

// Broker fans a tenant's committed changes out to its stream subscribers, and keeps the
// last RingSize of them for resume. Publishing never blocks: a subscriber that
// falls streamSubBuffer changes behind is dropped (its channel closes with Lagged set).
// A tenant is recorded from its first subscription on, so an ingest into a tenant that
// nobody watches costs one map lookup.
type Broker struct {
	// Epoch names this run: ids of another run (before a restart) cannot be resumed.
	epoch string
	ring  int
	mu    sync.Mutex
	// tenants maps a tenant id to its stream; written under mu, read lock-free by watched.
	tenants sync.Map // string → *tenantStream
	// feed, when set, is the store's record of the changes, shared by the processes of
	// one database: it numbers and keeps them, and the broker only fans them out (no ring).
	feed      model.ChangeFeed
	following sync.Once
}

// feedEpoch is the epoch of the ids of changes numbered by a ChangeFeed: the same on every
// process, and in every run.
const feedEpoch = "db"

// NewFeedBroker returns a broker over a store's change feed.
func NewFeedBroker(feed model.ChangeFeed) *Broker {
	return &Broker{epoch: feedEpoch, feed: feed}
}

type tenantStream struct {
	next uint64         // Seq of the next change
	buf  []model.Change // ring: buf[(seq-1) % len] holds seq, for the last len changes
	subs map[*Subscription]struct{}
}

// Subscription receives the changes of one tenant.
type Subscription struct {
	// C delivers the changes in order; it is closed by Close or when the subscriber fell
	// too far behind (then Lagged reports true).
	C      <-chan model.Change
	c      chan model.Change
	b      *Broker
	tenant string
	lagged bool // under b.mu
	closed bool // under b.mu
}

// NewBroker returns a broker keeping ring changes per tenant (RingSize when ≤ 0).
func NewBroker(ring int) *Broker {
	if ring <= 0 {
		ring = RingSize
	}
	return &Broker{epoch: strconv.FormatInt(time.Now().UnixMilli(), 36), ring: ring}
}

// Epoch names this run of the broker.
func (b *Broker) Epoch() string { return b.epoch }

// EventID is the SSE id of a change: epoch and sequence, "<epoch>-<seq>".
func (b *Broker) EventID(seq uint64) string { return b.epoch + "-" + strconv.FormatUint(seq, 10) }

// ParseEventID reads an id of EventID; ok is false for an id of another run or one
// that does not parse.
func (b *Broker) ParseEventID(id string) (seq uint64, ok bool) {
	ep, s, found := strings.Cut(strings.TrimSpace(id), "-")
	if !found || ep != b.epoch {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	return seq, err == nil
}

// Watched reports whether a tenant has (or had) a subscriber in this run.
func (b *Broker) Watched(tenantID string) bool {
	_, ok := b.tenants.Load(tenantID)
	return ok
}

// Publish records a change of a tenant in the ring (on a broker without a feed) and hands
// it to every subscriber without ever blocking; a subscriber whose buffer is full is
// dropped. Seq and At are set here.
func (b *Broker) Publish(tenantID string, c model.Change) {
	v, ok := b.tenants.Load(tenantID)
	if !ok {
		return
	}
	ts := v.(*tenantStream)
	b.mu.Lock()
	defer b.mu.Unlock()
	c.Seq = ts.next
	ts.next++
	ts.buf[(c.Seq-1)%uint64(len(ts.buf))] = c
	ts.fanOut(c)
}

// fanOut hands c to every subscriber, dropping those whose buffer is full; under b.mu.
func (ts *tenantStream) fanOut(c model.Change) {
	for s := range ts.subs {
		select {
		case s.c <- c:
		default:
			s.lagged, s.closed = true, true
			delete(ts.subs, s)
			close(s.c)
		}
	}
}

// deliver fans out a change that the feed numbered (the feed's poller calls it, in Seq
// order).
func (b *Broker) deliver(tenantID string, c model.Change) {
	v, ok := b.tenants.Load(tenantID)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v.(*tenantStream).fanOut(c)
}

// watching lists the tenants that have subscribers.
func (b *Broker) watching() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	b.tenants.Range(func(k, v any) bool {
		if len(v.(*tenantStream).subs) > 0 {
			out = append(out, k.(string))
		}
		return true
	})
	return out
}

// SubscribeContext is Subscribe for every broker: over a store's change feed, the backlog
// is read from the store (which may fail), and the ids are the feed's, the same on every
// process sharing it.
func (b *Broker) SubscribeContext(ctx context.Context, tenantID string, after uint64) (s *Subscription, backlog []model.Change, head uint64, resumed bool, err error) {
	if b.feed == nil {
		s, backlog, head, resumed = b.Subscribe(tenantID, after)
		return s, backlog, head, resumed, nil
	}
	b.following.Do(func() { b.feed.FollowChanges(b.watching, b.deliver) })
	b.mu.Lock()
	v, ok := b.tenants.Load(tenantID)
	if !ok {
		v = &tenantStream{subs: map[*Subscription]struct{}{}}
		b.tenants.Store(tenantID, v)
	}
	c := make(chan model.Change, streamSubBuffer)
	s = &Subscription{C: c, c: c, b: b, tenant: tenantID}
	v.(*tenantStream).subs[s] = struct{}{}
	b.mu.Unlock()
	// Once the subscription is listed, every change the feed delivers is above head;
	// what lies between head (or after) and the feed's next delivery is read here, the
	// overlap dropped by Seq.
	head, err = b.feed.FeedHead(ctx, tenantID)
	resumed = true
	if err == nil && after > 0 {
		var held bool
		if backlog, held, err = b.feed.ChangesAfter(ctx, tenantID, after); err == nil && !held {
			resumed = false
		}
	}
	if err == nil && (after == 0 || !resumed) {
		backlog = nil
		if head > 0 { // 0: the feed has no head yet, and nothing before now is wanted
			backlog, _, err = b.feed.ChangesAfter(ctx, tenantID, head)
		}
	}
	if err != nil {
		s.Close()
		return nil, nil, 0, false, err
	}
	return s, backlog, head, resumed, nil
}

// Subscribe starts receiving a tenant's changes after seq after (0: from now on), on a
// broker without a feed (SubscribeContext serves both). It
// answers the changes after it that the ring still holds, to send before those of C;
// resumed is false when after is older than the ring or newer than the last change:
// the caller cannot be brought up to date and should reload. head is the seq of the
// newest change (0 when none).
func (b *Broker) Subscribe(tenantID string, after uint64) (s *Subscription, backlog []model.Change, head uint64, resumed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.tenants.Load(tenantID)
	if !ok {
		v = &tenantStream{next: 1, buf: make([]model.Change, b.ring), subs: map[*Subscription]struct{}{}}
		b.tenants.Store(tenantID, v)
	}
	ts := v.(*tenantStream)
	head = ts.next - 1
	oldest := uint64(1)
	if head > uint64(len(ts.buf)) {
		oldest = head - uint64(len(ts.buf)) + 1
	}
	resumed = after == 0 || (after <= head && after+1 >= oldest)
	if resumed && after > 0 {
		for seq := after + 1; seq <= head; seq++ {
			backlog = append(backlog, ts.buf[(seq-1)%uint64(len(ts.buf))])
		}
	}
	c := make(chan model.Change, streamSubBuffer)
	s = &Subscription{C: c, c: c, b: b, tenant: tenantID}
	ts.subs[s] = struct{}{}
	return s, backlog, head, resumed
}

// Lagged reports whether the subscription was dropped for falling behind.
func (s *Subscription) Lagged() bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.lagged
}

// Close ends the subscription; C is closed. It may be called more than once.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if v, ok := s.b.tenants.Load(s.tenant); ok {
		delete(v.(*tenantStream).subs, s)
	}
	close(s.c)
}

// Subscribers counts a tenant's subscriptions.
func (b *Broker) Subscribers(tenantID string) int {
	v, ok := b.tenants.Load(tenantID)
	if !ok {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(v.(*tenantStream).subs)
}

// Publisher hands the changes of the use cases to the stream: through the store's
// change feed when it has one, else to the broker once their transaction commits.
type Publisher struct {
	broker *Broker
	feed   model.ChangeFeed // nil when the store has none
	clock  model.Clock
}

// NewPublisher returns the Publisher of a node and its broker: over the store's change
// feed when feed is not nil (a store several processes share), else over a broker
// keeping ring changes per tenant.
func NewPublisher(feed model.ChangeFeed, ring int, clock model.Clock) *Publisher {
	if feed != nil {
		return &Publisher{broker: NewFeedBroker(feed), feed: feed, clock: clock}
	}
	return &Publisher{broker: NewBroker(ring), clock: clock}
}

// Broker returns the broker the Publisher hands changes to.
func (p *Publisher) Broker() *Broker { return p.broker }

// encode writes a change's payload as json.Marshal does. An event and an alert write
// their own without reflection (Event.AppendMarshal, Alert.AppendJSON: the same bytes,
// tested against json.Marshal in engine/model): on the central tier every event.created
// change is encoded, and stored as a reference to the event's row when the bytes are the
// row's (docs/decisions/0227-event-stored-once.md).
func encode(payload any) ([]byte, error) {
	switch p := payload.(type) {
	case *model.Event:
		if p != nil {
			return p.AppendMarshal(make([]byte, 0, 768+len(p.Payload)))
		}
	case *model.Alert:
		if p != nil {
			return p.AppendJSON(make([]byte, 0, 512)), nil
		}
	}
	return json.Marshal(payload)
}

// Publish sends a change of a tenant to its stream once tx commits. The payload is
// encoded now, as it stands in the transaction; on a store without a change feed, nothing
// is done for a tenant nobody watches.
func (p *Publisher) Publish(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error {
	if p.feed == nil && !p.broker.Watched(tenantID) {
		return nil
	}
	data, err := encode(payload)
	if err != nil {
		return err
	}
	c := model.Change{Name: name, Perm: perm, TeamID: teamID, Data: data, At: model.At(p.clock.Now())}
	if p.feed != nil {
		// Every change is recorded: another process may have a subscriber, or get one
		// that resumes from before this change.
		return p.feed.AppendChange(tx, tenantID, c)
	}
	tx.OnCommit(func() { p.broker.Publish(tenantID, c) })
	return nil
}
