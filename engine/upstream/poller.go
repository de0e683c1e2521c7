package upstream

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The site's long poll of its central node's downstream
// (docs/decisions/0211-downstream-long-poll.md): while a link is up, a goroutine of its
// own pulls with `wait`, so that the central node answers as soon as its log has news for
// the site, instead of a pull every PullEvery. It runs beside the pusher, never in its
// round: a pull held 20 s does not hold the push of the site's changes. It ends when the
// link fails (the pusher records it and starts it again once a push goes through), is
// paused, removed or set again, or the pusher stops.

// downWait is the wait a long poll asks for: MaxDownWait, or less when the client's
// timeout is short, so that the central node answers before the client gives up.
func (u *Runner) downWait() int {
	return int(min(time.Duration(MaxDownWait)*time.Second, u.opt.Timeout*2/3) / time.Second)
}

// poller is the long poll of one link.
type poller struct {
	gen    int64
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done closes
}

// startPoller starts the long poll of l, a link whose push and first pull went through;
// under u.mu, in the pusher's round.
func (u *Runner) startPoller(ctx context.Context, l *upLink) {
	if u.downWait() < 1 {
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &poller{gen: l.gen, cancel: cancel, done: make(chan struct{})}
	l.poller = p
	tenantID, gen, key := l.tenantID, l.gen, l.key
	u.pollers.Add(1)
	go func() {
		defer u.pollers.Done()
		p.err = u.longPoll(pctx, tenantID, gen, key)
		close(p.done) // before the wake: the pusher's round must find it ended
		select {      // the pusher learns it at once
		case u.wake <- struct{}{}:
		default:
		}
	}()
}

// stopPoller ends l's long poll, if any, and forgets it; under u.mu.
func (u *Runner) stopPoller(l *upLink) {
	if l.poller != nil {
		l.poller.cancel()
		l.poller = nil
	}
}

// polled reports, under u.mu, whether l's long poll is running; when it has ended, it is
// forgotten and err is why (nil: the link was paused, removed or set again, or the
// pusher stops).
func (u *Runner) polled(l *upLink) (running bool, err error) {
	p := l.poller
	if p == nil {
		return false, nil
	}
	select {
	case <-p.done:
		l.poller = nil
		return false, p.err
	default:
		return true, nil
	}
}

// longPoll pulls a link's downstream with a wait until it fails or the link changes.
func (u *Runner) longPoll(ctx context.Context, tenantID string, gen int64, key string) error {
	var client model.UpstreamClient
	ca := ""
	defer func() {
		if client != nil {
			client.Close()
		}
	}()
	for ctx.Err() == nil {
		var cfg *model.UpstreamConfig
		err := u.store.View(ctx, func(tx model.Tx) (err error) {
			cfg, err = tx.Upstream(tenantID)
			return err
		})
		if model.IsKind(err, model.KindNotFound) || (err == nil && (cfg.Paused || cfg.Generation != gen || cfg.DeviceID == "")) {
			return nil
		}
		if err != nil {
			return err
		}
		if client == nil || ca != cfg.CAPEM {
			if client != nil {
				client.Close()
			}
			client, ca = u.opt.Transport.Client(cfg.CAPEM, u.opt.Timeout), cfg.CAPEM
		}
		began := time.Now()
		moved, err := u.pullFrom(ctx, client, key, cfg, u.downWait())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if !moved && time.Since(began) < time.Duration(u.downWait())*time.Second/2 {
			// Answered at once with nothing new: a central node that stops short of its
			// end, or one of an older version that does not hold pulls. Asked again
			// after PullEvery, as before the long poll, rather than at once.
			t := time.NewTimer(u.opt.PullEvery)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	return nil
}
