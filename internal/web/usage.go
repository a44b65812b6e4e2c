package web

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/usage"
)

// The chart's drawing area, in SVG user units (the SVG scales to the
// page's width through its viewBox).
const (
	chartW, chartH       = 640.0, 240.0
	chartLeft, chartBase = 56.0, 196.0 // room for the y labels, the day labels and the x axis's title
	chartTop             = 28.0        // room for the y axis's title
)

// chart is a bar chart of a report's days, ready for the template.
type chart struct {
	// Tokens says the bars are tokens, not USD: nothing in the range
	// was priced.
	Tokens bool
	Unit   string
	Bars   []bar
	YTicks []tick
	XTicks []tick
	W, H   float64
	Left   float64
	Base   float64
	Right  float64
}

type bar struct {
	Day        string
	X, Y, W, H float64
	Label      string // the bar's value, for its <title>
}

type tick struct {
	Pos   float64
	Label string
}

// dayChart turns a by-day report's rows into bars: one slot per day of
// [from, to), a bar for each day with usage, the y axis scaled to a round
// maximum with ticks at its quarters. The bars are cost in USD, or the
// total tokens when no row was priced (a cost of zero is not a cost).
func dayChart(rows []usage.Row, from, to time.Time) chart {
	c := chart{W: chartW, H: chartH, Left: chartLeft, Base: chartBase, Right: chartW - 8, Unit: "USD"}
	start := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	days := max(1, int(math.Ceil(to.Sub(start).Hours()/24)))
	slot := (c.Right - c.Left) / float64(days)
	// The days in range, by their slot: a row outside it has no bar and
	// neither scales the axis nor picks the unit.
	slots := map[int]usage.Row{}
	var order []int
	c.Tokens = true
	for _, r := range rows {
		d, err := time.Parse(time.DateOnly, r.Key)
		i := int(d.Sub(start).Hours() / 24)
		if err != nil || i < 0 || i >= days {
			continue
		}
		slots[i] = r
		order = append(order, i)
		if r.Priced() && r.CostMicroUSD > 0 {
			c.Tokens = false
		}
	}
	if c.Tokens {
		c.Unit = "tokens"
	}
	value := func(r usage.Row) float64 {
		if c.Tokens {
			return float64(r.InputTokens + r.OutputTokens)
		}
		return usage.MicroToUSD(r.CostMicroUSD)
	}
	var top float64
	for _, i := range order {
		top = max(top, value(slots[i]))
	}
	top = niceCeil(top)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: c.Base - (c.Base-chartTop)*float64(i)/4, Label: c.format(v)})
	}
	for i := 0; i < days; i += max(1, days/6) {
		d := start.AddDate(0, 0, i)
		c.XTicks = append(c.XTicks, tick{Pos: c.Left + slot*(float64(i)+.5), Label: d.Format("Jan 2")})
	}
	for _, i := range order {
		r := slots[i]
		h := (c.Base - chartTop) * value(r) / top
		c.Bars = append(c.Bars, bar{Day: r.Key, X: c.Left + slot*float64(i) + slot*.15, W: slot * .7,
			Y: c.Base - h, H: h, Label: r.Key + ": " + c.format(value(r))})
	}
	return c
}

// format is a value of the chart's unit as the axis shows it.
func (c chart) format(v float64) string {
	if c.Tokens {
		return shortCount(v)
	}
	if v != 0 && v < 0.1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// shortCount is a count as 950, 1.5k or 2M.
func shortCount(v float64) string {
	switch {
	case v >= 1e6:
		return trim(v/1e6) + "M"
	case v >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s
}

// niceCeil is the least of 1, 2, 2.5, 5 × 10^n at or above v (1 for
// nothing), so that the quarter ticks are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// named is a report row with the name of its app or agent, where it
// still exists.
type named struct {
	usage.Row
	Name string
}

type budgetView struct {
	store.Budget
	Name  string // the app's name for an app budget
	Spent int64
	// Percent is spent of the limit, capped at 100 for the meter.
	Percent float64
}

type usageData struct {
	From, To   string // the range shown, as dates (To inclusive)
	Prev, Next string // links to the month before and after
	Total      usage.Row
	Chart      chart
	Apps       []named
	Agents     []named
	Models     []usage.Row
	Budgets    []budgetView
}

func (p *Pages) usagePage(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	ctx := r.Context()
	q := usage.Query{From: r.URL.Query().Get("from"), To: r.URL.Query().Get("to")}
	get := func(group string) (*usage.Report, error) { q.GroupBy = group; return p.Usage.Report(ctx, c, q) }
	days, err := get("day")
	if e, ok := apperr.As(err); ok && e.Kind == apperr.Validation {
		// A mistyped ?from= or ?to=: say which, as the API would.
		p.ErrorPage(w, r, http.StatusBadRequest, e.Detail)
		return
	}
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	byApp, err := get("app")
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	byAgent, err := get("agent")
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	byModel, err := get("model")
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	apps, _, err := p.Apps.Apps(ctx, c, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	agents, _, err := p.Apps.Agents(ctx, c, "", listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	budgets, _, err := p.Usage.Budgets(ctx, c, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	names := map[string]string{}
	for _, a := range apps {
		names[a.ID] = a.Name
	}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	withNames := func(rows []usage.Row) []named {
		out := make([]named, len(rows))
		for i, row := range rows {
			out[i] = named{Row: row, Name: names[row.Key]}
		}
		return out
	}
	// The chart spans the whole month of the default range, not just its
	// days so far; an explicit range as it is.
	end := days.To
	if q.To == "" {
		end = days.From.AddDate(0, 1, 0)
	}
	month := time.Date(days.From.Year(), days.From.Month(), 1, 0, 0, 0, 0, time.UTC)
	monthLink := func(m time.Time) string {
		return "/usage?from=" + m.Format(time.DateOnly) + "&to=" + m.AddDate(0, 1, -1).Format(time.DateOnly)
	}
	d := usageData{From: days.From.Format(time.DateOnly), To: end.Add(-time.Nanosecond).Format(time.DateOnly),
		Prev: monthLink(month.AddDate(0, -1, 0)), Next: monthLink(month.AddDate(0, 1, 0)),
		Total: days.Total, Chart: dayChart(days.Rows, days.From, end),
		Apps: withNames(byApp.Rows), Agents: withNames(byAgent.Rows), Models: byModel.Rows}
	for _, b := range budgets {
		spent, err := p.Usage.Spent(ctx, &b)
		if err != nil {
			p.fail(w, r, c, err)
			return
		}
		v := budgetView{Budget: b, Name: names[b.ScopeID], Spent: spent}
		if b.LimitMicroUSD > 0 {
			v.Percent = min(100, 100*float64(spent)/float64(b.LimitMicroUSD))
		}
		d.Budgets = append(d.Budgets, v)
	}
	p.render(w, r, http.StatusOK, "usage.html", view{Title: "Usage", Nav: "usage", Email: c.Email, Data: d})
}
