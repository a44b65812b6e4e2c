// Package limits holds the sizes that more than one way in must agree on:
// what the API refuses in a request body, JavaScript must not be able to
// write through a host call either.
package limits

// BodyBytes is the largest request body the API accepts (413 beyond), and
// so the largest record of app data, written from the API or from
// JavaScript (ctx.data.create and update).
const BodyBytes = 1 << 20

// PageBytes bounds a page that a host call from JavaScript answers with
// (ctx.storage.list, ctx.data.list) and a page of app data records (or
// AP_LIST_PAGE_BYTES when that is smaller): the
// items stop there (fewer items, more to read), and the rows past it are
// never read from the database. A page always holds at least one item.
const PageBytes = 1 << 20

// HeaderBytes is the largest request head (request line and headers) the
// front door accepts: 431 with the error body beyond. The http.Server
// reads up to ServerHeaderBytes before any handler runs and answers larger
// heads itself, in plain text; between the two the front door answers.
const (
	HeaderBytes       = 64 << 10
	ServerHeaderBytes = 1 << 20
)
