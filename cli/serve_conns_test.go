package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

func TestServeConnLimits(t *testing.T) {
	for name, tc := range map[string]struct {
		maxConns, perIP int
		files           fileLimits
		want            server.ConnLimits
	}{
		"Auto":          {0, 256, fileLimits{soft: 65536, hard: 65536, known: true}, server.ConnLimits{Total: 4096, PerAddress: 256}},
		"AutoSmall":     {0, 256, fileLimits{soft: 1024, hard: 4096, known: true}, server.ConnLimits{Total: 512, PerAddress: 256}},
		"AutoTiny":      {0, 0, fileLimits{soft: 100, hard: 100, known: true}, server.ConnLimits{Total: 50}},
		"AutoInfinite":  {0, 8, fileLimits{soft: ^uint64(0), hard: ^uint64(0), known: true}, server.ConnLimits{Total: 4096, PerAddress: 8}},
		"AutoUnknown":   {0, 256, fileLimits{}, server.ConnLimits{Total: 4096, PerAddress: 256}},
		"Given":         {10000, 256, fileLimits{soft: 20000, hard: 20000, known: true}, server.ConnLimits{Total: 10000, PerAddress: 256}},
		"AllTheRoom":    {19488, 256, fileLimits{soft: 20000, hard: 20000, known: true}, server.ConnLimits{Total: 19488, PerAddress: 256}},
		"GivenUnknown":  {100000, 256, fileLimits{}, server.ConnLimits{Total: 100000, PerAddress: 256}},
		"ErrOverLimit":  {19489, 256, fileLimits{soft: 20000, hard: 20000, known: true}, server.ConnLimits{}},
		"ErrNegative":   {-1, 256, fileLimits{}, server.ConnLimits{}},
		"ErrNegativeIP": {0, -1, fileLimits{}, server.ConnLimits{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := connLimits(tc.maxConns, tc.perIP, tc.files)
			if strings.HasPrefix(name, "Err") {
				if !model.IsKind(err, model.KindValidation) {
					t.Fatalf("%v, want invalid", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// serve logs the open-file limit and the caps at start, and applies --max-conns-per-ip.
func TestServeMaxConnsPerIP(t *testing.T) {
	s := startServe(t, newTestApp(nil), "--data", t.TempDir(), "--plain-http", "--max-conns-per-ip", "2")
	var serving map[string]any
	for deadline := time.Now().Add(10 * time.Second); serving == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for line := range strings.SplitSeq(s.stderr.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "serving" {
				serving = rec
			}
		}
	}
	files := openFileLimits()
	want, _ := connLimits(0, 2, files)
	if serving == nil || serving["max_conns_per_ip"] != 2.0 || serving["max_conns"] != float64(want.Total) ||
		serving["open_files_limit"] != float64(files.soft) || serving["open_files_limit_hard"] != float64(files.hard) {
		t.Fatalf("serving line %v, want the caps %+v and the file limit %+v", serving, want, files)
	}
	addr := strings.TrimPrefix(s.base, "http://")
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"error":"unavailable"`) {
		t.Fatalf("the third connection: %d %s", res.StatusCode, body)
	}
}
