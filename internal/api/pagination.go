package api

// PageParams are the limit/offset query of every list (default 50).
type PageParams struct {
	Limit  int `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"Page size, 1 to 1000"`
	Offset int `query:"offset" minimum:"0" default:"0" doc:"Items to skip"`
}

// hasMore reports whether items beyond this page exist.
func (p PageParams) hasMore(total int) bool { return p.Offset+p.Limit < total }
