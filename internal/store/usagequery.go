package store

import (
	"context"
	"strconv"
	"time"
)

// UsageGroup is what a usage report's rows are summed by.
type UsageGroup string

// The groupings of GET /api/v1/usage.
const (
	UsageByDay   UsageGroup = "day"
	UsageByApp   UsageGroup = "app"
	UsageByAgent UsageGroup = "agent"
	UsageByModel UsageGroup = "model"
	UsageByKey   UsageGroup = "key"
)

// UsageFilter selects a user's usage over [From, To).
type UsageFilter struct {
	UserID   string
	From, To time.Time
	AppID    string // "": every app
	AgentID  string // "": every agent
	APIKeyID int64  // 0: every key (and none)
	GroupBy  UsageGroup
}

// UsageSum is one row of a report: the sums of the calls with one key.
type UsageSum struct {
	Key                       string
	Calls                     int64
	InputTokens, OutputTokens int64
	// CostMicroUSD sums the priced calls; UnpricedCalls counts the others.
	CostMicroUSD  int64
	UnpricedCalls int64
}

// usageKey is the column of each grouping, in usage_daily and in
// usage_records (where absent ids are NULL; empty and 0 in the
// daily sums). A day's key is given by the caller (see UsageQuery).
var usageKey = map[UsageGroup][2]string{
	UsageByApp:   {"app_id", "COALESCE(app_id, '')"},
	UsageByAgent: {"agent_id", "COALESCE(agent_id, '')"},
	UsageByModel: {"model", "model"},
	UsageByKey:   {"api_key_id", "COALESCE(api_key_id, 0)"},
}

// UsageQuery sums a user's usage over [f.From, f.To) by f.GroupBy. Whole
// UTC days are read from usage_daily (a row per day and kind, not per
// call); only the partial days at the edges are summed from the raw
// records, through their (user_id, created_at) index. Each edge lies
// within one day, which is what keys its rows when grouping by day. The
// rows come in no particular order, a key at most once.
func (s *Store) UsageQuery(ctx context.Context, f UsageFilter) ([]UsageSum, error) {
	firstDay := f.From.UTC().Truncate(24 * time.Hour)
	if firstDay.Before(f.From) {
		firstDay = firstDay.Add(24 * time.Hour)
	}
	lastDay := f.To.UTC().Truncate(24 * time.Hour) // exclusive end of the whole days
	sums := map[string]*UsageSum{}
	add := func(rows []UsageSum) {
		for _, r := range rows {
			if got := sums[r.Key]; got != nil {
				got.Calls += r.Calls
				got.InputTokens += r.InputTokens
				got.OutputTokens += r.OutputTokens
				got.CostMicroUSD += r.CostMicroUSD
				got.UnpricedCalls += r.UnpricedCalls
				continue
			}
			sums[r.Key] = &r
		}
	}
	if !f.From.Before(f.To) {
		return []UsageSum{}, nil
	}
	if firstDay.Before(lastDay) {
		rows, err := s.usageDaily(ctx, f, UsageDay(firstDay), UsageDay(lastDay))
		if err != nil {
			return nil, err
		}
		add(rows)
		for _, edge := range [][2]time.Time{{f.From, firstDay}, {lastDay, f.To}} {
			if edge[0].Before(edge[1]) {
				if rows, err = s.usageRaw(ctx, f, edge[0], edge[1]); err != nil {
					return nil, err
				}
				add(rows)
			}
		}
	} else {
		// Within one day, or across one midnight without a whole day.
		for _, edge := range [][2]time.Time{{f.From, minTime(firstDay, f.To)}, {maxTime(firstDay, f.From), f.To}} {
			if edge[0].Before(edge[1]) {
				rows, err := s.usageRaw(ctx, f, edge[0], edge[1])
				if err != nil {
					return nil, err
				}
				add(rows)
			}
		}
	}
	out := make([]UsageSum, 0, len(sums))
	for _, r := range sums {
		out = append(out, *r)
	}
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// usageDaily sums the daily rows of days [from, to) (YYYY-MM-DD).
// narrow adds f's app, agent and key filters to a WHERE clause and its
// arguments; usage_daily and usage_records name them alike.
func (f UsageFilter) narrow(where string, args []any) (string, []any) {
	if f.AppID != "" {
		args = append(args, f.AppID)
		where += " AND app_id = $" + strconv.Itoa(len(args))
	}
	if f.AgentID != "" {
		args = append(args, f.AgentID)
		where += " AND agent_id = $" + strconv.Itoa(len(args))
	}
	if f.APIKeyID != 0 {
		args = append(args, f.APIKeyID)
		where += " AND api_key_id = $" + strconv.Itoa(len(args))
	}
	return where, args
}

func (s *Store) usageDaily(ctx context.Context, f UsageFilter, from, to string) ([]UsageSum, error) {
	key := "day"
	if f.GroupBy != UsageByDay {
		key = usageKey[f.GroupBy][0]
	}
	where, args := "user_id = $1 AND day >= $2 AND day < $3", []any{f.UserID, from, to}
	where, args = f.narrow(where, args)
	return s.usageSums(ctx, `SELECT `+key+`, SUM(calls), SUM(input_tokens), SUM(output_tokens), SUM(cost_micro_usd), SUM(unpriced_calls)
		FROM usage_daily WHERE `+where+` GROUP BY `+key, args...)
}

// usageRaw sums the records of [from, to), a span within one UTC day.
func (s *Store) usageRaw(ctx context.Context, f UsageFilter, from, to time.Time) ([]UsageSum, error) {
	where, args := "user_id = $1 AND created_at >= $2 AND created_at < $3", []any{f.UserID, s.ts(from), s.ts(to)}
	key, group := "''", ""
	if f.GroupBy != UsageByDay {
		key = usageKey[f.GroupBy][1]
		group = " GROUP BY " + key
	}
	where, args = f.narrow(where, args)
	rows, err := s.usageSums(ctx, `SELECT `+key+`, COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COALESCE(SUM(cost_micro_usd), 0), COUNT(*) - COUNT(cost_micro_usd)
		FROM usage_records WHERE `+where+group, args...)
	if f.GroupBy == UsageByDay {
		for i := range rows {
			rows[i].Key = UsageDay(from) // the span is within this day
		}
	}
	return rows, err
}

func (s *Store) usageSums(ctx context.Context, q string, args ...any) ([]UsageSum, error) {
	rows, err := queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, r *UsageSum) error {
		var key any
		if err := row.Scan(&key, &r.Calls, &r.InputTokens, &r.OutputTokens, &r.CostMicroUSD, &r.UnpricedCalls); err != nil {
			return err
		}
		switch k := key.(type) {
		case string:
			r.Key = k
		case []byte:
			r.Key = string(k)
		case int64:
			r.Key = strconv.FormatInt(k, 10)
		}
		return nil
	}, q, args...)
	if err != nil {
		return nil, err
	}
	// An aggregate without GROUP BY answers one row when nothing matched.
	return slicesDeleteEmpty(rows), nil
}

func slicesDeleteEmpty(rows []UsageSum) []UsageSum {
	out := rows[:0]
	for _, r := range rows {
		if r.Calls > 0 {
			out = append(out, r)
		}
	}
	return out
}
