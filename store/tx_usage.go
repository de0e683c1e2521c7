package store

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Usage counters live in each tenant's `usage` bucket under "YYYY-MM-DD|metric", the
// value a decimal number (readable in a backup, and valid JSON). Day keys sort by date,
// so a range of days is one cursor walk; months and years are added up when read.

// usageKey returns the key of a metric's counter on a day.
func usageKey(day, metric string) []byte {
	k := make([]byte, 0, len(day)+1+len(metric))
	k = append(k, day...)
	k = append(k, '|')
	return append(k, metric...)
}

func (t *tx) AddUsage(tenantID, day, metric string, n uint64) error {
	b, err := t.tbucket(tenantID, tbUsage)
	if err != nil {
		return err
	}
	k := usageKey(day, metric)
	var cur uint64
	if v := b.Get(k); v != nil {
		if cur, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return err
		}
	}
	// bbolt keeps the slices given to Put until the transaction ends: a fresh value.
	return b.Put(k, strconv.AppendUint(make([]byte, 0, 8), cur+n, 10))
}

func (t *tx) UsageCounters(tenantID, fromDay, toDay string) ([]model.UsageCounter, error) {
	b, err := t.tbucket(tenantID, tbUsage)
	if err != nil {
		return nil, err
	}
	var out []model.UsageCounter
	c := b.Cursor()
	for k, v := c.Seek([]byte(fromDay)); k != nil; k, v = c.Next() {
		i := bytes.IndexByte(k, '|')
		if i < 0 {
			continue
		}
		if string(k[:i]) > toDay {
			break
		}
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, model.UsageCounter{Day: string(k[:i]), Metric: string(k[i+1:]), N: n})
		}
	}
	return out, nil
}

// LedgerCount walks the ledger from the first key of from's millisecond: its keys are
// UUIDv7 taken at the entry's time.
func (t *tx) LedgerCount(tenantID, kind string, from, to time.Time) (int, error) {
	b, err := t.tbucket(tenantID, tbLedger)
	if err != nil {
		return 0, err
	}
	start, end := msKey(from), msKey(to)
	want := []byte(`"kind":"` + kind + `"`)
	n := 0
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
		if bytes.Contains(v, want) {
			n++
		}
	}
	return n, nil
}

// Stats describes the database for /metrics.
func (db *DB) Stats() model.StoreStats {
	s := db.bolt.Stats()
	out := model.StoreStats{ReadTxTotal: s.TxN, OpenReadTx: s.OpenTxN, WriteTxTotal: db.writeTx.Load(),
		PagesWritten: s.TxStats.GetWrite(), WriteSeconds: s.TxStats.GetWriteTime().Seconds(),
		SpillSecs: s.TxStats.GetSpillTime().Seconds(), FreePages: s.FreePageN, PendingPages: s.PendingPageN}
	if fi, err := os.Stat(db.path); err == nil {
		out.SizeBytes = fi.Size()
	}
	return out
}
