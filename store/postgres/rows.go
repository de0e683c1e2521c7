package postgres

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Rows of one statement written together (docs/decisions/0233-multi-row-writes.md): when the
// queued writes go out (tx.send), the one-row inserts of the same statement into a table of
// mergedTables become multi-row inserts, `INSERT … VALUES (…), (…) ON CONFLICT …`, at the
// place of the first of them: a group of n ingests writes its n replies in a few statements
// instead of n. A row joins the rows before it only while nothing queued in between names
// its table and no earlier row of them has its conflict key (a row written twice goes in a
// later statement, as it would have alone), so the outcome is the statements' one after
// the other. The VALUES form (not `INSERT … SELECT FROM unnest(…)`) is what Citus routes to
// the tenant's one shard; the row counts are cut into powers of two, so that a form has
// at most seven statement texts to prepare. The rows of one statement are of one tenant.
//
// mergedTables maps each merged table to the tables its rows reference besides tenants: a
// statement that names one of those ends a run too, so that a row is never moved before
// the write of the row it references (a stream change names its event).
var mergedTables = map[string][]string{"event_replies": nil, "alerts": nil, "usage_counters": nil, "outbox": nil,
	"stream_changes": {"events"}}

// maxMergedRows bounds the rows of one merged statement.
const maxMergedRows = 64

// rowForm is a one-row insert that merges: prefix `INSERT INTO t (cols) VALUES `, the row
// `(…)` with the parameters $1…$k, each once, and the tail after it, without parameters.
type rowForm struct {
	table        string
	prefix, tail string
	row          string
	k            int
	key          []int // the parameters of the conflict key's columns (0-based)
	mu           sync.Mutex
	texts        map[int]string // the statement of n rows
}

// sqlInfo is what mergeRows needs of a statement, worked out once: its rowForm (nil: it
// does not merge) and the tables of mergedTables, and those they reference, it names.
type sqlInfo struct {
	form  *rowForm
	names map[string]bool
}

// ends says whether the statement ends a run of rows into table: it names the table or a
// table the rows reference.
func (i *sqlInfo) ends(table string) bool {
	if i.names[table] {
		return true
	}
	for _, ref := range mergedTables[table] {
		if i.names[ref] {
			return true
		}
	}
	return false
}

// sqlInfos holds the sqlInfo of each statement seen.
var sqlInfos sync.Map

// tableNames matches the names of the merged tables and of those they reference, as words.
var tableNames = func() *regexp.Regexp {
	names := slices.Collect(maps.Keys(mergedTables))
	for _, refs := range mergedTables {
		names = append(names, refs...)
	}
	slices.Sort(names)
	return regexp.MustCompile(`\b(` + strings.Join(slices.Compact(names), "|") + `)\b`)
}()

var (
	insertHead = regexp.MustCompile(`^\s*INSERT INTO (\w+) \(([^)]*)\) VALUES \(`)
	paramRef   = regexp.MustCompile(`\$(\d+)`)
	conflictOn = regexp.MustCompile(`ON CONFLICT \(([^)]*)\)`)
	plainParam = regexp.MustCompile(`^\$(\d+)(::\w+)?$`)
)

// infoOf returns the sqlInfo of sql.
func infoOf(sql string) *sqlInfo {
	if i, ok := sqlInfos.Load(sql); ok {
		return i.(*sqlInfo)
	}
	i := &sqlInfo{form: parseRowForm(sql), names: map[string]bool{}}
	for _, name := range tableNames.FindAllString(sql, -1) {
		i.names[name] = true
	}
	sqlInfos.Store(sql, i)
	return i
}

func parseRowForm(sql string) *rowForm {
	m := insertHead.FindStringSubmatchIndex(sql)
	if m == nil {
		return nil
	}
	if _, ok := mergedTables[sql[m[2]:m[3]]]; !ok {
		return nil
	}
	table, cols := sql[m[2]:m[3]], splitTop(sql[m[4]:m[5]])
	open := m[1] - 1 // the row's "("
	depth, end := 0, -1
	for i := open; i < len(sql) && end < 0; i++ {
		switch sql[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				end = i
			}
		case '\'':
			return nil
		}
	}
	if end < 0 {
		return nil
	}
	row, tail := sql[open:end+1], sql[end+1:]
	if strings.Contains(tail, "$") || strings.Contains(strings.ToUpper(tail), "RETURNING") || strings.Contains(tail, "'") {
		return nil
	}
	exprs := splitTop(row[1 : len(row)-1])
	if len(exprs) != len(cols) {
		return nil
	}
	refs := paramRef.FindAllStringSubmatch(row, -1)
	seen := map[int]bool{}
	for _, r := range refs {
		i, _ := strconv.Atoi(r[1])
		if seen[i] {
			return nil
		}
		seen[i] = true
	}
	k := len(refs)
	for i := 1; i <= k; i++ {
		if !seen[i] {
			return nil
		}
	}
	f := &rowForm{table: table, prefix: sql[:open], tail: tail, row: row, k: k, texts: map[int]string{}}
	if c := conflictOn.FindStringSubmatch(tail); c != nil {
		for _, col := range splitTop(c[1]) {
			at := -1
			for i, name := range cols {
				if name == col {
					at = i
				}
			}
			if at < 0 {
				return nil
			}
			p := plainParam.FindStringSubmatch(exprs[at])
			if p == nil {
				return nil
			}
			i, _ := strconv.Atoi(p[1])
			f.key = append(f.key, i-1)
		}
	}
	return f
}

// splitTop splits a list at its commas outside parentheses, each part trimmed.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[from:i]))
				from = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[from:]))
}

// text returns the statement of n rows.
func (f *rowForm) text(n int) string {
	if n == 1 {
		return f.prefix + f.row + f.tail
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.texts[n]; ok {
		return s
	}
	var b strings.Builder
	b.WriteString(f.prefix)
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(paramRef.ReplaceAllStringFunc(f.row, func(p string) string {
			i, _ := strconv.Atoi(p[1:])
			return "$" + strconv.Itoa(i+r*f.k)
		}))
	}
	b.WriteString(f.tail)
	f.texts[n] = b.String()
	return f.texts[n]
}

// keyOf is the conflict key of a row's arguments ("": none).
func (f *rowForm) keyOf(args []any) string {
	if len(f.key) == 0 {
		return ""
	}
	var b strings.Builder
	for _, i := range f.key {
		fmt.Fprintf(&b, "%v\x00", args[i])
	}
	return b.String()
}

// runKey is what the rows of one statement share: their form and their first argument,
// the tenant (one shard on Citus).
type runKey struct {
	form   *rowForm
	tenant string
}

// rowRun is the rows of one form gathered for one place of the batch.
type rowRun struct {
	form *rowForm
	rows [][]any
	keys map[string]bool
}

// mergeRows returns b with the rows of each merging form gathered (see mergedTables).
func mergeRows(b *pgx.Batch) *pgx.Batch {
	infos := make([]*sqlInfo, len(b.QueuedQueries))
	merges := false
	for i, q := range b.QueuedQueries {
		infos[i] = infoOf(q.SQL)
		merges = merges || infos[i].form != nil
	}
	if !merges {
		return b
	}
	// slots holds, in order, a statement as it is (run nil) or the run of a form.
	type slot struct {
		q   *pgx.QueuedQuery
		run *rowRun
	}
	var slots []slot
	open := map[runKey]*rowRun{}
	for i, q := range b.QueuedQueries {
		f := infos[i].form
		for k := range open {
			if k.form != f && infos[i].ends(k.form.table) {
				delete(open, k) // a statement between names the table: later rows go after it
			}
		}
		tenant, ok := "", false
		if f != nil && len(q.Arguments) == f.k {
			tenant, ok = q.Arguments[0].(string)
		}
		if !ok {
			slots = append(slots, slot{q: q})
			continue
		}
		key := f.keyOf(q.Arguments)
		rk := runKey{f, tenant}
		run := open[rk]
		if run != nil && key != "" && run.keys[key] {
			run = nil // the same row again: in a statement after
		}
		if run == nil {
			run = &rowRun{form: f, keys: map[string]bool{}}
			open[rk] = run
			slots = append(slots, slot{run: run})
		}
		run.rows = append(run.rows, q.Arguments)
		if key != "" {
			run.keys[key] = true
		}
	}
	out := &pgx.Batch{}
	for _, s := range slots {
		if s.run == nil {
			out.QueuedQueries = append(out.QueuedQueries, s.q)
			continue
		}
		for rows := s.run.rows; len(rows) > 0; {
			n := maxMergedRows
			for n > len(rows) {
				n /= 2
			}
			args := make([]any, 0, n*s.run.form.k)
			for _, r := range rows[:n] {
				args = append(args, r...)
			}
			out.Queue(s.run.form.text(n), args...)
			rows = rows[n:]
		}
	}
	return out
}
