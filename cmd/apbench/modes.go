package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"
)

// runFunction measures a trivial function's execute over HTTP: the
// synchronous POST …/functions/{id}/execute, from request to answer.
func runFunction(ctx context.Context, o options) error {
	if err := account(ctx, &o); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	appID, err := importApp(ctx, o, []any{})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	var fn struct {
		ID string `json:"id"`
	}
	if err := call(ctx, "POST", o.base+"/api/v1/functions", o.key, map[string]any{"app_id": appID, "name": "echo",
		"code":         "async function run(input) { return input; }",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}, "timeout_seconds": 10,
	}, &fn); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	fmt.Printf("setup: function %s, key %s…\n", fn.ID, o.key[:11])
	u := o.base + "/api/v1/apps/" + appID + "/functions/" + fn.ID + "/execute"
	return measure(ctx, o, "executions", "request->answer", func(ctx context.Context, i int) (time.Duration, bool, error) {
		var e struct {
			Status string `json:"status"`
		}
		return timed(func() error {
			if err := call(ctx, "POST", u, o.key, map[string]any{"input": map[string]any{"n": i}}, &e); err != nil {
				return err
			}
			if e.Status != "completed" {
				return &statusError{"execution " + e.Status}
			}
			return nil
		})
	})
}

// listPage is the page -mode list asks for: a filter that keeps half the
// records and a sort on a number field, which the database has to order.
var listPage = url.Values{"filter[level]": {"high"}, "sort": {"-score"}, "limit": {"50"}}

// runList measures a filtered, sorted page of a model of o.records records
// (inserted first, o.c at a time).
func runList(ctx context.Context, o options) error {
	if err := account(ctx, &o); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	appID, err := importApp(ctx, o, []any{})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := call(ctx, "POST", o.base+"/api/v1/data/"+appID+"/models", o.key, map[string]any{"slug": "ticket", "name": "Ticket",
		"fields": []map[string]any{
			{"name": "subject", "type": "string", "required": true},
			{"name": "n", "type": "integer"},
			{"name": "score", "type": "number"},
			{"name": "done", "type": "boolean"},
			{"name": "level", "type": "enum", "values": []string{"low", "high"}},
		}}, nil); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	records := o.base + "/api/v1/data/" + appID + "/ticket"
	fmt.Fprintf(os.Stderr, "setup: inserting %d records, %d at a time\n", o.records, o.c)
	ins, err := load(ctx, o.c, o.records, true, func(ctx context.Context, i int) (time.Duration, bool, error) {
		data := map[string]any{"subject": fmt.Sprintf("t%d", i), "n": i % 100, "score": float64((i*7919)%10000) + 0.5,
			"done": i%2 == 0, "level": []string{"low", "high"}[i%2]}
		return timed(func() error { return call(ctx, "POST", records, o.key, map[string]any{"data": data}, nil) })
	})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if ins.failed > 0 {
		return fmt.Errorf("setup: %d of %d records were refused", ins.failed, o.records)
	}
	u := records + "?" + listPage.Encode()
	var first struct {
		Items      []any `json:"items"`
		TotalCount int   `json:"total_count"`
	}
	if err := call(ctx, "GET", u, o.key, nil, &first); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if want := o.records / 2; first.TotalCount != want || len(first.Items) != min(50, want) {
		return fmt.Errorf("setup: the page has %d items of %d, want %d of %d", len(first.Items), first.TotalCount, min(50, want), want)
	}
	fmt.Printf("setup: %d records inserted in %.1fs (%.0f/s), key %s…; listing %s\n", o.records, ins.elapsed.Seconds(),
		float64(o.records)/ins.elapsed.Seconds(), o.key[:11], listPage.Encode())
	return measure(ctx, o, "lists", "request->answer", func(ctx context.Context, _ int) (time.Duration, bool, error) {
		return timed(func() error { return call(ctx, "GET", u, o.key, nil, nil) })
	})
}

// timed runs f and answers its latency; an answer with a bad status is a
// failure, counted, and any other error stops the load.
func timed(f func() error) (time.Duration, bool, error) {
	start := time.Now()
	err := f()
	d := time.Since(start)
	if se := (*statusError)(nil); errors.As(err, &se) {
		return d, false, nil
	}
	return d, err == nil, err
}
