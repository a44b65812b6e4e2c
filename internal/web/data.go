package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The data explorer (/apps/{id}/data): an app's models, one model's fields,
// and its records in a table paged, sorted and filtered. The whole view is
// in the query (model, sort=field|-field, filter[field]=value, limit,
// offset: the API's own parameters), so a link shows the same view to
// whoever may open it, and the browser's back button walks the views.
// Records are the app owner's, read through appdata as the API reads them.

const (
	// defaultPageSize is the records a page shows unless limit says.
	defaultPageSize = 25
	// maxPageSize bounds limit: a page is read whole and rendered.
	maxPageSize = 100
	// maxCountedModels bounds the record counts beside the models: one
	// count each, worth it for the few models an app has.
	maxCountedModels = 20
	// cellRunes is how much of a long value a cell shows; the whole value
	// is its title.
	cellRunes = 60
)

// pageSizes are the choices of the page size menu.
var pageSizes = []int{10, 25, 50, 100}

// explorerQuery is a view of the explorer, as its URL holds it.
type explorerQuery struct {
	Model string
	// Sort is a field or -field; "" is the default, newest first.
	Sort string
	// Filters keep records whose field equals the value, sorted by field
	// (one URL per view).
	Filters       []filterParam
	Limit, Offset int
}

type filterParam struct{ Field, Value string }

// url is the explorer's address for q.
func (q explorerQuery) url(appID string) string {
	v := url.Values{}
	if q.Model != "" {
		v.Set("model", q.Model)
	}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	for _, f := range q.Filters {
		v.Set("filter["+f.Field+"]", f.Value)
	}
	if q.Limit != defaultPageSize && q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	u := "/apps/" + url.PathEscape(appID) + "/data"
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// with returns q with changes applied to a copy (its filters copied too).
func (q explorerQuery) with(change func(*explorerQuery)) explorerQuery {
	q.Filters = append([]filterParam(nil), q.Filters...)
	change(&q)
	return q
}

func (q *explorerQuery) setFilter(field, value string) {
	q.dropFilter(field)
	q.Filters = append(q.Filters, filterParam{field, value})
	sort.Slice(q.Filters, func(i, j int) bool { return q.Filters[i].Field < q.Filters[j].Field })
}

func (q *explorerQuery) dropFilter(field string) {
	out := q.Filters[:0]
	for _, f := range q.Filters {
		if f.Field != field {
			out = append(out, f)
		}
	}
	q.Filters = out
}

// queryError is a view the query asks for that cannot be shown: a bad
// page size, sort or filter. Field says which control of the form is at
// fault (its data-error-for), "" the whole form.
type queryError struct{ Field, Message string }

// parseExplorer reads a view from the URL's query.
func parseExplorer(v url.Values) (explorerQuery, *queryError) {
	q := explorerQuery{Model: v.Get("model"), Sort: v.Get("sort"), Limit: defaultPageSize}
	for k, vals := range v {
		if strings.HasPrefix(k, "filter[") && strings.HasSuffix(k, "]") && len(vals) > 0 {
			q.setFilter(k[len("filter["):len(k)-1], vals[0])
		}
	}
	if q.Sort == "-created_at" {
		q.Sort = "" // the default, one URL for it
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageSize {
			return q, &queryError{"limit", fmt.Sprintf("Records per page must be a whole number from 1 to %d, not %q.", maxPageSize, s)}
		}
		q.Limit = n
	}
	if s := v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, &queryError{"", fmt.Sprintf("The page's offset must be a whole number, 0 or more, not %q.", s)}
		}
		q.Offset = n
	}
	return q, nil
}

// formKeys are the explorer form's own controls. A submitted form names
// the sort and a filter with them (a plain HTML form cannot name a
// parameter filter[<the chosen field>]); the page answers with a redirect
// to the view's canonical URL, which is the one to share.
var formKeys = []string{"sort_by", "order", "filter_field", "filter_value"}

func fromForm(v url.Values) (explorerQuery, bool) {
	submitted := false
	for _, k := range formKeys {
		submitted = submitted || v.Has(k)
	}
	if !submitted {
		return explorerQuery{}, false
	}
	// A bad limit is the default (the form offers good ones only); a new
	// view starts at its first page.
	q, _ := parseExplorer(v)
	q.Offset = 0
	switch by := v.Get("sort_by"); {
	case by == "":
	case v.Get("order") == "desc":
		q.Sort = "-" + by
	default:
		q.Sort = by
	}
	if q.Sort == "-created_at" {
		q.Sort = ""
	}
	if field := v.Get("filter_field"); field != "" {
		if value := strings.TrimSpace(v.Get("filter_value")); value != "" {
			q.setFilter(field, value)
		} else {
			q.dropFilter(field)
		}
	}
	return q, true
}

// modelRow is a model in the list of an app's models.
type modelRow struct {
	Name, Slug, URL string
	Current         bool
	// Summary is its field count, and record count when counted.
	Summary string
}

// column is a column of the records table.
type column struct {
	Label string
	// SortURL sorts by the column (the other way when it is the sort
	// already); "" for a column without an order (json).
	SortURL string
	// Sort is aria-sort's value when the table is sorted by it.
	Sort string
}

// cell is one shown value of a record.
type cell struct {
	Label string
	Text  string
	// Full is the whole value when Text is cut short.
	Full string
	// Time is a datetime field's value, shown in local time.
	Time  time.Time
	Code  bool
	Empty bool
}

type recordRow struct {
	ItemID, ShortID      string
	CreatedAt, UpdatedAt time.Time
	Cells                []cell
}

type filterChip struct{ Field, Value, RemoveURL string }

// dataData is the explorer page.
type dataData struct {
	App    *store.App
	Models []modelRow
	// Model is the open model; nil when the app has none, or the query
	// names one it does not have (Error says so).
	Model *appdata.Model
	Error *queryError

	// The form: filterable and sortable fields, what is chosen.
	Filterable  []string
	Sortable    []string
	Filters     []filterChip
	FilterField string
	FilterValue string
	SortBy      string
	Desc        bool
	SortText    string
	Limit       int
	PageSizes   []int
	ClearURL    string

	// The records.
	Columns         []column
	Rows            []recordRow
	Total, From, To int
	// Summary is the total in words: "3 records", "1 matching record".
	Summary                    string
	PageNumber, Pages          int
	PrevURL, NextURL, FirstURL string
}

func (p *Pages) data(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	ctx := r.Context()
	app, err := p.Apps.OwnedApp(ctx, c, r.PathValue("app_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	if q, ok := fromForm(r.URL.Query()); ok {
		http.Redirect(w, r, q.url(app.ID), http.StatusSeeOther)
		return
	}
	models, err := p.Data.ListModels(ctx, app.ID)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	q, bad := parseExplorer(r.URL.Query())
	if q.Model == "" && len(models) > 0 {
		q.Model = models[0].Slug
	}
	d := dataData{App: app, Error: bad, PageSizes: pageSizes, Limit: q.Limit}
	for i := range models {
		m := &models[i]
		row := modelRow{Name: m.Name, Slug: m.Slug, Current: m.Slug == q.Model,
			URL: explorerQuery{Model: m.Slug, Limit: defaultPageSize}.url(app.ID), Summary: plural(len(m.Fields), "field")}
		if len(models) <= maxCountedModels {
			n, err := p.Data.CountRecords(ctx, app.UserID, m)
			if err != nil {
				p.fail(w, r, c, err)
				return
			}
			row.Summary += " · " + plural(n, "record")
		}
		if row.Current {
			d.Model = m
		}
		d.Models = append(d.Models, row)
	}
	status := http.StatusOK
	switch {
	case len(models) == 0:
		d.Error = nil // nothing to page, sort or filter
	case d.Model == nil:
		status, d.Error = http.StatusNotFound, &queryError{"", fmt.Sprintf("This app has no data model %q.", q.Model)}
	default:
		d.form(app.ID, q)
		if d.Error != nil {
			status = http.StatusBadRequest
			break
		}
		filter := map[string]string{}
		for _, f := range q.Filters {
			filter[f.Field] = f.Value
		}
		page, err := p.Data.ListRecords(ctx, app.UserID, app.ID, d.Model.Slug,
			appdata.Query{Filter: filter, Sort: q.Sort, Limit: q.Limit, Offset: q.Offset})
		if e, ok := apperr.As(err); ok && e.Kind == apperr.Validation {
			// A sort or filter the model does not allow: said beside the
			// control, and the form keeps the values to correct.
			status, d.Error = http.StatusBadRequest, &queryError{controlOf(e.Field), e.Detail}
			if strings.HasPrefix(e.Field, "filter[") {
				d.FilterField = strings.TrimSuffix(strings.TrimPrefix(e.Field, "filter["), "]")
				d.FilterValue = filter[d.FilterField]
			}
			break
		}
		if err != nil {
			p.fail(w, r, c, err)
			return
		}
		d.records(app.ID, q, page)
	}
	p.render(w, r, status, "data.html", view{Title: "Data · " + app.Name, Nav: "apps", Email: c.Email, Data: d})
}

// controlOf is the form control of an appdata validation error's field.
func controlOf(field string) string {
	switch {
	case strings.HasPrefix(field, "filter["):
		return "filter_value"
	case field == "sort":
		return "sort_by"
	}
	return ""
}

// form fills the query form and the columns of the open model for q.
func (d *dataData) form(appID string, q explorerQuery) {
	m := d.Model
	d.SortBy, d.Desc = strings.TrimPrefix(q.Sort, "-"), strings.HasPrefix(q.Sort, "-")
	if q.Sort == "" {
		d.SortBy, d.Desc = "created_at", true
	}
	d.SortText = sortText(d.SortBy, d.Desc)
	d.Sortable = []string{"created_at"}
	for _, f := range m.Fields {
		if f.Type != "json" {
			d.Sortable = append(d.Sortable, f.Name)
			d.Filterable = append(d.Filterable, f.Name)
		}
	}
	for _, f := range q.Filters {
		d.Filters = append(d.Filters, filterChip{Field: f.Field, Value: f.Value,
			RemoveURL: q.with(func(q *explorerQuery) { q.dropFilter(f.Field); q.Offset = 0 }).url(appID)})
	}
	if len(q.Filters) == 1 {
		d.FilterField, d.FilterValue = q.Filters[0].Field, q.Filters[0].Value
	}
	d.ClearURL = explorerQuery{Model: m.Slug, Limit: q.Limit}.url(appID)

	// A column's link sorts by it ascending, or the other way round when
	// the table is sorted by it already.
	sortable := func(label, name string) column {
		col := column{Label: label}
		next := name
		if d.SortBy == name {
			col.Sort = "ascending"
			if d.Desc {
				col.Sort = "descending"
			} else {
				next = "-" + name
			}
		}
		col.SortURL = q.with(func(q *explorerQuery) { q.Sort, q.Offset = next, 0 }).url(appID)
		return col
	}
	d.Columns = []column{{Label: "Record"}, sortable("Created", "created_at"), {Label: "Updated"}}
	for _, f := range m.Fields {
		if f.Type == "json" {
			d.Columns = append(d.Columns, column{Label: f.Name})
		} else {
			d.Columns = append(d.Columns, sortable(f.Name, f.Name))
		}
	}
}

func sortText(field string, desc bool) string {
	if field == "created_at" {
		if desc {
			return "newest first"
		}
		return "oldest first"
	}
	if desc {
		return field + ", descending"
	}
	return field + ", ascending"
}

// records fills the table and the pager with page, the records of q.
func (d *dataData) records(appID string, q explorerQuery, page *appdata.Page) {
	d.Total = page.TotalCount
	d.Summary = plural(page.TotalCount, "record")
	if len(q.Filters) > 0 {
		d.Summary = plural(page.TotalCount, "matching record")
	}
	d.From, d.To = q.Offset+1, q.Offset+len(page.Items)
	d.PageNumber, d.Pages = q.Offset/q.Limit+1, (page.TotalCount+q.Limit-1)/q.Limit
	if q.Offset > 0 {
		d.PrevURL = q.with(func(q *explorerQuery) { q.Offset = max(0, q.Offset-q.Limit) }).url(appID)
		d.FirstURL = q.with(func(q *explorerQuery) { q.Offset = 0 }).url(appID)
	}
	if page.HasMore {
		// A page of large records may hold fewer than the limit
		// (AP_LIST_PAGE_BYTES): the next starts after what this one shows.
		d.NextURL = q.with(func(q *explorerQuery) { q.Offset += len(page.Items) }).url(appID)
	}
	for _, rec := range page.Items {
		var data map[string]json.RawMessage
		_ = json.Unmarshal(rec.Data, &data) // an object: validated when written
		row := recordRow{ItemID: rec.ItemID, ShortID: rec.ItemID, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt}
		if len(row.ShortID) > 8 {
			// A UUIDv7's first digits are its time: the last ones tell
			// records apart.
			row.ShortID = "…" + row.ShortID[len(row.ShortID)-8:]
		}
		for _, f := range d.Model.Fields {
			row.Cells = append(row.Cells, cellOf(f, data[f.Name]))
		}
		d.Rows = append(d.Rows, row)
	}
}

// cellOf shows a field's stored JSON value as its type reads.
func cellOf(f apps.Field, raw json.RawMessage) cell {
	c := cell{Label: f.Name}
	if len(raw) == 0 || string(raw) == "null" {
		c.Empty = true
		return c
	}
	var text string
	switch f.Type {
	case "string", "text", "enum", "datetime":
		if json.Unmarshal(raw, &text) != nil {
			// Written before the model changed type: shown as stored.
			text, c.Code = compact(raw), true
			break
		}
		if f.Type == "datetime" {
			if t, err := time.Parse(time.RFC3339Nano, text); err == nil {
				c.Time = t
				return c
			}
		}
	case "json":
		text, c.Code = compact(raw), true
	default: // integer, number, boolean: the JSON is the text
		text = string(bytes.TrimSpace(raw))
	}
	c.Text = text
	if utf8.RuneCountInString(text) > cellRunes {
		c.Full = text
		c.Text = string([]rune(text)[:cellRunes]) + "…"
	}
	return c
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// plural is "1 record", "2 records".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
