package bench

import (
	"math"
	"math/bits"
	"time"
)

// The latency histogram of `fieldrelay bench`: log-linear buckets in the manner of HDR
// histograms. Values below 2^histSubBits nanoseconds have a bucket each; above, every power
// of two is cut into 2^(histSubBits-1) equal buckets, so a bucket is at most 1/128 of its
// values wide and its midpoint is within 0.4 % of any value in it. The array is fixed
// (about 35 KB), so memory does not grow with the length of a run. A histogram has one
// writer (its worker) and is merged after the workers have stopped: no locks, no atomics.

const (
	histSubBits = 8
	histSub     = 1 << histSubBits // exact buckets below this many nanoseconds
	histHalf    = histSub / 2      // buckets per power of two above it
	// histMaxBits bounds what is recorded: values of 2^histMaxBits ns (about 18 minutes)
	// and more land in the last bucket; max stays exact.
	histMaxBits = 40
	histBuckets = histSub + (histMaxBits-histSubBits)*histHalf
)

// latencyHistogram counts latencies in nanoseconds.
type latencyHistogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      uint64 // ns; overflows only after 584 years of summed latency
	min, max uint64
}

// histIndex is the bucket of v nanoseconds.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	if v >= 1<<histMaxBits {
		return histBuckets - 1
	}
	shift := bits.Len64(v) - histSubBits // ≥ 1
	m := v >> shift                      // in [histHalf, histSub)
	return histSub + (shift-1)*histHalf + int(m-histHalf)
}

// histBounds is the smallest and largest value of bucket i.
func histBounds(i int) (lo, hi uint64) {
	if i < histSub {
		return uint64(i), uint64(i)
	}
	shift := (i-histSub)/histHalf + 1
	m := uint64((i-histSub)%histHalf + histHalf)
	return m << shift, (m+1)<<shift - 1
}

// record adds one latency; a negative one counts as 0.
func (h *latencyHistogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// merge adds the counts of o.
func (h *latencyHistogram) merge(o *latencyHistogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// quantile is the latency under which a share q (0 to 1) of the values fall: the value of
// rank ceil(q·n), within 0.4 % (exact below 256 ns, and for q = 1, the maximum). It is 0
// for an empty histogram.
func (h *latencyHistogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return time.Duration(h.max)
	}
	rank := max(uint64(math.Ceil(q*float64(h.n))), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		lo, hi := histBounds(i)
		v := lo + (hi-lo)/2
		return time.Duration(min(max(v, h.min), h.max))
	}
	return time.Duration(h.max)
}

// mean is the average latency, exact.
func (h *latencyHistogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// LatencySummary is the latency part of the report, in milliseconds rounded to 2 decimals.
type LatencySummary struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func (h *latencyHistogram) summary() LatencySummary {
	return LatencySummary{
		Min:  ms(time.Duration(h.min)),
		Mean: ms(h.mean()),
		P50:  ms(h.quantile(0.50)),
		P90:  ms(h.quantile(0.90)),
		P99:  ms(h.quantile(0.99)),
		Max:  ms(time.Duration(h.max)),
	}
}

// ms is d in milliseconds rounded to 2 decimals.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*100) / 100
}
