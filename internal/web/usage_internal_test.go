package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/usage"
)

func TestUsageChart(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	rows := []usage.Row{
		{Key: "2026-11-02", Calls: 1, InputTokens: 10, OutputTokens: 5, CostMicroUSD: 300_000},
		{Key: "2026-11-20", Calls: 2, InputTokens: 20, OutputTokens: 5, CostMicroUSD: 1_500_000, UnpricedCalls: 1},
		{Key: "2026-10-31", Calls: 1, CostMicroUSD: 9_000_000}, // outside the range: no bar
	}
	c := dayChart(rows, from, to)
	require.False(t, c.Tokens)
	require.Equal(t, "USD", c.Unit)
	require.Len(t, c.Bars, 2)
	// The axis tops at a round 2 USD: ticks at its quarters.
	require.Equal(t, []string{"$0.00", "$0.50", "$1.00", "$1.50", "$2.00"}, labels(c.YTicks))
	require.InDelta(t, chartBase-(chartBase-chartTop)*0.75, c.Bars[1].Y, 1e-9, "1.5 of 2 USD")
	require.InDelta(t, chartBase, c.Bars[1].Y+c.Bars[1].H, 1e-9, "bars stand on the axis")
	require.Less(t, c.Bars[0].X, c.Bars[1].X)
	require.GreaterOrEqual(t, c.Bars[0].X, chartLeft)
	require.LessOrEqual(t, c.Bars[1].X+c.Bars[1].W, c.Right)
	require.Equal(t, "Nov 1", c.XTicks[0].Label)
	require.Equal(t, "2026-11-20: $1.50", c.Bars[1].Label)

	// Nothing priced: the bars are the tokens.
	rows = []usage.Row{{Key: "2026-11-03", Calls: 2, InputTokens: 1200, OutputTokens: 300, UnpricedCalls: 2},
		{Key: "2026-12-01", Calls: 1, InputTokens: 9, CostMicroUSD: 5}} // priced, but outside the range
	c = dayChart(rows, from, to)
	require.True(t, c.Tokens)
	require.Equal(t, "tokens", c.Unit)
	require.Equal(t, []string{"0", "500", "1k", "1.5k", "2k"}, labels(c.YTicks))
	require.Len(t, c.Bars, 1)
	require.InDelta(t, (chartBase-chartTop)*0.75, c.Bars[0].H, 1e-9)

	// No rows: an empty, still-scaled chart.
	c = dayChart(nil, from, to)
	require.Empty(t, c.Bars)
	require.Len(t, c.YTicks, 5)
}

func TestUsageNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 0.003: 0.005, 1: 1, 1.2: 2, 2.1: 2.5, 3: 5, 7: 10, 1500: 2000, 0.3: 0.5} {
		require.InDelta(t, want, niceCeil(v), want*1e-9, "%v", v)
	}
}

func labels(ts []tick) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Label
	}
	return out
}
