package api

// PageParams are the limit/offset query of every list (default 50).
type PageParams struct {
	Limit  int `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"Page size, 1 to 1000"`
	Offset int `query:"offset" minimum:"0" default:"0" doc:"Items to skip. A page of large items may hold fewer than limit (AP_LIST_PAGE_BYTES): the next page starts at offset plus the items received, not plus limit"`
}

// Page is the part every list answer shares; embed it in the body.
type Page struct {
	TotalCount int  `json:"total_count" doc:"Items in all pages"`
	HasMore    bool `json:"has_more" doc:"Whether items follow this page"`
}

// page describes the page p of a list of total items.
func (p PageParams) page(total int) Page {
	return Page{TotalCount: total, HasMore: p.Offset+p.Limit < total}
}

// pageOf describes a page of a list whose pages are bounded in bytes too
// (AP_LIST_PAGE_BYTES): it may hold fewer than limit items with more to
// come, so has_more counts the items it holds, and the next page starts
// at offset + their number.
func (p PageParams) pageOf(total, n int) Page {
	return Page{TotalCount: total, HasMore: p.Offset+n < total}
}

// mapAll converts stored items into their API shape.
func mapAll[S, T any](items []S, fn func(*S) T) []T {
	out := make([]T, len(items))
	for i := range items {
		out[i] = fn(&items[i])
	}
	return out
}
